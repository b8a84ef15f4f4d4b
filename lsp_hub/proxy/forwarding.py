"""Messages from servers to the client, and what the hub tells servers about the client.

Servers share one client, so their ids and tokens must not collide there: progress tokens and registration ids
are namespaced by backend; answers are routed back to the server that asked. The forwarder talks to the workspace,
which decides which of its client sessions hear what: diagnostics go to the sessions that have the document open,
log and show messages and progress to every session, a request that needs one answer to the most recently active
session. Requests the hub can answer better
itself (workspace/configuration from a server's configured settings, registrations for features the hub already
routes, diagnostic refreshes) are answered here. What the hub does with each server->client method is one entry
in `SERVER_REQUESTS` or `SERVER_NOTIFICATIONS`; a method in neither is passed to the client as is.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from lsp_hub.config.loader import deep_merge
from lsp_hub.proxy.capabilities import command_names
from lsp_hub.proxy.documents import path_to_uri
from lsp_hub.proxy.semantic_tokens import client_capability_for_servers
from lsp_hub.transport.jsonrpc import ResponseFailure

if TYPE_CHECKING:
    from lsp_hub.proxy.backends import Backend, BackendPool
    from lsp_hub.proxy.client_view import ClientView

logger = logging.getLogger(__name__)

# Registrations the client must act on; everything else a server registers is a feature the hub routes already.
CLIENT_SIDE_REGISTRATIONS = {"workspace/didChangeWatchedFiles"}


class WorkspaceView(Protocol):
    """What the forwarder needs of its workspace (`lsp_hub.proxy.workspace.Workspace`), which decides who hears what."""

    pool: BackendPool

    @property
    def sessions(self) -> list[ClientView]: ...

    @property
    def active(self) -> ClientView | None: ...

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]: ...

    def notify_all(self, method: str, params: Any) -> None: ...

    def accept_pushed_diagnostics(self, backend: Backend, params: dict[str, Any]) -> None: ...

    async def refresh_pulled_diagnostics(self, backend: Backend) -> None: ...

    def is_trusted(self, root: str) -> bool: ...


class Forwarder:
    def __init__(self, workspace: WorkspaceView) -> None:
        self.workspace = workspace
        self._progress: dict[str, tuple[int, Any]] = {}  # hub token -> (backend uid, server token)
        self._progress_audience: dict[str, list[ClientView]] = {}  # hub token -> the sessions asked to create it
        self._registrations: dict[str, tuple[int, str]] = {}  # hub registration id -> (uid, server id)
        self._commands: dict[str, int] = {}  # command -> backend uid

    @property
    def progress_tracked(self) -> int:
        """Progress tokens created through the hub and not yet ended (a bounded number: ended ones are dropped)."""
        return len(self._progress)

    # ------------------------------------------------------------------------------------------------ initialize
    def initialize_params(self, backend: Backend) -> dict[str, Any]:
        """What the hub tells a server: the client's capabilities, adjusted to what the hub itself provides."""
        session = self.workspace.active  # the session whose document starts the server
        client = session.init_params if session is not None else {}
        capabilities = copy.deepcopy(session.client_capabilities if session is not None else {})
        general = capabilities.setdefault("general", {})
        general["positionEncodings"] = ["utf-16"]  # the only encoding every server and client must support
        workspace = capabilities.setdefault("workspace", {})
        workspace["configuration"] = True  # answered from the server's settings, then the client
        workspace["workspaceFolders"] = True
        workspace.setdefault("diagnostics", {})["refreshSupport"] = True  # the hub re-pulls
        text_document = capabilities.setdefault("textDocument", {})
        text_document.setdefault("publishDiagnostics", {"relatedInformation": True})
        # The hub pulls from servers that offer pull diagnostics and merges them with pushed ones.
        text_document["diagnostic"] = {"dynamicRegistration": True, "relatedDocumentSupport": False}
        # The hub asks for call sites itself (`lspHub.callers`), whatever the client: typescript-language-server
        # offers call hierarchy only to a client that says it supports it.
        text_document.setdefault("callHierarchy", {"dynamicRegistration": False})
        # The hub decodes any legend and reads it from the server's capabilities (see semantic_tokens.py).
        if (semantic_tokens := client_capability_for_servers(text_document.get("semanticTokens"))) is not None:
            text_document["semanticTokens"] = semantic_tokens
        root_uri = path_to_uri(backend.root)
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "clientInfo": client.get("clientInfo") or {"name": "lsp-hub"},
            "rootUri": root_uri,
            "rootPath": backend.root,
            "workspaceFolders": [{"uri": root_uri, "name": os.path.basename(backend.root) or backend.root}],
            "capabilities": capabilities,
            "trace": "off",
        }
        if client.get("locale"):
            params["locale"] = client["locale"]
        if backend.spec.initialization_options is not None:
            params["initializationOptions"] = backend.spec.initialization_options
        return params

    # ------------------------------------------------------------------------------------------------ dispatch
    def server_notification(self, backend: Backend, method: str, params: Any) -> None:
        """A server's notification, by `SERVER_NOTIFICATIONS`; one not in it goes to every session as is."""
        handler = SERVER_NOTIFICATIONS.get(method, Forwarder._to_every_session)
        handler(self, backend, method, params)

    def server_request(self, backend: Backend, method: str, params: Any) -> Any:
        """A server's request, by `SERVER_REQUESTS`; one not in it is asked of the most recently active session."""
        handler = SERVER_REQUESTS.get(method, Forwarder._ask_active_session)
        return handler(self, backend, method, params)

    # ------------------------------------------------------------------------------------------------ notifications
    def _to_every_session(self, backend: Backend, method: str, params: Any) -> None:
        self.workspace.notify_all(method, params)

    def _pushed_diagnostics(self, backend: Backend, method: str, params: Any) -> None:
        backend.note_diagnostics()
        if isinstance(params, dict):
            self.workspace.accept_pushed_diagnostics(backend, params)

    def _server_message(self, backend: Backend, method: str, params: Any) -> None:
        """window/logMessage and window/showMessage, prefixed with the server's name: several servers share a log."""
        if isinstance(params, dict):
            params = {**params, "message": f"[{backend.name}] {params.get('message', '')}"}
        self.workspace.notify_all(method, params)

    def _progress_report(self, backend: Backend, method: str, params: Any) -> None:
        if not isinstance(params, dict):
            self.workspace.notify_all(method, params)
            return
        value = params.get("value")
        kind = value.get("kind") if isinstance(value, dict) else None
        backend.note_progress(params.get("token"), kind, value.get("title") if isinstance(value, dict) else None)
        hub_token = f"lsp-hub/{backend.uid}/{params.get('token')}"
        if hub_token in self._progress:
            # Created through the hub: each session asked to create it knows it under the hub's name.
            for session in self._progress_audience.get(hub_token, []):
                if session.state != "closed":
                    session.notify(method, {**params, "token": hub_token})
            if kind == "end":  # an ended token is never used again: keep no record of it
                del self._progress[hub_token]
                self._progress_audience.pop(hub_token, None)
            return
        # A workDoneToken a client itself put in a request: that client knows it as is.
        if (active := self.workspace.active) is not None and active.state != "closed":
            active.notify(method, params)

    def cancel_progress(self, token: Any) -> None:
        entry = self._progress.get(str(token))
        if entry is None:
            return
        backend = self.workspace.pool.by_uid(entry[0])
        if backend is not None:
            backend.notify("window/workDoneProgress/cancel", {"token": entry[1]})

    # ------------------------------------------------------------------------------------------------ requests
    def _ask_active_session(self, backend: Backend, method: str, params: Any) -> Awaitable[Any]:
        return self._to_client(method, params)

    def _schema_content(self, backend: Backend, method: str, params: Any) -> Awaitable[Any]:
        """`vscode/content`, a JSON or YAML server asking for a schema URL's content: in an untrusted root it asks
        only because the hub told it to (`pin_untrusted_values`, `untrusted_notifications`), and is refused with why;
        else the client answers."""
        if not self.workspace.is_trusted(backend.root):
            raise ResponseFailure(
                -32803, f"lsp-hub fetches no schema named in {backend.root}: the workspace is not trusted "
                f"(`lsp-hub trust {backend.root}` lets its servers fetch it)")
        return self._to_client(method, params)

    def _refresh_pulled_diagnostics(self, backend: Backend, method: str, params: Any) -> None:
        """The hub pulls diagnostics itself, so it re-pulls rather than asking the client to."""
        self.workspace.spawn(self.workspace.refresh_pulled_diagnostics(backend))

    def _workspace_folders(self, backend: Backend, method: str, params: Any) -> list[dict[str, str]]:
        """The server's own root: each backend serves one root, whatever folders the client has."""
        return [{"uri": path_to_uri(backend.root), "name": os.path.basename(backend.root)}]

    def _to_client(self, method: str, params: Any, session: ClientView | None = None) -> Awaitable[Any]:
        """Ask the client (the most recently active session) and hand its answer (or its error) back to the
        server. No deadline: a person may be choosing in a message box."""
        session = session or self.workspace.active
        if session is None or session.state == "closed":
            raise ResponseFailure(-32803, f"no client to answer {method}")
        return session.request(method, params)

    def _to_sessions(self, sessions: list[ClientView], method: str, params: Any) -> Any:
        """Ask each of `sessions`; the server gets the first one's answer, the others' are only logged."""
        sessions = [s for s in reversed(sessions) if s.state != "closed"]  # the most recently active first
        if not sessions:
            return None
        answers = [session.request(method, params) for session in sessions]
        for answer in answers[1:]:
            self.workspace.spawn(self._quietly(answer))
        return answers[0]

    def _configuration(self, backend: Backend, method: str, params: Any) -> Any:
        items = params.get("items") if isinstance(params, dict) else None
        if not isinstance(items, list):
            raise ResponseFailure(-32602, "workspace/configuration needs items")
        settings = backend.spec.settings
        answers: list[Any] = []
        missing: list[int] = []  # asked of the client: sections not configured, and configured tables (merged)
        for index, item in enumerate(items):
            section = item.get("section") if isinstance(item, dict) else None
            value = _lookup(settings, section) if settings else None
            answers.append(value)
            if value is None or isinstance(value, dict):
                missing.append(index)
        session = self.workspace.active
        if not missing or session is None or not session.client_supports("workspace", "configuration"):
            return answers

        async def ask_client() -> Any:
            try:
                from_client = await self._to_client(
                    "workspace/configuration", {"items": [items[i] for i in missing]}, session
                )
            except ResponseFailure:
                return answers
            for index, value in zip(missing, from_client or [], strict=False):
                section = items[index].get("section") if isinstance(items[index], dict) else None
                from_editor = session.settings_from_client(value, str(section or "configuration"))
                configured = answers[index]
                # The editor's table with the configured keys over it (an untrusted root's pinned pythonPath, the
                # user's lsp-hub settings), rather than either one alone.
                answers[index] = (deep_merge(from_editor if isinstance(from_editor, dict) else {}, configured)
                                  if isinstance(configured, dict) else from_editor)
            return answers

        return ask_client()

    def _create_progress(self, backend: Backend, method: str, params: Any) -> Any:
        token = params.get("token") if isinstance(params, dict) else None
        hub_token = f"lsp-hub/{backend.uid}/{token}"
        self._progress[hub_token] = (backend.uid, token)
        progressing = [s for s in self.workspace.sessions if s.client_supports("window", "workDoneProgress")]
        self._progress_audience[hub_token] = [s for s in progressing if s.state != "closed"]
        return self._to_sessions(progressing, "window/workDoneProgress/create", {"token": hub_token})

    def _register_capabilities(self, backend: Backend, method: str, params: Any) -> Any:
        registrations = params.get("registrations") if isinstance(params, dict) else None
        forwarded = []
        for registration in registrations or []:
            if not isinstance(registration, dict):
                continue
            registered = registration.get("method")
            server_id = str(registration.get("id"))
            backend.dynamic[server_id] = registration
            if registered == "workspace/executeCommand":
                self.register_commands(backend)
            elif registered in CLIENT_SIDE_REGISTRATIONS:
                hub_id = f"lsp-hub/{backend.uid}/{server_id}"
                self._registrations[hub_id] = (backend.uid, server_id)
                forwarded.append({**registration, "id": hub_id})
        if forwarded:
            watching = [
                s
                for s in self.workspace.sessions
                if s.client_supports("workspace", "didChangeWatchedFiles", "dynamicRegistration")
            ]
            return self._to_sessions(watching, "client/registerCapability", {"registrations": forwarded})
        return None

    def _unregister_capabilities(self, backend: Backend, method: str, params: Any) -> Any:
        entries = params.get("unregisterations") if isinstance(params, dict) else None
        forwarded = []
        for entry in entries or []:
            if not isinstance(entry, dict):
                continue
            server_id = str(entry.get("id"))
            backend.dynamic.pop(server_id, None)
            hub_id = f"lsp-hub/{backend.uid}/{server_id}"
            if self._registrations.pop(hub_id, None) is not None:
                forwarded.append({**entry, "id": hub_id})
        if forwarded:
            watching = [
                s
                for s in self.workspace.sessions
                if s.client_supports("workspace", "didChangeWatchedFiles", "dynamicRegistration")
            ]
            return self._to_sessions(watching, "client/unregisterCapability", {"unregisterations": forwarded})
        return None

    # ------------------------------------------------------------------------------------------------ commands
    def register_commands(self, backend: Backend) -> None:
        """Remember which server owns which command; tell a client that can hear about new commands."""
        commands = command_names(backend.capabilities)
        for registration in backend.dynamic.values():
            if registration.get("method") == "workspace/executeCommand":
                options = registration.get("registerOptions") or {}
                commands += [c for c in options.get("commands", []) if isinstance(c, str)]
        hub_commands = {c for session in self.workspace.sessions for c in session.commands}
        new = [c for c in commands if self._commands.get(c) != backend.uid and c not in hub_commands]
        for command in new:
            if command in self._commands and self._commands[command] != backend.uid:
                logger.warning("command %s is offered by two servers; the later one (%s) wins", command, backend.name)
            self._commands[command] = backend.uid
        if new:
            for session in list(self.workspace.sessions):
                session.advertise_commands(backend.uid, new)

    def client_registrations(self) -> list[dict[str, Any]]:
        """The watched-file registrations of the running servers, under their hub ids (for a session that joins)."""
        registrations = []
        for hub_id, (uid, server_id) in self._registrations.items():
            backend = self.workspace.pool.by_uid(uid)
            registration = backend.dynamic.get(server_id) if backend is not None else None
            if registration is not None:
                registrations.append({**registration, "id": hub_id})
        return registrations

    def commands_by_owner(self) -> dict[int, list[str]]:
        """The servers' commands, per owning backend (for a session that joins a running workspace)."""
        owners: dict[int, list[str]] = {}
        for command, uid in self._commands.items():
            owners.setdefault(uid, []).append(command)
        return owners

    def command_owner(self, command: str) -> Backend | None:
        uid = self._commands.get(command)
        return self.workspace.pool.by_uid(uid) if uid is not None else None

    def forget_backend(self, backend: Backend) -> None:
        for token in [t for t, (uid, _) in self._progress.items() if uid == backend.uid]:
            del self._progress[token]
            self._progress_audience.pop(token, None)

    @staticmethod
    async def _quietly(answer: Awaitable[Any]) -> None:
        try:
            await answer
        except Exception as exc:
            logger.info("client declined a registration: %s", exc)


def _lookup(settings: dict[str, Any], section: Any) -> Any:
    """A dotted section of a settings tree ("python.analysis" -> settings["python"]["analysis"]), or the whole."""
    if not section:
        return settings
    value: Any = settings
    for part in str(section).split("."):
        if not isinstance(value, dict) or part not in value:
            return settings.get(section) if isinstance(settings, dict) else None
        value = value[part]
    return value


# ---------------------------------------------------------------------------------------------- the tables
# What the hub does with each message a server sends to its client: adding a server->client method is one entry.
ServerRequestHandler = Callable[[Forwarder, "Backend", str, Any], Any]  # (forwarder, server, method, params)
ServerNotificationHandler = Callable[[Forwarder, "Backend", str, Any], None]


def _ask_sessions_supporting(*capability: str) -> ServerRequestHandler:
    """A refresh request, asked of every session whose client declares `capability` (a ClientCapabilities path)."""

    def ask(forwarder: Forwarder, backend: Backend, method: str, params: Any) -> Any:
        supporting = [s for s in forwarder.workspace.sessions if s.client_supports(*capability)]
        return forwarder._to_sessions(supporting, method, params)

    return ask


SERVER_REQUESTS: dict[str, ServerRequestHandler] = {
    "workspace/configuration": Forwarder._configuration,  # the client's, the configured settings over them
    "window/workDoneProgress/create": Forwarder._create_progress,  # a token namespaced by backend
    "client/registerCapability": Forwarder._register_capabilities,  # watched files to the client, the rest routed
    "client/unregisterCapability": Forwarder._unregister_capabilities,
    "workspace/diagnostic/refresh": Forwarder._refresh_pulled_diagnostics,
    "workspace/semanticTokens/refresh": _ask_sessions_supporting("workspace", "semanticTokens", "refreshSupport"),
    "workspace/inlayHint/refresh": _ask_sessions_supporting("workspace", "inlayHint", "refreshSupport"),
    "workspace/codeLens/refresh": _ask_sessions_supporting("workspace", "codeLens", "refreshSupport"),
    "workspace/inlineValue/refresh": _ask_sessions_supporting("workspace", "inlineValue", "refreshSupport"),
    "workspace/foldingRange/refresh": _ask_sessions_supporting("workspace", "foldingRange", "refreshSupport"),
    "workspace/workspaceFolders": Forwarder._workspace_folders,
    "vscode/content": Forwarder._schema_content,  # refused for an untrusted root
}

SERVER_NOTIFICATIONS: dict[str, ServerNotificationHandler] = {
    "textDocument/publishDiagnostics": Forwarder._pushed_diagnostics,  # into the workspace's DiagnosticStore
    "$/progress": Forwarder._progress_report,  # to the sessions that know the token
    "window/logMessage": Forwarder._server_message,
    "window/showMessage": Forwarder._server_message,
}
