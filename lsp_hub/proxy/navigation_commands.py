"""The index's navigation (issue #24) as `lspHub.*` workspace commands: one table, each entry the index API
function it runs and its arguments (JSON name, keyword, type, default), nothing else. `lsp-hub query` and
`lsp-hub mcp` reach the same commands, so each has one meaning on every surface.

Every answer is the result's JSON (camelCase, with `complete` and, when false, `reason`) plus `text`, the compact
rendering for a model, and `empty` with `empty_detail` when there is nothing to show.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lsp_hub.index.workspace import WorkspaceIndex

REQUIRED = object()


@dataclass(frozen=True)
class Argument:
    key: str  # the JSON name in the command's arguments
    keyword: str  # the index API function's parameter
    kind: type  # str, int, bool or list (of strings)
    default: Any = REQUIRED
    minimum: int = 0
    maximum: int = 1_000_000


@dataclass(frozen=True)
class NavigationCommand:
    function: str  # in lsp_hub.index.api
    arguments: tuple[Argument, ...]
    anchor: str | None  # the argument naming a file: it chooses the workspace root when there are several
    emptiness: tuple[str, ...]  # the answer is empty when each of these lists is


LIMIT = Argument("limit", "limit", int, 50, 1, 10_000)
SYMBOL = Argument("symbol", "symbol", str)
PATH = Argument("path", "path", str)

NAVIGATION_COMMANDS: Mapping[str, NavigationCommand] = {
    "lspHub.outline": NavigationCommand("outline", (PATH, Argument("limit", "limit", int, 300, 1, 10_000)),
                                        "path", ("files",)),
    "lspHub.zoom": NavigationCommand("zoom", (SYMBOL, Argument("limit", "limit", int, 30, 1, 10_000)),
                                     "symbol", ()),
    "lspHub.imports": NavigationCommand("imports", (
        PATH, Argument("direction", "direction", str, "both"), Argument("depth", "depth", int, 1, 0, 100),
        Argument("limit", "limit", int, 100, 1, 10_000)), "path", ("imports", "importedBy", "external")),
    "lspHub.impact": NavigationCommand("impact", (
        Argument("target", "target", str), Argument("depth", "depth", int, 2, 1, 10),
        Argument("limit", "limit", int, 30, 1, 10_000)), "target", ("files", "tests")),
    "lspHub.search": NavigationCommand("search", (
        Argument("pattern", "pattern", str, None), Argument("regex", "regex", bool, False),
        Argument("globs", "globs", list, ()), Argument("ignoreCase", "ignore_case", bool, False),
        Argument("structural", "structural", str, None), Argument("language", "language", str, None),
        Argument("limit", "limit", int, 100, 1, 10_000)), None, ("files",)),
    "lspHub.symbols": NavigationCommand("symbols", (
        Argument("query", "query", str), Argument("limit", "limit", int, 30, 1, 10_000),
        Argument("includeVariables", "include_variables", bool, False)), None, ("symbols",)),
    "lspHub.context": NavigationCommand("context", (
        Argument("description", "description", str, ""), Argument("targets", "targets", list, ()),
        Argument("budget", "budget", int, 8000, 200, 1_000_000)), "targets", ()),
    "lspHub.callTree": NavigationCommand("call_tree", (
        SYMBOL, Argument("depth", "depth", int, 3, 1, 20), Argument("includeUnresolved", "include_unresolved", bool,
                                                                   False),
        Argument("limit", "limit", int, 100, 1, 10_000)), "symbol", ("calls",)),
    "lspHub.trace": NavigationCommand("trace", (
        SYMBOL, Argument("limit", "limit", int, 10, 1, 1000), Argument("depth", "depth", int, 6, 1, 20)),
        "symbol", ("paths",)),
}


def arguments_of(name: str, spec: NavigationCommand, given: Mapping[str, Any]) -> dict[str, Any]:
    """The API function's keyword arguments from the command's JSON arguments; ValueError (one line) for a
    missing or mistyped one."""
    unknown = sorted(set(given) - {argument.key for argument in spec.arguments})
    if unknown:
        raise ValueError(f"{name}: unknown argument {unknown[0]!r} (it takes "
                         f"{', '.join(argument.key for argument in spec.arguments)})")
    keywords: dict[str, Any] = {}
    for argument in spec.arguments:
        value = given.get(argument.key, argument.default)
        if value is REQUIRED:
            raise ValueError(f"{name} needs {argument.key!r}")
        if value is not None and value is not argument.default:
            value = _checked(name, argument, value)
        keywords[argument.keyword] = value
    return keywords


def _checked(name: str, argument: Argument, value: Any) -> Any:
    if argument.kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name}: {argument.key} must be true or false")
        return value
    if argument.kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or not argument.minimum <= value <= argument.maximum:
            raise ValueError(f"{name}: {argument.key} must be a whole number from {argument.minimum} to "
                             f"{argument.maximum}")
        return value
    if argument.kind is list:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise ValueError(f"{name}: {argument.key} must be a list of strings")
        return tuple(items)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name}: {argument.key} must be a non-empty string")
    return value


def anchor_of(spec: NavigationCommand, given: Mapping[str, Any]) -> str | None:
    """The file an answer is about, if any (the symbol's file when given as FILE:LINE:COL)."""
    value = given.get(spec.anchor) if spec.anchor else None
    if isinstance(value, list):
        value = value[0] if value and isinstance(value[0], str) else None
    if not isinstance(value, str):
        return None
    if spec.anchor == "symbol":
        parts = value.rsplit(":", 2)
        return parts[0] if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit() else None
    return value


def call_for(name: str) -> Callable[[WorkspaceIndex, dict[str, Any]], dict[str, Any]]:
    """`function(index, arguments)` for the shared index's query: the command's whole answer."""
    spec = NAVIGATION_COMMANDS[name]

    def call(index: WorkspaceIndex, given: dict[str, Any]) -> dict[str, Any]:
        from lsp_hub.index import api

        keywords = arguments_of(name, spec, given)
        if spec.function == "search":
            structural, language = keywords.pop("structural"), keywords.pop("language")
            if structural is not None:
                if keywords["pattern"] is not None or language is None:
                    raise ValueError(f"{name}: give a pattern, or structural with a language, not both")
                result = api.structural_search(index, structural, language, limit=keywords["limit"])
            elif keywords["pattern"] is None:
                raise ValueError(f"{name} needs 'pattern' (or 'structural' and 'language')")
            else:
                result = api.search(index, **keywords)
        else:
            result = getattr(api, spec.function)(index, **keywords)
        answer: dict[str, Any] = {**result.to_json(), "text": result.to_text()}
        if spec.emptiness and not any(answer.get(key) for key in spec.emptiness):
            answer["empty"] = True
            answer["empty_detail"] = answer["text"].splitlines()[0] if answer["text"] else "nothing found"
        return answer

    return call
