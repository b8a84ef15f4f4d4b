"""Who calls a function: call sites across the workspace, found by name and narrowed by imports and scoping.

A call counts for a definition when the calling file may mean that definition (`graph.UseResolver`): `foo()` in a
file that imports `foo` from another module does not count; `module.foo()` counts when `module` is bound to the
definition's file. A method call on an unknown receiver (`x.foo()`) counts only when the name has a single
definition in the workspace, or the receiver names the class (`Cart.foo()`, `cart.foo()`); `self.foo()` counts
for the caller's own class; a plain `foo()` never reaches a method in Python or TS/JS; `pkg.mod.foo()` counts for
the module whose path ends in pkg/mod. `depth > 1` walks callers of callers breadth first, without cycles, within
bounds.
"""

from __future__ import annotations

from collections import deque
from typing import Any
from urllib.parse import unquote

from lsp_hub.index.call_judge import CallJudge, CallTarget
from lsp_hub.index.file_kinds import is_named_callback
from lsp_hub.index.graph import language_family
from lsp_hub.index.model import Definition, FileIndex, Reference, Span
from lsp_hub.index.receiver_types import WorkspaceClass
from lsp_hub.index.records import FileRecord
from lsp_hub.index.reexports import name_users
from lsp_hub.index.symbols import (
    definition_targets,
    definitions_named,
    enclosing_definition,
    location,
    qualified_name,
)
from lsp_hub.index.workspace import Snapshot, file_uri

MAX_DEPTH = 10
MAX_CALLERS = 500
MAX_LIMIT = 10_000  # what a query may ask for instead of MAX_CALLERS


def resolve_targets_at(snapshot: Snapshot, path: str, line: int, character: int) -> list[tuple[str, Definition]]:
    """The definitions meant at a position: the name under the cursor (a definition or a use), else the function
    or method the position is inside."""
    targets = definition_targets(snapshot, path, line, character)
    if targets:
        return targets
    record = snapshot.files.get(path)
    if record is None:
        return []
    enclosing = enclosing_definition(record.outline(), Span(line, character, line, character))
    return [(path, enclosing)] if enclosing is not None else []


def resolve_targets_by_name(snapshot: Snapshot, symbol: str) -> list[tuple[str, Definition]]:
    """`name`, `Container.name` (`Container::name`) or a named callback whole (`describe("a.b()")`, `app.get("/x")`).
    A class that does not define `name` answers with what it inherits (`Flask.route` is Scaffold's)."""
    symbol = symbol.strip()
    if is_named_callback(symbol):
        return definitions_named(snapshot, symbol)
    container: str | None = None
    name = symbol
    # The last separator of either kind: `Rack::Utils.escape` is Utils's escape, `a::b::C::f` C's f.
    qualified = symbol.replace("::", ".")
    if "." in qualified:
        container, _, name = qualified.rpartition(".")
        container = container.rsplit(".", 1)[-1]
    found = definitions_named(snapshot, name)
    if container is not None:
        in_container = [entry for entry in found if entry[1].container == container]
        # `storage.save_user`: a module (file stem or directory) rather than a class.
        in_module = [entry for entry in found if container in entry[0].rsplit(".", 1)[0].split("/")]
        # `rich.print`: rich/__init__.py's, before rich/jupyter.py's (which is `rich.jupyter.print`)
        named_module = [entry for entry in in_module if _module_name(entry[0]) == container]
        found = in_container or named_module or in_module or WorkspaceClass(snapshot, container).member(name)
    return found


_PACKAGE_FILES = frozenset(("__init__", "index", "mod", "lib"))  # a file that is its directory's module


def _module_name(path: str) -> str:
    """The last name of the module a file is: its stem, or its directory's for a package's own file."""
    directory, _, file_name = path.rpartition("/")
    stem = file_name.partition(".")[0]
    return directory.rpartition("/")[2] if stem in _PACKAGE_FILES and directory else stem


class _CallSites:
    """The calls of a name in a file, each with its enclosing function, found once per query and name."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str], list[tuple[Reference, Definition | None]]] = {}

    def of(self, record: FileRecord, outline: FileIndex, name: str) -> list[tuple[Reference, Definition | None]]:
        found = self._found.get((record.path, name))
        if found is None:
            found = self._found[record.path, name] = [
                (reference, enclosing_definition(outline, reference.span)) for reference in record.calls_named(name)
            ]
        return found


class CallerLookups:
    """What finding callers reads, kept across the searches of one question (a trace asks for the callers of every
    function on its paths, mostly in the same files): outlines, each file's calls of a name, the judge's inferences."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.judge = CallJudge(snapshot)
        self.calls = _CallSites()
        self.outlines: dict[str, FileIndex] = {}
        self.definition_counts: dict[tuple[str, str], int] = {}  # (name, language family) -> definitions


def find_callers(
    snapshot: Snapshot,
    targets: list[tuple[str, Definition]],
    depth: int = 1,
    max_callers: int = MAX_CALLERS,
    lookups: CallerLookups | None = None,
) -> dict[str, Any]:
    """`{symbol, definitions, callers: [{location, caller, depth}], complete}` for already resolved targets;
    `lookups` shared by the searches of one question."""
    depth = max(1, min(depth, MAX_DEPTH))
    if lookups is None or lookups.snapshot is not snapshot:
        lookups = CallerLookups(snapshot)
    initial = [CallTarget(path, definition) for path, definition in targets]
    symbol = qualified_name(initial[0].definition) if initial else None
    # A constructor is called by instantiating its class (`Cart(...)`, `new Cart()`): its class is searched too.
    searched = initial + [found for target in initial for found in _class_of_constructor(snapshot, target)]
    result_callers: list[dict[str, Any]] = []
    truncated = False
    seen_targets = {target.key for target in searched}
    seen_sites: set[tuple[str, int, int]] = set()
    queue: deque[tuple[CallTarget, int]] = deque((target, 1) for target in searched)
    definition_counts = lookups.definition_counts
    judge = lookups.judge
    calls = lookups.calls
    outlines = lookups.outlines  # the sources' definitions and types (their calls come from `calls`)
    while queue:
        target, level = queue.popleft()
        name = target.definition.name
        family = language_family(snapshot.files[target.path].language)
        if (name, family) not in definition_counts:
            # Unique within the languages that can call it: a TypeScript `save` does not make a Python one ambiguous.
            definition_counts[name, family] = sum(
                1
                for path, _definition in definitions_named(snapshot, name)
                if language_family(snapshot.files[path].language) == family
            )
        uses, exported_as = name_users(snapshot, name)
        for source, used_name in uses:
            record = snapshot.files[source]
            file_index = outlines.get(source)
            if file_index is None:  # held for the query: each target reads the same files
                file_index = outlines[source] = record.outline()
            for reference, caller in calls.of(record, file_index, used_name):
                if used_name != name and reference.receiver is not None and (source, used_name) not in exported_as:
                    continue  # `x.other()` is not the alias
                count = definition_counts[name, family]
                line = reference.span.start_line
                if not judge.counts(source, file_index, used_name, reference.receiver, caller, target, count, line):
                    continue
                site = (source, reference.span.start_line, reference.span.start_col)
                if site in seen_sites:
                    continue
                if len(result_callers) >= max_callers:
                    truncated = True
                    queue.clear()
                    break
                seen_sites.add(site)
                entry = {
                    "location": location(snapshot, source, reference.span),
                    "caller": qualified_name(caller) if caller is not None else None,
                    "depth": level,
                }
                result_callers.append(_with_outer_function(entry, file_index, caller))
                if caller is not None and level < depth:
                    next_target = CallTarget(source, caller)
                    if next_target.key not in seen_targets:
                        seen_targets.add(next_target.key)
                        queue.append((next_target, level + 1))
            if truncated:
                break
    completeness = snapshot.completeness()
    if truncated:
        completeness["complete"] = False
        completeness["truncated"] = f"stopped after {max_callers} callers"
    return {
        "symbol": symbol,
        "definitions": [
            {**location(snapshot, target.path, target.definition.name_span), "name": qualified_name(target.definition)}
            for target in initial
        ],
        "callers": result_callers,
        **completeness,
    }


# A method that instantiating its class calls, by language (Java's, C#'s and C++'s are named as the class).
CONSTRUCTOR_NAMES = {
    "python": "__init__",
    "typescript": "constructor",
    "tsx": "constructor",
    "javascript": "constructor",
    "ruby": "initialize",
    "php": "__construct",
}


def _class_of_constructor(snapshot: Snapshot, target: CallTarget) -> list[CallTarget]:
    """The class whose instantiation calls `target`, when it is a constructor, defined in the same file."""
    definition = target.definition
    record = snapshot.files.get(target.path)
    if definition.container is None or record is None or CONSTRUCTOR_NAMES.get(record.language) != definition.name:
        return []
    return [
        CallTarget(target.path, candidate)
        for candidate in record.outline().definitions
        if candidate.name == definition.container
        and candidate.kind == "class"
        and candidate.span.start_line <= definition.span.start_line <= candidate.span.end_line
    ]


# --- merging a language server's call sites ------------------------------------------------------------------

ORIGIN_INDEX, ORIGIN_SERVER, ORIGIN_BOTH = "index", "server", "both"


def _range_key(location: dict[str, Any]) -> tuple[str, int, int, int, int]:
    start, end = location["range"]["start"], location["range"]["end"]
    return (location["uri"], start["line"], start["character"], end["line"], end["character"])


def _same_site(index_location: dict[str, Any], server_location: dict[str, Any]) -> bool:
    """Whether a server's call site is the index's: the same line of the same file, and the ranges overlap or
    start together (a server may give the callee's whole expression, `shop.pay`, where the index gives `pay`)."""
    uri, line, start, _end_line, end = _range_key(index_location)
    server_uri, server_line, server_start, server_end_line, server_end = _range_key(server_location)
    if uri != server_uri or line != server_line:
        return False
    if server_end_line != server_line:
        server_end = 1 << 30
    return start == server_start or (start < server_end and server_start < end)


def merge_callers(
    index_callers: list[dict[str, Any]], server_callers: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """The index's callers (`{location, caller, depth}`) and a server's direct call sites (`{location, caller}`) as
    one list, each with its `origin`: `both` (the server confirms the index's site), `server` (only the server
    knows it) or `index`. Without a server answer (`None`) every caller is the index's, in the index's order.

    Direct callers (depth 1) the server knows come first, by file and position; direct callers only the index
    knows follow (a server can be wrong about dynamic code, so they are kept, but they are less sure); deeper
    levels, which the server was not asked about, keep the index's order after them. A pure function: the
    inputs are not changed."""
    if server_callers is None:
        return [{**caller, "origin": ORIGIN_INDEX} for caller in index_callers]
    unmatched: list[dict[str, Any]] = []
    # A server may list one site twice (two prepared items of one symbol; its call hierarchy and its references).
    for site in server_callers:
        if not any(_same_site(site["location"], other["location"]) for other in unmatched):
            unmatched.append(site)
    confirmed: list[dict[str, Any]] = []
    index_only: list[dict[str, Any]] = []
    deeper: list[dict[str, Any]] = []
    for caller in index_callers:
        if caller.get("depth", 1) != 1:
            deeper.append({**caller, "origin": ORIGIN_INDEX})
            continue
        match = next((site for site in unmatched if _same_site(caller["location"], site["location"])), None)
        if match is None:
            index_only.append({**caller, "origin": ORIGIN_INDEX})
        else:
            unmatched.remove(match)
            confirmed.append({**caller, "origin": ORIGIN_BOTH})
    for site in unmatched:
        confirmed.append(
            {"location": site["location"], "caller": site.get("caller"), "depth": 1, "origin": ORIGIN_SERVER}
        )
    confirmed.sort(key=lambda caller: _range_key(caller["location"]))
    return confirmed + index_only + deeper


def name_server_callers(snapshot: Snapshot, sites: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A server's call sites (`{location, caller?}`) with the caller named as the index names it (the enclosing
    function or method, `Class.method`); a site in a file the index does not hold keeps the server's name."""
    named: list[dict[str, Any]] = []
    for site in sites:
        entry = {"location": site["location"], "caller": site.get("caller")}
        path = _snapshot_path(snapshot, site["location"]["uri"])
        record = snapshot.files.get(path) if path is not None else None
        if record is not None:
            start = site["location"]["range"]["start"]
            outline = record.outline()
            enclosing = enclosing_definition(
                outline, Span(start["line"], start["character"], start["line"], start["character"])
            )
            entry["caller"] = qualified_name(enclosing) if enclosing is not None else None
            entry = _with_outer_function(entry, outline, enclosing)
        named.append(entry)
    return named


def _with_outer_function(entry: dict[str, Any], file_index: FileIndex, caller: Definition | None) -> dict[str, Any]:
    """`entry` with `callerIn`, the function a local caller is defined in (fastapi's closure `app` inside
    `get_request_handler`, which alone reads like the application), when the caller is one."""
    if caller is None or caller.container is not None:
        return entry
    outer = enclosing_definition(file_index, caller.span, exclude=caller)  # around where the caller starts
    if outer is not None:
        entry["callerIn"] = qualified_name(outer)
    return entry


def _snapshot_path(snapshot: Snapshot, uri: str) -> str | None:
    """The workspace-relative path of a `file://` URI inside the snapshot's root, else None."""
    root_uri = file_uri(snapshot.root, "").rstrip("/") + "/"
    return unquote(uri[len(root_uri) :]) if uri.startswith(root_uri) else None


def callers_beyond_server_sites(
    snapshot: Snapshot, merged: list[dict[str, Any]], depth: int, max_callers: int = MAX_CALLERS
) -> list[dict[str, Any]]:
    """For `depth` > 1: the index's walk continued from the callers only the server found (their callers at depth
    2 and beyond, origin `index`), appended after `merged`; sites already listed are not repeated."""
    if depth <= 1:
        return merged
    seen = {_range_key(caller["location"])[:3] for caller in merged}
    extra: list[dict[str, Any]] = []
    for caller in merged:
        if caller["origin"] != ORIGIN_SERVER:
            continue
        path = _snapshot_path(snapshot, caller["location"]["uri"])
        record = snapshot.files.get(path) if path is not None else None
        if record is None or path is None:
            continue
        start = caller["location"]["range"]["start"]
        enclosing = enclosing_definition(
            record.outline(), Span(start["line"], start["character"], start["line"], start["character"])
        )
        if enclosing is None:
            continue
        walked = find_callers(snapshot, [(path, enclosing)], depth - 1, max_callers)
        for found in walked["callers"]:
            key = _range_key(found["location"])[:3]
            if key in seen:
                continue
            seen.add(key)
            extra.append({**found, "depth": found["depth"] + 1, "origin": ORIGIN_INDEX})
    return merged + extra


def opens_a_call(line_text: str, end_character: int) -> bool:
    """Whether a name ending at `end_character` (a UTF-16 column) of `line_text` is called: the next character
    that is not a space is `(`, or type arguments on the line and then `(` (TypeScript's `useState<string>(`). How
    a reference from `textDocument/references` is told to be a call site."""
    if not line_text.isascii():
        end_character = len(line_text.encode("utf-16-le")[: 2 * end_character].decode("utf-16-le", "ignore"))
    rest = line_text[end_character:].lstrip()
    if rest.startswith("<"):
        depth = 0
        for position, character in enumerate(rest):
            depth += (character == "<") - (character == ">")
            if depth == 0:
                rest = rest[position + 1 :].lstrip()
                break
    return rest.startswith("(")
