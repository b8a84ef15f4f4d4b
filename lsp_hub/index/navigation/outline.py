"""`outline`: a file's definitions as a tree (name, kind, lines, signature), or each file's top-level definitions
for a directory. Definitions inside function bodies (locals) are left out: an outline shows what others can use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lsp_hub.index.definition_scopes import BODY_KINDS, is_local
from lsp_hub.index.model import Definition
from lsp_hub.index.navigation.common import (
    Completeness,
    NavigationError,
    decorations,
    index_completeness,
    indexed_file,
    join_lines,
    more_line,
    take_snapshot,
    workspace_path,
)
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

DEFAULT_OUTLINE_LIMIT = 300  # entries


@dataclass(slots=True)
class OutlineEntry:
    name: str
    kind: str
    first_line: int  # 1-based
    last_line: int
    signature: str
    container: str | None = None  # shown only when nesting does not already say it
    children: list[OutlineEntry] = field(default_factory=list)
    decorators: tuple[str, ...] = ()  # above its first line (Python's), which then is the first decorator's

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"name": self.name, "kind": self.kind, "lines": [self.first_line, self.last_line],
                                  "signature": self.signature}
        if self.container:
            result["container"] = self.container
        if self.decorators:
            result["decorators"] = list(self.decorators)
        if self.children:
            result["children"] = [child.to_json() for child in self.children]
        return result

    def text_lines(self, depth: int) -> list[str]:
        shown = self.signature or f"{self.kind} {self.name}"
        shown = "".join(f"@{decorator} " for decorator in self.decorators) + shown
        owner = f" [{self.container}]" if self.container else ""
        span = f"{self.first_line}" if self.first_line == self.last_line else f"{self.first_line}-{self.last_line}"
        return [f"{'  ' * depth}{span} {shown}{owner}", *drawn_lines(self.children, depth + 1)]


def drawn_lines(entries: list[OutlineEntry], depth: int) -> list[str]:
    """The entries' lines; the names of one declaration (`A, B int`, `int low, high;`) share its line, drawn once."""
    lines: list[str] = []
    previous = None
    for entry in entries:
        drawn = entry.text_lines(depth)
        if drawn[0] != previous:
            lines.extend(drawn)
        previous = drawn[0]
    return lines


@dataclass(slots=True)
class FileOutline:
    path: str
    language: str
    line_count: int
    symbols: list[OutlineEntry]
    generated_by: str = ""  # the mark at its top that says it was generated (an edit belongs in its source)

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"path": self.path, "language": self.language, "lines": self.line_count,
                                  "symbols": [entry.to_json() for entry in self.symbols]}
        if self.generated_by:
            result["generatedBy"] = self.generated_by
        return result


@dataclass(slots=True)
class OutlineResult:
    path: str
    is_directory: bool
    files: list[FileOutline]
    omitted: int  # entries left out by the limit
    omitted_files: int  # files of a directory not shown once the limit was reached
    completeness: Completeness

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"path": self.path, "files": [outline.to_json() for outline in self.files]}
        if self.omitted:
            result["omitted"] = self.omitted
        if self.omitted_files:
            result["omittedFiles"] = self.omitted_files
        result.update(self.completeness.to_json())
        return result

    def to_text(self) -> str:
        lines: list[str] = []
        for outline in self.files:
            generated = f"; generated: {outline.generated_by}" if outline.generated_by else ""
            lines.append(f"{outline.path} ({outline.line_count} lines{generated})")
            if not outline.symbols:
                lines.append("  (no definitions)")
            lines.extend(drawn_lines(outline.symbols, 1))
        if not self.files:
            lines.append(f"{self.path or '.'}: no indexed source files")
        lines.extend(more_line(self.omitted, "definitions"))
        lines.extend(more_line(self.omitted_files, "files"))
        lines.append(self.completeness.to_text())
        return join_lines(lines)


def _last_line(definition: Definition) -> int:
    span = definition.span
    return span.end_line + (1 if span.end_col > 0 or span.end_line == span.start_line else 0)


def _contains(outer: Definition, inner: Definition) -> bool:
    a, b = outer.span, inner.span
    return (a.start_line, a.start_col) <= (b.start_line, b.start_col) and (b.end_line, b.end_col) <= (a.end_line,
                                                                                                       a.end_col)


def file_tree(snapshot: Snapshot, path: str, top_level_only: bool = False) -> tuple[list[OutlineEntry], int]:
    """A file's definitions nested by range (locals of functions left out) and how many entries they are."""
    decorated = decorations(snapshot.files[path])
    definitions = sorted(snapshot.files[path].outline().definitions,
                         key=lambda d: (d.span.start_line, d.span.start_col, -d.span.end_line, -d.span.end_col))
    roots: list[OutlineEntry] = []
    stack: list[tuple[Definition, OutlineEntry]] = []
    bodies: list[Definition] = []  # the functions around the current definition, drawn or not (`definition_scopes`)
    count = 0
    for definition in definitions:
        # `A, B int`: the names of one declaration share its span, and are siblings
        while stack and (not _contains(stack[-1][0], definition) or stack[-1][0].span == definition.span):
            stack.pop()
        while bodies and not _contains(bodies[-1], definition):
            bodies.pop()
        inside_body = bool(bodies)
        if definition.kind in BODY_KINDS:
            bodies.append(definition)
        if (stack and top_level_only) or is_local(definition.name, inside_body):
            continue  # a local of a function (a test's `it("adds")` in its `describe` is none), or not top-level
        parent = stack[-1][0] if stack else None
        shown_container = definition.container if definition.container and (
            parent is None or parent.name != definition.container) else None
        first, decorators = decorated.get(definition.span.start_line, (definition.span.start_line, ()))
        entry = OutlineEntry(definition.name, definition.kind, first + 1, _last_line(definition),
                             definition.signature, shown_container, decorators=decorators)
        (stack[-1][1].children if stack else roots).append(entry)
        stack.append((definition, entry))
        count += 1
    return roots, count


def _cut(entries: list[OutlineEntry], budget: int) -> tuple[list[OutlineEntry], int, int]:
    """At most `budget` entries in document order: (kept, used, left out)."""
    kept: list[OutlineEntry] = []
    used = left = 0
    for entry in entries:
        if used >= budget:
            left += 1 + _size(entry.children)
            continue
        used += 1
        children, child_used, child_left = _cut(entry.children, budget - used)
        used += child_used
        left += child_left
        entry.children = children
        kept.append(entry)
    return kept, used, left


def _size(entries: list[OutlineEntry]) -> int:
    return sum(1 + _size(entry.children) for entry in entries)


def outline(index: WorkspaceIndex, path: str, limit: int = DEFAULT_OUTLINE_LIMIT, wait: float = 0.0) -> OutlineResult:
    """The outline of a file (a tree) or of a directory (each file's top-level definitions, by path), at most
    `limit` entries (0: all)."""
    snapshot = take_snapshot(index, wait)
    relative = workspace_path(index, path, "path")
    completeness = index_completeness(index, snapshot)
    directory = (index.root / relative).is_dir() if relative else True
    if directory:
        prefix = f"{relative}/" if relative else ""
        paths = sorted(file for file in snapshot.files if file.startswith(prefix))
        if not paths and not (index.root / relative).exists():
            raise NavigationError(f"path {relative} does not exist")
    else:
        paths = [indexed_file(index, snapshot, relative, "path")]
    files: list[FileOutline] = []
    budget = limit if limit > 0 else 1 << 30
    omitted = omitted_files = 0
    for file in paths:
        if budget <= 0:
            omitted_files += 1  # not even read: a directory's outline stops at the cap
            continue
        record = snapshot.files[file]
        entries, _count = file_tree(snapshot, file, top_level_only=directory)
        kept, used, left = _cut(entries, budget)
        budget -= used
        omitted += left
        files.append(FileOutline(file, record.language, record.outline().line_count, kept, record.generated_by))
    if omitted or omitted_files:
        completeness.add(f"capped at {limit} definitions" + (f", {omitted_files} files not shown" if omitted_files
                                                             else ""))
    return OutlineResult(relative, directory, files, omitted, omitted_files, completeness)
