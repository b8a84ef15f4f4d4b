"""One client connection (a client session): its initialize params and capabilities, its own copy of each document
it opened, its registrations, its hub commands, and the routing of every message to the backends of its workspace
(`lsp_hub.workspace`), which it shares with the other sessions of its root.

Handlers run synchronously in arrival order and do their routing and sending before they return; only the
waiting for answers happens in a task. That keeps every backend's view of a document in the order the client
sent its changes. initialize too answers from a task: its configuration is read in a thread (`config_loading`),
since on a daemon a file that stalls must not stall every other client.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsp_hub import __version__
from lsp_hub.backends import Backend, BackendPool, NotSupported, Pending, State
from lsp_hub.capabilities import hub_capabilities
from lsp_hub.config.model import Config
from lsp_hub.diagnostics import (
    TSSERVER_DIAGNOSTIC_REQUESTS,
    ClientDiagnostics,
    DiagnosticStore,
    ReportTracker,
    tsserver_diagnostics,
)
from lsp_hub.documents import Document, DocumentStore, path_to_uri, uri_to_path
from lsp_hub.feature_registrations import FEATURES, FeatureRegistrations
from lsp_hub.file_operations import FILE_OPERATIONS, matching_files, merge_workspace_edits
from lsp_hub.forwarding import Forwarder
from lsp_hub.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_FAILED,
    SERVER_NOT_INITIALIZED,
    MsgId,
    RawProtocol,
    ResponseFailure,
    materialize,
)
from lsp_hub.routing import Router
from lsp_hub.semantic_tokens import (
    DELTA,
    FULL,
    REGISTRATION_METHOD,
    HubLegend,
    hub_provider,
    method_for,
    remap_result,
    server_provider,
    unwrap_result_id,
    wrap_result_id,
)
from lsp_hub.strategies import (
    PROJECT_WIDE_METHODS,
    Strategy,
    concat_tagged,
    is_empty,
    merge_completion,
    merge_hover,
    merge_locations,
    merge_symbols,
    strategy_for,
    tag_item,
    tag_items,
    untag_item,
)
from lsp_hub.text_mapping import LineMap, PositionMapper, Unmappable, map_diagnostics, map_semantic_tokens
from lsp_hub.transport_security import STDIO_CLIENT, ClientOrigin
from lsp_hub.workspace import Workspace, Workspaces, client_name, under

# What starts the window/logMessage that says a request was answered with nothing (or with items left out) because
# its position is on a line this client's text does not share with the servers' (another client's unsaved text).
# `lsp-hub query` (query.py, which cannot import this module) matches the same words.
NOT_MAPPED_NOTICE = "lsp-hub: not answered here: "
# Answered from the hub's own diagnostic store, already mapped into each client's text (`diagnostics_for_client`).
_MAPPED_ELSEWHERE = frozenset({Strategy.DOCUMENT_DIAGNOSTIC, Strategy.WORKSPACE_DIAGNOSTIC})
MAX_DIAGNOSTICS_URIS = 200  # documents one lspHub.diagnostics {uris} may wait for together
logger = logging.getLogger(__name__)

HubCommand = Callable[["Session", list[Any]], Any]


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

    def fallback(self, session: Session, method: str, params: Any) -> Awaitable[Any] | None:
        """An answer for a request no running server could answer, or None to leave it unanswered."""
        return None

    def complete_references(self, session: Session, params: Any, from_servers: Any) -> Awaitable[Any] | None:
        """`textDocument/references` as the servers answered it (merged Locations, or None), completed with what
        they left out; None to leave it as it is."""
        return None

    async def close(self) -> None: ...


def _file_operation_notification(method: str) -> Callable[[Session, dict[str, Any]], None]:
    return lambda session, params: session._did_file_operation(method, params)


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
        self.commands: dict[str, HubCommand] = {
            "lspHub.status": lambda session, args: session.status(),
            "lspHub.restartServer": lambda session, args: session.restart_server(args),
            "lspHub.diagnostics": lambda session, args: session.complete_diagnostics(args),
            "lspHub.languages": lambda session, args: session.languages(),
            "lspHub.unsavedElsewhere": lambda session, args: session.unsaved_elsewhere(args),
        }
        for extension in self.extensions:
            self.commands.update(extension.commands())
        self._told_once: set[str] = set()
        self._command_registrations = itertools.count()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._completion_owner: int | None = None
        self._token_legend: HubLegend | None = None  # made at first use, once the client's capabilities are known
        self._token_registration: tuple[str, int] | None = None  # (registration id, legend version) the client has
        # Per URI: this session's text mapped to the servers' (None: the same text), and the key it was made for.
        self._line_maps: dict[str, tuple[tuple[int, ...], LineMap | None]] = {}
        self._runners: dict[Strategy, Callable[[str, Any], Any]] = {
            Strategy.FIRST: self._run_first,
            Strategy.FIRST_NON_EMPTY: self._run_first_non_empty,
            Strategy.HOVER: self._run_hover,
            Strategy.COMPLETION: self._run_completion,
            Strategy.CODE_ACTION: self._run_code_action,
            Strategy.CONCAT_TAGGED: self._run_concat_tagged,
            Strategy.LOCATIONS: self._run_locations,
            Strategy.REFERENCES: self._run_references,
            Strategy.WORKSPACE_SYMBOL: self._run_workspace_symbol,
            Strategy.RESOLVE: self._run_resolve,
            Strategy.BY_ITEM_ORIGIN: self._run_by_item_origin,
            Strategy.FIRST_TAG_ITEMS: self._run_first_tag_items,
            Strategy.EXECUTE_COMMAND: self._run_execute_command,
            Strategy.DOCUMENT_DIAGNOSTIC: self._run_document_diagnostic,
            Strategy.WORKSPACE_DIAGNOSTIC: self._run_workspace_diagnostic,
            Strategy.FILE_OPERATION: self._run_file_operation,
            Strategy.SEMANTIC_TOKENS: self._run_semantic_tokens,
            Strategy.FORWARD: self._run_forward,
        }

    # ================================================================================================ workspace
    # What is shared with the other sessions of the root lives in the workspace; these name it for the runners,
    # the hub commands and the extensions.
    @property
    def pool(self) -> BackendPool:
        return self.workspace.pool

    @property
    def diagnostics(self) -> DiagnosticStore:
        return self.workspace.diagnostics

    @property
    def reports(self) -> ReportTracker:
        return self.workspace.reports

    @property
    def config(self) -> Config:
        return self.workspace.config

    @property
    def router(self) -> Router:
        return self.workspace.router

    @property
    def trusted_roots(self) -> frozenset[Path]:
        return self.workspace.trusted_roots

    @property
    def forwarder(self) -> Forwarder:
        return self.workspace.forwarder

    def is_trusted(self, root: str) -> bool:
        return self.workspace.is_trusted(root)

    def backends_for_uri(self, uri: str, feature: str) -> list[Backend]:
        """The backends that may serve `feature` for a document, in precedence order."""
        return self.workspace.backends_for_uri(uri, feature)

    def server_statuses(self) -> list[dict[str, Any]]:
        return self.workspace.server_statuses()

    # ================================================================================================ plumbing
    def notify(self, method: str, params: Any) -> None:
        self.protocol.notify(method, params)

    def request(self, method: str, params: Any) -> asyncio.Future[Any]:
        _, answer = self.protocol.request(method, params)
        return answer

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

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
        strategy = strategy_for(method)
        uri = _document_uri(params) or _item_uri(params)
        line_map = self.line_map(uri) if uri is not None and strategy not in _MAPPED_ELSEWHERE else None
        if line_map is not None:
            return self._run_mapped(strategy, method, params, uri or "", line_map)
        return self._runners[strategy](method, params)

    def on_notification(self, method: str, params: Any) -> None:
        self.workspace.touch(self)
        if method == "exit":
            self.spawn(self.close(exit_code=0 if self.state == "shutdown" else 1))
            return
        if self.state != "initialized":
            if method != "$/cancelRequest":
                logger.warning("ignoring %s: session is %s", method, self.state)
            return
        handler = self._notification_handlers.get(method)
        if handler is not None:
            if not isinstance(params, dict):
                logger.warning("ignoring %s with params %r", method, type(params).__name__)
                return
            handler(self, params)
        elif method == "$/cancelRequest":
            pass  # RawProtocol cancelled the task; the task's cleanup cancels downstream
        else:
            self._forward_notification(method, params)

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
        from lsp_hub.config.loader import CLIENT_SOURCE
        from lsp_hub.config_loading import ConfigLoadTimeout, load_config_in_time

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
                                             semantic_tokens=self._static_semantic_tokens()),
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
        self._update_feature_registrations(backend)
        self._register_semantic_tokens(backend)

    def backend_stopped(self, backend: Backend) -> None:
        self._update_feature_registrations(backend)

    def advertise_commands(self, uid: int, commands: list[str]) -> None:
        """Tell a client that can hear about new commands those a server (backend `uid`) offers."""
        if not commands or not self.client_supports("workspace", "executeCommand", "dynamicRegistration"):
            return
        registration = {
            "id": f"lsp-hub/commands/{uid}/{next(self._command_registrations)}",
            "method": "workspace/executeCommand",
            "registerOptions": {"commands": commands},
        }
        self.spawn(_quietly([self.request("client/registerCapability", {"registrations": [registration]})],
                            "a command registration"))

    def _initialized(self, params: dict[str, Any]) -> None:
        """A session that joins a workspace whose servers already run hears of them as if they had just started."""
        running = self.pool.running()
        for backend in running:
            self.backend_running(backend)
        for uid, commands in self.forwarder.commands_by_owner().items():
            self.advertise_commands(uid, [c for c in commands if c not in self.commands])
        registrations = self.forwarder.client_registrations()
        if registrations and self.client_supports("workspace", "didChangeWatchedFiles", "dynamicRegistration"):
            self.spawn(_quietly([self.request("client/registerCapability", {"registrations": registrations})],
                                "the servers' watched-file registrations"))

    def _update_feature_registrations(self, changed: Backend) -> None:
        """The languages `changed` serves: register their features with what their running servers offer."""
        if not self.feature_registrations.dynamic or self.state != "initialized":
            return
        running = self.pool.running()
        for language in self.config.languages.values():
            if changed.spec.name not in language.servers:
                continue
            serving = [b for name in language.servers for b in running if b.spec.name == name and b.capabilities]
            self.feature_registrations.update(language, {
                feature.method: [b.capabilities.get(feature.provider) for b in serving if b.supports(feature.method)]
                for feature in FEATURES})

    # ================================================================================================ documents
    def _did_open(self, params: dict[str, Any]) -> None:
        item = params.get("textDocument")
        if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
            logger.warning("didOpen without a textDocument")
            return
        uri = item["uri"]
        document = self.documents.open(
            uri, str(item.get("languageId", "")), int(item.get("version", 0)), str(item.get("text", ""))
        )
        self.workspace.open(self, document)
        self._notify_extensions_changed(document)

    def _did_change(self, params: dict[str, Any]) -> None:
        identifier = params.get("textDocument") or {}
        document = self.documents.get(identifier.get("uri", ""))
        changes = params.get("contentChanges")
        if document is None or not isinstance(changes, list):
            logger.warning("didChange for a document that is not open: %s", identifier.get("uri"))
            return
        document.apply_changes(changes, int(identifier.get("version", document.version + 1)))
        self.workspace.change(self, document, changes)
        self._notify_extensions_changed(document)

    def _did_save(self, params: dict[str, Any]) -> None:
        uri = (params.get("textDocument") or {}).get("uri", "")
        document = self.documents.get(uri)
        if document is None:
            return
        self.workspace.save(self, document, params)
        for extension in self.extensions:
            extension.on_document_saved(self, uri)

    def _did_close(self, params: dict[str, Any]) -> None:
        uri = (params.get("textDocument") or {}).get("uri", "")
        document = self.documents.get(uri)
        if document is None:
            return
        self.documents.close(uri)
        self._line_maps.pop(uri, None)
        self.workspace.close(self, uri)  # closed in the backends once no session has it open
        for extension in self.extensions:
            extension.on_document_closed(self, uri)

    def _notify_extensions_changed(self, document: Document) -> None:
        for extension in self.extensions:
            extension.on_document_changed(self, document)

    # ================================================================================================ workspace
    def _did_change_watched_files(self, params: dict[str, Any]) -> None:
        changes = [c for c in params.get("changes") or [] if isinstance(c, dict)]
        self.router.forget_roots()
        for backend in self.pool.running():
            concerned = [c for c in changes if under(uri_to_path(c.get("uri", "")), backend.root)]
            if concerned:
                backend.notify("workspace/didChangeWatchedFiles", {"changes": concerned})
                for change in concerned:
                    self.reports.changed(backend.uid, change.get("uri", ""))
        for extension in self.extensions:
            extension.on_watched_files_changed(self, changes)

    def settings_from_client(self, value: Any, what: str) -> Any:
        """Settings the client sent for servers, without program-choosing keys unless the client is the user's."""
        if self.client.may_choose_programs:
            return value
        from lsp_hub.config.loader import strip_program_settings

        kept, dropped = strip_program_settings(value, what)
        if dropped:
            logger.warning("ignored settings from a %s client that may name a program to run: %s",
                           self.client.transport, ", ".join(dropped))
        return kept

    def _did_change_configuration(self, params: dict[str, Any]) -> None:
        from_client = params if "settings" not in params else \
            {**params, "settings": self.settings_from_client(params["settings"], "settings")}
        for backend in self.pool.running():
            payload = {"settings": backend.spec.settings} if backend.spec.settings else from_client
            backend.notify("workspace/didChangeConfiguration", payload)

    def _did_change_workspace_folders(self, params: dict[str, Any]) -> None:
        event = params.get("event") or {}
        removed = {uri_to_path(f.get("uri", "")) for f in event.get("removed") or [] if isinstance(f, dict)}
        added = [uri_to_path(f.get("uri", "")) for f in event.get("added") or [] if isinstance(f, dict)]
        self.folders = [f for f in self.folders if f not in removed] + [f for f in added if f]
        self.workspace.set_folders(self.folders)
        for backend in self.pool.running():
            if backend.capabilities.get("workspace", {}).get("workspaceFolders", {}).get("changeNotifications"):
                backend.notify("workspace/didChangeWorkspaceFolders", params)

    def _file_operation_targets(self, method: str, params: Any) -> list[tuple[Backend, dict[str, Any]]]:
        """Each running server whose filters for `method` match some of the files, with just those files."""
        files = params.get("files") if isinstance(params, dict) else None
        if not isinstance(files, list):
            raise ResponseFailure(INVALID_PARAMS, f"{method}: params.files must be a list")
        is_folder: dict[str, bool | None] = {}
        for entry in files:
            for uri in (entry.get("oldUri"), entry.get("uri")) if isinstance(entry, dict) else ():
                path = uri_to_path(uri) if isinstance(uri, str) else None
                if isinstance(uri, str) and path is not None:
                    is_folder[uri] = os.path.isdir(path) if os.path.exists(path) else None
        key = FILE_OPERATIONS[method]
        targets = []
        for backend in self.pool.running():
            if not backend.spec.allows(method):
                continue
            static = ((backend.capabilities.get("workspace") or {}).get("fileOperations") or {}).get(key)
            dynamic = backend.registered_options(method)
            filters = [*(static or {}).get("filters", []), *(dynamic or {}).get("filters", [])]
            chosen = matching_files(filters, files, is_folder)
            if chosen:
                targets.append((backend, {**params, "files": chosen}))
        return targets

    def _did_file_operation(self, method: str, params: dict[str, Any]) -> None:
        for backend, own in self._file_operation_targets(method, params):
            backend.notify(method, own)

    def _work_done_progress_cancel(self, params: dict[str, Any]) -> None:
        self.forwarder.cancel_progress(params.get("token"))

    def _forward_notification(self, method: str, params: Any) -> None:
        uri = _document_uri(params)
        targets = self.backends_for_uri(uri, method) if uri else self.pool.running()
        for backend in targets:
            backend.notify(method, params)

    _notification_handlers: dict[str, Callable[[Session, dict[str, Any]], None]] = {
        "initialized": _initialized,
        "textDocument/didOpen": _did_open,
        "textDocument/didChange": _did_change,
        "textDocument/didSave": _did_save,
        "textDocument/didClose": _did_close,
        "workspace/didChangeWatchedFiles": _did_change_watched_files,
        "workspace/didChangeConfiguration": _did_change_configuration,
        "workspace/didChangeWorkspaceFolders": _did_change_workspace_folders,
        "window/workDoneProgress/cancel": _work_done_progress_cancel,
        **{method: _file_operation_notification(method) for method in FILE_OPERATIONS if "/did" in method},
    }

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
        return self._diagnostics_in_own_text(uri, self.diagnostics.get(uri))

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
    async def _gather(
        self, pendings: list[Pending], *, raw: bool = False
    ) -> list[tuple[Backend, Any, ResponseFailure | None]]:
        """Wait for every pending request (each has its own deadline); cancel them if we are cancelled.

        With `raw`, large answers may stay RawResult (JSON text) for a caller that passes them on untouched.
        """
        try:
            if len(pendings) == 1:
                # asyncio.wait costs a waiter and callbacks; one future needs none.
                try:
                    await pendings[0].future
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():
                        raise  # we were cancelled (the client gave up), not merely the request
                except Exception:
                    pass  # read from the future below
            elif pendings:
                await asyncio.wait([p.future for p in pendings])
        finally:
            for pending in pendings:
                if not pending.future.done() or pending.future.cancelled():
                    pending.cancel()
        pendings = await self._asked_again_after_project_load(pendings)
        outcomes: list[tuple[Backend, Any, ResponseFailure | None]] = []
        for pending in pendings:
            future = pending.future
            if future.cancelled():
                outcomes.append((pending.backend, None, ResponseFailure(INVALID_REQUEST, "cancelled")))
            elif isinstance(exc := future.exception(), ResponseFailure):
                if not isinstance(exc, NotSupported):
                    logger.info("%s: %s failed: %s", pending.backend.name, pending.method, exc.message)
                outcomes.append((pending.backend, None, exc))
            elif exc is not None:
                outcomes.append((pending.backend, None, ResponseFailure(INVALID_REQUEST, str(exc))))
            else:
                result = future.result()
                outcomes.append((pending.backend, result if raw else materialize(result), None))
        return outcomes

    async def _asked_again_after_project_load(self, pendings: list[Pending]) -> list[Pending]:
        """Answers a server gave from a partial view while loading its project are replaced by its answer once the
        project has loaded (bounded by its request timeout); if it does not load in time, the first answer stands."""
        answered: list[Pending] = []
        for pending in pendings:
            backend = pending.backend
            if pending.method in PROJECT_WIDE_METHODS and not pending.cancelled and backend.loading_project and \
                    await backend.wait_project_loaded(backend.request_timeout):
                again = backend.request(pending.method, pending.params)
                try:
                    await asyncio.wait({again.future})
                except asyncio.CancelledError:
                    again.cancel()
                    raise
                pending = again
            answered.append(pending)
        return answered

    async def ask_backend(self, backend: Backend, method: str, params: Any) -> Any:
        """One request to one backend for a feature of the hub's own (the index's callers confirmed by a server):
        its answer, waited for as the runners wait (within its deadline; a project-wide answer given while the
        server loads its project is asked again). Raises the server's ResponseFailure; cancelling the caller sends
        `$/cancelRequest`."""
        _, result, error = (await self._gather([backend.request(method, params)]))[0]
        if error is not None:
            raise error
        return result

    def _fan_out(self, backends: list[Backend], method: str, params: Any) -> list[Pending]:
        return [b.request(method, params) for b in backends if b.state != State.RUNNING or b.supports(method)]

    @staticmethod
    def _successes_or_raise(outcomes: list[tuple[Backend, Any, ResponseFailure | None]]) -> list[tuple[Backend, Any]]:
        """The answers; if every server failed (not merely lacked the feature), the first failure."""
        answers = [(backend, result) for backend, result, error in outcomes if error is None]
        failures = [error for _, _, error in outcomes if error is not None and not isinstance(error, NotSupported)]
        if not answers and failures:
            raise failures[0]
        return answers

    # ======================================================================================== position mapping
    # A client whose text of a document differs from the servers' (another client leads it, see workspace.py) is
    # answered through a line map: its positions are mapped into the servers' text before any runner sees the
    # request, and the answer's positions of that document back into its text. Runners never know.
    def line_map(self, uri: str) -> LineMap | None:
        """This session's text of `uri` mapped to the servers' text; None when they are the same (or it is not
        open here). Kept per (this session's version, the servers' version)."""
        document = self.documents.get(uri)
        shared = self.workspace.document(uri)
        if document is None or shared is None or shared.source is document:
            return None
        key = (id(document), document.version, id(shared.source), shared.version)
        cached = self._line_maps.get(uri)
        if cached is not None and cached[0] == key:
            return cached[1]
        ours, theirs = document.text, shared.text
        line_map = None if ours == theirs else LineMap.between(ours, theirs)
        self._line_maps[uri] = (key, line_map)
        return line_map

    def _run_mapped(self, strategy: Strategy, method: str, params: Any, uri: str, line_map: LineMap) -> Any:
        document = self.documents.get(uri)
        assert document is not None  # a line map exists only for a document open here
        try:
            asked = PositionMapper(uri, line_map, lenient=False).map(params)
        except Unmappable as unmappable:
            self._tell_not_mapped(method, uri, f"line {unmappable.line + 1} is not in the text the servers have "
                                               "and was not answered")
            return None
        tokens = strategy == Strategy.SEMANTIC_TOKENS
        if tokens and method == DELTA:  # the client's previous tokens are in its text, the server's in its own
            method, asked = FULL, {k: v for k, v in asked.items() if k != "previousResultId"}
        back = line_map.reversed()

        def to_client(result: Any) -> Any:
            result = materialize(result)
            if tokens:
                if not isinstance(result, dict) or not isinstance(result.get("data"), list):
                    return result
                # Without a resultId: a later delta would be computed on the servers' text, not this one.
                return {"data": map_semantic_tokens(result["data"], back)}
            mapper = PositionMapper(uri, back, lenient=True, version=document.version)
            try:
                mapped = mapper.map(result)
            except Unmappable:
                self._tell_not_mapped(method, uri, "its answer is about lines not in this client's text")
                return None
            if mapper.left_out:
                self._tell_not_mapped(method, uri, f"{len(mapper.left_out)} item(s) of the answer were left out, "
                                                   "being on lines not in this client's text")
            return mapped

        answer = self._runners[strategy](method, asked)
        if asyncio.isfuture(answer) or asyncio.iscoroutine(answer):
            async def run() -> Any:
                return to_client(await answer)

            return run()
        return to_client(answer)

    def _tell_not_mapped(self, method: str, uri: str, what: str) -> None:
        """Say why a request was answered with nothing or with less: a log message, which editors keep out of the
        user's way (an error response would pop up in some for what is only a line the user is typing elsewhere);
        `lsp-hub query` and the MCP tools turn it into `complete: false`."""
        leader = self.workspace.leader(uri)
        if leader is not None and self.workspace.has_unsaved_edits(leader, uri):
            why = f"this line has unsaved changes in another client ({client_name(leader)})"
        else:
            why = "this client's text differs there from the text the servers have " \
                  f"({client_name(leader) if leader is not None else 'another client'}'s)"
        path = uri_to_path(uri) or uri
        self.notify("window/logMessage", {"type": 3, "message": f"{NOT_MAPPED_NOTICE}{method} on "
                                                                 f"{os.path.basename(path)}: {what}: {why}"})

    def unsaved_elsewhere(self, arguments: list[Any]) -> list[dict[str, str]]:
        """lspHub.unsavedElsewhere {uris}: [{uri, client}] for each of the files another session of this workspace
        has unsaved changes in (changed since opened or saved, and unlike the disk)."""
        args = arguments[0] if arguments and isinstance(arguments[0], dict) else {}
        uris = args.get("uris")
        if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
            raise ResponseFailure(INVALID_PARAMS, "lspHub.unsavedElsewhere needs {uris: [string]}")
        return self.workspace.unsaved_elsewhere(self, uris)

    def _document_backends(self, method: str, params: Any) -> list[Backend]:
        uri = _document_uri(params)
        if uri is None:
            raise ResponseFailure(INVALID_PARAMS, f"{method}: params.textDocument.uri is required")
        return self.backends_for_uri(uri, method)

    def _with_fallback(self, method: str, params: Any, result: Any) -> Awaitable[Any] | Any:
        if not is_empty(result):
            return result
        for extension in self.extensions:
            answer = extension.fallback(self, method, params)
            if answer is not None:
                return answer
        return result

    def _run_first(self, method: str, params: Any, *, tag: bool = False) -> Awaitable[Any]:
        """The first server in precedence order that offers the method answers; a starting server's
        capabilities are known only once it runs, so one that turns out not to offer it passes the turn on."""
        backends = self._document_backends(method, params)
        candidates = [b for b in backends if b.state != State.RUNNING or b.supports(method)]
        # Sent now, before a change the client sent after this request can reach the server: to each candidate
        # up to the first running one, since each starting one before it may turn out not to offer the method.
        pendings: list[Pending] = []
        for backend in candidates:
            pendings.append(backend.request(method, params))
            if backend.state == State.RUNNING:
                break

        async def run() -> Any:
            try:
                for pending in pendings:
                    _, result, error = (await self._gather([pending], raw=not tag))[0]
                    if isinstance(error, NotSupported):
                        continue
                    if error is not None:
                        raise error
                    return tag_items(result, pending.backend.uid) if tag else result
                return await _resolved(self._with_fallback(method, params, None))
            finally:
                for pending in pendings:
                    pending.cancel()  # the later ones were not needed (a no-op for those answered)

        return run()

    def _run_first_tag_items(self, method: str, params: Any) -> Awaitable[Any]:
        return self._run_first(method, params, tag=True)

    def _run_first_non_empty(self, method: str, params: Any) -> Awaitable[Any]:
        pendings = self._fan_out(self._document_backends(method, params), method, params)

        async def run() -> Any:
            try:
                first_answer: Any = None
                failures: list[ResponseFailure] = []
                for pending in pendings:  # precedence order
                    _, result, error = (await self._gather([pending], raw=True))[0]
                    if error is not None:
                        if not isinstance(error, NotSupported):
                            failures.append(error)
                        continue
                    if not is_empty(result):
                        return result
                    if first_answer is None:
                        first_answer = result
                if first_answer is None and failures:
                    raise failures[0]
                return await _resolved(self._with_fallback(method, params, first_answer))
            finally:
                for pending in pendings:
                    if not pending.future.done() or pending.future.cancelled():
                        pending.cancel()

        return run()

    def _run_hover(self, method: str, params: Any) -> Awaitable[Any]:
        pendings = self._fan_out(self._document_backends(method, params), method, params)

        async def run() -> Any:
            answers = self._successes_or_raise(await self._gather(pendings))
            return merge_hover([(backend.name, result) for backend, result in answers])

        return run()

    def _run_completion(self, method: str, params: Any) -> Awaitable[Any]:
        pendings = self._fan_out(self._document_backends(method, params), method, _without_partial(params))

        async def run() -> Any:
            answers = self._successes_or_raise(await self._gather(pendings, raw=True))
            present = [backend for backend, result in answers if result is not None]
            if len(present) == 1:
                self._completion_owner = present[0].uid  # its items go out untagged: resolve goes to it
            return merge_completion([(backend.uid, result) for backend, result in answers])

        return run()

    def _run_code_action(self, method: str, params: Any) -> Awaitable[Any]:
        backends = self._document_backends(method, params)
        context = params.get("context") if isinstance(params.get("context"), dict) else {}
        by_owner = self.diagnostics.origins(_document_uri(params) or "", context.get("diagnostics") or [])
        pendings = []
        for backend in backends:
            if backend.state == State.RUNNING and not backend.supports(method):
                continue
            own = {**params, "context": {**context, "diagnostics": by_owner.get(backend.uid, [])}}
            pendings.append(backend.request(method, _without_partial(own)))

        async def run() -> Any:
            answers = self._successes_or_raise(await self._gather(pendings))
            merged: list[Any] = []
            for backend, result in answers:
                for action in result or []:
                    # A bare Command has no data field to carry an origin; executeCommand finds its owner.
                    if isinstance(action, dict) and not isinstance(action.get("command"), str):
                        tag_item(action, backend.uid)
                    merged.append(action)
            return merged if answers else None

        return run()

    def _run_concat_tagged(self, method: str, params: Any) -> Awaitable[Any]:
        pendings = self._fan_out(self._document_backends(method, params), method, _without_partial(params))

        async def run() -> Any:
            answers = self._successes_or_raise(await self._gather(pendings))
            return concat_tagged([(backend.uid, result) for backend, result in answers])

        return run()

    def _run_locations(self, method: str, params: Any) -> Awaitable[Any]:
        pendings = self._fan_out(self._document_backends(method, params), method, _without_partial(params))

        async def run() -> Any:
            answers = self._successes_or_raise(await self._gather(pendings))
            return merge_locations([result for _, result in answers])

        return run()

    def locations_from_servers(self, method: str, params: Any) -> Awaitable[Any]:
        """The document's servers asked for locations (references, say) as the LOCATIONS strategy asks them, their
        answers merged: for a feature of the hub's own that completes them (`lspHub.references`)."""
        return self._run_locations(method, params)

    def _run_references(self, method: str, params: Any) -> Awaitable[Any]:
        from_servers = self._run_locations(method, params)  # sent now, in the client's order

        async def run() -> Any:
            answer = await from_servers
            for extension in self.extensions:
                completed = extension.complete_references(self, params, answer)
                if completed is not None:
                    return await completed
            return answer

        return run()

    def _run_workspace_symbol(self, method: str, params: Any) -> Awaitable[Any]:
        # Starting servers too: a search right after opening a file should not miss the server it started.
        live = [b for b in self.pool if b.state in (State.RUNNING, State.STARTING)]
        pendings = self._fan_out(live, method, _without_partial(params))

        async def run() -> Any:
            answers = self._successes_or_raise(await self._gather(pendings))
            merged = merge_symbols([tag_items(result, backend.uid) for backend, result in answers])
            return await _resolved(self._with_fallback(method, params, merged))

        return run()

    def _run_resolve(self, method: str, params: Any) -> Any:
        uid, original = untag_item(params)
        if uid is None and method == "completionItem/resolve":
            uid = self._completion_owner
        backend = self.pool.by_uid(uid) if uid is not None else None
        if backend is None or backend.state != State.RUNNING or not backend.supports(method):
            return original  # nothing to add; the item stays as it was
        pending = backend.request(method, original)

        async def run() -> Any:
            _, result, error = (await self._gather([pending]))[0]
            if error is not None:
                raise error
            return tag_item(result, backend.uid)

        return run()

    def _run_by_item_origin(self, method: str, params: Any) -> Any:
        item = params.get("item") if isinstance(params, dict) else None
        uid, original = untag_item(item)
        backend = self.pool.by_uid(uid) if uid is not None else None
        if backend is None:
            if isinstance(item, dict) and isinstance(item.get("uri"), str):
                backends = self.backends_for_uri(item["uri"], method)
                backend = backends[0] if backends else None
            if backend is None:
                return self._with_fallback(method, params, None)
        pending = backend.request(method, {**params, "item": original})
        owner = backend

        async def run() -> Any:
            _, result, error = (await self._gather([pending]))[0]
            if error is not None:
                raise error
            for entry in result or []:
                if isinstance(entry, dict):
                    for field in ("from", "to"):
                        if isinstance(entry.get(field), dict):
                            tag_item(entry[field], owner.uid)
                    if "name" in entry and "uri" in entry:
                        tag_item(entry, owner.uid)
            return result

        return run()

    def _run_execute_command(self, method: str, params: Any) -> Any:
        command = params.get("command") if isinstance(params, dict) else None
        if not isinstance(command, str):
            raise ResponseFailure(INVALID_PARAMS, "workspace/executeCommand needs a command name")
        arguments = params.get("arguments") or []
        own = self.commands.get(command)
        if own is not None:
            return own(self, arguments if isinstance(arguments, list) else [arguments])
        backend = self.forwarder.command_owner(command)
        if backend is None:
            raise ResponseFailure(INVALID_PARAMS, f"no running server offers the command {command!r}")
        pending = backend.request(method, params)

        async def run() -> Any:
            _, result, error = (await self._gather([pending], raw=True))[0]
            if error is not None:
                raise error
            return result

        return run()

    def _run_file_operation(self, method: str, params: Any) -> Awaitable[Any]:
        pendings = [backend.request(method, own) for backend, own in self._file_operation_targets(method, params)]

        async def run() -> Any:
            answers = self._successes_or_raise(await self._gather(pendings))
            return merge_workspace_edits([(backend.name, result) for backend, result in answers])

        return run()

    def _run_document_diagnostic(self, method: str, params: Any) -> Any:
        uri = _document_uri(params)
        if uri is None:
            raise ResponseFailure(INVALID_PARAMS, "textDocument/diagnostic needs textDocument.uri")
        return self.client_diagnostics.document_report(uri, params.get("previousResultId"),
                                                       self.diagnostics_for_client(uri)[0])

    def _run_workspace_diagnostic(self, method: str, params: Any) -> Any:
        previous = params.get("previousResultIds") if isinstance(params, dict) else None
        known = {str(entry.get("uri")): entry.get("value") for entry in previous or [] if isinstance(entry, dict)}

        def version_of(uri: str) -> int | None:
            document = self.documents.get(uri)
            return document.version if document else None

        return self.client_diagnostics.workspace_report(self.diagnostics, known, version_of,
                                                        lambda uri: self.diagnostics_for_client(uri)[0])

    def _run_semantic_tokens(self, method: str, params: Any) -> Awaitable[Any]:
        """The first server in precedence order that provides tokens answers, remapped into the hub's legend; a
        delta goes to the server that issued its previousResultId, or becomes a full request if that one is gone."""
        backends = self._document_backends(method, params)  # params is an object with a document from here on
        params = _without_partial(params)
        issuer = self._token_issuer(params) if method == DELTA else None
        plan: list[tuple[Backend, str, Any]] = []
        if issuer is not None:
            backend, server_result_id = issuer
            plan.append((backend, DELTA, {**params, "previousResultId": server_result_id}))
        else:
            wanted = FULL if method == DELTA else method
            asked = {k: v for k, v in params.items() if k != "previousResultId"} if method == DELTA else params
            for backend in backends:
                if backend.state != State.RUNNING:
                    # Its capabilities are known only once it runs: asked in case, and the turn passes on if not.
                    plan.append((backend, wanted, asked))
                    continue
                provider = self._token_provider(backend)
                chosen = method_for(provider, wanted) if provider is not None else None
                if chosen is not None:
                    plan.append((backend, chosen, asked))
                    break
        pendings = [backend.request(asked_method, asked_params) for backend, asked_method, asked_params in plan]

        async def run() -> Any:
            try:
                for pending in pendings:
                    _, result, error = (await self._gather([pending]))[0]
                    if isinstance(error, NotSupported):
                        continue
                    if error is not None:
                        raise error
                    return self._tokens_for_client(pending.backend, result)
                return None
            finally:
                for pending in pendings:
                    pending.cancel()  # the later ones were not needed (a no-op for those answered)

        return run()

    @property
    def token_legend(self) -> HubLegend:
        if self._token_legend is None:
            # Growable only if the client lets the hub register the grown legend again.
            dynamic = self.client_supports("textDocument", "semanticTokens", "dynamicRegistration")
            self._token_legend = HubLegend(growable=dynamic)
        return self._token_legend

    def _static_semantic_tokens(self) -> dict[str, Any] | None:
        """SemanticTokensOptions for the initialize answer, or None when the hub registers them once servers run."""
        return None if self.token_legend.growable else hub_provider(self.token_legend)

    def _token_provider(self, backend: Backend) -> dict[str, Any] | None:
        if not backend.spec.allows(FULL):
            return None
        return server_provider(backend.capabilities, backend.registered_options(REGISTRATION_METHOD))

    def _token_issuer(self, params: Any) -> tuple[Backend, str] | None:
        """The running server process that issued a delta request's previousResultId, and its own id for it."""
        unwrapped = unwrap_result_id(params.get("previousResultId") if isinstance(params, dict) else None)
        if unwrapped is None:
            return None
        uid, generation, server_result_id = unwrapped
        backend = self.pool.by_uid(uid)
        if backend is None or backend.state != State.RUNNING or backend.pid != generation:
            return None  # gone, or restarted since: the new process never issued that id
        provider = self._token_provider(backend)
        if provider is None or method_for(provider, DELTA) != DELTA:
            return None
        return backend, server_result_id

    def _tokens_for_client(self, backend: Backend, result: Any) -> Any:
        provider = self._token_provider(backend)
        if provider is None or not isinstance(result, dict):
            return None  # without the server's legend its indices mean nothing to the client
        token_map = self.token_legend.map_for(provider["legend"])
        return wrap_result_id(remap_result(result, token_map), backend.uid, backend.pid or 0)

    def _register_semantic_tokens(self, backend: Backend) -> None:
        """With a client that registers dynamically: (re-)register textDocument/semanticTokens when a running
        server's legend is new to the hub. The legend only grows, so tokens the client already has stay valid."""
        legend = self.token_legend
        provider = self._token_provider(backend)
        if not legend.growable or provider is None:
            return
        legend.map_for(provider["legend"])
        previous = self._token_registration
        if previous is not None and previous[1] == legend.version:
            return
        registration_id = f"lsp-hub/semanticTokens/{legend.version}"
        self._token_registration = (registration_id, legend.version)
        answers = []
        if previous is not None:
            _, answer = self.protocol.request("client/unregisterCapability", {
                "unregisterations": [{"id": previous[0], "method": REGISTRATION_METHOD}]})
            answers.append(answer)
        _, answer = self.protocol.request("client/registerCapability", {"registrations": [{
            "id": registration_id, "method": REGISTRATION_METHOD,
            "registerOptions": {"documentSelector": None, **hub_provider(legend)}}]})
        answers.append(answer)
        self.spawn(_quietly(answers, "semantic tokens registration"))

    def _run_forward(self, method: str, params: Any) -> Awaitable[Any]:
        """An extension method: to the document's servers in order, or to every running server, first answer."""
        uri = _document_uri(params)
        backends = self.backends_for_uri(uri, method) if uri else self.pool.running()
        pendings = [b.request(method, params) for b in backends]

        async def run() -> Any:
            outcomes = await self._gather(pendings, raw=True)
            for _, result, error in outcomes:
                if error is None:
                    return result
            real = [e for _, _, e in outcomes if e is not None and e.code != METHOD_NOT_FOUND]
            if real:
                raise real[0]
            raise ResponseFailure(METHOD_NOT_FOUND, f"no server handles {method}")

        return run()

    async def complete_diagnostics(self, arguments: list[Any]) -> dict[str, Any]:
        """lspHub.diagnostics {uri, text?, timeoutMs?}: the document's diagnostics once every server that serves it
        has reported on its current content (with `text`: that content, applied first). Never a fixed sleep.
        {uris: [...], timeoutMs?}: the same for several documents, waited for together: {reports: [one per uri,
        with `error` instead for a file that cannot be read], complete}."""
        args = arguments[0] if arguments and isinstance(arguments[0], dict) else {}
        uris = args.get("uris")
        if uris is None:
            return await self._complete_diagnostics_of(args)
        if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris) or \
                len(uris) > MAX_DIAGNOSTICS_URIS or "text" in args:
            raise ResponseFailure(INVALID_PARAMS, "lspHub.diagnostics {uris} needs a list of at most "
                                                  f"{MAX_DIAGNOSTICS_URIS} strings (and no text)")

        async def one(uri: str) -> dict[str, Any]:
            try:
                return await self._complete_diagnostics_of({**args, "uri": uri})
            except ResponseFailure as failure:
                return {"uri": uri, "diagnostics": [], "complete": False, "pending": [], "checkedBy": [],
                        "notChecked": [], "error": failure.message}

        reports = list(await asyncio.gather(*(one(uri) for uri in uris)))
        return {"reports": reports, "complete": all(report["complete"] for report in reports)}

    async def _complete_diagnostics_of(self, args: dict[str, Any]) -> dict[str, Any]:
        uri, text, timeout_ms = args.get("uri"), args.get("text"), args.get("timeoutMs", 5000)
        timeout_ok = isinstance(timeout_ms, int | float) and not isinstance(timeout_ms, bool) and \
            0 <= timeout_ms <= 600_000
        if not isinstance(uri, str) or (text is not None and not isinstance(text, str)) or not timeout_ok:
            raise ResponseFailure(INVALID_PARAMS, "lspHub.diagnostics needs {uri: string, text?: string, "
                                                  "timeoutMs?: number of milliseconds up to 600000}")
        if "://" not in uri:  # a path, absolute or relative to the first workspace folder
            uri = path_to_uri(os.path.join(self.folders[0], uri) if self.folders else os.path.abspath(uri))
        document = self.documents.get(uri)
        if text is not None and document is not None:
            self._did_change({"textDocument": {"uri": uri, "version": document.version + 1},
                              "contentChanges": [{"text": text}]})
        elif document is None:
            self._did_open({"textDocument": {"uri": uri, "languageId": "", "version": 1,
                                             "text": text if text is not None else self._read_for_diagnostics(uri)}})
        document = self.documents.get(uri)
        assert document is not None
        version = document.version
        sent = self.workspace.shared_version(uri)  # what the backends have: the leading session's text
        on = sent if sent is not None else version
        coverage = self.workspace.diagnostics_coverage(uri)
        servers = coverage.backends
        # A server whose diagnostics of this file depend on other files must report after the last change it was
        # told of elsewhere; a per-file server (a linter) only on this file's content.
        since = {b.uid: self.reports.last_change_besides(b.uid, uri) if self.workspace.diagnostics_cross_files(b)
                 else 0 for b in servers}

        def reported(backend: Backend) -> bool:
            return self.reports.has_reported_on(backend.uid, uri, on, after=since[backend.uid])

        unanswered: set[int] = set()  # servers whose verdict was asked for and not given: not waited for

        def waiting() -> list[Backend]:
            return [b for b in servers if b.state != State.FAILED and b.uid not in unanswered and not reported(b)]

        stale = waiting()
        asked = [self._ask_tsserver(backend, uri, on, unanswered) for backend in stale
                 if backend.spec.diagnostics_via_tsserver]
        for backend in stale:
            if since[backend.uid] and not backend.spec.diagnostics_via_tsserver:
                self.workspace.pull_now(backend, uri)  # its last pull was before that change (if it pulls)
        try:
            await self.reports.wait_until(lambda: not waiting(), timeout_ms / 1000)
        finally:
            for task in asked:
                task.cancel()
        checked_by: list[str] = []
        not_checked = list(coverage.cannot)
        pending: list[str] = []
        for backend in servers:
            if reported(backend) and backend.uid not in unanswered:
                checked_by.append(backend.name)
                continue
            pending.append(backend.name)
            if backend.state == State.FAILED:
                not_checked.append({"server": backend.name, "reason": "failed",
                                    "detail": backend.failure or "failed while checking"})
            elif backend.uid in unanswered:
                not_checked.append({"server": backend.name, "reason": "failed",
                                    "detail": "could not be asked for its diagnostics"})
            elif backend.state in (State.STARTING, State.STOPPED):
                not_checked.append({"server": backend.name, "reason": "starting", "detail": "still starting"})
            else:
                # Its verdict on this content may be stale only because another file changed since (a push
                # server that publishes only what changed): said so, since that is what to look at.
                stale_only = since[backend.uid] and self.reports.has_reported_on(backend.uid, uri, on)
                not_checked.append({"server": backend.name, "reason": "timeout", "detail": (
                    "no report since another file changed" if stale_only else "no report") +
                    f" within {timeout_ms / 1000:g} s"})
        checked_by = list(dict.fromkeys(checked_by))
        diagnostics, left_out = self.diagnostics_for_client(uri)
        answer = {"uri": uri, "version": version, "language": coverage.language,
                  "diagnostics": diagnostics, "complete": not pending and bool(checked_by),
                  "pending": pending, "checkedBy": checked_by, "notChecked": not_checked}
        if left_out:
            leader = self.workspace.leader(uri)
            reason = ("on lines with unsaved changes in another client"
                      f" ({client_name(leader) if leader is not None else 'gone'})")
            answer["leftOut"] = [{"message": d.get("message"), "source": d.get("source"), "reason": reason}
                                 for d in left_out]
        return answer

    def _ask_tsserver(self, backend: Backend, uri: str, version: int, unanswered: set[int]) -> asyncio.Task[None]:
        """Ask typescript-language-server's tsserver for its diagnostics of `uri` as it is now (sent after the
        change, so about that content) and record them as its report on `version`. A server that cannot answer
        (an older one without `typescript.tsserverRequest`) goes into `unanswered` at once: named as pending, not
        waited for until the timeout."""
        asked_when = self.reports.now()  # its verdict is about the workspace as it is now
        pendings = [backend.request("workspace/executeCommand", {
            "command": "typescript.tsserverRequest", "arguments": [kind, {"file": uri}]})
            for kind in TSSERVER_DIAGNOSTIC_REQUESTS]

        async def run() -> None:
            diagnostics: list[dict[str, Any]] = []
            for _, result, error in await self._gather(pendings):
                if error is not None or not isinstance(result, dict) or result.get("success") is False:
                    logger.info("%s: no diagnostics from tsserver for %s (%s)", backend.name, uri,
                                error or (result.get("message") if isinstance(result, dict) else result))
                    unanswered.add(backend.uid)
                    self.reports.wake()
                    return
                diagnostics.extend(tsserver_diagnostics(result.get("body")))
            if self.workspace.shared_version(uri) == version:  # else a newer change is being waited for
                self.workspace.accept_asked_diagnostics(backend, uri, diagnostics, version, asked_when)

        return self.spawn(run())

    def _read_for_diagnostics(self, uri: str) -> str:
        """A file no client has open, read from disk: only inside the workspace folders, only UTF-8 text."""
        path = uri_to_path(uri)
        real = os.path.realpath(path) if path else None
        if real is None or not any(under(real, os.path.realpath(folder)) for folder in self.folders):
            raise ResponseFailure(INVALID_PARAMS, f"lspHub.diagnostics: {uri} is outside the workspace folders; "
                                                  "send its text to check it")
        try:
            with open(real, encoding="utf-8") as file:
                return file.read()
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else "not UTF-8 text"
            raise ResponseFailure(INVALID_PARAMS, f"lspHub.diagnostics: cannot read {path}: {reason}") from None

    async def restart_server(self, arguments: list[Any]) -> dict[str, Any]:
        """lspHub.restartServer {name, root?}: stop the matching servers and start them again (a failed one too)."""
        args = arguments[0] if arguments and isinstance(arguments[0], dict) else {}
        name, root = args.get("name"), args.get("root")
        if not isinstance(name, str):
            raise ResponseFailure(INVALID_PARAMS, "lspHub.restartServer needs {name: string, root?: string}")
        matching = [b for b in self.pool if b.name == name and (root is None or b.root == root)]
        if not matching:
            raise ResponseFailure(INVALID_PARAMS, f"no server {name!r} at {root or 'any root'}")
        for backend in matching:
            await backend.restart()
        return {"restarted": [{"name": b.name, "root": b.root, "state": b.state.value} for b in matching]}

    def languages(self) -> dict[str, Any]:
        """lspHub.languages: each configured language, its extensions, whether verified writes format it
        (`formatOnWrite`) and apply the servers' preferred fixes (`autoCodeActions`), and its servers in precedence
        order, each `running` (or another backend state) if it runs at some root, else `disabled`, `missing` (no
        binary found) or `not started`, with the binary it would run and, once it runs, whether it formats
        documents (`formats`) and ranges of them (`formatsRanges`). `writes`: the [hub] options of verified
        writes."""
        from lsp_hub.config.resolve import resolve_command

        root = Path(self.folders[0]) if self.folders else Path.cwd()
        languages = []
        for language in self.config.languages.values():
            servers = []
            for name in language.servers:
                spec = self.config.servers.get(name)
                backends = [backend for backend in self.pool if backend.name == name]
                binary = None
                if spec is not None and not spec.disabled:
                    binary = resolve_command(spec, root, trusted=self.is_trusted(str(root))).path
                state = ("disabled" if spec is None or spec.disabled else backends[0].state.value if backends
                         else "missing" if binary is None else "not started")
                running = [backend for backend in backends if backend.state == State.RUNNING]
                # Whether it formats documents, and ranges of them: known once it runs (its capabilities), else null.
                formats, formats_ranges = ((spec is not None and spec.allows(method)
                                            and any(backend.supports(method) for backend in running)
                                            ) if running else None
                                           for method in ("textDocument/formatting", "textDocument/rangeFormatting"))
                servers.append({"name": name, "state": state, "binary": binary, "formats": formats,
                                "formatsRanges": formats_ranges})
            format_on_write = language.format_on_write
            auto_code_actions = language.auto_code_actions
            languages.append({"language": language.name, "extensions": list(language.extensions),
                              "filenames": list(language.filenames), "servers": servers,
                              "formatOnWrite": self.config.hub.format_on_write if format_on_write is None
                              else format_on_write,
                              "autoCodeActions": self.config.hub.auto_code_actions if auto_code_actions is None
                              else auto_code_actions})
        hub = self.config.hub
        return {"languages": languages,
                "writes": {"dependentsLimit": hub.dependents_limit, "dependentsTimeoutMs": hub.dependents_timeout_ms,
                           "undoDepth": hub.undo_depth, "autoCodeActions": hub.auto_code_actions}}

    # ================================================================================================ status
    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "servers": self.server_statuses(),
            "documents": len(self.documents),
            "workspaceFolders": self.folders,
            "hub": {"version": __version__, "pid": os.getpid()},
            "configProblems": self.config_problems,
        }
        for extension in self.extensions:
            result.update(extension.status(self))
        return result


# ==================================================================================================== helpers
async def _resolved(value: Any) -> Any:
    if asyncio.isfuture(value) or asyncio.iscoroutine(value):
        return await value
    return value


async def _quietly(answers: list[asyncio.Future[Any]], what: str) -> None:
    """Await the client's answers to the hub's own requests; a refusal is logged, not raised."""
    for answer in answers:
        try:
            await answer
        except Exception as exc:
            logger.info("client declined %s: %s", what, exc)


def _document_uri(params: Any) -> str | None:
    if isinstance(params, dict):
        document = params.get("textDocument")
        if isinstance(document, dict) and isinstance(document.get("uri"), str):
            return document["uri"]
    return None


def _item_uri(params: Any) -> str | None:
    """The document of a hierarchy follow-up's item (callHierarchy/incomingCalls ...), whose positions are in it."""
    item = params.get("item") if isinstance(params, dict) else None
    return item["uri"] if isinstance(item, dict) and isinstance(item.get("uri"), str) else None


def _without_partial(params: Any) -> Any:
    """The hub merges whole answers: partial results from several servers would interleave, so none are asked."""
    if isinstance(params, dict) and "partialResultToken" in params:
        return {k: v for k, v in params.items() if k != "partialResultToken"}
    return params


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


__all__ = ["HubCommand", "Session", "SessionExtension", "path_to_uri"]
