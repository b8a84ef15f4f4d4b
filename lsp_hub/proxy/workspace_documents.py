"""A workspace's documents (`workspace.Workspace`): each session's copy of what it opened, the one text per URI the
backends see (the leading session's), who leads, and unsaved edits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.backends import Backend, BackendPool
from lsp_hub.proxy.client_view import ClientView
from lsp_hub.proxy.documents import Document, SharedDocument, replacement_edit, uri_to_path
from lsp_hub.proxy.workspace_diagnostics import DiagnosticsPulling


class DocumentSharing(DiagnosticsPulling):
    """The documents part of `Workspace`; the workspace sets these attributes."""

    pool: BackendPool
    _edited: dict[str, set[ClientView]]

    if TYPE_CHECKING:
        def backends_for_uri(self, uri: str, feature: str) -> list[Backend]: ...

    # ================================================================================================ documents
    # Each session keeps its own copy of what it opened. The backends see one text per URI: that of the session
    # that leads it (`SharedDocument.source`). The lead goes to the session that wrote (opened or changed) the
    # document most recently, except that a session whose text is the disk's never takes it from a leader with
    # unsaved edits (changed since it opened or saved it, and different from the disk): an agent reading the file
    # from disk does not replace the user's unsaved text in the servers; it is answered through position mapping
    # (session.py). Saving keeps the lead where it is; when the leader closes, the most recent writer with unsaved
    # edits leads, else the most recent writer. When the leader changes, the backends get the new leader's whole
    # text as one change (the lines that differ, for an incremental server), so no session's edit is applied to
    # another's text.
    def open(self, session: ClientView, document: Document) -> None:
        uri = document.uri
        holders = self._holders.setdefault(uri, {})
        holders.pop(session, None)
        holders[session] = document
        self._edited.get(uri, set()).discard(session)  # as the client's file is now: nothing of its own yet
        shared = self._documents.get(uri)
        if shared is None:
            shared = self._documents[uri] = SharedDocument(document)
            for backend in self.backends_for_uri(uri, "textDocument/didOpen"):
                shared.opened_in.add(str(backend.key))
                backend.open_document(shared)
                self.reports.sent(backend.uid, uri, shared.version)
                self._schedule_pull(backend, uri)
            return
        if self._takes_lead(shared, session, document):
            self._write(shared, document)
        for backend in self.backends_for_uri(uri, "textDocument/didOpen"):
            if uri not in backend.open_documents:
                shared.opened_in.add(str(backend.key))
                backend.open_document(shared)
                self.reports.sent(backend.uid, uri, shared.version)
                self._schedule_pull(backend, uri)

    def change(self, session: ClientView, document: Document, changes: list[dict[str, Any]]) -> None:
        """`document` (the session's own) has had `changes` applied."""
        shared = self._documents.get(document.uri)
        if shared is None:
            return
        self._edited.setdefault(document.uri, set()).add(session)
        holders = self._holders[document.uri]
        holders.pop(session, None)
        holders[session] = document
        if shared.source is document:
            # The writer's own version while it is the only writer there has been; after a change of writer, the
            # versions the servers saw only grow.
            shared.version = max(shared.version + 1, document.version) if shared.source_changed else document.version
            self._send_change(shared, changes)
        elif self._takes_lead(shared, session, document):
            self._write(shared, document)

    def leader(self, uri: str) -> ClientView | None:
        """The session whose text of `uri` the backends have."""
        shared = self._documents.get(uri)
        holders = self._holders.get(uri) or {}
        return next((session for session, document in holders.items()
                     if shared is not None and document is shared.source), None)

    def has_unsaved_edits(self, session: ClientView, uri: str, disk: str | None = None) -> bool:
        """Whether `session` changed `uri` since it opened or saved it and its text differs from the disk's
        (`disk`, read when not given; a file that cannot be read counts as differing)."""
        document = (self._holders.get(uri) or {}).get(session)
        if document is None or session not in self._edited.get(uri, ()):
            return False
        disk = disk if disk is not None else disk_text(uri)
        return disk is None or document.text != disk

    def unsaved_elsewhere(self, asker: ClientView, uris: list[str]) -> list[dict[str, str]]:
        """[{uri, client}] for each of `uris` that a session other than `asker` holds unsaved edits of."""
        found: list[dict[str, str]] = []
        for uri in uris:
            others = [session for session in self._holders.get(uri) or {} if session is not asker]
            if not others:
                continue
            disk = disk_text(uri)
            found += [{"uri": uri, "client": client_name(session)} for session in others
                      if self.has_unsaved_edits(session, uri, disk)]
        return found

    def _takes_lead(self, shared: SharedDocument, session: ClientView, document: Document) -> bool:
        """Whether `session`, which just wrote `document`, takes the lead of it (see above)."""
        leader = self.leader(shared.uri)
        if leader is None or leader is session:
            return True
        disk = disk_text(shared.uri)
        if not self.has_unsaved_edits(leader, shared.uri, disk):
            return True
        return disk is None or document.text != disk  # its own unsaved text: the latest change leads

    def _write(self, shared: SharedDocument, document: Document) -> None:
        """`document` becomes what the backends see, sent as a change if it differs from what they have."""
        if shared.source is document:
            return
        before = shared.text
        shared.source = document
        shared.source_changed = True
        if document.text == before:
            return
        shared.version = max(shared.version + 1, document.version)
        self._send_change(shared, [replacement_edit(before, document.text)])

    def _send_change(self, shared: SharedDocument, changes: list[dict[str, Any]]) -> None:
        for backend in self.open_in(shared.uri):
            backend.change_document(shared, changes)
            self.reports.sent(backend.uid, shared.uri, shared.version)
            self.reports.changed(backend.uid, shared.uri)
            self._schedule_pull(backend, shared.uri)

    def save(self, session: ClientView, document: Document, params: dict[str, Any]) -> None:
        self._edited.get(document.uri, set()).discard(session)  # its text is the disk's now; the lead stays
        shared = self._documents.get(document.uri)
        if shared is None:
            return
        for backend in self.open_in(document.uri):
            backend.save_document(shared, params)
            self.reports.changed(backend.uid, document.uri)
            self._schedule_pull(backend, document.uri)

    def close(self, session: ClientView, uri: str) -> None:
        """The session closed `uri`. The backends close it only when no session has it open any more."""
        holders = self._holders.get(uri)
        if holders is None or session not in holders:
            return
        document = holders[session]
        shared = self._documents[uri]
        self._edited.get(uri, set()).discard(session)
        if len(holders) > 1:
            del holders[session]
            if shared.source is document:
                self._write(shared, self._next_leader(uri, holders))
            session.publish_diagnostics(uri, [])  # gone for this session only
            return
        closed_in = self.open_in(uri)
        for backend in closed_in:
            backend.close_document(uri)
            self._pull_result_ids.pop((backend.uid, uri), None)  # a closed document is pulled afresh
            timer = self._pull_timers.pop((backend.uid, uri), None)
            if timer is not None:
                timer.cancel()
        self.reports.closed(uri)
        del self._documents[uri]
        self.diagnostics.clear_uri(uri)  # published to this session, the last that had it open
        del self._holders[uri]
        self._edited.pop(uri, None)

    def _next_leader(self, uri: str, holders: dict[ClientView, Document]) -> Document:
        """After the leader closed: the most recent writer with unsaved edits, else the most recent writer."""
        disk = disk_text(uri) if self._edited.get(uri) else None
        for session in reversed(holders):
            if session in self._edited.get(uri, ()) and self.has_unsaved_edits(session, uri, disk):
                return holders[session]
        return list(holders.values())[-1]

    def documents(self) -> list[SharedDocument]:
        """What the backends see of every document some session has open."""
        return list(self._documents.values())

    def open_in(self, uri: str) -> list[Backend]:
        return [b for b in self.pool if uri in b.open_documents]

    def shared_version(self, uri: str) -> int | None:
        shared = self._documents.get(uri)
        return shared.version if shared is not None else None


def disk_text(uri: str) -> str | None:
    """The file's text on disk as a client would open it (UTF-8, line ends kept), or None if it cannot be read."""
    path = uri_to_path(uri)
    if path is None:
        return None
    try:
        with open(path, "rb") as file:
            return file.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def client_name(session: ClientView) -> str:
    """How to name a session to a user: its clientInfo name, else a description."""
    info = session.init_params.get("clientInfo") if isinstance(session.init_params, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) and name else "a client that did not give its name"
