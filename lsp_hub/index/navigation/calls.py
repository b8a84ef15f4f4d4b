"""The calls a definition makes, each resolved to the workspace definitions the index can tie it to (by the
file's imports and the language's scoping, as `graph.UseResolver` decides for the repo map), and the calls it
receives, grouped by caller. Shared by `zoom`, `call_tree` and `trace`."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from lsp_hub.index.graph import COMMON_NAMES, SELF_RECEIVERS, use_resolver
from lsp_hub.index.model import COMPLEX_RECEIVER, Span
from lsp_hub.index.navigation.common import SymbolRef
from lsp_hub.index.symbols import definitions_named, enclosing_definition
from lsp_hub.index.workspace import Snapshot

MAX_CALLERS_SEARCHED = 2000


@dataclass(slots=True)
class CallEdge:
    """One callee as written (`self.save`, `json.dumps`), how often the definition calls it, and what it means."""

    written: str
    count: int
    targets: list[SymbolRef]

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"name": self.written, "count": self.count}
        if self.targets:
            result["definition"] = f"{self.targets[0].path}:{self.targets[0].first_line}"
            if len(self.targets) > 1:
                result["alternatives"] = len(self.targets) - 1
        return result

    def text(self) -> str:
        times = f" x{self.count}" if self.count > 1 else ""
        if not self.targets:
            return f"{self.written}{times}"
        where = f"{self.targets[0].path}:{self.targets[0].first_line}"
        others = f" (+{len(self.targets) - 1} more)" if len(self.targets) > 1 else ""
        return f"{self.written}{times} -> {where}{others}"


def annotated_class(signature: str, parameter: str) -> str | None:
    """The class a signature annotates a parameter with (`cart: Cart`, `cart: "Cart"`, `cart: Optional[m.Cart]`)."""
    if not parameter.isidentifier():
        return None
    annotated = re.search(rf"[(,]\s*\*{{0,2}}{re.escape(parameter)}\s*:\s*['\"]?(?:Optional\[)?([A-Za-z_][\w.]*)",
                          signature)
    return annotated.group(1).rsplit(".", 1)[-1] if annotated else None


def _inside(outer: Span, line: int, column: int) -> bool:
    return (outer.start_line, outer.start_col) <= (line, column) < (outer.end_line, outer.end_col)


def outgoing_calls(snapshot: Snapshot, ref: SymbolRef) -> list[CallEdge]:
    """The calls written inside `ref`'s body, de-duplicated, most frequent first (then in order of appearance)."""
    record = snapshot.files[ref.path]
    file_index = record.file_index()
    span = ref.definition.span
    counts: Counter[tuple[str, str | None]] = Counter()
    for reference in file_index.references:
        if reference.is_call and _inside(span, reference.span.start_line, reference.span.start_col):
            counts[reference.name, reference.receiver] += 1
    resolver = use_resolver(snapshot)
    edges: list[CallEdge] = []
    for (name, receiver), count in counts.items():
        targets: list[SymbolRef] = []
        declared = annotated_class(ref.definition.signature, receiver) if receiver else None
        # `result.update()`: a method of a builtin type far more often than a workspace method of that name.
        common = receiver is not None and receiver not in SELF_RECEIVERS and name in COMMON_NAMES and not declared
        files = () if common else resolver.targets(ref.path, name, receiver)
        if files:
            found = definitions_named(snapshot, resolver.imported_name(ref.path, name, receiver), files)
            if declared is not None:  # `def f(cart: Cart)`: `cart.add()` is Cart's
                found = [entry for entry in found if entry[1].container == declared]
            elif receiver in ("self", "this", "cls") and ref.definition.container is not None:
                same_class = [entry for entry in found if entry[1].container == ref.definition.container]
                found = same_class or found
            elif receiver is None:
                # A plain call means a function or a class (its constructor), not a method of some class.
                free = [entry for entry in found if entry[1].kind != "method" or entry[0] != ref.path]
                found = free or found
            targets = [SymbolRef(path, definition) for path, definition in found if
                       (path, definition.span.start_line) != (ref.path, ref.definition.span.start_line)
                       or name == ref.definition.name]
        shown_receiver = "(...)" if receiver == COMPLEX_RECEIVER else receiver
        written = f"{shown_receiver}.{name}" if receiver else name
        edges.append(CallEdge(written, count, targets))
    edges.sort(key=lambda edge: -edge.count)  # stable: first appearance breaks ties
    return edges


@dataclass(slots=True)
class CallerGroup:
    """One caller of a definition (a function, or a file's module level) and how many calls it makes to it."""

    caller: SymbolRef | None  # None: module-level code of `path`
    path: str
    count: int
    first_line: int

    def to_json(self) -> dict[str, Any]:
        return {"caller": self.caller.name if self.caller else "<module>", "path": self.path, "line": self.first_line,
                "count": self.count}

    def text(self) -> str:
        times = f" x{self.count}" if self.count > 1 else ""
        name = self.caller.name if self.caller else "<module>"
        return f"{name}{times} ({self.path}:{self.first_line})"


def incoming_calls(snapshot: Snapshot, refs: list[SymbolRef],
                   max_callers: int = MAX_CALLERS_SEARCHED) -> tuple[list[CallerGroup], bool]:
    """The callers of `refs` grouped by calling definition, most calls first; and whether the search was cut."""
    from lsp_hub.index.callers import find_callers

    found = find_callers(snapshot, [(ref.path, ref.definition) for ref in refs], 1, max_callers)
    groups: dict[tuple[str, int | None], CallerGroup] = {}
    outlines: dict[str, Any] = {}
    for caller in found["callers"]:
        path = snapshot_path(snapshot, caller["location"]["uri"])
        if path is None:
            continue
        start = caller["location"]["range"]["start"]
        outline = outlines.get(path)
        if outline is None:
            outline = outlines[path] = snapshot.files[path].outline()
        enclosing = enclosing_definition(outline, Span(start["line"], start["character"], start["line"],
                                                       start["character"]))
        key = (path, enclosing.span.start_line if enclosing else None)
        group = groups.get(key)
        if group is None:
            group = groups[key] = CallerGroup(SymbolRef(path, enclosing) if enclosing else None, path, 0,
                                              start["line"] + 1)
        group.count += 1
    ordered = sorted(groups.values(), key=lambda group: (-group.count, group.path, group.first_line))
    return ordered, bool(found.get("truncated"))


def snapshot_path(snapshot: Snapshot, uri: str) -> str | None:
    from urllib.parse import unquote

    prefix = snapshot.root.as_uri() + "/"
    path = unquote(uri[len(prefix):]) if uri.startswith(prefix) else None
    return path if path in snapshot.files else None
