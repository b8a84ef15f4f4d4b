"""A workspace: what every client session of one root (under one configuration) shares.

The backends, keyed (server, root), and the text each one sees of a document (the leading session's); the
diagnostic store and the report tracker; pull scheduling; the forwarder of server-to-client traffic, which asks the
workspace which sessions hear what. It knows sessions only as `ClientView`s; it never imports the session module.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lsp_hub.backends import Backend, BackendPool, State
from lsp_hub.client_view import ClientView
from lsp_hub.config.model import Config, ServerSpec
from lsp_hub.diagnostics import DiagnosticStore, Part, ReportTracker
from lsp_hub.documents import Document, SharedDocument, replacement_edit, uri_to_path
from lsp_hub.forwarding import Forwarder
from lsp_hub.jsonrpc import MsgId, ResponseFailure, materialize
from lsp_hub.platform import paths
from lsp_hub.routing import BackendKey, Router

logger = logging.getLogger(__name__)


def config_fingerprint(config: Config, trusted_roots: frozenset[Path]) -> str:
    """Sessions share a workspace only when their effective configuration is the same."""
    text = repr(config) + "\0" + "\0".join(sorted(str(root) for root in trusted_roots))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class DiagnosticsCoverage:
    """Who may check a document's diagnostics, and who cannot (`{server, reason, detail}`)."""

    language: str | None
    backends: list[Backend]
    cannot: list[dict[str, Any]]


class Attachment(Protocol):
    """Something that lives as long as the workspace (the code index): closed when the workspace ends."""

    async def close(self) -> None: ...


class Workspace:
    def __init__(self, config: Config, trusted_roots: frozenset[Path], folders: list[str], *,
                 key: tuple[str, str] = ("", ""), on_empty: Callable[[Workspace], None] | None = None) -> None:
        self.key = key
        self.config = config
        self.trusted_roots = trusted_roots
        self.folders = list(folders)
        self.router = Router(config, self.folders)
        self.sessions: list[ClientView] = []  # the most recently active last
        self.pool = BackendPool(self._make_backend)
        self.diagnostics = DiagnosticStore(self._publish_diagnostics, self._diagnostic_precedence)
        self.reports = ReportTracker()
        self.forwarder = Forwarder(self)
        self._on_empty = on_empty or (lambda workspace: None)
        self._documents: dict[str, SharedDocument] = {}  # what the backends see, per URI
        self._holders: dict[str, dict[ClientView, Document]] = {}  # who has each URI open; latest writer last
        # Per URI, the sessions that changed it (didChange) since they opened or last saved it: with a text that
        # differs from the disk, they hold unsaved edits (`has_unsaved_edits`).
        self._edited: dict[str, set[ClientView]] = {}
        self._missing: dict[BackendKey, str] = {}  # why a server cannot start (binary not found, no pin), per key
        self._resolved: dict[BackendKey, list[str]] = {}  # what starts each backend's program, before its args
        # Each backend's spec as launched: PATH cleaned and, for an untrusted root, pin_untrusted applied.
        self._launch_specs: dict[BackendKey, ServerSpec] = {}
        self._pull_timers: dict[tuple[int, str], asyncio.TimerHandle] = {}
        self._pull_result_ids: dict[tuple[int, str], str] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        # What lives beside the backends as long as the workspace, by name (the code index, "index").
        self.attachments: dict[str, Attachment] = {}
        self.closed = False
        # A daemon's workspace with no session left is kept (its index warm) for a while even with no server
        # running: an agent's next `lsp-hub query repomap` should not rebuild the index's graphs.
        self._lingering: asyncio.TimerHandle | None = None
        self._linger_forever = False

    # ================================================================================================ sessions
    def join(self, session: ClientView) -> None:
        if self._lingering is not None:
            self._lingering.cancel()
            self._lingering = None
        self._linger_forever = False
        if session not in self.sessions:
            self.sessions.append(session)

    def linger(self, seconds: float) -> None:
        """No session is left: stay (index and servers warm) `seconds` longer, for ever when 0, then go once no
        server runs either."""
        if seconds <= 0:
            self._linger_forever = True
            return
        self._lingering = asyncio.get_running_loop().call_later(seconds, self._linger_over)

    def _linger_over(self) -> None:
        self._lingering = None
        self._maybe_empty()

    def touch(self, session: ClientView) -> None:
        """`session` just spoke: it is the one a server's question goes to when no other is known."""
        if self.sessions and self.sessions[-1] is not session and session in self.sessions:
            self.sessions.remove(session)
            self.sessions.append(session)

    @property
    def active(self) -> ClientView | None:
        return self.sessions[-1] if self.sessions else None

    def release(self, session: ClientView) -> None:
        """The session leaves: its documents close (for it); backends stay for the other sessions."""
        for uri in [uri for uri, holders in self._holders.items() if session in holders]:
            self.close(session, uri)
        if session in self.sessions:
            self.sessions.remove(session)

    def has_live_backends(self) -> bool:
        return any(b.state in (State.STARTING, State.RUNNING, State.STOPPING) for b in self.pool)

    def _maybe_empty(self) -> None:
        if self._lingering is not None or self._linger_forever:
            return
        if not self.sessions and not self.has_live_backends():
            self._on_empty(self)
            if self.attachments:  # forgotten: the next session of the root gets a new workspace
                self.spawn(self._close_attachments())

    async def _close_attachments(self) -> None:
        attachments = list(self.attachments.values())
        self.attachments.clear()
        for result in await asyncio.gather(*(a.close() for a in attachments), return_exceptions=True):
            if isinstance(result, BaseException):
                logger.error("closing a workspace attachment failed: %r", result)

    async def stop(self, *, grace_seconds: float = 1.0) -> None:
        """Stop every server of the workspace and close its attachments (bounded in time; whatever is left is
        killed)."""
        self.closed = True
        if self._lingering is not None:
            self._lingering.cancel()
            self._lingering = None
        for timer in self._pull_timers.values():
            timer.cancel()
        closing = asyncio.ensure_future(self._close_attachments())  # a running index build stops at once
        try:
            await asyncio.wait_for(self.pool.stop_all(grace_seconds=grace_seconds), 5.0)
        except TimeoutError:
            logger.warning("backends did not stop in time; killing them")
        self.pool.kill_all()
        await closing

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def tell_user(self, message: str, *, error: bool = False) -> None:
        if not self.sessions:
            (logger.error if error else logger.warning)("%s", message)
        for session in list(self.sessions):
            session.tell_user(message, error=error)

    def notify_all(self, method: str, params: Any) -> None:
        for session in list(self.sessions):
            if session.state != "closed":
                session.notify(method, params)

    def set_folders(self, folders: list[str]) -> None:
        self.folders = list(folders)
        self.router = Router(self.config, self.folders)

    # ================================================================================================ backends
    def _make_backend(self, key: BackendKey, uid: int) -> Backend:
        spec = self._launch_specs.get(key) or self.config.servers[key.server]
        argv = [*self._resolved[key], *spec.args]
        return Backend(key, spec, argv, self, self.config.hub, uid)

    def is_trusted(self, root: str) -> bool:
        path = Path(root)
        return any(path == trusted or trusted in path.parents for trusted in self.trusted_roots)

    def _backend(self, spec: ServerSpec, key: BackendKey) -> Backend | None:
        """The backend for a route, created (not started) on first need; None if its binary is missing."""
        existing = self.pool.get(key)
        if existing is not None:
            return existing
        if key in self._missing:
            return None
        from lsp_hub.config.resolve import prepare_launch, resolve_command

        root, trusted = Path(key.root), self.is_trusted(key.root)
        # PATH entries inside the workspace folder holding the root count as the workspace's, not only the root's.
        workspace = min((Path(folder) for folder in self.folders if under(key.root, folder)),
                        key=lambda folder: len(folder.parts), default=root)
        resolution = resolve_command(spec, root, trusted=trusted, workspace=workspace)
        if resolution.skipped_local:
            self.tell_user(
                f"lsp-hub: passed over {resolution.skipped_local} because {key.root} is not trusted; "
                f"run `lsp-hub trust {key.root}` to use workspace binaries."
            )
        if resolution.path is None:
            searched = ", ".join(resolution.searched)
            self._missing[key] = f"{spec.command!r} not found (searched {searched})"
            self.tell_user(
                f"lsp-hub: {spec.name} is not installed: {spec.command!r} not found (searched {searched}). "
                "Other servers keep working."
            )
            return None
        launch = prepare_launch(spec, resolution.path, root, trusted=trusted, workspace=workspace)
        if launch.refused is not None:
            self._missing[key] = launch.refused
            self.tell_user(launch.refused)
            return None
        self._resolved[key] = launch.program_argv
        self._launch_specs[key] = launch.spec
        return self.pool.get_or_create(key)

    def diagnostics_coverage(self, uri: str) -> DiagnosticsCoverage:
        """Who may check `uri`'s diagnostics (the backends, in precedence order, not failed) and who cannot, with
        why: its language's servers that are disabled, missing (not installed, or refused in an untrusted root),
        failed; or no server at all (`server` None)."""
        document = self._documents.get(uri)
        path = uri_to_path(uri) or os.path.join(self.folders[0] if self.folders else os.getcwd(), "untitled")
        language = self.router.language(language_id=document.language_id if document else None, path=path)
        if language is None:
            return DiagnosticsCoverage(None, [], [{"server": None, "reason": "no_server", "detail":
                                                   f"no language is configured for {os.path.basename(path)}"}])
        backends: list[Backend] = []
        cannot: list[dict[str, Any]] = []
        routes = {route.key.server: route for route in self.router.routes(path, language)}
        for name in language.servers:
            spec = self.config.servers.get(name)
            if spec is None:
                cannot.append({"server": name, "reason": "missing", "detail": f"no [server.{name}] is configured"})
                continue
            if not spec.allows("diagnostics"):
                continue  # not a diagnostics server here: nobody expects its verdict
            route = routes.get(name)
            if spec.disabled or route is None:
                cannot.append({"server": name, "reason": "disabled", "detail": "disabled in the configuration"})
                continue
            backend = self._backend(route.spec, route.key)
            if backend is None:
                cannot.append({"server": name, "reason": "missing",
                               "detail": self._missing.get(route.key, "not installed")})
            elif backend.state == State.FAILED:
                cannot.append({"server": name, "reason": "failed", "detail": backend.failure or "failed"})
            else:
                backends.append(backend)
        if not backends and not cannot:
            cannot.append({"server": None, "reason": "no_server",
                           "detail": f"no server of {language.name} reports diagnostics"})
        return DiagnosticsCoverage(language.name, backends, cannot)

    @staticmethod
    def diagnostics_cross_files(backend: Backend) -> bool:
        """Whether the backend's diagnostics of a file may change when another file changes: a pull server's
        `interFileDependencies`, else its configuration (`cross_file_diagnostics`)."""
        if backend.supports("textDocument/diagnostic"):
            options = backend.registered_options("textDocument/diagnostic") or backend.capabilities.get(
                "diagnosticProvider")
            return isinstance(options, dict) and bool(options.get("interFileDependencies"))
        return backend.spec.cross_file_diagnostics

    def backends_for_uri(self, uri: str, feature: str) -> list[Backend]:
        """The backends that may serve `feature` for a document, in precedence order."""
        document = self._documents.get(uri)
        path = uri_to_path(uri) or os.path.join(self.folders[0] if self.folders else os.getcwd(), "untitled")
        language = self.router.language(language_id=document.language_id if document else None, path=path)
        backends = []
        for route in self.router.routes(path, language):
            if not route.spec.allows(feature):
                continue
            backend = self._backend(route.spec, route.key)
            if backend is not None and backend.state != State.FAILED:
                backends.append(backend)
        return backends

    # BackendHost
    def document(self, uri: str) -> SharedDocument | None:
        return self._documents.get(uri)

    def initialize_params(self, backend: Backend) -> dict[str, Any]:
        return self.forwarder.initialize_params(backend)

    def on_backend_request(self, backend: Backend, msg_id: MsgId, method: str, params: Any) -> Any:
        return self.forwarder.server_request(backend, method, params)

    def on_backend_notification(self, backend: Backend, method: str, params: Any) -> None:
        self.forwarder.server_notification(backend, method, params)

    def on_backend_running(self, backend: Backend) -> None:
        self.forwarder.register_commands(backend)
        for session in list(self.sessions):
            session.backend_running(backend)
        for uri in backend.open_documents:
            self._schedule_pull(backend, uri, delay=0.0)

    def on_backend_stopped(self, backend: Backend, *, crashed: bool) -> None:
        self.diagnostics.clear_owner(backend.uid)
        for session in list(self.sessions):
            session.backend_stopped(backend)
        self.forwarder.forget_backend(backend)
        for key in [k for k in self._pull_timers if k[0] == backend.uid]:
            self._pull_timers.pop(key).cancel()
        for key in [k for k in self._pull_result_ids if k[0] == backend.uid]:
            del self._pull_result_ids[key]
        if not crashed:
            self._maybe_empty()

    def server_statuses(self) -> list[dict[str, Any]]:
        """Each server of this workspace (running, stopped or missing), as lspHub.status lists it."""
        languages_of: dict[str, list[str]] = {}
        for language in self.config.languages.values():
            for server in language.servers:
                languages_of.setdefault(server, []).append(language.name)
        servers = [
            {
                "name": backend.name,
                "uid": backend.uid,  # what items' origin tags name (`data.lspHub`)
                "root": backend.root,
                "state": backend.state.value,
                "pid": backend.pid,
                "languages": languages_of.get(backend.name, []),
                "restarts": backend.restarts,
                "openDocuments": len(backend.open_documents),
                "requestsInFlight": backend.requests_in_flight,
                "workInProgress": [title or "work" for title in backend.work_in_progress.values()],
                **({"error": backend.failure} if backend.failure else {}),
            }
            for backend in self.pool
        ]
        servers += [
            {"name": key.server, "root": key.root, "state": "missing", "pid": None,
             "languages": languages_of.get(key.server, []), "restarts": 0, "error": why}
            for key, why in self._missing.items()
        ]
        return servers

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

    # ================================================================================================ diagnostics
    def _diagnostic_precedence(self, uri: str) -> Callable[[Part], int] | None:
        """For a document whose language dedupes diagnostics: a part's rank, from its server's precedence."""
        document = self._documents.get(uri)
        language = self.router.language(language_id=document.language_id if document else None,
                                        path=uri_to_path(uri) or uri)
        if language is None or not language.dedupe_diagnostics:
            return None
        order = {name: index for index, name in enumerate(language.servers)}
        return lambda part: order.get(part.label, len(order))  # the hub's own parts come last

    def _publish_diagnostics(self, uri: str, diagnostics: list[dict[str, Any]], version: int | None) -> None:
        """To every session that has the document open; one that nobody has open, to every session."""
        holders = self._holders.get(uri)
        for session in list(holders) if holders else list(self.sessions):
            if session.state != "closed":
                session.publish_diagnostics(uri, diagnostics)

    def accept_pushed_diagnostics(self, backend: Backend, params: dict[str, Any]) -> None:
        if not backend.spec.allows("diagnostics"):
            return
        uri = params.get("uri")
        diagnostics = params.get("diagnostics")
        if isinstance(uri, str) and isinstance(diagnostics, list):
            version = params.get("version")
            # An unversioned push may be a part (typescript-language-server: the syntax before the types) or about
            # older content: from a server whose verdict lspHub.diagnostics asks for, or one still loading its
            # project (a syntax-only view), it is shown but does not count as its report on the content.
            if isinstance(version, int) or not (backend.loading_project or backend.spec.diagnostics_via_tsserver):
                self.reports.reported(backend.uid, uri, version if isinstance(version, int) else None)
            self.diagnostics.put(uri, Part(backend.uid, "push", backend.name), diagnostics, params.get("version"))

    def accept_asked_diagnostics(self, backend: Backend, uri: str, diagnostics: list[dict[str, Any]],
                                 version: int, asked_when: int) -> None:
        """A server's verdict on `version` of a document, asked for by the hub (`diagnostics_via_tsserver`) at
        `asked_when` (on the report tracker's clock): it replaces the server's pushed diagnostics and counts as its
        report on that version, made then."""
        if not backend.spec.allows("diagnostics"):
            return
        self.reports.reported(backend.uid, uri, version, asked=True, when=asked_when)
        self.diagnostics.put(uri, Part(backend.uid, "push", backend.name), diagnostics, version)

    def _schedule_pull(self, backend: Backend, uri: str, delay: float | None = None) -> None:
        """Pull diagnostics from servers that offer textDocument/diagnostic, debounced per document."""
        if backend.state != State.RUNNING or not backend.spec.allows("diagnostics"):
            return
        if not backend.supports("textDocument/diagnostic"):
            return
        key = (backend.uid, uri)
        timer = self._pull_timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        wait = self.config.hub.diagnostics_debounce_seconds if delay is None else delay
        self._pull_timers[key] = asyncio.get_running_loop().call_later(
            wait, lambda: self.spawn(self._pull(backend, uri))
        )

    def pull_now(self, backend: Backend, uri: str) -> None:
        """Pull `uri`'s diagnostics from `backend` at once (if it pulls): a report made from here on."""
        self._schedule_pull(backend, uri, delay=0.0)

    async def refresh_pulled_diagnostics(self, backend: Backend) -> None:
        for uri in list(backend.open_documents):
            self._schedule_pull(backend, uri, delay=0.0)

    async def _pull(self, backend: Backend, uri: str) -> None:
        key = (backend.uid, uri)
        self._pull_timers.pop(key, None)
        if uri not in backend.open_documents:
            return
        params: dict[str, Any] = {"textDocument": {"uri": uri}}
        options = backend.registered_options("textDocument/diagnostic") or backend.capabilities.get(
            "diagnosticProvider"
        )
        if isinstance(options, dict) and options.get("identifier"):
            params["identifier"] = options["identifier"]
        if key in self._pull_result_ids:
            params["previousResultId"] = self._pull_result_ids[key]
        document = self._documents.get(uri)
        pulled_version = document.version if document else None
        pulled_when = self.reports.now()  # the report is about the workspace as it is now
        try:
            # A large report arrives as text (RawResult): parsed here.
            report = materialize(await backend.request("textDocument/diagnostic", params).future)
        except ResponseFailure as exc:
            logger.info("%s: pulling diagnostics for %s failed: %s", backend.name, uri, exc.message)
            return
        if not isinstance(report, dict) or uri not in backend.open_documents:
            return
        if isinstance(report.get("resultId"), str):
            self._pull_result_ids[key] = report["resultId"]
        if document is not self._documents.get(uri):
            return  # closed (and maybe opened again) meanwhile: this report is about a document that is gone
        if pulled_version is not None:
            self.reports.reported(backend.uid, uri, pulled_version, when=pulled_when)
        if report.get("kind") == "full":
            self.diagnostics.put(uri, Part(backend.uid, "pull", backend.name), report.get("items") or [])


class Workspaces:
    """The workspaces of one hub, by (root, configuration fingerprint).

    With `keep_warm` (the daemons), a workspace outlives its last session for `idle_shutdown_seconds` (its index
    stays warm) and until its servers have stopped through their own idle timer; without (stdio), its servers stop
    when its last session leaves."""

    def __init__(self, *, keep_warm: bool = False) -> None:
        self.keep_warm = keep_warm
        self._by_key: dict[tuple[str, str], Workspace] = {}
        self._everything: set[Workspace] = set()  # with those forgotten but still stopping

    def __iter__(self) -> Iterator[Workspace]:
        return iter(list(self._by_key.values()))

    def join(self, session: ClientView, config: Config, trusted_roots: frozenset[Path],
             folders: list[str]) -> Workspace:
        key = (folders[0] if folders else os.getcwd(), config_fingerprint(config, trusted_roots))
        workspace = self._by_key.get(key)
        if workspace is None or workspace.closed:
            workspace = Workspace(config, trusted_roots, folders, key=key, on_empty=self._forget)
            self._by_key[key] = workspace
            self._everything.add(workspace)
        workspace.join(session)
        return workspace

    def _forget(self, workspace: Workspace) -> None:
        if self._by_key.get(workspace.key) is workspace:
            del self._by_key[workspace.key]
        if not workspace.has_live_backends():
            self._everything.discard(workspace)

    async def leave(self, session: ClientView, workspace: Workspace, *, grace_seconds: float = 1.0) -> None:
        """`session` leaves `workspace` (shutdown, exit, or its connection closed)."""
        workspace.release(session)
        if workspace.sessions:
            return
        if not self.keep_warm:
            self._forget(workspace)
            await workspace.stop(grace_seconds=grace_seconds)
            self._everything.discard(workspace)
        else:
            workspace.linger(workspace.config.hub.idle_shutdown_seconds)

    async def stop_all(self) -> None:
        workspaces = list({*self._by_key.values(), *self._everything})
        self._by_key.clear()
        await asyncio.gather(*(workspace.stop() for workspace in workspaces), return_exceptions=True)

    def kill_all(self) -> None:
        for workspace in [*self._everything, *self._by_key.values()]:
            workspace.pool.kill_all()


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


def under(path: str | None, root: str) -> bool:
    return path is not None and paths.is_within(path, root)
