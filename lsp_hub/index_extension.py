"""The code index of a workspace, wired into its sessions: builds, freshness, progress, lspHub.* commands,
stand-in answers.

The index itself (`lsp_hub.index`) is a library that knows nothing of LSP; this module is the adapter. CPU work
(building, queries) runs in worker threads (builds fan out to processes inside the library) so the event loop
keeps forwarding messages meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_hub.diagnostics import Part
from lsp_hub.documents import Document, SharedDocument, uri_to_path
from lsp_hub.index_stand_in import STAND_INS
from lsp_hub.jsonrpc import INVALID_PARAMS, ResponseFailure
from lsp_hub.runners import ask_backend, server_locations
from lsp_hub.session import HubCommand, Session, SessionExtension

if TYPE_CHECKING:
    from lsp_hub.backends import Backend
    from lsp_hub.client_view import ClientView
    from lsp_hub.config.model import Config
    from lsp_hub.index.syntax_checkers import SyntaxCheckers
    from lsp_hub.index.workspace import WorkspaceIndex
    from lsp_hub.workspace import Workspace

logger = logging.getLogger(__name__)

SYNTAX_OWNER = 0  # the hub's own diagnostics part (backends have uids from 1)
UPDATE_DEBOUNCE_SECONDS = 0.3
GRAPH_QUERIES = frozenset(("repo_map", "relevant_files"))  # after these, the hub keeps the graphs ready for updates
WAIT_FOR_BUILD_SECONDS = 10.0
POLL_SECONDS = 10.0
PROGRESS_TOKEN = "lsp-hub/index"
STOP_BUILD_SECONDS = 1.0  # how long closing waits for a stopped build's thread to notice


class SharedIndex:
    """The code index of one workspace: built once, shared by every session of the workspace, and living as long
    as the workspace (it is one of `Workspace.attachments`; the workspace's `stop` closes it).

    Documents are indexed with the text the backends see (the latest writer's, `Workspace.document`); syntax
    diagnostics go through the workspace's diagnostic store. Progress of a build goes to every session of the
    workspace at the build's start that supports work-done progress; messages for the user go to every session.
    """

    def __init__(self, workspace: Workspace, session: Session) -> None:
        from lsp_hub.index.workspace import WorkspaceIndex

        self.workspace = workspace
        self.indexes: dict[str, WorkspaceIndex] = {}
        self.built = asyncio.Event()
        self.builds = 0  # full builds started (the first, and those of no-folder project roots)
        self._building: asyncio.Task[None] | None = None
        self._update_timers: dict[str, asyncio.TimerHandle] = {}
        self._update_due: dict[str, float] = {}  # loop time each pending update is due at
        self._updating: set[asyncio.Task[None]] = set()  # updates under way (their timer fired)
        self._preparing: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._syntax_uris: set[str] = set()
        self._oversized: set[str] = set()  # open documents over the size cap, already taken off the index
        self.no_folder = False  # the client named no workspace folder: roots come from the files it opens
        self.reason: str | None = None  # why the index covers what it covers, when that is not the folders
        self._rootless: dict[str, str] = {}  # open documents in no project (no-folder mode) -> why
        self._root_builds: set[asyncio.Task[None]] = set()
        self._progress_sessions: list[ClientView] = []
        self._syntax_checkers: dict[str, SyntaxCheckers] = {}  # per indexed root: the parsers it may run
        self.closed = False
        if _client_named_a_folder(session.init_params):
            for folder in session.folders:
                try:
                    self.indexes[folder] = WorkspaceIndex(folder)
                except OSError as exc:
                    logger.error("cannot index %s: %s", folder, exc)
        else:
            # A single file opened from a shell: the session's folder is then the hub's current directory, which may
            # be $HOME or /usr. Index the project roots of the files opened instead, as they are opened.
            self.no_folder = True
            self.reason = ("no workspace folder: indexing the project roots of open files (the nearest directory "
                           "with a root marker), and nothing until one is opened")
        self.builds += 1
        self._building = workspace.spawn(self._build_all())

    # ------------------------------------------------------------------------------------------------ lifecycle
    async def close(self) -> None:
        """The workspace ends: a build under way is abandoned (its worker processes killed) rather than waited for."""
        if self.closed:
            return
        self.closed = True
        if self._poller is not None:
            self._poller.cancel()
        for timer in self._update_timers.values():
            timer.cancel()
        for index in self.indexes.values():
            index.stop()
        builds = [task for task in (self._building, *self._root_builds) if task is not None and not task.done()]
        if builds:
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.gather(*builds, return_exceptions=True)),
                                       STOP_BUILD_SECONDS)
            except TimeoutError:
                # Its thread still runs and may still write to the caches: leave them open, the process is ending.
                logger.warning("the index build did not stop within %.1f s", STOP_BUILD_SECONDS)
                return
        for index in self.indexes.values():
            await asyncio.to_thread(index.close)

    async def _build_all(self) -> None:
        from lsp_hub.index.walk import IndexingCancelled

        progress = await self._progress_begin("Indexing workspace")
        loop = asyncio.get_running_loop()
        last_report = 0.0

        def report(done: int, total: int) -> None:  # called from the build thread
            nonlocal last_report
            now = time.monotonic()
            if progress and (now - last_report > 0.2 or done == total):
                last_report = now
                percentage = int(100 * done / total) if total else 100
                loop.call_soon_threadsafe(self._progress, "report", f"Indexing {done}/{total} files", percentage)

        try:
            for folder, index in list(self.indexes.items()):
                started = time.perf_counter()
                statistics = await asyncio.to_thread(index.build, report)
                logger.info("indexed %s: %s files, %s symbols in %.2f s", folder, statistics.get("files"),
                            statistics.get("symbols"), time.perf_counter() - started)
        except IndexingCancelled:
            logger.info("index build abandoned: the workspace is closing")
            return
        except Exception:
            logger.exception("building the index failed")
        finally:
            self.built.set()
            if progress:
                self._progress("end", "Index ready", None)
        # Documents opened while building were indexed from disk: their in-memory text goes in now.
        for document in self.workspace.documents():
            self._schedule_update(document.uri, delay=0.0)

    async def _progress_begin(self, title: str) -> bool:
        """Progress goes to the sessions of the workspace that support it, as they are when the build starts."""
        sessions = [s for s in self.workspace.sessions
                    if s.state != "closed" and s.client_supports("window", "workDoneProgress")]

        async def create(session: ClientView) -> ClientView | None:
            try:
                await asyncio.wait_for(session.request("window/workDoneProgress/create", {"token": PROGRESS_TOKEN}),
                                       5)
            except Exception as exc:
                logger.info("no progress reporting: %s", exc)
                return None
            return session

        accepted = [s for s in await asyncio.gather(*(create(s) for s in sessions)) if s is not None]
        self._progress_sessions = accepted
        for session in accepted:
            session.notify("$/progress", {"token": PROGRESS_TOKEN, "value": {
                "kind": "begin", "title": title, "cancellable": False, "percentage": 0}})
        return bool(accepted)

    def _progress(self, kind: str, message: str, percentage: int | None) -> None:
        value: dict[str, Any] = {"kind": kind, "message": message}
        if percentage is not None:
            value["percentage"] = percentage
        for session in self._progress_sessions:
            if session.state != "closed":
                session.notify("$/progress", {"token": PROGRESS_TOKEN, "value": value})

    # ------------------------------------------------------------------------------------------------ freshness
    def poll(self) -> None:
        """A session whose client cannot watch files for us: poll mtimes (once for the workspace)."""
        if self._poller is None and not self.closed:
            self._poller = self.workspace.spawn(self._poll())

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            for index in list(self.indexes.values()):
                if not await self._refresh(index):
                    return

    async def _refresh(self, index: WorkspaceIndex) -> bool:
        """A warm build (walks and stats, parses what changed: about 30 ms on the standard library); False once the
        index is stopped."""
        from lsp_hub.index.walk import IndexingCancelled

        try:
            await asyncio.to_thread(index.build)
        except IndexingCancelled:
            return False
        except Exception:
            logger.exception("refreshing the index failed")
        return True

    def index_for(self, uri_or_path: str | None) -> WorkspaceIndex | None:
        """The index of the workspace folder holding a file (the first folder when no file is named)."""
        if not self.indexes:
            return None
        if uri_or_path:
            path = uri_to_path(uri_or_path) if "://" in uri_or_path else uri_or_path
            if path:
                candidates = [f for f in self.indexes if path == f or path.startswith(f.rstrip("/") + "/")]
                if candidates:
                    return self.indexes[max(candidates, key=len)]
        return next(iter(self.indexes.values()))

    def syntax_checkers(self, uri_or_path: str | None) -> SyntaxCheckers:
        """The languages' own parsers the index may run for a file: TypeScript from the workspace only when the
        root holding the file (or, for text from elsewhere, the first root) is trusted (syntax_parsers.py)."""
        from lsp_hub.syntax_parsers import syntax_checkers_for

        index = self.index_for(uri_or_path)
        if index is not None:
            root = str(index.root)
        elif self.workspace.folders:
            root = self.workspace.folders[0]
        else:  # no project at all: the file's own directory, never trusted unless the user said so
            path = (uri_to_path(uri_or_path) if uri_or_path and "://" in uri_or_path else uri_or_path) or "/"
            root = os.path.dirname(os.path.abspath(path))
        checkers = self._syntax_checkers.get(root)
        if checkers is None:
            checkers = syntax_checkers_for(Path(root), trusted=self.workspace.is_trusted(root),
                                           config=self.workspace.config)
            self._syntax_checkers[root] = checkers
            if checkers.typescript is None:
                logger.info("TypeScript syntax checks under %s use tree-sitter: %s", root,
                            checkers.typescript_missing)
        return checkers

    def document_changed(self, uri: str) -> None:
        if self.no_folder:
            self._index_project_of(uri)
        self._schedule_update(uri)

    def _index_project_of(self, uri: str) -> None:
        """No-folder mode: index the project an opened file belongs to (once), or say why there is none."""
        from lsp_hub.index.workspace import WorkspaceIndex

        if uri in self._rootless:
            return
        path = uri_to_path(uri)
        if path is None:
            self._rootless[uri] = f"{uri} is not a file"
            return
        if any(path.startswith(folder.rstrip("/") + "/") for folder in self.indexes):
            return
        markers = _root_markers(self.workspace.config)
        root, why_not = _project_root(path, markers)
        if root is None:
            self._rootless[uri] = why_not
            logger.info("not indexing around %s: %s", path, why_not)
            return
        try:
            index = WorkspaceIndex(root)
        except OSError as exc:
            self._rootless[uri] = f"cannot index {root}: {exc}"
            return
        self.indexes[root] = index
        logger.info("no workspace folder: indexing %s, the project root of %s", root, path)
        self.builds += 1
        task = self.workspace.spawn(self._build_root(index))
        self._root_builds.add(task)
        task.add_done_callback(self._root_builds.discard)

    async def _build_root(self, index: WorkspaceIndex) -> None:
        from lsp_hub.index.walk import IndexingCancelled

        try:
            await asyncio.to_thread(index.build)
        except IndexingCancelled:
            return
        except Exception:
            logger.exception("building the index of %s failed", index.root)
            return
        for document in self.workspace.documents():  # their in-memory text, over what the build read from disk
            if index.relative_path(uri_to_path(document.uri) or document.uri) is not None:
                self._schedule_update(document.uri, delay=0.0)

    def document_closed(self, uri: str) -> None:
        """A session closed `uri`: the index takes the text the backends now see, or the file on disk once no
        session has it open."""
        if self.workspace.document(uri) is None:
            self._rootless.pop(uri, None)
            self._oversized.discard(uri)
            self._clear_syntax_diagnostics(uri)
        self._schedule_update(uri)

    def watched_files_changed(self, changes: list[dict[str, Any]]) -> None:
        for change in changes:
            uri = change.get("uri")
            if isinstance(uri, str) and self.workspace.document(uri) is None:
                self._schedule_update(uri)

    def _schedule_update(self, uri: str, delay: float = UPDATE_DEBOUNCE_SECONDS) -> None:
        """Update `uri` in the index `delay` seconds from now, unless asked again before then (debounced).

        A timer already due no later is kept and told the new time (it re-arms when it fires early): typing
        does not cancel and create a timer per keystroke."""
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        timer = self._update_timers.get(uri)
        if timer is not None and not self.closed and timer.when() <= due:
            self._update_due[uri] = due
            return
        if timer is not None:
            del self._update_timers[uri]
            timer.cancel()
        if self.closed:
            return
        self._update_due[uri] = due
        self._update_timers[uri] = loop.call_at(due, self._update_when_due, uri)

    def _update_when_due(self, uri: str) -> None:
        due = self._update_due.get(uri)
        loop = asyncio.get_running_loop()
        if due is not None and due > loop.time():
            self._update_timers[uri] = loop.call_at(due, self._update_when_due, uri)
            return
        self._update_due.pop(uri, None)
        self._update_timers.pop(uri, None)  # fired: a change from now on arms a new one
        task = self.workspace.spawn(self._update(uri))
        self._updating.add(task)
        task.add_done_callback(self._updating.discard)

    async def _update(self, uri: str) -> None:
        path = uri_to_path(uri)
        index = self.index_for(uri)
        if path is None or self.closed:
            return
        document = self.workspace.document(uri)
        text = self._document_bytes(document) if document is not None else None
        if document is not None and text is None:  # over the size cap
            if uri in self._oversized:
                return  # already back on the disk version, diagnostics cleared: nothing more per keystroke
            self._oversized.add(uri)
            self._clear_syntax_diagnostics(uri)
        else:
            self._oversized.discard(uri)
        try:
            if index is not None and index.relative_path(path) is not None:
                await asyncio.to_thread(index.update_file, path, text)  # None: the file on disk, itself capped
        except (ValueError, OSError) as exc:
            logger.debug("not indexing %s: %s", uri, exc)
        if document is not None and text is not None:
            await self._syntax_diagnostics(document, text)

    def _document_bytes(self, document: SharedDocument) -> bytes | None:
        """An open document's text as UTF-8, or None (said once to the user) when it is over the size cap: parsing
        a multi-megabyte document on every change stalled the whole hub (up to 4 s per keystroke at 5 MB)."""
        cap = self.workspace.config.hub.max_document_bytes
        # Characters never outnumber UTF-8 bytes: a text longer than the cap is over it without encoding it.
        text = document.text
        data = None if len(text) > cap else text.encode("utf-8", "surrogatepass")
        if data is not None and len(data) <= cap:
            return data
        name = uri_to_path(document.uri) or document.uri
        self.workspace.tell_user(f"lsp-hub: {name} is larger than {cap:,} bytes (hub.max_document_bytes): it gets "
                                 "no syntax diagnostics from the hub and the index keeps its version on disk.")
        return None

    def _clear_syntax_diagnostics(self, uri: str) -> None:
        if uri in self._syntax_uris:
            self._syntax_uris.discard(uri)
            self.workspace.diagnostics.clear_uri(uri, {SYNTAX_OWNER})

    async def _syntax_diagnostics(self, document: SharedDocument, text: bytes) -> None:
        """Syntax errors as diagnostics, for documents no language server is there to check."""
        from lsp_hub.backends import State
        from lsp_hub.index.syntax_checkers import syntax_check_result, syntax_language_for_path

        path = uri_to_path(document.uri) or document.uri
        language = syntax_language_for_path(path)
        served = any(b.state in (State.RUNNING, State.STARTING)
                     for b in self.workspace.backends_for_uri(document.uri, "diagnostics"))
        if language is None or served:
            self._clear_syntax_diagnostics(document.uri)
            return
        source, version = document.source, document.version
        checkers = self.syntax_checkers(document.uri)  # the same parser lspHub.syntaxCheck would use
        result = await asyncio.to_thread(syntax_check_result, text, language, path, checkers)
        current = self.workspace.document(document.uri)
        if current is not document or current.source is not source or current.version != version:
            return  # an older text: a newer check is on its way
        diagnostics = [{"range": error["range"], "message": error["message"], "severity": 1, "source": "lsp-hub"}
                       for error in result.get("errors", [])]
        self._syntax_uris.add(document.uri)
        self.workspace.diagnostics.put(document.uri, Part(SYNTAX_OWNER, "syntax", "lsp-hub"), diagnostics,
                                       source.version)

    # ------------------------------------------------------------------------------------------------ queries
    async def query(self, function: str | Callable[..., Any], args: dict[str, Any], anchor: str | None,
                    refresh: bool = True) -> Any:
        """`function(index, args)` on the index holding `anchor`, once it is built and has every change made so far;
        `refresh` false for a query that goes on from another's answer (it must see the same files)."""
        from lsp_hub.index import api

        call = getattr(api, function) if isinstance(function, str) else function
        index = self.index_for(anchor)
        if index is None:
            raise ResponseFailure(INVALID_PARAMS, f"lsp-hub indexes nothing: {self.reason or 'no workspace folder'}")
        if not self.built.is_set():
            # Past the wait, answer from what is indexed so far: the result then says complete: false.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.built.wait()), WAIT_FOR_BUILD_SECONDS)
        await self._apply_pending_updates()  # an edit just made must be in the answer, debounced or not
        if refresh and self._poller is not None and self.built.is_set():
            # Nobody tells this workspace of changes on disk (a `lsp-hub query` or MCP session): an agent that has
            # just written a file with its own tool asks next, and must not wait for the next poll.
            await self._refresh(index)
        try:
            result = await asyncio.to_thread(call, index, args)
        except ValueError as exc:
            raise ResponseFailure(INVALID_PARAMS, str(exc)) from exc
        if function in GRAPH_QUERIES and self._preparing is None:
            # Graphs kept for the next change: a map answered from a stored ranking built none.
            self._preparing = self.workspace.spawn(self._prepare_graphs(index))
        return result

    async def _apply_pending_updates(self) -> None:
        for uri in list(self._update_timers):
            timer = self._update_timers.pop(uri, None)
            self._update_due.pop(uri, None)
            if timer is not None:
                timer.cancel()
                await self._update(uri)
        if self._updating:
            await asyncio.gather(*self._updating, return_exceptions=True)

    async def _prepare_graphs(self, index: WorkspaceIndex) -> None:
        from lsp_hub.index import api

        try:
            await asyncio.to_thread(api.prepare_graphs, index)
        except Exception:  # an optimisation only: the next query builds what it needs itself
            logger.exception("preparing the index graphs failed")
        finally:
            self._preparing = None

    def status(self) -> dict[str, Any]:
        notes: dict[str, Any] = {}
        if self.reason is not None:
            notes["reason"] = self.reason
        if self._rootless:
            notes["unindexedFiles"] = [{"uri": uri, "reason": why} for uri, why in sorted(self._rootless.items())]
        if not self.indexes:
            return {"index": {"state": "none", "files": 0, "symbols": 0, "roots": [], **notes}} if notes else {}
        parts = [index.statistics() for index in self.indexes.values()]
        languages: dict[str, int] = {}
        for part in parts:
            for language, count in part.get("languages", {}).items():
                languages[language] = languages.get(language, 0) + count
        times = [p["lastBuildSeconds"] for p in parts if p.get("lastBuildSeconds") is not None]
        return {"index": {
            "state": "ready" if all(p["state"] == "ready" for p in parts) else "building",
            "files": sum(p.get("files", 0) for p in parts),
            "symbols": sum(p.get("symbols", 0) for p in parts),
            "languages": dict(sorted(languages.items())),
            "lastBuildSeconds": max(times) if times else None,
            "skippedFiles": sum(p.get("skippedFiles", 0) for p in parts),
            "roots": [str(index.root) for index in self.indexes.values()],
            "builds": self.builds,  # one per workspace, however many sessions share it
            # Which parser judges syntax, per root asked so far (the TypeScript helper's pid once it runs).
            "syntaxCheckers": {root: checkers.describe() for root, checkers in self._syntax_checkers.items()},
            **notes,
        }}


class IndexExtension(SessionExtension):
    """One session's side of its workspace's `SharedIndex`: its hub commands, its watched-file registration, its
    stand-in answers. The index itself is the workspace's, made by the first session to initialize."""

    ATTACHMENT = "index"

    def __init__(self) -> None:
        self.session: Session | None = None
        self.shared: SharedIndex | None = None
        self._watching: asyncio.Task[None] | None = None

    def on_initialized(self, session: Session) -> None:
        self.session = session
        workspace = session.workspace
        shared = workspace.attachments.get(self.ATTACHMENT)
        if not isinstance(shared, SharedIndex) or shared.closed:
            shared = SharedIndex(workspace, session)
            workspace.attachments[self.ATTACHMENT] = shared
        else:
            logger.info("session joins the workspace's index (%d build(s) so far)", shared.builds)
        self.shared = shared
        self._watching = session.spawn(self._watch_files(session, shared))

    async def close(self) -> None:
        """The session ends; the index stays with its workspace."""
        if self._watching is not None:
            self._watching.cancel()

    async def _watch_files(self, session: Session, shared: SharedIndex) -> None:
        """Once built, ask this client to watch files for the index; a client that cannot gets polled mtimes."""
        await shared.built.wait()
        if session.state == "closed":
            return
        if session.client_supports("workspace", "didChangeWatchedFiles", "dynamicRegistration"):
            registration = {"id": "lsp-hub/index-watcher", "method": "workspace/didChangeWatchedFiles",
                            "registerOptions": {"watchers": [{"globPattern": "**/*"}]}}
            _, answer = session.protocol.request("client/registerCapability", {"registrations": [registration]})
            answer.add_done_callback(_log_refusal)
        else:
            shared.poll()

    @property
    def indexes(self) -> dict[str, WorkspaceIndex]:
        return self.shared.indexes if self.shared is not None else {}

    def index_for(self, uri_or_path: str | None) -> WorkspaceIndex | None:
        return self.shared.index_for(uri_or_path) if self.shared is not None else None

    def on_document_changed(self, session: Session, document: Document) -> None:
        if self.shared is not None:
            self.shared.document_changed(document.uri)

    def on_document_closed(self, session: Session, uri: str) -> None:
        if self.shared is not None:
            self.shared.document_closed(uri)

    def on_watched_files_changed(self, session: Session, changes: list[dict[str, Any]]) -> None:
        if self.shared is not None:
            self.shared.watched_files_changed(changes)

    @staticmethod
    def max_document_bytes(session: Session) -> int:
        """The size cap for open documents (`hub.max_document_bytes`)."""
        return session.workspace.config.hub.max_document_bytes

    # ------------------------------------------------------------------------------------------------ commands
    def commands(self) -> dict[str, HubCommand]:
        return {
            "lspHub.repoMap": self._command("repo_map", ("focusFiles",)),
            "lspHub.relevantFiles": self._command("relevant_files", ("targets",)),
            "lspHub.dependents": self._dependents,
            "lspHub.callers": self._callers,
            "lspHub.references": self._references,
            "lspHub.syntaxCheck": self._syntax_check,
        }

    def _command(self, function: str, locating_keys: tuple[str, ...]) -> HubCommand:
        def run(session: Session, arguments: list[Any]) -> Any:
            args = _single_object(arguments)
            anchor = None
            for key in locating_keys:
                value = args.get(key)
                if isinstance(value, list) and not all(isinstance(item, str) for item in value):
                    raise ResponseFailure(INVALID_PARAMS, f"{key} must be a list of file paths (strings)")
                anchor = value[0] if isinstance(value, list) and value else value if isinstance(value, str) else None
                if anchor:
                    break
            return self._query(function, args, anchor)

        return run

    def _dependents(self, session: Session, arguments: list[Any]) -> Any:
        """`lspHub.dependents`: the index's answer, with the limit and the time budget of `[hub]`
        (dependents_limit, dependents_timeout_ms) unless the request names a limit."""
        args = _single_object(arguments)
        files = args.get("files")
        if not isinstance(files, list) or not all(isinstance(item, str) for item in files):
            raise ResponseFailure(INVALID_PARAMS, "lspHub.dependents needs {files: [uri or path], limit?}")
        options = session.workspace.config.hub
        args = {**args, "limit": args.get("limit", options.dependents_limit)}

        async def run() -> Any:
            result = await self._query("dependents", args, files[0] if files else None)
            result["timeoutMs"] = options.dependents_timeout_ms
            return result

        return run()

    async def _query(self, function: str | Callable[..., Any], args: dict[str, Any], anchor: str | None,
                     refresh: bool = True) -> Any:
        if self.shared is None:
            raise ResponseFailure(INVALID_PARAMS, "lsp-hub indexes nothing: no workspace folder")
        return await self.shared.query(function, args, anchor, refresh)

    def _callers(self, session: Session, arguments: list[Any]) -> Any:
        """`lspHub.callers`: the index's callers at once, then confirmed and completed by the language server that
        serves the definitions' file (call hierarchy, else references), within `timeoutMs`; `servers: false` asks
        the index alone."""
        args = _single_object(arguments)
        ask_servers = args.get("servers", True)
        timeout_ms = args.get("timeoutMs", SERVER_CALLERS_TIMEOUT_SECONDS * 1000)
        if not isinstance(ask_servers, bool):
            raise ResponseFailure(INVALID_PARAMS, "servers must be true or false")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float) or not 0 <= timeout_ms <= 600_000:
            raise ResponseFailure(INVALID_PARAMS, "timeoutMs must be a number of milliseconds up to 600000")
        uri = args.get("uri")
        anchor = uri if isinstance(uri, str) else None

        async def run() -> Any:
            from lsp_hub.index import api

            found = await self._query("callers", args, anchor)
            found["servers"] = []
            if not ask_servers:
                return found
            asked = await server_call_sites(session, found["definitions"], timeout_ms / 1000)
            if not asked.servers:
                return found  # no running server offers call hierarchy or references here: the index alone
            depth = args.get("depth") or 1
            merged = await self._query(
                lambda index, _args: api.callers_with_server_sites(index, found, asked.sites, depth), {}, anchor,
                refresh=False)
            merged["servers"] = asked.servers
            if any(not server["complete"] for server in asked.servers):
                merged["complete"] = False
            return merged

        return run()

    def _references(self, session: Session, arguments: list[Any]) -> Any:
        """`lspHub.references` {uri, position, includeDeclaration?=true}: the document's servers' references (asked
        as `textDocument/references` is) completed with the index's uses in the files they listed nothing in, each
        location with its `origin` (server, index, both), `uncovered` naming those files, and `servers`."""
        args = _single_object(arguments)
        uri, position = args.get("uri"), args.get("position")
        include_declaration = args.get("includeDeclaration", True)
        if not isinstance(uri, str) or not isinstance(position, dict) or not isinstance(include_declaration, bool):
            raise ResponseFailure(INVALID_PARAMS, "lspHub.references needs {uri, position, includeDeclaration?}")
        params = {"textDocument": {"uri": uri}, "position": position,
                  "context": {"includeDeclaration": include_declaration}}
        from_servers = server_locations(session, REFERENCES, params)
        asked = [backend.name for backend in session.workspace.backends_for_uri(uri, REFERENCES)]

        async def run() -> Any:
            failure: str | None = None
            try:
                answer = await from_servers
            except ResponseFailure as error:  # the index still answers; the result says the servers did not
                answer, failure = None, error.message
            try:
                covered = await self.covering_references(session, params, answer, wait_for_build=True)
            except ResponseFailure as error:  # a file the index does not hold: the servers' answer alone
                from lsp_hub.index.references import cover_server_locations

                covered = {**cover_server_locations([], answer if isinstance(answer, list) else None),
                           "complete": False, "indexError": error.message}
            covered["servers"] = [{"name": name, "complete": failure is None} for name in asked]
            if failure is not None:
                covered["complete"] = False
                covered["serverError"] = failure
            return covered

        return run()

    def complete_references(self, session: Session, params: Any, from_servers: Any) -> Awaitable[Any] | None:
        """An LSP client's `textDocument/references`: the servers' Locations and the index's in the files they left
        out, as plain Locations (the spec's shape; `lspHub.references` says where each came from). An index still
        building adds nothing rather than delay the answer."""
        if self.shared is None or not self.shared.built.is_set() or not isinstance(params, dict):
            return None

        async def run() -> Any:
            try:
                covered = await self.covering_references(session, params, from_servers, wait_for_build=False)
            except ResponseFailure as error:  # a file outside the index, say: the servers' answer stands
                logger.debug("references not completed from the index: %s", error.message)
                return from_servers
            if not covered["uncovered"]:
                return from_servers
            logger.info("references: %d location(s) from the index in %d file(s) no server listed",
                        sum(1 for entry in covered["locations"] if entry["origin"] == "index"),
                        len(covered["uncovered"]))
            return [{"uri": entry["uri"], "range": entry["range"]} for entry in covered["locations"]]

        return run()

    async def covering_references(self, session: Session, params: dict[str, Any], from_servers: Any, *,
                                  wait_for_build: bool) -> dict[str, Any]:
        """`{symbol, definitions, locations: [{uri, range, origin}], uncovered: [uri], complete}`: the servers'
        Locations (`from_servers`) completed with the index's uses of the same definition."""
        from lsp_hub.index import api
        from lsp_hub.index.references import cover_server_locations
        from lsp_hub.index.workspace import file_uri

        uri = (params.get("textDocument") or {}).get("uri")
        if not isinstance(uri, str) or self.shared is None:
            raise ResponseFailure(INVALID_PARAMS, "references need textDocument.uri")
        include_declaration = bool((params.get("context") or {}).get("includeDeclaration", True))
        args = {"uri": uri, "position": params.get("position"), "includeDeclaration": include_declaration}
        index = self.index_for(uri)

        def text_of(path: str) -> str | None:  # the text the servers see (an open document), else the disk
            if index is None:
                return None
            document = session.workspace.document(file_uri(index.root, path))
            return document.text if document is not None else _read_quietly(str(index.root / path))

        locations = [entry for entry in from_servers if isinstance(entry, dict)] \
            if isinstance(from_servers, list) else None
        found = await self._query(
            lambda index, query: api.references(index, query, text_of=text_of, server_locations=locations), args,
            uri, refresh=wait_for_build)
        covered = cover_server_locations(found["references"], locations)
        return {**{key: value for key, value in found.items() if key != "references"}, **covered}

    def _syntax_check(self, session: Session, arguments: list[Any]) -> Any:
        from lsp_hub.index import api
        from lsp_hub.index.syntax_checkers import NO_EXTERNAL_CHECKERS

        args = _single_object(arguments)
        uri = args.get("uri")
        if not isinstance(uri, str):
            raise ResponseFailure(INVALID_PARAMS, "lspHub.syntaxCheck needs {uri: string, text?: string}")
        # Text sent with the request wins (an agent checks content before writing it), then the session's open
        # document, then the disk.
        document = None if isinstance(args.get("text"), str) else session.documents.get(uri)

        # Only files inside the indexed roots may be read from disk (the result quotes them); text the client
        # sent, or has open, may come from anywhere.
        roots = [index.root for index in self.indexes.values()]

        checkers = self.shared.syntax_checkers(uri) if self.shared is not None else NO_EXTERNAL_CHECKERS

        async def run() -> Any:
            try:
                return await asyncio.to_thread(api.syntax_check, args, document.text if document else None,
                                               self.index_for(uri), readable_roots=roots,
                                               max_file_size=self.max_document_bytes(session), checkers=checkers)
            except ValueError as exc:
                raise ResponseFailure(INVALID_PARAMS, str(exc)) from exc

        return run()

    # ------------------------------------------------------------------------------------------------ status
    def status(self, session: Session) -> dict[str, Any]:
        return self.shared.status() if self.shared is not None else {}

    # ------------------------------------------------------------------------------------------------ stand-in
    def stand_in(self, session: Session, name: str, params: Any) -> Any:
        """Answers from the index when no running server gave one (a language with no server, say)."""
        handler = STAND_INS.get(name)
        if handler is None or not isinstance(params, dict) or self.shared is None:
            return None
        uri = (params.get("textDocument") or {}).get("uri") or (params.get("item") or {}).get("uri")
        return self._query(handler, params, uri if isinstance(uri, str) else None)


PREPARE_CALL_HIERARCHY = "textDocument/prepareCallHierarchy"
INCOMING_CALLS = "callHierarchy/incomingCalls"
REFERENCES = "textDocument/references"
SERVER_CALLERS_TIMEOUT_SECONDS = 5.0  # how long lspHub.callers waits for servers by default
MAX_DEFINITIONS_ASKED = 4  # a name with more definitions is a question for the index; servers get the first ones
MAX_ITEMS_FOLLOWED = 2  # call hierarchy items of one position whose incoming calls are asked


@dataclass
class ServerCallSites:
    """What the servers said about the direct callers: their call sites (`{location, caller}`, caller as the
    server names it) and, per server asked, `{name, method, complete}` (complete: it answered in time)."""

    sites: list[dict[str, Any]] = field(default_factory=list)
    servers: list[dict[str, Any]] = field(default_factory=list)


def _confirming_backend(session: Session, uri: str) -> tuple[Backend, str] | None:
    """The running server that can list a definition's callers, and how: the first in precedence order that
    offers call hierarchy, else the first that offers references."""
    from lsp_hub.backends import State

    for method in (PREPARE_CALL_HIERARCHY, REFERENCES):
        for backend in session.workspace.backends_for_uri(uri, method):
            if backend.state == State.RUNNING and backend.supports(method) and (
                    method != PREPARE_CALL_HIERARCHY or backend.supports(INCOMING_CALLS)):
                return backend, INCOMING_CALLS if method == PREPARE_CALL_HIERARCHY else REFERENCES
    return None


async def server_call_sites(session: Session, definitions: list[dict[str, Any]], timeout: float) -> ServerCallSites:
    """Ask the running servers of the definitions' files for their direct call sites, all at once, for at most
    `timeout` seconds: a server still busy then is cancelled and reported incomplete (its sites are missing,
    the index's stand). Servers that were never started are not started for this."""
    asks: list[tuple[Backend, str, asyncio.Task[list[dict[str, Any]]]]] = []
    for definition in definitions[:MAX_DEFINITIONS_ASKED]:
        chosen = _confirming_backend(session, definition["uri"])
        if chosen is not None:
            backend, method = chosen
            asks.append((backend, method, asyncio.ensure_future(_call_sites(session, backend, method, definition))))
    answer = ServerCallSites()
    if not asks:
        return answer
    try:
        _done, late = await asyncio.wait([task for _, _, task in asks], timeout=timeout)
    finally:
        for _, _, task in asks:
            task.cancel()  # late ones (their requests are cancelled at the server), or all when we are cancelled
    complete_by_server: dict[tuple[str, str], bool] = {}
    for backend, method, task in asks:
        failure = None if task in late or task.cancelled() else task.exception()
        complete = task not in late and not task.cancelled() and failure is None
        if complete:
            answer.sites.extend(task.result())
        elif failure is not None:
            logger.info("%s could not list callers: %s", backend.name, failure)
        key = (backend.name, method)
        complete_by_server[key] = complete_by_server.get(key, True) and complete
    answer.servers = [{"name": name, "method": method, "complete": complete}
                      for (name, method), complete in complete_by_server.items()]
    return answer


async def _call_sites(session: Session, backend: Backend, method: str,
                      definition: dict[str, Any]) -> list[dict[str, Any]]:
    """One server's direct call sites of the definition at `definition` (a Location of its name)."""
    where = {"textDocument": {"uri": definition["uri"]}, "position": definition["range"]["start"]}
    if method == REFERENCES:
        found = await ask_backend(backend, REFERENCES, {**where, "context": {"includeDeclaration": False}})
        locations = [location for location in found or [] if isinstance(location, dict) and "uri" in location]
        calls = await asyncio.to_thread(_calls_among, session, locations)
        return [{"location": location, "caller": None} for location in calls]
    sites: list[dict[str, Any]] = []
    items = await ask_backend(backend, PREPARE_CALL_HIERARCHY, where) or []
    for item in items[:MAX_ITEMS_FOLLOWED]:
        for call in await ask_backend(backend, INCOMING_CALLS, {"item": item}) or []:
            source = call.get("from") or {}
            for called_at in call.get("fromRanges") or []:
                sites.append({"location": {"uri": source.get("uri"), "range": called_at}, "caller": source.get("name")})
    return [site for site in sites if isinstance(site["location"]["uri"], str)]


def _calls_among(session: Session, locations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The references that are call sites (the name is followed by `(`), read from the text the servers see, or
    the file on disk."""
    from lsp_hub.index.callers import opens_a_call

    lines_of: dict[str, list[str]] = {}
    calls = []
    for location in locations:
        uri = location["uri"]
        if uri not in lines_of:
            document = session.workspace.document(uri)
            text = document.text if document is not None else _read_quietly(uri_to_path(uri))
            lines_of[uri] = text.splitlines()
        lines = lines_of[uri]
        end = location["range"]["end"]
        if end["line"] < len(lines) and opens_a_call(lines[end["line"]], end["character"]):
            calls.append(location)
    return calls


def _read_quietly(path: str | None) -> str:
    if path is None:
        return ""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError:
        return ""


# What makes a directory a project root when the client names no folder, besides the configured servers' markers.
BASE_ROOT_MARKERS = (".git", ".hg", "pyproject.toml", "package.json", "go.mod", "Cargo.toml")


def _client_named_a_folder(params: dict[str, Any]) -> bool:
    """Whether initialize named a workspace folder (workspaceFolders, rootUri or rootPath), rather than the
    session falling back to the hub's current directory."""
    folders = params.get("workspaceFolders")
    if isinstance(folders, list) and any(
            isinstance(folder, dict) and uri_to_path(str(folder.get("uri", ""))) for folder in folders):
        return True
    if isinstance(params.get("rootUri"), str) and uri_to_path(params["rootUri"]):
        return True
    return isinstance(params.get("rootPath"), str) and bool(params["rootPath"])


def _root_markers(config: Config) -> tuple[str, ...]:
    """The configured servers' root markers, and a few universal ones."""
    markers = dict.fromkeys(BASE_ROOT_MARKERS)
    for spec in config.servers.values():
        markers.update(dict.fromkeys(spec.root_markers))
    return tuple(markers)


def _project_root(path: str, markers: tuple[str, ...]) -> tuple[str | None, str]:
    """The nearest directory above `path` holding a root marker, or (None, why not). The home directory and the
    filesystem root are never a project root (a dotfiles repository makes $HOME hold `.git`)."""
    home = os.path.realpath(os.path.expanduser("~"))
    directory = os.path.dirname(os.path.realpath(path))
    while True:
        if directory in ("/", home) or home.startswith(directory.rstrip("/") + "/"):
            break  # the home directory or above it: not a project, whatever it holds
        if any(os.path.exists(os.path.join(directory, marker)) for marker in markers):
            return directory, ""
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return None, f"no project root marker ({', '.join(markers[:6])}...) between {path} and {directory}"


def _log_refusal(answer: asyncio.Future[Any]) -> None:
    if not answer.cancelled() and answer.exception() is not None:
        logger.info("the client would not watch files for the index: %s", answer.exception())


def _single_object(arguments: list[Any]) -> dict[str, Any]:
    if not arguments:
        return {}
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        raise ResponseFailure(INVALID_PARAMS, "lspHub commands take one JSON object argument")
    return arguments[0]
