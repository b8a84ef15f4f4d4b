"""`call_tree`: a symbol's outgoing calls as a tree to `depth`; calls that resolve to nothing in the workspace (the
standard library, dependencies, builtins) collapsed into one line per function unless asked for. `trace`: the call
paths that reach a symbol from the workspace's entry points, shortest first (breadth-first over its callers).

Entry points the index recognises, each path labelled with its kind: `main` functions (main), a script's
`__main__` block (__main__), other module-level code such as a test file's `it(...)` (module), the console
scripts of the root's `pyproject.toml` (console script NAME) and the `bin` files of its `package.json` (bin NAME),
test functions (`test_*`, Go's `Test*`, in test files) and pytest fixtures (test), and handlers registered by a
decorator or call (`entry_marks`): routes (`@app.route`, `@router.get`, `app.get("/x", handler)`), commands
(`@click.command`, `@app.command`, `@cli.group`) and tasks (`@app.task`, `@shared_task`)."""

from __future__ import annotations

import time
import tomllib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lsp_hub.index.file_kinds import is_test_call_name, is_test_file
from lsp_hub.index.navigation.calls import CallEdge, CallerGroup, constructor_of, incoming_calls, outgoing_calls
from lsp_hub.index.navigation.common import (
    Completeness,
    NavigationError,
    SymbolRef,
    index_completeness,
    join_lines,
    more_line,
    one_symbol,
    read_lines,
    take_snapshot,
)
from lsp_hub.index.navigation.entry_marks import EntryMarks, bin_entries
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

DEFAULT_CALL_TREE_DEPTH = 3
MAX_CALL_TREE_DEPTH = 8
DEFAULT_CALL_TREE_LIMIT = 100  # nodes
DEFAULT_TRACE_LIMIT = 10  # paths
DEFAULT_TRACE_DEPTH = 6  # calls between an entry point and the symbol
MAX_TRACE_VISITS = 300  # functions whose callers are looked up
MAX_TRACE_SECONDS = 2.0  # a symbol called from everywhere: answer with the paths found so far
MAX_UNRESOLVED_SHOWN = 8


@dataclass(slots=True)
class CallNode:
    edge: CallEdge
    children: list[CallNode] = field(default_factory=list)
    unresolved: list[CallEdge] = field(default_factory=list)  # collapsed callees
    note: str = ""  # "recursive", "seen above", "depth limit"

    def to_json(self) -> dict[str, Any]:
        result = self.edge.to_json()
        if self.children:
            result["calls"] = [child.to_json() for child in self.children]
        if self.unresolved:
            result["unresolved"] = [edge.written + edge.candidates_note() for edge in self.unresolved]
        if self.note:
            result["note"] = self.note
        return result

    def text_lines(self, depth: int) -> list[str]:
        note = f" ({self.note})" if self.note else ""
        lines = [f"{'  ' * depth}{self.edge.text()}{note}"]
        for child in self.children:
            lines.extend(child.text_lines(depth + 1))
        if self.unresolved:
            lines.append(f"{'  ' * (depth + 1)}+ {_collapsed(self.unresolved)}")
        return lines


def _collapsed(edges: list[CallEdge]) -> str:
    names = ", ".join(edge.written + edge.candidates_note() for edge in edges[:MAX_UNRESOLVED_SHOWN])
    more = f", ... {len(edges) - MAX_UNRESOLVED_SHOWN} more" if len(edges) > MAX_UNRESOLVED_SHOWN else ""
    return f"{len(edges)} calls outside the workspace or unresolved: {names}{more}"


@dataclass(slots=True)
class CallTreeResult:
    root: CallNode
    depth: int
    omitted: int  # calls not expanded once the node limit was reached
    completeness: Completeness

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"symbol": self.root.edge.written, "depth": self.depth, **self.root.to_json()}
        result.pop("count", None)
        if self.omitted:
            result["omitted"] = self.omitted
        result.update(self.completeness.to_json())
        return result

    def to_text(self) -> str:
        lines = self.root.text_lines(0)
        if not self.root.children and not self.root.unresolved:
            lines.append("  (calls nothing the index records)")
        lines.extend(more_line(self.omitted, "calls"))
        lines.append(self.completeness.to_text())
        return join_lines(lines)


def call_tree(
    index: WorkspaceIndex,
    symbol: str,
    depth: int = DEFAULT_CALL_TREE_DEPTH,
    include_unresolved: bool = False,
    limit: int = DEFAULT_CALL_TREE_LIMIT,
    wait: float = 0.0,
) -> CallTreeResult:
    """`symbol`'s outgoing calls to `depth` (1-8), at most `limit` nodes (0: no cap)."""
    if not 1 <= depth <= MAX_CALL_TREE_DEPTH:
        raise NavigationError(f"depth must be between 1 and {MAX_CALL_TREE_DEPTH}, not {depth}")
    snapshot = take_snapshot(index, wait)
    completeness = index_completeness(index, snapshot)
    ref = one_symbol(index, snapshot, symbol)
    root = CallNode(CallEdge(ref.name, 1, [ref]))
    budget = [limit if limit > 0 else 1 << 30]
    omitted = [0]
    expanded: set[tuple[str, str, str | None, int]] = set()

    def expand(
        node: CallNode, target: SymbolRef, level: int, path: frozenset[tuple[str, str, str | None, int]]
    ) -> None:
        expanded.add(target.key)
        for edge in outgoing_calls(snapshot, target):
            if not edge.targets:
                if include_unresolved:
                    node.children.append(CallNode(edge))
                else:
                    node.unresolved.append(edge)
                continue
            if budget[0] <= 0:
                omitted[0] += 1
                continue
            budget[0] -= 1
            child = CallNode(edge)
            node.children.append(child)
            callee = constructor_of(snapshot, edge.targets[0])  # a class: what its construction runs
            if callee is None:
                continue
            if callee.key in path:
                child.note = "recursive"
            elif callee.key in expanded:
                child.note = "expanded above"
            elif level >= depth:
                continue
            else:
                expand(child, callee, level + 1, path | {callee.key})

    expand(root, ref, 1, frozenset({ref.key}))
    if omitted[0]:
        completeness.add(f"capped at {limit} calls")
    return CallTreeResult(root, depth, omitted[0], completeness)


# --- trace ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hop:
    symbol: str
    path: str
    line: int

    def to_json(self) -> dict[str, Any]:
        return {"symbol": self.symbol, "path": self.path, "line": self.line}

    def text(self) -> str:
        return f"{self.symbol} ({self.path}:{self.line})"


@dataclass(slots=True)
class TracePath:
    # "main", "__main__", "module", "console script <name>", "bin <name>", "test", "route", "event", "api",
    # "unplaced" (a C call outside any function the index knows)...
    entry_kind: str
    hops: list[Hop]  # from the entry point to the symbol

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry_kind, "calls": [hop.to_json() for hop in self.hops]}

    def text(self) -> str:
        return f"[{self.entry_kind}] " + " -> ".join(hop.text() for hop in self.hops)


@dataclass(slots=True)
class TraceResult:
    symbol: SymbolRef
    paths: list[TracePath]
    omitted: int
    completeness: Completeness

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {**self.symbol.to_json(), "paths": [path.to_json() for path in self.paths]}
        if self.omitted:
            result["omitted"] = self.omitted
        result.update(self.completeness.to_json())
        return result

    def to_text(self) -> str:
        lines = [f"paths to {self.symbol.label()} from entry points:"]
        lines.extend(f"  {path.text()}" for path in self.paths)
        if not self.paths:
            lines.append("  (none found: no entry point reaches it through calls the index resolves)")
        lines.extend(more_line(self.omitted, "paths"))
        lines.append(self.completeness.to_text())
        return join_lines(lines)


def console_scripts(index: WorkspaceIndex) -> dict[tuple[str, str], str]:
    """(module, function) -> script name, from `[project.scripts]` of the root's pyproject.toml."""
    try:
        project = tomllib.loads((index.root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        return {}
    scripts = project.get("scripts", {}) if isinstance(project, dict) else {}
    found: dict[tuple[str, str], str] = {}
    for name, target in scripts.items() if isinstance(scripts, dict) else ():
        if isinstance(target, str) and ":" in target:
            module, _, function = target.partition(":")
            found[module.strip(), function.strip().split(".")[-1]] = name
    return found


def _entry_kind(ref: SymbolRef, scripts: dict[tuple[str, str], str], marks: EntryMarks) -> str | None:
    definition = ref.definition
    name = definition.name
    module = ref.path.rsplit(".", 1)[0].replace("/", ".").removesuffix(".__init__")
    for (script_module, function), script in scripts.items():
        if function == name and (
            module == script_module
            or module.endswith("." + script_module)
            or script_module.endswith("." + module)
            or module.endswith(script_module)
        ):
            return f"console script {script}"
    handler = marks.handler_kind(ref)
    if handler is not None:
        return handler
    if name == "main" and definition.kind == "function":
        return "main"
    if is_test_file(ref.path) and (name.startswith(("test", "Test")) or name in ("setUp", "beforeEach")):
        return "test"
    if is_test_call_name(name):  # `it("adds")`: a TS/JS test's callback
        return "test"
    return None


def trace(
    index: WorkspaceIndex,
    symbol: str,
    limit: int = DEFAULT_TRACE_LIMIT,
    depth: int = DEFAULT_TRACE_DEPTH,
    wait: float = 0.0,
) -> TraceResult:
    """Call paths from entry points to `symbol`, shortest first, at most `limit` (0: no cap), each at most `depth`
    calls long."""
    from lsp_hub.index.callers import CallerLookups  # with the graphs: loaded by the commands that need them

    snapshot = take_snapshot(index, wait)
    completeness = index_completeness(index, snapshot)
    ref = one_symbol(index, snapshot, symbol)
    scripts = console_scripts(index)
    marks = EntryMarks(snapshot)
    bins = bin_entries(index.root)
    line_text = _line_reader(index, completeness)
    paths: list[TracePath] = []
    total = 0
    ref_entry = _entry_kind(ref, scripts, marks)
    # Breadth-first over callers: each state is a function, the hops from it down to the symbol, and its entry kind.
    queue: deque[tuple[SymbolRef, list[Hop], str | None]] = deque(
        [(ref, [Hop(ref.name, ref.path, ref.first_line)], ref_entry)]
    )
    visited = {ref.key}
    visits = 0
    deadline = time.monotonic() + MAX_TRACE_SECONDS
    lookups = CallerLookups(snapshot)  # the functions on the paths are mostly in the same files
    while queue:
        current, hops, current_entry = queue.popleft()
        visits += 1
        if visits > MAX_TRACE_VISITS or time.monotonic() > deadline:
            completeness.add(f"stopped after looking up the callers of {visits - 1} functions")
            break
        groups, truncated = incoming_calls(snapshot, [current], lookups=lookups)
        if truncated:
            completeness.add(f"too many callers of {current.name} to search them all")
        elif current_entry is None and _public_api(current, groups, marks, line_text):
            total += 1
            paths.append(TracePath("api", hops))
        for group in groups:
            if group.caller is None:
                if group.path in bins:
                    kind = f"bin {bins[group.path]}"
                elif is_test_file(group.path):  # a test file's top level: `test("...", ...)`, a suite's setup
                    kind = "test"
                elif snapshot.files[group.path].language == "c":
                    # C runs no code outside functions: a call there sits in a macro's expansion or in code the
                    # parser could not read (jq's Bison and flex output), not in code run at load
                    kind = "unplaced"
                else:
                    kind = "__main__" if _has_main_block(index, snapshot, group.path) else "module"
                total += 1
                paths.append(TracePath(kind, [Hop(f"<module {group.path}>", group.path, group.first_line), *hops]))
                continue
            caller = group.caller
            chain = [Hop(caller.name, caller.path, caller.first_line), *hops]
            entry = _entry_kind(caller, scripts, marks)
            if entry is not None:
                total += 1
                paths.append(TracePath(entry, chain))
            if caller.key not in visited and len(chain) <= depth:
                visited.add(caller.key)
                queue.append((caller, chain, entry))
    if ref_entry is not None:
        paths.insert(0, TracePath(ref_entry, [Hop(ref.name, ref.path, ref.first_line)]))
        total += 1
    # Shortest first; among equals, code's own entry points before tests (a test stands in for one), then
    # breadth-first order (the sort is stable).
    paths.sort(key=lambda path: (len(path.hops), path.entry_kind == "test"))
    shown = paths if limit <= 0 else paths[:limit]
    if len(shown) < total:
        completeness.add(f"capped at {limit} paths")
    return TraceResult(ref, shown, total - len(shown), completeness)


def _public_api(
    ref: SymbolRef, groups: list[CallerGroup], marks: EntryMarks, line_text: Callable[[str, int], str]
) -> bool:
    """Whether `ref` (no entry point of another kind) is where code outside the workspace comes in: public in its
    language, in a file that is not a test, and called (as far as the index sees) from tests alone or from nowhere.
    A library has no main: its callers are its users, and its tests stand in for them."""
    if is_test_file(ref.path):
        return False
    if not all(is_test_file(group.path if group.caller is None else group.caller.path) for group in groups):
        return False
    return marks.is_public(ref, line_text)


def _line_reader(index: WorkspaceIndex, completeness: Completeness) -> Callable[[str, int], str]:
    """A file's line (0-based) as it is on disk, each file read once per trace (one that cannot be read is named
    in `completeness`, and its lines read as empty)."""
    lines: dict[str, list[str]] = {}

    def line_text(path: str, line: int) -> str:
        if path not in lines:
            lines[path] = read_lines(index, path, completeness) or []
        found = lines[path]
        return found[line] if 0 <= line < len(found) else ""

    return line_text


def _has_main_block(index: WorkspaceIndex, snapshot: Snapshot, path: str) -> bool:
    cache: dict[str, bool] = snapshot.derived("navigation_main_blocks", lambda _snapshot: {})
    if path not in cache:
        try:
            text = (index.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        cache[path] = "__main__" in text
    return cache[path]
