"""The index's navigation (issue #24): `outline`, `zoom`, `imports`, `impact`, `search`, `context`, `call-tree`,
`trace`, each one `lspHub.*` command whose text is the answer, and `symbols --query`, the index's fuzzy search merged
with the servers' `workspace/symbol`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsp_hub.agents.query.documents import Workspace
from lsp_hub.agents.query.errors import HubLost, HubTimeout, QueryError
from lsp_hub.agents.query.hub_requests import hub_command
from lsp_hub.agents.query.options import QueryOptions
from lsp_hub.agents.query.rendering import Answer, capped, display, flatten_symbols

NAVIGATION_ACTIONS = ("outline", "zoom", "imports", "impact", "search", "context", "call-tree", "trace")
SYMBOL_ACTIONS = ("zoom", "impact", "call-tree", "trace")  # a symbol by name, or FILE:LINE:COL
DEFAULT_DEPTHS = {"imports": 1, "impact": 2, "call-tree": 3, "trace": 6, "callers": 1}


def _symbol(workspace: Workspace, options: QueryOptions) -> str:
    if options.symbol is not None:
        return options.symbol
    if options.location is not None:
        path = workspace.resolve(options.location.file)
        return f"{path}:{options.location.line}:{options.location.column}"
    if options.action == "impact" and len(options.files) == 1:
        return str(workspace.resolve(options.files[0]))
    raise QueryError(f"lsp-hub query {options.action}: give --symbol NAME or FILE:LINE:COL"
                     + (" (or a FILE)" if options.action == "impact" else ""))


def _one_file(workspace: Workspace, options: QueryOptions, directories: bool = False) -> str:
    if len(options.files) != 1:
        raise QueryError(f"lsp-hub query {options.action}: give one FILE" + (" or DIR" if directories else ""))
    return str(workspace.resolve(options.files[0], directories=directories))


def navigation_arguments(workspace: Workspace, options: QueryOptions) -> tuple[str, dict[str, Any]]:
    """The `lspHub.*` command and its arguments for a navigation action."""
    action, limit = options.action, options.limit
    depth = options.depth if options.depth is not None else DEFAULT_DEPTHS.get(action, 1)
    if action == "outline":
        return "lspHub.outline", {"path": _one_file(workspace, options, directories=True), "limit": limit}
    if action == "imports":
        return "lspHub.imports", {"path": _one_file(workspace, options), "direction": options.direction,
                                  "depth": depth, "limit": limit}
    if action == "zoom":
        return "lspHub.zoom", {"symbol": _symbol(workspace, options), "limit": limit}
    if action == "impact":
        return "lspHub.impact", {"target": _symbol(workspace, options), "depth": depth, "limit": limit}
    if action == "call-tree":
        return "lspHub.callTree", {"symbol": _symbol(workspace, options), "depth": depth, "limit": limit,
                                   "includeUnresolved": options.include_unresolved}
    if action == "trace":
        return "lspHub.trace", {"symbol": _symbol(workspace, options), "depth": depth, "limit": limit}
    if action == "context":
        targets = [str(workspace.resolve(name)) for name in options.targets]
        return "lspHub.context", {"description": options.description or "", "targets": targets,
                                  "budget": options.budget if options.budget is not None else 8000}
    if options.structural is not None:
        if options.pattern or not options.lang:
            raise QueryError("lsp-hub query search: --structural PATTERN needs --lang LANGUAGE and no other pattern")
        return "lspHub.search", {"structural": options.structural, "language": options.lang, "limit": limit}
    if not options.pattern:
        raise QueryError("lsp-hub query search: give one PATTERN (or --structural PATTERN --lang LANGUAGE)")
    return "lspHub.search", {"pattern": options.pattern, "regex": options.regex, "globs": options.globs,
                             "ignoreCase": options.ignore_case, "limit": limit}


def navigation_action(workspace: Workspace, options: QueryOptions) -> Answer:
    command, arguments = navigation_arguments(workspace, options)
    result = dict(hub_command(workspace, command, arguments) or {})
    text = str(result.pop("text", "") or "").rstrip("\n")
    return Answer(result, text, bool(result.get("empty")))


def _servers_symbols(workspace: Workspace, query: str, found: list[Path]) -> Any:
    """The servers' `workspace/symbol`. tsserver answers it only for the projects of open files, and a query
    session has none open: when it fails, the file of the index's best match is opened (its server loads that
    file's project, as for a definition) and the question asked once more."""
    try:
        return workspace.connection.request("workspace/symbol", {"query": query}, workspace.timeout)
    except (HubTimeout, HubLost):
        raise  # asked again, it would take as long, or find no hub
    except QueryError:
        opened = next((path for path in found if path.is_file()), None)
        if opened is None:
            raise
    workspace.open(workspace.resolve(str(opened)))
    return workspace.connection.request("workspace/symbol", {"query": query}, workspace.timeout)


def symbols_search(workspace: Workspace, options: QueryOptions) -> Answer:
    """`symbols --query Q`: the index's fuzzy matches first (it answers with no server and before any has loaded
    its project), then what the servers' `workspace/symbol` adds, each symbol once."""
    assert options.query is not None
    index = hub_command(workspace, "lspHub.symbols", {"query": options.query, "limit": options.limit}) or {}
    symbols: list[dict[str, Any]] = []
    seen: dict[tuple[str, int, str], dict[str, Any]] = {}
    root = workspace.root
    for entry in index.get("symbols", []):
        path = str((root / entry["path"]).resolve()) if not Path(entry["path"]).is_absolute() else entry["path"]
        item = {"name": entry["name"], "kind": entry["kind"], "path": path, "line": entry["line"], "column": None,
                "container": entry.get("container"), "origin": "index"}
        seen[(path, item["line"], item["name"])] = item
        symbols.append(item)
    notes: list[str] = []
    try:
        answered = _servers_symbols(workspace, options.query, [Path(entry["path"]) for entry in symbols])
    except QueryError as error:  # a server without a project (tsserver's "No Project" with no file open)
        answered = None
        notes.append(f"(the servers' workspace/symbol failed: {str(error).splitlines()[0][:200]}; the index's only)")
    for item in flatten_symbols(workspace, answered, None):
        key = (item["path"], item["line"], item["name"])
        if key in seen:
            seen[key]["origin"] = "both"
            seen[key]["column"] = item["column"]
            continue
        seen[key] = {**item, "origin": "server"}
        symbols.append(seen[key])
    lines = [f"{display(entry['path'])}:{entry['line']}" + (f":{entry['column']}" if entry["column"] else "")
             + f"  {entry['kind']} {entry['container'] + '.' if entry.get('container') else ''}{entry['name']}"
             for entry in symbols]
    data: dict[str, Any] = {"symbols": symbols, "complete": bool(index.get("complete", True)) and not notes}
    if notes or not index.get("complete", True):
        data["reason"] = "; ".join([*notes, *([index["reason"]] if index.get("reason") else [])])
    return Answer(data, "\n".join(capped(lines, options.limit) + notes), not symbols)
