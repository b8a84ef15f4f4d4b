"""The runners: each carries out one strategy of the method table (`methods.py`) for one client request, asking
the backends of the client's workspace through a narrow `RequestContext` (the session, seen from here).

A runner does its routing and sending before it returns (so every backend sees requests and changes in the order
the client sent them); only the waiting happens in the coroutine it returns. Answers stay raw JSON where no merge
needs them parsed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from lsp_hub.proxy.backends import Backend, NotSupported, Pending, State
from lsp_hub.proxy.documents import DocumentStore, uri_to_path
from lsp_hub.proxy.file_operations import FILE_OPERATIONS, matching_files
from lsp_hub.proxy.methods import SERVER_REFERENCES, MethodSpec, Targets, spec_for
from lsp_hub.proxy.semantic_tokens import DELTA, FULL, method_for
from lsp_hub.proxy.strategies import Strategy, is_empty, tag_item, tag_items, untag_item
from lsp_hub.transport.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, ResponseFailure, materialize

if TYPE_CHECKING:
    from lsp_hub.proxy.client_tokens import ClientSemanticTokens
    from lsp_hub.proxy.diagnostics import ClientDiagnostics
    from lsp_hub.proxy.workspace import Workspace

logger = logging.getLogger(__name__)
Outcome = tuple[Backend, Any, ResponseFailure | None]


class RequestContext(Protocol):
    """What a runner may know of the client session it answers."""

    @property
    def workspace(self) -> Workspace: ...

    @property
    def documents(self) -> DocumentStore: ...

    @property
    def client_diagnostics(self) -> ClientDiagnostics: ...

    @property
    def semantic_tokens(self) -> ClientSemanticTokens: ...

    @property
    def owners(self) -> dict[str, int]: ...  # per method: the one server whose items went out untagged

    def diagnostics_for_client(self, uri: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]: ...

    def hub_command(self, name: str) -> Callable[[list[Any]], Any] | None: ...

    def stand_in(self, name: str, params: Any) -> Awaitable[Any] | None: ...

    def complete_references(self, params: Any, from_servers: Any) -> Awaitable[Any] | None: ...

    def tell_not_mapped(self, method: str, uri: str, what: str) -> None: ...  # `client_positions.run_mapped`


Runner = Callable[[RequestContext, MethodSpec, str, Any], Any]


def run(context: RequestContext, method: str, params: Any) -> Any:
    spec = spec_for(method)
    return RUNNERS[spec.strategy](context, spec, method, params)


# ================================================================================================ waiting
async def gather(pendings: list[Pending], *, raw: bool = False) -> list[Outcome]:
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
    pendings = await _asked_again_after_project_load(pendings)
    outcomes: list[Outcome] = []
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


async def _asked_again_after_project_load(pendings: list[Pending]) -> list[Pending]:
    """Answers a server may have given from a partial view, asked or answered while it loaded its project, are
    replaced by its answer once the project has loaded (bounded by its request timeout); if it does not load in
    time, the first answer stands. Asked while loading counts even when the answer comes after the load: a busy
    syntax-only server answered typescript-language-server's definition 150 ms after the load's end."""
    answered: list[Pending] = []
    for pending in pendings:
        backend = pending.backend
        partial = backend.loading_project or pending.sent_while_loading
        if partial and spec_for(pending.method).project_wide and not pending.cancelled and \
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


async def ask_backend(backend: Backend, method: str, params: Any) -> Any:
    """One request to one backend for a feature of the hub's own (the index's callers confirmed by a server): its
    answer, waited for as the runners wait (within its deadline; a project-wide answer given while the server loads
    its project is asked again). Raises the server's ResponseFailure; cancelling the caller sends
    `$/cancelRequest`."""
    _, result, error = (await gather([backend.request(method, params)]))[0]
    if error is not None:
        raise error
    return result


def _successes_or_raise(outcomes: list[Outcome]) -> list[tuple[Backend, Any]]:
    """The answers; if every server failed (not merely lacked the feature), the first failure."""
    answers = [(backend, result) for backend, result, error in outcomes if error is None]
    failures = [error for _, _, error in outcomes if error is not None and not isinstance(error, NotSupported)]
    if not answers and failures:
        raise failures[0]
    return answers


async def _resolved(value: Any) -> Any:
    if asyncio.isfuture(value) or asyncio.iscoroutine(value):
        return await value
    return value


def _stand_in(context: RequestContext, spec: MethodSpec, params: Any, result: Any) -> Any:
    """The index's answer when the servers gave none and the method has a stand-in."""
    if spec.stand_in is None or not is_empty(result):
        return result
    answer = context.stand_in(spec.stand_in, params)
    return result if answer is None else answer


# ================================================================================================ targets
def document_uri(params: Any) -> str | None:
    if isinstance(params, dict):
        document = params.get("textDocument")
        if isinstance(document, dict) and isinstance(document.get("uri"), str):
            return document["uri"]
    return None


def item_uri(params: Any) -> str | None:
    """The document of a hierarchy follow-up's item (callHierarchy/incomingCalls ...), whose positions are in it."""
    item = params.get("item") if isinstance(params, dict) else None
    return item["uri"] if isinstance(item, dict) and isinstance(item.get("uri"), str) else None


def without_partial(params: Any) -> Any:
    """The hub merges whole answers: partial results from several servers would interleave, so none are asked."""
    if isinstance(params, dict) and "partialResultToken" in params:
        return {k: v for k, v in params.items() if k != "partialResultToken"}
    return params


def _document_backends(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> list[Backend]:
    uri = document_uri(params)
    if uri is None:
        raise ResponseFailure(INVALID_PARAMS, f"{method}: params.textDocument.uri is required")
    return context.workspace.backends_for_uri(uri, spec.feature_name(method))


def _may_answer(backend: Backend, method: str) -> bool:
    # A starting server's capabilities are known only once it runs: asked in case.
    return backend.state != State.RUNNING or backend.supports(method)


def file_operation_targets(workspace: Workspace, method: str, params: Any) -> list[tuple[Backend, dict[str, Any]]]:
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
    for backend in workspace.pool.running():
        if not backend.spec.allows(method):
            continue
        static = ((backend.capabilities.get("workspace") or {}).get("fileOperations") or {}).get(key)
        dynamic = backend.registered_options(method)
        filters = [*(static or {}).get("filters", []), *(dynamic or {}).get("filters", [])]
        chosen = matching_files(filters, files, is_folder)
        if chosen:
            targets.append((backend, {**params, "files": chosen}))
    return targets


def _targets(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> list[tuple[Backend, Any]]:
    if spec.targets is Targets.FILE_FILTERS:
        return file_operation_targets(context.workspace, method, params)
    if spec.targets is Targets.LIVE_SERVERS:
        # Starting servers too: a search right after opening a file should not miss the server it started.
        live = [b for b in context.workspace.pool if b.state in (State.RUNNING, State.STARTING)]
        asked = without_partial(params)
        return [(backend, asked) for backend in live if _may_answer(backend, method)]
    backends = [b for b in _document_backends(context, spec, method, params) if _may_answer(b, method)]
    if spec.targets is Targets.OWN_DIAGNOSTICS:
        action_context = params.get("context") if isinstance(params.get("context"), dict) else {}
        by_owner = context.workspace.diagnostics.origins(document_uri(params) or "",
                                                         action_context.get("diagnostics") or [])
        return [(backend, without_partial({**params, "context": {
            **action_context, "diagnostics": by_owner.get(backend.uid, [])}})) for backend in backends]
    asked = without_partial(params)
    return [(backend, asked) for backend in backends]


# ================================================================================================ runners
def run_fan_out(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> Awaitable[Any]:
    """Ask every target at once; combine the answers with the spec's merge (the first failure if all failed)."""
    merge = spec.merge
    assert merge is not None, f"{method}: a fan-out needs a merge"
    pendings = [backend.request(method, asked) for backend, asked in _targets(context, spec, method, params)]

    async def answer() -> Any:
        answers = _successes_or_raise(await gather(pendings, raw=spec.raw))
        if spec.remembers_owner:
            present = [backend for backend, result in answers if result is not None]
            if len(present) == 1:
                context.owners[method] = present[0].uid  # its items go out untagged: resolve goes to it
        merged = merge(answers)
        if spec.completed_by_extensions:
            completed = context.complete_references(params, merged)
            return merged if completed is None else await completed
        if spec.stand_in is None:
            return merged
        return await _resolved(_stand_in(context, spec, params, merged))

    return answer()


def server_locations(context: RequestContext, method: str, params: Any) -> Awaitable[Any]:
    """The document's servers asked for locations (references, say) and their answers merged, not completed by the
    extensions: for a feature of the hub's own that completes them (`lspHub.references`)."""
    return run_fan_out(context, SERVER_REFERENCES, method, params)


def run_first(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> Awaitable[Any]:
    """The first server in precedence order that offers the method answers; a starting server's capabilities are
    known only once it runs, so one that turns out not to offer it passes the turn on."""
    candidates = [b for b in _document_backends(context, spec, method, params) if _may_answer(b, method)]
    # Sent now, before a change the client sent after this request can reach the server: to each candidate up to
    # the first running one, since each starting one before it may turn out not to offer the method.
    pendings: list[Pending] = []
    for backend in candidates:
        pendings.append(backend.request(method, params))
        if backend.state == State.RUNNING:
            break

    async def answer() -> Any:
        try:
            for pending in pendings:
                _, result, error = (await gather([pending], raw=not spec.tags_items))[0]
                if isinstance(error, NotSupported):
                    continue
                if error is not None:
                    raise error
                return tag_items(result, pending.backend.uid) if spec.tags_items else result
            return await _resolved(_stand_in(context, spec, params, None))
        finally:
            for pending in pendings:
                pending.cancel()  # the later ones were not needed (a no-op for those answered)

    return answer()


def run_first_non_empty(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> Awaitable[Any]:
    pendings = [b.request(method, params) for b in _document_backends(context, spec, method, params)
                if _may_answer(b, method)]

    async def answer() -> Any:
        try:
            first_answer: Any = None
            failures: list[ResponseFailure] = []
            for pending in pendings:  # precedence order
                _, result, error = (await gather([pending], raw=True))[0]
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
            return await _resolved(_stand_in(context, spec, params, first_answer))
        finally:
            for pending in pendings:
                if not pending.future.done() or pending.future.cancelled():
                    pending.cancel()

    return answer()


def run_resolve(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> Any:
    uid, original = untag_item(params)
    if uid is None and spec.owner_of is not None:
        uid = context.owners.get(spec.owner_of)
    backend = context.workspace.pool.by_uid(uid) if uid is not None else None
    if backend is None or backend.state != State.RUNNING or not backend.supports(method):
        return original  # nothing to add; the item stays as it was
    owner = backend
    pending = owner.request(method, original)

    async def answer() -> Any:
        _, result, error = (await gather([pending]))[0]
        if error is not None:
            raise error
        return tag_item(result, owner.uid)

    return answer()


def run_by_item_origin(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> Any:
    item = params.get("item") if isinstance(params, dict) else None
    uid, original = untag_item(item)
    backend = context.workspace.pool.by_uid(uid) if uid is not None else None
    if backend is None:
        if isinstance(item, dict) and isinstance(item.get("uri"), str):
            backends = context.workspace.backends_for_uri(item["uri"], spec.feature_name(method))
            backend = backends[0] if backends else None
        if backend is None:
            return _stand_in(context, spec, params, None)
    owner = backend
    pending = owner.request(method, {**params, "item": original})

    async def answer() -> Any:
        _, result, error = (await gather([pending]))[0]
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

    return answer()


def run_execute_command(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> Any:
    command = params.get("command") if isinstance(params, dict) else None
    if not isinstance(command, str):
        raise ResponseFailure(INVALID_PARAMS, "workspace/executeCommand needs a command name")
    arguments = params.get("arguments") or []
    own = context.hub_command(command)
    if own is not None:
        return own(arguments if isinstance(arguments, list) else [arguments])
    backend = context.workspace.forwarder.command_owner(command)
    if backend is None:
        raise ResponseFailure(INVALID_PARAMS, f"no running server offers the command {command!r}")
    pending = backend.request(method, params)

    async def answer() -> Any:
        _, result, error = (await gather([pending], raw=True))[0]
        if error is not None:
            raise error
        return result

    return answer()


def run_document_diagnostic(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> Any:
    uri = document_uri(params)
    if uri is None:
        raise ResponseFailure(INVALID_PARAMS, f"{method} needs textDocument.uri")
    return context.client_diagnostics.document_report(uri, params.get("previousResultId"),
                                                      context.diagnostics_for_client(uri)[0])


def run_workspace_diagnostic(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> Any:
    previous = params.get("previousResultIds") if isinstance(params, dict) else None
    known = {str(entry.get("uri")): entry.get("value") for entry in previous or [] if isinstance(entry, dict)}

    def version_of(uri: str) -> int | None:
        document = context.documents.get(uri)
        return document.version if document else None

    return context.client_diagnostics.workspace_report(context.workspace.diagnostics, known, version_of,
                                                       lambda uri: context.diagnostics_for_client(uri)[0])


def run_semantic_tokens(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> Awaitable[Any]:
    """The first server in precedence order that provides tokens answers, remapped into the hub's legend; a delta
    goes to the server that issued its previousResultId, or becomes a full request if that one is gone."""
    tokens = context.semantic_tokens
    backends = _document_backends(context, spec, method, params)  # params is an object with a document from here on
    params = without_partial(params)
    issuer = tokens.issuer(context.workspace.pool, params) if method == DELTA else None
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
            provider = tokens.provider(backend)
            chosen = method_for(provider, wanted) if provider is not None else None
            if chosen is not None:
                plan.append((backend, chosen, asked))
                break
    pendings = [backend.request(asked_method, asked_params) for backend, asked_method, asked_params in plan]

    async def answer() -> Any:
        try:
            for pending in pendings:
                _, result, error = (await gather([pending]))[0]
                if isinstance(error, NotSupported):
                    continue
                if error is not None:
                    raise error
                return tokens.for_client(pending.backend, result)
            return None
        finally:
            for pending in pendings:
                pending.cancel()  # the later ones were not needed (a no-op for those answered)

    return answer()


def run_forward(context: RequestContext, spec: MethodSpec, method: str, params: Any) -> Awaitable[Any]:
    """An extension method: to the document's servers in order, or to every running server, first answer."""
    uri = document_uri(params)
    backends = context.workspace.backends_for_uri(uri, method) if uri else context.workspace.pool.running()
    pendings = [b.request(method, params) for b in backends]

    async def answer() -> Any:
        outcomes = await gather(pendings, raw=True)
        for _, result, error in outcomes:
            if error is None:
                return result
        real = [e for _, _, e in outcomes if e is not None and e.code != METHOD_NOT_FOUND]
        if real:
            raise real[0]
        raise ResponseFailure(METHOD_NOT_FOUND, f"no server handles {method}")

    return answer()


RUNNERS: dict[Strategy, Runner] = {
    Strategy.FIRST: run_first,
    Strategy.FIRST_NON_EMPTY: run_first_non_empty,
    Strategy.FAN_OUT: run_fan_out,
    Strategy.RESOLVE: run_resolve,
    Strategy.BY_ITEM_ORIGIN: run_by_item_origin,
    Strategy.EXECUTE_COMMAND: run_execute_command,
    Strategy.DOCUMENT_DIAGNOSTIC: run_document_diagnostic,
    Strategy.WORKSPACE_DIAGNOSTIC: run_workspace_diagnostic,
    Strategy.SEMANTIC_TOKENS: run_semantic_tokens,
    Strategy.FORWARD: run_forward,
}
