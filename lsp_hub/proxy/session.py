"""One client connection (a client session): its state machine, its initialize params and capabilities, its own
copy of each document it opened, its registrations, and the dispatch of every message it sends: requests to the
runner of their method (`methods.py`'s table, `runners.py`), notifications to document synchronisation here or to
`notifications.py`, `lspHub.*` commands to `hub_commands.py`. It shares its workspace (`lsp_hub.proxy.workspace`) with
the other sessions of its root, and names no LSP method beyond the lifecycle and document synchronisation.

Handlers run synchronously in arrival order and do their routing and sending before they return; only the
waiting for answers happens in a task. That keeps every backend's view of a document in the order the client
sent its changes. initialize too answers from a task: its configuration is read in a thread (`config_loading`),
since on a daemon a file that stalls must not stall every other client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsp_hub import __version__
from lsp_hub.config.model import Config
from lsp_hub.proxy.backends import Backend
from lsp_hub.proxy.capabilities import hub_capabilities
from lsp_hub.proxy.client_positions import NOT_MAPPED_NOTICE, LineMaps, not_mapped_message, run_mapped
from lsp_hub.proxy.client_registrations import advertise_commands, hear_of_running_servers, update_feature_registrations
from lsp_hub.proxy.client_tokens import ClientSemanticTokens
from lsp_hub.proxy.diagnostics import ClientDiagnostics
from lsp_hub.proxy.documents import Document, DocumentStore, path_to_uri, uri_to_path
from lsp_hub.proxy.feature_registrations import FeatureRegistrations
from lsp_hub.proxy.hub_commands import HUB_COMMANDS, HubCommand
from lsp_hub.proxy.kept_tasks import KeptTasks
from lsp_hub.proxy.methods import Positions, spec_for
from lsp_hub.proxy.notifications import NOTIFICATIONS, forward
from lsp_hub.proxy.runners import RUNNERS, document_uri, item_uri
from lsp_hub.proxy.text_mapping import LineMap, map_diagnostics
from lsp_hub.proxy.workspace import Workspace, Workspaces
from lsp_hub.transport.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    REQUEST_FAILED,
    SERVER_NOT_INITIALIZED,
    MsgId,
    RawProtocol,
    ResponseFailure,
)
from lsp_hub.transport.transport_security import STDIO_CLIENT, ClientOrigin

logger = logging.getLogger(__name__)


class SessionExtension:
    """A seam for features that live beside the proxy (the code index): hooks the session calls."""

    def commands(self) -> dict[str, HubCommand]:
        return {}

    def on_initialized(self, session: Session) -> None: ...

    def on_document_changed(self, session: Session, document: Document) -> None: ...

    def on_document_saved(self, session: Session, uri: str) -> None: ...

    def on_document_closed(self, session: Session, uri: str) -> None: ...

    def on_watched_files_changed(self, session: Session, changes: list[dict[str, Any]]) -> None: ...

    def status(self, session: Session) -> dict[str, Any]:
        return {}

    def stand_in(self, session: Session, name: str, params: Any) -> Awaitable[Any] | None:
        """The stand-in `name` (a method's `MethodSpec.stand_in`) for a request no running server answered, or None
        to leave it unanswered."""
        return None

    def complete_references(self, session: Session, params: Any, from_servers: Any) -> Awaitable[Any] | None:
        """`textDocument/references` as the servers answered it (merged Locations, or None), completed with what
        they left out; None to leave it as it is."""
        return None

    async def close(self) -> None: ...


class Session:
    def __init__(
        self,
        protocol: RawProtocol,
        *,
        cli_config: Path | None = None,
        on_exit: Callable[[int], None] | None = None,
        extensions: list[SessionExtension] | None = None,
        client: ClientOrigin = STDIO_CLIENT,
        workspaces: Workspaces | None = None,
    ) -> None:
        self.protocol = protocol
        self.client = client
        protocol.handler = self
        protocol.peer_name = "client"
        self.cli_config = cli_config
        self._on_exit = on_exit or (lambda code: None)
        self.state = "new"  # new -> initialized -> shutdown -> closed
        self._initializing = False  # initialize received, its configuration still loading
        self.documents = DocumentStore()  # this session's own copy of what it opened
        self.workspaces = workspaces or Workspaces()
        # Until initialize names the root and the configuration: an empty workspace of its own.
        self.workspace = Workspace(Config(), frozenset(), [])
        self.init_params: dict[str, Any] = {}
        self.client_capabilities: dict[str, Any] = {}
        self.client_diagnostics = self._client_diagnostics()  # pushed until initialize says the client pulls
        self.feature_registrations = FeatureRegistrations({}, self.ask_client)
        self.folders: list[str] = []
        self.config_problems: list[str] = []
        self.extensions = list(extensions or [])
        self.commands: dict[str, HubCommand] = dict(HUB_COMMANDS)
        for extension in self.extensions:
            self.commands.update(extension.commands())
        self._told_once: set[str] = set()
        self._tasks = KeptTasks()
        self.owners: dict[str, int] = {}  # per method: the one server whose items went out untagged (resolve)
        self.semantic_tokens = ClientSemanticTokens(
            lambda: self.client_supports("textDocument", "semanticTokens", "dynamicRegistration"),
            self.request, self.spawn)
        self._line_maps = LineMaps()

    # ================================================================================================ plumbing
    def notify(self, method: str, params: Any) -> None:
        self.protocol.notify(method, params)

    def request(self, method: str, params: Any) -> asyncio.Future[Any]:
        _, answer = self.protocol.request(method, params)
        return answer

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        return self._tasks.spawn(coro)

    def tell_user(self, message: str, *, error: bool = False) -> None:
        """window/showMessage, at most once per distinct message."""
        if message in self._told_once:
            return
        self._told_once.add(message)
        (logger.error if error else logger.warning)("%s", message)
        self.protocol.notify("window/showMessage", {"type": 1 if error else 2, "message": message})

    def client_supports(self, *path: str) -> bool:
        value: Any = self.client_capabilities
        for key in path:
            if not isinstance(value, dict):
                return False
            value = value.get(key)
        return bool(value)

    # ================================================================================================ incoming
    def on_request(self, msg_id: MsgId, method: str, params: Any) -> Any:
        self.workspace.touch(self)
        if method == "initialize":
            return self._initialize(params)
        if self.state == "new":
            raise ResponseFailure(SERVER_NOT_INITIALIZED, f"{method} before initialize")
        if self.state != "initialized":
            raise ResponseFailure(INVALID_REQUEST, f"{method} after shutdown")
        if method == "shutdown":
            return self._shutdown()
        if params is not None and not isinstance(params, dict | list):
            raise ResponseFailure(INVALID_PARAMS, f"{method}: params must be an object")
        spec = spec_for(method)
        uri = document_uri(params) or item_uri(params)
        line_map = self.line_map(uri) if uri is not None and spec.positions is not Positions.OWN else None
        if line_map is not None:
            return run_mapped(self, spec, method, params, uri or "", line_map)
        return RUNNERS[spec.strategy](self, spec, method, params)

    def on_notification(self, method: str, params: Any) -> None:
        self.workspace.touch(self)
        if method == "exit":
            self.spawn(self.close(exit_code=0 if self.state == "shutdown" else 1))
            return
        if self.state != "initialized":
            if method != "$/cancelRequest":
                logger.warning("ignoring %s: session is %s", method, self.state)
            return
        handler = self._document_handlers.get(method) or NOTIFICATIONS.get(method)
        if handler is not None:
            if not isinstance(params, dict):
                logger.warning("ignoring %s with params %r", method, type(params).__name__)
                return
            handler(self, params)
        elif method == "$/cancelRequest":
            pass  # RawProtocol cancelled the task; the task's cleanup cancels downstream
        else:
            forward(self, method, params)

    # ================================================================================================ lifecycle
    def _initialize(self, params: Any) -> Awaitable[dict[str, Any]]:
        if self.state != "new" or self._initializing:
            raise ResponseFailure(INVALID_REQUEST, "initialize was already received")
        if not isinstance(params, dict):
            raise ResponseFailure(INVALID_PARAMS, "initialize params must be an object")
        self._initializing = True
        return self._initialize_with_config(params)

    async def _initialize_with_config(self, params: dict[str, Any]) -> dict[str, Any]:
        """initialize, once the configuration is loaded; until then the session stays "new" (other requests are
        refused as before initialize) and other sessions are served: the loading runs in a thread."""
        # Imported here: config loading is not on the hot path.
        from lsp_hub.config.layers import CLIENT_SOURCE
        from lsp_hub.proxy.config_loading import ConfigLoadTimeout, load_config_in_time

        self.init_params = params
        self.client_capabilities = params.get("capabilities") or {}
        self.client_diagnostics = self._client_diagnostics()
        self.feature_registrations = FeatureRegistrations(self.client_capabilities, self.ask_client)
        self.folders = _workspace_folders(params)
        options = params.get("initializationOptions")
        hub_options = options.get("lspHub") if isinstance(options, dict) else None
        try:
            loaded = await load_config_in_time({
                "workspace_roots": [Path(folder) for folder in self.folders],
                "cli_config": self.cli_config,
                "init_options": hub_options if isinstance(hub_options, dict) else None,
                "client_may_choose_programs": self.client.may_choose_programs,
            })
        except ConfigLoadTimeout as error:
            raise ResponseFailure(REQUEST_FAILED, str(error)) from None
        finally:
            self._initializing = False
        if self.state != "new":  # the client left while the configuration loaded
            raise ResponseFailure(INVALID_REQUEST, f"initialize: the session is {self.state}")
        # Sessions of one root under the same effective configuration share one workspace.
        self.workspace = self.workspaces.join(self, loaded.config, frozenset(loaded.trusted_roots), self.folders)
        self.config_problems = [str(problem) for problem in loaded.problems]
        for problem in self.config_problems:
            logger.error("configuration: %s", problem)
        self.state = "initialized"
        if self.config_problems:
            refused = {(CLIENT_SOURCE, key) for key in loaded.refused_client_keys}
            # Files ignored whole first: a summary of three must not hide them behind single keys.
            others = [str(problem) for problem in sorted(loaded.problems, key=lambda problem: problem.key != "")
                      if (problem.source, problem.key) not in refused]
            self.spawn(self._report_config_problems(loaded.refused_client_keys, others))
        for extension in self.extensions:
            extension.on_initialized(self)
        return {
            "capabilities": hub_capabilities(sorted(self.commands), pull_diagnostics=self.client_diagnostics.pulls,
                                             per_language=self.feature_registrations.static_capabilities(),
                                             semantic_tokens=self.semantic_tokens.static_provider()),
            "serverInfo": {"name": "lsp-hub", "version": __version__},
        }

    async def _report_config_problems(self, refused_client_keys: list[str], others: list[str]) -> None:
        await asyncio.sleep(0)  # after the initialize answer
        if refused_client_keys:
            from lsp_hub.config.paths import user_config_file

            self.tell_user(
                f"lsp-hub: ignored initializationOptions.lspHub {', '.join(refused_client_keys)}: a "
                f"{self.client.transport.upper()} client may not choose programs or trust a workspace. Put these "
                f"in {user_config_file()}, or run `lsp-hub trust PATH` to trust a workspace.", error=True)
        if others:
            summary = "; ".join(others[:3])
            more = f" (and {len(others) - 3} more)" if len(others) > 3 else ""
            self.tell_user(f"lsp-hub configuration problems: {summary}{more}. Valid settings still apply.")

    async def _shutdown(self) -> None:
        self.state = "shutdown"
        await self.workspaces.leave(self, self.workspace, grace_seconds=2.0)
        return None

    async def close(self, exit_code: int = 0) -> None:
        """The client left (exit, or the connection closed): its documents close; the workspace stops its servers
        if this was its last session (at once on stdio, through their idle timer on a daemon)."""
        if self.state == "closed":
            return
        self.state = "closed"
        self.protocol.cancel_all_incoming()
        await self.workspaces.leave(self, self.workspace)
        for extension in self.extensions:
            with contextlib.suppress(Exception):
                await extension.close()
        self._on_exit(exit_code)

    # ================================================================================================ backends
    def backend_running(self, backend: Backend) -> None:
        """A server of the workspace runs: what this client hears of it (its features, its token legend)."""
        update_feature_registrations(self, backend)
        self.semantic_tokens.register(backend)

    def backend_stopped(self, backend: Backend) -> None:
        update_feature_registrations(self, backend)

    def advertise_commands(self, uid: int, commands: list[str]) -> None:
        advertise_commands(self, uid, commands)

    def _initialized(self, params: dict[str, Any]) -> None:
        hear_of_running_servers(self)

    # ================================================================================================ documents
    def open_document(self, params: dict[str, Any]) -> None:
        item = params.get("textDocument")
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
            logger.warning("didOpen without a textDocument")
            return
        uri = item["uri"]
        language_id = str(item.get("languageId") or "") or self.workspace.language_id_for(uri)
        document = self.documents.open(uri, language_id, int(item.get("version", 0)), str(item.get("text", "")))
        self.workspace.open(self, document)
        self._notify_extensions_changed(document)

    def change_document(self, params: dict[str, Any]) -> None:
        identifier = params.get("textDocument") or {}
        document = self.documents.get(identifier.get("uri", ""))
        changes = params.get("contentChanges")
        if document is None or not isinstance(changes, list):
            logger.warning("didChange for a document that is not open: %s", identifier.get("uri"))
            return
        document.apply_changes(changes, int(identifier.get("version", document.version + 1)))
        self.workspace.change(self, document, changes)
        self._notify_extensions_changed(document)

    def _save_document(self, params: dict[str, Any]) -> None:
        uri = (params.get("textDocument") or {}).get("uri", "")
        document = self.documents.get(uri)
        if document is None:
            return
        self.workspace.save(self, document, params)
        for extension in self.extensions:
            extension.on_document_saved(self, uri)

    def _close_document(self, params: dict[str, Any]) -> None:
        uri = (params.get("textDocument") or {}).get("uri", "")
        document = self.documents.get(uri)
        if document is None:
            return
        self.documents.close(uri)
        self._line_maps.forget(uri)
        self.workspace.close(self, uri)  # closed in the backends once no session has it open
        for extension in self.extensions:
            extension.on_document_closed(self, uri)

    def _notify_extensions_changed(self, document: Document) -> None:
        for extension in self.extensions:
            extension.on_document_changed(self, document)

    _document_handlers: dict[str, Callable[[Session, dict[str, Any]], None]] = {
        "initialized": _initialized,
        "textDocument/didOpen": open_document,
        "textDocument/didChange": change_document,
        "textDocument/didSave": _save_document,
        "textDocument/didClose": _close_document,
    }

    def settings_from_client(self, value: Any, what: str) -> Any:
        """Settings the client sent for servers, without program-choosing keys unless the client is the user's."""
        if self.client.may_choose_programs:
            return value
        from lsp_hub.config.untrusted import strip_program_settings

        kept, dropped = strip_program_settings(value, what)
        if dropped:
            logger.warning("ignored settings from a %s client that may name a program to run: %s",
                           self.client.transport, ", ".join(dropped))
        return kept

    # ================================================================================================ diagnostics
    def _client_diagnostics(self) -> ClientDiagnostics:
        return ClientDiagnostics(
            pulls=self.client_supports("textDocument", "diagnostic"),
            can_refresh=self.client_supports("workspace", "diagnostics", "refreshSupport"),
            push=self._push_diagnostics,
            refresh=lambda: self.ask_client("workspace/diagnostic/refresh", None),
            schedule=lambda callback: asyncio.get_running_loop().call_soon(callback),
        )

    def ask_client(self, method: str, params: Any) -> None:
        """A request to the client whose answer nobody needs (a refresh); a failure is only logged."""
        _, answer = self.protocol.request(method, params)

        def done(future: asyncio.Future[Any]) -> None:
            if not future.cancelled() and future.exception() is not None:
                logger.info("the client answered %s with an error: %s", method, future.exception())

        answer.add_done_callback(done)

    def publish_diagnostics(self, uri: str, diagnostics: list[dict[str, Any]]) -> None:
        if self.state != "closed":
            self.client_diagnostics.publish(uri, self._diagnostics_in_own_text(uri, diagnostics)[0])

    def diagnostics_for_client(self, uri: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The workspace's diagnostics of `uri` in this session's text, and those left out (on lines this session's
        text does not share with the servers')."""
        return self._diagnostics_in_own_text(uri, self.workspace.diagnostics.get(uri))

    def _diagnostics_in_own_text(self, uri: str, diagnostics: list[dict[str, Any]]
                                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        line_map = self.line_map(uri)
        if line_map is None:
            return diagnostics, []
        return map_diagnostics(diagnostics, uri, line_map.reversed())

    def _push_diagnostics(self, uri: str, diagnostics: list[dict[str, Any]]) -> None:
        payload: dict[str, Any] = {"uri": uri, "diagnostics": diagnostics}
        document = self.documents.get(uri)
        if document is not None:
            payload["version"] = document.version
        self.protocol.notify("textDocument/publishDiagnostics", payload)

    # ================================================================================================ requests
    # What the runners (`runners.RequestContext`) ask of the session besides its documents and workspace.
    def hub_command(self, name: str) -> Callable[[list[Any]], Any] | None:
        command = self.commands.get(name)
        return None if command is None else lambda arguments: command(self, arguments)

    def stand_in(self, name: str, params: Any) -> Awaitable[Any] | None:
        for extension in self.extensions:
            answer = extension.stand_in(self, name, params)
            if answer is not None:
                return answer
        return None

    def complete_references(self, params: Any, from_servers: Any) -> Awaitable[Any] | None:
        for extension in self.extensions:
            completed = extension.complete_references(self, params, from_servers)
            if completed is not None:
                return completed
        return None

    # ======================================================================================== position mapping
    def line_map(self, uri: str) -> LineMap | None:
        """This session's text of `uri` mapped to the servers' text; None when they are the same (or it is not
        open here)."""
        return self._line_maps.get(uri, self.documents.get(uri), self.workspace.document(uri))

    def tell_not_mapped(self, method: str, uri: str, what: str) -> None:
        self.notify("window/logMessage", not_mapped_message(self.workspace, method, uri, what))


def _workspace_folders(params: dict[str, Any]) -> list[str]:
    folders = []
    for folder in params.get("workspaceFolders") or []:
        if isinstance(folder, dict) and (path := uri_to_path(str(folder.get("uri", "")))):
            folders.append(path.rstrip("/") or "/")
    if not folders and isinstance(params.get("rootUri"), str) and (path := uri_to_path(params["rootUri"])):
        folders.append(path.rstrip("/") or "/")
    if not folders and isinstance(params.get("rootPath"), str):
        folders.append(params["rootPath"].rstrip("/") or "/")
    return folders or [os.getcwd()]


__all__ = ["NOT_MAPPED_NOTICE", "HubCommand", "Session", "SessionExtension", "path_to_uri"]

__all__ = ["NOT_MAPPED_NOTICE", "HubCommand", "Session", "SessionExtension", "path_to_uri"]
