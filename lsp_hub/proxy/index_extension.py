"""One session's side of its workspace's code index (`index_shared.SharedIndex`): the index's `lspHub.*` commands
(repoMap, relevantFiles, dependents, callers, references, syntaxCheck), the watched-file registration that keeps
it fresh, references completed from it, and its stand-in answers (`index_stand_in.py`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.documents import Document
from lsp_hub.proxy.index_call_sites import REFERENCES, read_quietly, server_call_sites
from lsp_hub.proxy.index_roots import client_named_a_folder
from lsp_hub.proxy.index_shared import SharedIndex
from lsp_hub.proxy.index_stand_in import STAND_INS
from lsp_hub.proxy.navigation_commands import NAVIGATION_COMMANDS, anchor_of, call_for
from lsp_hub.proxy.prestart import wants_prestart
from lsp_hub.proxy.runners import server_locations
from lsp_hub.proxy.session import HubCommand, Session, SessionExtension
from lsp_hub.transport.jsonrpc import INVALID_PARAMS, ResponseFailure

if TYPE_CHECKING:
    from lsp_hub.index.workspace import WorkspaceIndex

logger = logging.getLogger(__name__)

SERVER_CALLERS_TIMEOUT_SECONDS = 5.0  # how long lspHub.callers waits for servers by default


class IndexExtension(SessionExtension):
    """One session's side of its workspace's `SharedIndex`: its hub commands, its watched-file registration, its
    stand-in answers. The index itself is the workspace's, made by the first session to initialize."""

    def __init__(self) -> None:
        self.session: Session | None = None
        self.shared: SharedIndex | None = None
        self._watching: asyncio.Task[None] | None = None

    def on_initialized(self, session: Session) -> None:
        self.session = session
        shared = SharedIndex.of(session.workspace, session.folders, client_named_a_folder(session.init_params))
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
        if wants_prestart(session.workspace.config.hub.prestart, session.init_params):
            shared.prestart_servers()
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
            "lspHub.importedNames": self._command("imported_names", ("files",)),
            "lspHub.callers": self._callers,
            "lspHub.references": self._references,
            "lspHub.syntaxCheck": self._syntax_check,
            **{name: self._navigation(name) for name in NAVIGATION_COMMANDS},
        }

    def _navigation(self, name: str) -> HubCommand:
        """One of the index's navigation commands (navigation_commands.py), run on the index its file belongs to."""
        spec, call = NAVIGATION_COMMANDS[name], call_for(name)

        def run(session: Session, arguments: list[Any]) -> Any:
            args = _single_object(arguments)
            return self._query(call, args, anchor_of(spec, args))

        return run

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
            asked = await server_call_sites(session.workspace, found["definitions"], timeout_ms / 1000)
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
            if not asked:  # the index's uses by name alone: never a complete answer (no server of the language ran)
                covered["complete"] = False
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
            return document.text if document is not None else read_quietly(str(index.root / path))

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


def _log_refusal(answer: asyncio.Future[Any]) -> None:
    if not answer.cancelled() and answer.exception() is not None:
        logger.info("the client would not watch files for the index: %s", answer.exception())


def _single_object(arguments: list[Any]) -> dict[str, Any]:
    if not arguments:
        return {}
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        raise ResponseFailure(INVALID_PARAMS, "lspHub commands take one JSON object argument")
    return arguments[0]
