"""The index's commands as JSON in, JSON out: what `workspace/executeCommand` and the CLI call.

Each function takes the command's argument object (a dict, as decoded from JSON) and returns the result object the
issue specifies. Paths in results are workspace-relative POSIX paths, locations are LSP `Location`s with `file://`
URIs and 0-based UTF-16 positions. Arguments may name files by URI or by path (absolute or workspace-relative).
Invalid arguments raise ValueError with a message naming the argument.

Every result carries `complete`: false with `skippedFiles` ({path, reason}) when source files were left out of the
index, or with `pendingFiles` while the index is still being built, so "nothing found" never hides "nothing checked".
Pass `wait` (seconds) to block until a first build is ready before answering.

The graph, ranking and callers modules (networkx, scipy) are imported by the commands that use them, so the hub and
the CLI load them only when such a command first runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from lsp_hub.index.file_kinds import is_test_file
from lsp_hub.index.skip_reasons import REASON_TOO_LARGE
from lsp_hub.index.walk import DEFAULT_MAX_FILE_SIZE
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

log = logging.getLogger(__name__)

Arguments = Mapping[str, Any] | None


# --- argument checking ------------------------------------------------------------------------------------------


def _object(arguments: Arguments, command: str) -> Mapping[str, Any]:
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise ValueError(f"{command}: the argument must be a JSON object, not {type(arguments).__name__}")
    return arguments


def _integer(arguments: Mapping[str, Any], key: str, default: int, minimum: int, maximum: int | None = None) -> int:
    value = arguments.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} must be an integer, not {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ValueError(f"{key} must be {bounds}, not {value}")
    return value


def _string(arguments: Mapping[str, Any], key: str, required: bool = False) -> str | None:
    value = arguments.get(key)
    if value is None:
        if required:
            raise ValueError(f"{key} is required")
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, not {value!r}")
    return value


def _strings(arguments: Mapping[str, Any], key: str) -> list[str]:
    value = arguments.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{key} must be a list of strings, not {value!r}")
    return value


def _workspace_path(index: WorkspaceIndex, value: str, key: str) -> str:
    relative = index.relative_path(value)
    if relative is None:
        raise ValueError(f"{key}: {value} is not inside the workspace root {index.root}")
    return relative


def _position(arguments: Mapping[str, Any]) -> tuple[int, int]:
    position = arguments.get("position")
    if not isinstance(position, Mapping):
        raise ValueError(f"position must be an object {{line, character}}, not {position!r}")
    line = _integer(position, "line", -1, 0)
    character = _integer(position, "character", -1, 0)
    return line, character


def _snapshot(index: WorkspaceIndex, wait: float) -> Snapshot:
    if wait > 0 and index.state != "ready":
        index.wait_ready(wait)
    return index.snapshot()


def _completeness(index: WorkspaceIndex, snapshot: Snapshot) -> dict[str, Any]:
    result = snapshot.completeness()
    if index.state != "ready":
        result["complete"] = False
        result.setdefault("pendingFiles", [])
        result["indexState"] = "building"
    return result


# --- commands ---------------------------------------------------------------------------------------------------


def repo_map(index: WorkspaceIndex, arguments: Arguments = None, wait: float = 0.0) -> dict[str, Any]:
    """`lspHub.repoMap` {focusFiles?, mentionedIdents?, tokenBudget?=1024} -> {text, files, tokens, complete}."""
    from lsp_hub.index import repomap

    args = _object(arguments, "repoMap")
    focus = [_workspace_path(index, value, "focusFiles") for value in _strings(args, "focusFiles")]
    mentioned = _strings(args, "mentionedIdents")
    budget = _integer(args, "tokenBudget", repomap.DEFAULT_TOKEN_BUDGET, 0, 1_000_000)
    snapshot = _snapshot(index, wait)
    # What a later process needs to answer this without building the graph is stored after it, off the query's
    # path (background.keep_ranking: a hub in idle time, the CLI after printing).
    result = repomap.repo_map(snapshot, focus, mentioned, budget)
    result.update(_completeness(index, snapshot))
    return result


def relevant_files(index: WorkspaceIndex, arguments: Arguments, wait: float = 0.0) -> dict[str, Any]:
    """`lspHub.relevantFiles` {description, targets?, topN?=10, historyCommits?=300} -> {files: [{path, score,
    reasons}], weights: "repository" | "default", basis, history, historyCommits | historyReason, complete}."""
    from lsp_hub.index import relevance

    args = _object(arguments, "relevantFiles")
    description = _string(args, "description") or ""
    targets = [_workspace_path(index, value, "targets") for value in _strings(args, "targets")]
    if not description.strip() and not targets:
        raise ValueError("relevantFiles needs a description or targets")
    top_n = _integer(args, "topN", relevance.DEFAULT_TOP_N, 1, 1000)
    from lsp_hub.index import history

    history_commits = _integer(args, "historyCommits", history.DEFAULT_HISTORY_COMMITS, 0, history.MAX_HISTORY_COMMITS)
    snapshot = _snapshot(index, wait)
    result = relevance.relevant_files(snapshot, description, targets, top_n, history_commits)
    result.update(_completeness(index, snapshot))
    return result


DEFAULT_DEPENDENTS_LIMIT = 20


def dependents(index: WorkspaceIndex, arguments: Arguments, wait: float = 0.0) -> dict[str, Any]:
    """`lspHub.dependents` {files: [uri or path], limit?=20, names?: [changed names]} -> {files: [{path, uri, score,
    reasons, changed}], total, complete, importedNames, importerVersions}: the files that import the given files or
    use names they define, best first (the users of `names` before the others; `changed`: which they use); and the
    names they import from those files (as `imported_names` answers)."""
    from lsp_hub.index import dependents as dependents_module
    from lsp_hub.index import imported_names as imported_names_module
    from lsp_hub.index.graph_inputs import importer_kinds

    args = _object(arguments, "dependents")
    written = [_workspace_path(index, value, "files") for value in _strings(args, "files")]
    if not written:
        raise ValueError("dependents needs files: a list of file URIs or paths")
    limit = _integer(args, "limit", DEFAULT_DEPENDENTS_LIMIT, 0, 1000)
    snapshot = _snapshot(index, wait)
    imported_by = importer_kinds(snapshot, written)  # one pass over every file's imports, for both parts
    found, total = dependents_module.dependents(snapshot, written, limit, _strings(args, "names"), imported_by)
    result: dict[str, Any] = {
        "files": [{"path": dependent.path, "uri": (index.root / dependent.path).as_uri(),
                   "score": round(dependent.score, 4), "reasons": dependent.reasons(), "changed": dependent.changed}
                  for dependent in found],
        "total": total,
    }
    result.update(imported_names_module.answer_before(
        snapshot, written, imported_names_module.importers_of(snapshot, written, imported_by)))
    result.update(_completeness(index, snapshot))
    if total > len(found):
        result["complete"] = False
        result["capped"] = total - len(found)
    return result


def imported_names(index: WorkspaceIndex, arguments: Arguments, wait: float = 0.0) -> dict[str, Any]:
    """`lspHub.importedNames` {files: [uri or path], importers?: [uri or path], uses?: {path: [names]}} ->
    {importedNames: [{path, line, column, endLine, endColumn, name, from, provided, module, dynamic, via?, use?}],
    importerVersions: {path: digest}, complete}: the names the importers (default: every file importing one of the
    files) import by name from those files, and whether each file still provides each (`module`: an import of the
    file itself, provided while it is there; `dynamic`: not provided, but the file has a module `__getattr__` that
    may provide it; `via`: a use `via.name` through a module import, at the use); in languages without imports of
    names, the uses of the files' names (`use`; after a write, those `uses` names: provided while they resolve to
    a file). A verified write asks before and after: provided before and not after is what the write broke."""
    from lsp_hub.index import imported_names as imported_names_module

    args = _object(arguments, "importedNames")
    written = [_workspace_path(index, value, "files") for value in _strings(args, "files")]
    if not written:
        raise ValueError("importedNames needs files: a list of file URIs or paths")
    uses = args.get("uses") or {}
    if not isinstance(uses, dict) or not all(isinstance(names, list) for names in uses.values()):
        raise ValueError("uses must be an object of file paths to lists of names")
    snapshot = _snapshot(index, wait)
    if "importers" in args:
        importers = [_workspace_path(index, value, "importers") for value in _strings(args, "importers")]
        named = {_workspace_path(index, path, "uses"): names for path, names in uses.items()}
        result = imported_names_module.answer_after(snapshot, written, importers, named)
    else:
        result = imported_names_module.answer_before(snapshot, written, imported_names_module.importers_of(
            snapshot, written))
    result.update(_completeness(index, snapshot))
    return result


def _path_of_uri(uri: str) -> Path:
    if uri.startswith("file:"):
        return Path(unquote(urlparse(uri).path))
    return Path(uri)


def syntax_check(
    arguments: Arguments,
    document_text: str | bytes | None = None,
    index: WorkspaceIndex | None = None,
    *,
    readable_roots: Sequence[Path] | None = None,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    checkers: SyntaxCheckers | None = None,
) -> dict[str, Any]:
    """`lspHub.syntaxCheck` {uri, text?} -> {ok, checked, language, checker, errors: [{range, message}], reason?,
    fallbackReason?}, judged by the language's own parser where `checkers` has one (syntax_checkers.py; None:
    tree-sitter alone).

    The text checked is, in order: `document_text` (the hub's open document), the `text` argument, the file on
    disk. A relative path is taken relative to the index root when an index is given. With `readable_roots` (the
    hub passes its workspace folders) a file is read from disk only when its path, symbolic links resolved, lies
    inside one of them: anything else raises ValueError, since the errors' messages quote the file. A text or file
    over `max_file_size` is not checked (`checked: false, reason: "too_large"`, with its `size` and the `limit` in
    bytes; a file is not even read)."""
    args = _object(arguments, "syntaxCheck")
    uri = _string(args, "uri", required=True)
    assert uri is not None
    text = _string(args, "text")
    path = _path_of_uri(uri)
    if index is not None and not path.is_absolute():
        path = index.root / path
    # Here: the other commands (and the hub's start) need no syntax checker.
    from lsp_hub.index.syntax_checkers import NO_EXTERNAL_CHECKERS, syntax_check_result, syntax_language_for_path

    language = syntax_language_for_path(str(path))
    source: bytes | None
    if document_text is not None:
        source = document_text.encode("utf-8", "surrogatepass") if isinstance(document_text, str) else document_text
    elif text is not None:
        source = text.encode("utf-8", "surrogatepass")
    else:
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop
            resolved = None
        if readable_roots is not None and (resolved is None or not any(
                resolved == root or root in resolved.parents for root in readable_roots)):
            raise ValueError(f"uri: {uri} is outside the workspace folders (symbolic links resolved); "
                             "send its text to check it")
        source = None
        if language is not None and resolved is not None and resolved.is_file():  # not a FIFO, nor a device
            try:
                size = resolved.stat().st_size
                if size > max_file_size:
                    return {"ok": True, "checked": False, "language": language, "errors": [],
                            "reason": REASON_TOO_LARGE, "size": size, "limit": max_file_size}
                source = resolved.read_bytes()
            except OSError:
                source = None
    if source is not None and len(source) > max_file_size and language is not None:
        return {"ok": True, "checked": False, "language": language, "errors": [], "reason": REASON_TOO_LARGE,
                "size": len(source), "limit": max_file_size}
    return syntax_check_result(source, language, str(path), NO_EXTERNAL_CHECKERS if checkers is None else checkers)


def callers(index: WorkspaceIndex, arguments: Arguments, wait: float = 0.0) -> dict[str, Any]:
    """`lspHub.callers` {uri, position} | {symbol}, depth?=1, limit?=500 -> {symbol, definitions, callers,
    complete}."""
    from lsp_hub.index import callers as callers_module

    args = _object(arguments, "callers")
    depth = _integer(args, "depth", 1, 1, callers_module.MAX_DEPTH)
    limit = _integer(args, "limit", callers_module.MAX_CALLERS, 1, callers_module.MAX_LIMIT)
    symbol = _string(args, "symbol")
    snapshot = _snapshot(index, wait)
    targets = _targets(index, snapshot, args, "callers", callers_module.resolve_targets_at)
    result = callers_module.find_callers(snapshot, targets, depth, limit)
    result["callers"] = callers_module.merge_callers(result["callers"], None)  # each with origin "index"
    for definition in result["definitions"]:  # a client may take the code's over a test's stand-in of the name
        relative = index.relative_path(definition["uri"])
        definition["inTests"] = relative is not None and is_test_file(relative)
    if symbol is not None and result["symbol"] is None:
        result["symbol"] = symbol.strip()
    result.update(_completeness(index, snapshot))
    return result


def _targets(index: WorkspaceIndex, snapshot: Snapshot, args: Mapping[str, Any], command: str,
             at_position: Callable[[Snapshot, str, int, int], Any]) -> Any:
    """The definitions a command is about: by `symbol` (name path), else at {uri, position} (`at_position`)."""
    from lsp_hub.index import callers as callers_module

    symbol, uri = _string(args, "symbol"), _string(args, "uri")
    if symbol is not None and symbol.strip():
        return callers_module.resolve_targets_by_name(snapshot, symbol)
    if uri is not None:
        line, character = _position(args)
        return at_position(snapshot, _workspace_path(index, uri, "uri"), line, character)
    raise ValueError(f"{command} needs {{uri, position}} or {{symbol}}")


def callers_with_server_sites(
    index: WorkspaceIndex, found: dict[str, Any], server_sites: list[dict[str, Any]], depth: int = 1
) -> dict[str, Any]:
    """`callers`' result (`found`) merged with the call sites a language server gave for its definitions
    (`[{location, caller?}]`, direct callers only): each caller gets its `origin` (`index`, `server`, `both`),
    callers the server knows come first, and with `depth` > 1 the index walks on from the callers only the server
    found."""
    from lsp_hub.index import callers as callers_module

    snapshot = index.snapshot()
    named = callers_module.name_server_callers(snapshot, server_sites)
    merged = callers_module.merge_callers(found["callers"], named)
    merged = callers_module.callers_beyond_server_sites(snapshot, merged, depth)
    return {**found, "callers": merged}


def references(index: WorkspaceIndex, arguments: Arguments, wait: float = 0.0,
               text_of: Callable[[str], str | None] | None = None,
               server_locations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`lspHub.references` {uri, position, includeDeclaration?=true} | {symbol} -> {symbol, definitions,
    references: [{location, kind, name}], complete}: every use of the definition the index can resolve. `text_of`
    (a workspace-relative path -> its text as the servers see it) defaults to the file on disk. With a server's
    answer (`server_locations`), only the definitions it agrees on count (`references.agreed_targets`)."""
    from lsp_hub.index import references as references_module
    from lsp_hub.index import symbols

    args = _object(arguments, "references")
    include_declaration = args.get("includeDeclaration", True)
    if not isinstance(include_declaration, bool):
        raise ValueError("includeDeclaration must be true or false")
    snapshot = _snapshot(index, wait)
    # The name under the cursor only: a position inside a function body is not a question about the function.
    targets = _targets(index, snapshot, args, "references", symbols.definition_targets)

    def from_disk(path: str) -> str | None:
        try:
            return (index.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    if server_locations:
        targets = references_module.agreed_targets(snapshot, targets, server_locations, include_declaration)
    result = references_module.find_references(snapshot, targets, include_declaration, text_of or from_disk)
    result.update(_completeness(index, snapshot))
    return result


def status(index: WorkspaceIndex) -> dict[str, Any]:
    """The `index` part of `lspHub.status`: {state, files, symbols, languages, lastBuildSeconds} (+ skip counts)."""
    statistics = index.statistics()
    return {
        "state": statistics["state"],
        "files": statistics["files"],
        "symbols": statistics["symbols"],
        "languages": statistics["languages"],
        "lastBuildSeconds": statistics["lastBuildSeconds"],
        "skippedFiles": statistics["skippedFiles"],
        "pendingFiles": statistics["pendingFiles"],
        **({"error": statistics["error"]} if "error" in statistics else {}),
    }


# --- standing in for missing servers ----------------------------------------------------------------------------


def workspace_symbol(index: WorkspaceIndex, arguments: Arguments) -> list[dict[str, Any]]:
    """`workspace/symbol` {query, limit?=100} -> SymbolInformation[] (fuzzy: prefix, substring, camelCase humps)."""
    from lsp_hub.index import symbols

    args = _object(arguments, "workspaceSymbol")
    query = _string(args, "query") or ""
    limit = _integer(args, "limit", symbols.DEFAULT_SYMBOL_LIMIT, 1, 10_000)
    return symbols.workspace_symbols(index.snapshot(), query, limit)


def document_symbol(index: WorkspaceIndex, arguments: Arguments) -> list[dict[str, Any]]:
    """`textDocument/documentSymbol` {uri} (or {textDocument: {uri}}) -> DocumentSymbol[] from the index."""
    from lsp_hub.index import symbols

    args = _object(arguments, "documentSymbol")
    uri = _document_uri(args)
    return symbols.document_symbols(index.snapshot(), _workspace_path(index, uri, "uri"))


def definition(index: WorkspaceIndex, arguments: Arguments) -> list[dict[str, Any]]:
    """`textDocument/definition` {uri, position} (or LSP's {textDocument: {uri}, position}) -> Location[] by name,
    import aware."""
    from lsp_hub.index import symbols

    args = _object(arguments, "definition")
    uri = _document_uri(args)
    line, character = _position(args)
    return symbols.definition_locations(index.snapshot(), _workspace_path(index, uri, "uri"), line, character)


def _document_uri(args: Mapping[str, Any]) -> str:
    document = args.get("textDocument")
    if isinstance(document, Mapping):
        args = document
    uri = _string(args, "uri", required=True)
    assert uri is not None
    return uri


# Workspace commands by LSP command name, for the hub's executeCommand handler (syntaxCheck and status differ in
# shape and are called directly).
COMMANDS: dict[str, Callable[[WorkspaceIndex, Arguments], dict[str, Any]]] = {
    "lspHub.repoMap": repo_map,
    "lspHub.relevantFiles": relevant_files,
    "lspHub.callers": callers,
}


# --- navigation for agents (issue #24): one function per command, each returning a result object with
# `to_json()` (camelCase) and `to_text()`; bad input raises `navigation.common.NavigationError` (a ValueError, one
# line; `AmbiguousSymbol` carries the candidates). Symbols are names (`Class.method`, `module.func`) or
# FILE:LINE:COL, 1-based. Each loads its module when first called.

if TYPE_CHECKING:
    from lsp_hub.index.navigation.call_tree import CallTreeResult, TraceResult
    from lsp_hub.index.navigation.fuzzy_symbols import SymbolsResult
    from lsp_hub.index.navigation.impact import ImpactResult
    from lsp_hub.index.navigation.imports_graph import ImportsResult
    from lsp_hub.index.navigation.outline import OutlineResult
    from lsp_hub.index.navigation.search_results import SearchResult
    from lsp_hub.index.navigation.task_context import ContextResult
    from lsp_hub.index.navigation.zoom import ZoomResult
    from lsp_hub.index.syntax_checkers import SyntaxCheckers


def outline(index: WorkspaceIndex, path: str, limit: int = 300, wait: float = 0.0) -> OutlineResult:
    """`lspHub.outline`: a file's definitions as a tree, or a directory's files' top-level definitions."""
    from lsp_hub.index.navigation import outline as module

    return module.outline(index, path, limit, wait)


def zoom(index: WorkspaceIndex, symbol: str, limit: int = 30, wait: float = 0.0) -> ZoomResult:
    """`lspHub.zoom`: a symbol's source (or member menu), its calls and its callers, counted."""
    from lsp_hub.index.navigation import zoom as module

    return module.zoom(index, symbol, limit, wait)


def symbols(index: WorkspaceIndex, query: str, limit: int = 30, include_variables: bool = False,
            wait: float = 0.0) -> SymbolsResult:
    """`lspHub.symbols`: fuzzy search of the index's definitions by name, ranked."""
    from lsp_hub.index.navigation import fuzzy_symbols as module

    return module.symbols(index, query, limit, include_variables, wait)


def imports(index: WorkspaceIndex, path: str, direction: str = "both", depth: int = 1, limit: int = 100,
            wait: float = 0.0) -> ImportsResult:
    """`lspHub.imports`: what a file imports (down) and what imports it (up), breadth-first to `depth` (0: all)."""
    from lsp_hub.index.navigation import imports_graph as module

    return module.imports(index, path, direction, depth, limit, wait)


def search(index: WorkspaceIndex, pattern: str, regex: bool = False, globs: Sequence[str] = (),
           ignore_case: bool = False, limit: int = 100, wait: float = 0.0) -> SearchResult:
    """`lspHub.search`: text search with ripgrep (literal, case-sensitive unless asked), by file in rank order."""
    from lsp_hub.index.navigation import text_search as module

    return module.search(index, pattern, regex, globs, ignore_case, limit, wait)


def structural_search(index: WorkspaceIndex, pattern: str, language: str, limit: int = 100,
                      wait: float = 0.0) -> SearchResult:
    """`lspHub.search` with `structural`: an ast-grep pattern over one language's files."""
    from lsp_hub.index.navigation import structural_search as module

    return module.structural_search(index, pattern, language, limit, wait)


def impact(index: WorkspaceIndex, target: str, depth: int = 2, limit: int = 30, wait: float = 0.0) -> ImpactResult:
    """`lspHub.impact`: the files (and, apart, the tests) a change of a symbol or file may break, with reasons."""
    from lsp_hub.index.navigation import impact as module

    return module.impact(index, target, depth, limit, wait)


def context(index: WorkspaceIndex, description: str = "", targets: Sequence[str] = (), budget: int = 8000,
            wait: float = 0.0) -> ContextResult:
    """`lspHub.context`: a task's context block within `budget` bytes (the repo map without description/targets)."""
    from lsp_hub.index.navigation import task_context as module

    return module.context(index, description, targets, budget, wait)


def call_tree(index: WorkspaceIndex, symbol: str, depth: int = 3, include_unresolved: bool = False,
              limit: int = 100, wait: float = 0.0) -> CallTreeResult:
    """`lspHub.callTree`: a symbol's outgoing calls as a tree to `depth`."""
    from lsp_hub.index.navigation import call_tree as module

    return module.call_tree(index, symbol, depth, include_unresolved, limit, wait)


def trace(index: WorkspaceIndex, symbol: str, limit: int = 10, depth: int = 6, wait: float = 0.0) -> TraceResult:
    """`lspHub.trace`: call paths from the workspace's entry points to a symbol, shortest first."""
    from lsp_hub.index.navigation import call_tree as module

    return module.trace(index, symbol, limit, depth, wait)
