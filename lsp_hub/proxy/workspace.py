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

from lsp_hub.config.model import Config, ServerSpec
from lsp_hub.platform import paths
from lsp_hub.proxy.backends import Backend, BackendPool, State
from lsp_hub.proxy.client_view import ClientView
from lsp_hub.proxy.diagnostics import DiagnosticStore, ReportTracker
from lsp_hub.proxy.documents import Document, SharedDocument, uri_to_path
from lsp_hub.proxy.forwarding import Forwarder
from lsp_hub.proxy.kept_tasks import KeptTasks
from lsp_hub.proxy.prestart import WarmUps
from lsp_hub.proxy.routing import BackendKey, Router

# Its documents and diagnostics are beside it (workspace_documents, workspace_diagnostics).
from lsp_hub.proxy.workspace_documents import DocumentSharing, client_name, disk_text
from lsp_hub.transport.jsonrpc import MsgId

# The point questions lspHub.status says each running server answers (`answers`).
STATUS_METHODS = ("textDocument/definition", "textDocument/declaration", "textDocument/typeDefinition",
                  "textDocument/implementation", "textDocument/references", "textDocument/hover",
                  "textDocument/documentSymbol", "textDocument/prepareCallHierarchy")

__all__ = ["Attachment", "DiagnosticsCoverage", "Workspace", "Workspaces", "client_name", "config_fingerprint",
           "disk_text", "under"]

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


class Workspace(DocumentSharing):
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
        self._tasks = KeptTasks()
        # What lives beside the backends as long as the workspace, by name (the code index, "index").
        self.attachments: dict[str, Attachment] = {}
        self.closed = False
        # A daemon's workspace with no session left is kept (its index warm) for a while even with no server
        # running: an agent's next `lsp-hub query repomap` should not rebuild the index's graphs.
        self._lingering: asyncio.TimerHandle | None = None
        self._linger_forever = False
        self.warm_ups = WarmUps()  # prestarted servers' first file (`[hub] prestart`)

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
        return self._tasks.spawn(coro)

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

    def language_id_for(self, uri: str) -> str:
        """The LSP languageId of a document by its file name (its language's first id, else the language's name),
        for a client that gave none: a server told "" may treat the file as no language (tsserver answers from a
        partial view, slowly). "" when no language is configured for it."""
        path = uri_to_path(uri) or uri
        language = self.router.language(language_id=None, path=path)
        return language.ids[0] if language is not None else ""

    def prestart(self, path: str) -> list[Backend]:
        """Start the servers that would serve `path` now, as a request would (same routes, same trust), each to be
        shown `path` once it runs so that it loads its project (`[hub] prestart`). Returns those it started."""
        language = self.router.language(language_id=None, path=path)
        if language is None:
            return []
        started = []
        for route in self.router.routes(path, language):
            backend = self._backend(route.spec, route.key)
            if backend is None or backend.state != State.STOPPED:
                continue
            self.warm_ups.add(route.key, path, language.ids[0])
            backend.ensure_started()
            started.append(backend)
        return started

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
        self.warm_ups.run(backend)
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
                # Which point questions it answers (by its capabilities, once running): an answer to another came
                # from elsewhere (the index's stand-in), which an agent is told.
                **({"answers": [method for method in STATUS_METHODS if backend.supports(method)]}
                   if backend.state == State.RUNNING else {}),
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


def under(path: str | None, root: str) -> bool:
    return path is not None and paths.is_within(path, root)
