"""`zoom`: one symbol's source with line numbers (or, for a container longer than `MENU_THRESHOLD` lines, a menu
of its members' signatures), what it calls (counted, resolved where the index can) and who calls it (counted)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from lsp_hub.index.navigation.calls import CallEdge, CallerGroup, incoming_calls, outgoing_calls
from lsp_hub.index.navigation.common import (
    Completeness,
    SymbolRef,
    capped,
    decorations,
    index_completeness,
    join_lines,
    more_line,
    one_symbol,
    read_lines,
    take_snapshot,
)
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

MAX_SIGNATURE_CHARS = 120
MENU_THRESHOLD = 150  # lines: a longer class is shown as its members' signatures
DEFAULT_ZOOM_LIMIT = 30  # calls and callers shown each
MAX_SOURCE_LINES = 400  # a longer function's source is cut here
_CONTAINER_KINDS = frozenset(("class", "interface", "type", "module"))


@dataclass(slots=True)
class ZoomResult:
    symbol: SymbolRef
    signature: str
    source: list[tuple[int, str]]  # (1-based line, text); empty when `members` is given instead
    members: list[tuple[int, str]]  # (line, signature) of a large container's members
    calls: list[CallEdge]
    called_by: list[CallerGroup]
    calls_omitted: int
    called_by_omitted: int
    source_omitted: int
    completeness: Completeness
    first_line: int  # 1-based, its first decorator's where Python's are above it (`line` stays the definition's)
    # Every definition of the name in its scope of the file, when there are several (Java's overloads, a
    # property's getter and setter): all shown, `symbol` the first.
    overloads: list[SymbolRef] = field(default_factory=list)

    @property
    def last_line(self) -> int:
        return self.overloads[-1].last_line if self.overloads else self.symbol.last_line

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            **self.symbol.to_json(),
            "lines": [self.first_line, self.last_line],
            "signature": self.signature,
        }
        if self.overloads:
            result["overloads"] = [_overload_json(one) for one in self.overloads]
        if self.members:
            result["members"] = [{"line": line, "signature": signature} for line, signature in self.members]
        else:
            result["source"] = "\n".join(text for _line, text in self.source)
        result["calls"] = [edge.to_json() for edge in self.calls]
        result["calledBy"] = [group.to_json() for group in self.called_by]
        for key, count in (
            ("callsOmitted", self.calls_omitted),
            ("calledByOmitted", self.called_by_omitted),
            ("sourceOmittedLines", self.source_omitted),
        ):
            if count:
                result[key] = count
        result.update(self.completeness.to_json())
        return result

    def to_text(self) -> str:
        ref = self.symbol
        many = f" ({len(self.overloads)} overloads)" if self.overloads else ""
        lines = [f"{ref.definition.kind} {ref.name}{many}  {ref.path}:{self.first_line}-{self.last_line}"]
        if self.members:
            lines.append(f"members ({ref.last_line - ref.first_line + 1} lines; zoom into one by name):")
            lines.extend(f"  {line} {signature}" for line, signature in self.members)
        else:
            width = len(str(self.source[-1][0])) if self.source else 1
            lines.extend(f"{line:>{width}}  {text}" for line, text in self.source)
            lines.extend(more_line(self.source_omitted, "lines"))
        if ref.definition.kind != "field":  # a struct's field calls nothing and is called by nothing
            lines.append("calls: (none)" if not self.calls else "calls:")
            lines.extend(f"  {edge.text()}" for edge in self.calls)
            lines.extend(more_line(self.calls_omitted, "calls"))
            lines.append("calledBy: (none found in the index)" if not self.called_by else "calledBy:")
            lines.extend(f"  {group.text()}" for group in self.called_by)
            lines.extend(more_line(self.called_by_omitted, "callers"))
        lines.append(self.completeness.to_text())
        return join_lines(lines)


def _overload_json(ref: SymbolRef) -> dict[str, Any]:
    return {"line": ref.first_line, "lines": [ref.first_line, ref.last_line], "signature": ref.definition.signature}


def shortened(signature: str) -> str:
    return signature if len(signature) <= MAX_SIGNATURE_CHARS else signature[: MAX_SIGNATURE_CHARS - 3] + "..."


def zoom(index: WorkspaceIndex, symbol: str, limit: int = DEFAULT_ZOOM_LIMIT, wait: float = 0.0) -> ZoomResult:
    """`symbol` (`Class.method`, `module.func` or FILE:LINE:COL) with its source or member menu, its calls and
    its callers, each list capped at `limit` (0: all)."""
    snapshot = take_snapshot(index, wait)
    ref = one_symbol(index, snapshot, symbol)
    completeness = index_completeness(index, snapshot)
    overloads = _overloads(snapshot, ref)
    if overloads:
        ref = overloads[0]
    definition = ref.definition
    # From its first decorator (Python's are above the `def`): `@staticmethod` says what the method is.
    above = decorations(snapshot.files[ref.path]).get(definition.span.start_line)
    first = above[0] + 1 if above else ref.first_line
    length = ref.last_line - first + 1
    source: list[tuple[int, str]] = []
    members: list[tuple[int, str]] = []
    source_omitted = 0
    if definition.kind in _CONTAINER_KINDS and length > MENU_THRESHOLD:
        span = definition.span
        for member in snapshot.files[ref.path].outline().definitions:
            inside = (span.start_line, span.start_col) < (member.span.start_line, member.span.start_col) and (
                member.span.end_line,
                member.span.end_col,
            ) <= (span.end_line, span.end_col)
            if inside and member.container == definition.name:
                shown = member.signature or f"{member.kind} {member.name}"
                members.append((member.span.start_line + 1, shortened(shown)))
    else:
        lines = read_lines(index, ref.path, completeness)
        if lines is not None:
            # Each overload's lines, in order (the lines between them are the numbers' gaps).
            ranges = [(first, ref.last_line)] + [(other.first_line, other.last_line) for other in overloads[1:]]
            numbers = [number for start, end in ranges for number in range(start, min(end, len(lines)) + 1)]
            source = [(number, lines[number - 1]) for number in numbers[:MAX_SOURCE_LINES]]
            source_omitted = len(numbers) - len(source)
            if source_omitted:
                completeness.add(f"source cut at {MAX_SOURCE_LINES} lines")
    searched = definition.kind != "field"  # a struct's field calls nothing and is called by nothing
    refs = overloads or [ref]
    calls, calls_omitted = capped(_calls_of(snapshot, refs) if searched else [], limit)
    callers, truncated = incoming_calls(snapshot, refs) if searched else ([], False)
    if truncated:
        completeness.add("too many callers to search them all")
    called_by, called_by_omitted = capped(callers, limit)
    if calls_omitted or called_by_omitted:
        completeness.add(f"calls and callers capped at {limit}")
    return ZoomResult(
        ref,
        definition.signature,
        source,
        members,
        calls,
        called_by,
        calls_omitted,
        called_by_omitted,
        source_omitted,
        completeness,
        first,
        overloads,
    )


def _overloads(snapshot: Snapshot, ref: SymbolRef) -> list[SymbolRef]:
    """The definitions of `ref`'s name in its scope of its file, in order, when there are several (`one_symbol`
    takes them for one symbol); else empty."""
    definition = ref.definition
    if definition.kind not in ("function", "method"):
        return []
    same = [
        SymbolRef(ref.path, other)
        for other in snapshot.files[ref.path].outline().definitions
        if other.name == definition.name and other.container == definition.container and other.kind == definition.kind
    ]
    return sorted(same, key=lambda other: other.first_line) if len(same) > 1 else []


def _calls_of(snapshot: Snapshot, refs: list[SymbolRef]) -> list[CallEdge]:
    """What the definitions call, an overload's calls added to the others' (a callee written alike and meaning the
    same counted once, its counts summed), most frequent first."""
    if len(refs) == 1:
        return outgoing_calls(snapshot, refs[0])
    merged: dict[tuple[str, tuple[tuple[str, str, str | None, int], ...]], CallEdge] = {}
    for ref in refs:
        for edge in outgoing_calls(snapshot, ref):
            key = (edge.written, tuple(target.key for target in edge.targets))
            known = merged.get(key)
            if known is None:
                merged[key] = replace(edge)
            else:
                known.count += edge.count
    return sorted(merged.values(), key=lambda edge: -edge.count)
