"""What every navigation command shares: how a symbol or a path is named, how completeness is told, how answers
are capped.

A symbol is given by name (`name`, `Class.method`, `module.func`, `Type::method`) or as `FILE:LINE:COL` (1-based,
as editors and `grep -n` print them). Bad input raises `NavigationError` (a ValueError: the surfaces print its one
line); an ambiguous name raises `AmbiguousSymbol`, which carries the candidates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lsp_hub.index.file_kinds import is_test_file
from lsp_hub.index.graph_inputs import name_tables
from lsp_hub.index.model import Definition, Span
from lsp_hub.index.records import FileRecord
from lsp_hub.index.symbols import enclosing_definition, qualified_name
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

MAX_CANDIDATES_SHOWN = 10
ELSEWHERE_SHOWN = 5  # definitions of an unknown `Container.name`'s bare name, named in the error
_POSITION = re.compile(r"^(?P<path>.+?):(?P<line>\d+)(?::(?P<column>\d+))?$")
ALL_KINDS = ("function", "method", "class", "interface", "type", "constant", "variable", "module")


class NavigationError(ValueError):
    """Input a command cannot answer (unknown symbol, path outside the workspace...): one line for the user."""


class AmbiguousSymbol(NavigationError):
    """A name that means several definitions: the candidates, so the caller can pick one by `FILE:LINE:COL`."""

    def __init__(self, symbol: str, candidates: list[SymbolRef]) -> None:
        self.symbol = symbol
        self.candidates = candidates
        shown = "; ".join(candidate.label() for candidate in candidates[:MAX_CANDIDATES_SHOWN])
        more = len(candidates) - MAX_CANDIDATES_SHOWN
        super().__init__(f"ambiguous symbol {symbol!r}: {len(candidates)} definitions: {shown}"
                         + (f"; ... {more} more" if more > 0 else "") + " (name one as FILE:LINE:COL)")


@dataclass(frozen=True, slots=True)
class SymbolRef:
    """One definition of the workspace, as commands pass it around."""

    path: str
    definition: Definition

    @property
    def name(self) -> str:
        return qualified_name(self.definition)

    @property
    def first_line(self) -> int:  # 1-based
        return self.definition.span.start_line + 1

    @property
    def last_line(self) -> int:  # 1-based, inclusive
        span = self.definition.span
        return span.end_line + (1 if span.end_col > 0 or span.end_line == span.start_line else 0)

    @property
    def key(self) -> tuple[str, str, str | None, int]:
        definition = self.definition
        return (self.path, definition.name, definition.container, definition.span.start_line)

    def label(self) -> str:
        return f"{self.definition.kind} {self.name} at {self.path}:{self.first_line}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.definition.kind, "path": self.path, "line": self.first_line}


@dataclass(slots=True)
class Completeness:
    """Whether an answer covers everything it should; each reason one short phrase."""

    reasons: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.reasons

    def add(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"complete": self.complete}
        if self.reasons:
            result["reason"] = "; ".join(self.reasons)
        return result

    def to_text(self) -> str:
        return "" if self.complete else f"(incomplete: {'; '.join(self.reasons)})"


def index_completeness(index: WorkspaceIndex, snapshot: Snapshot) -> Completeness:
    """Why the index itself may miss something: still building (with its progress), files left out."""
    completeness = Completeness()
    if index.build_error is not None:
        completeness.add(f"the index could not be built ({index.build_error})")
    elif index.state != "ready" or snapshot.pending:
        done = len(snapshot.files)
        completeness.add(f"index still building: {done} of {done + len(snapshot.pending)} files indexed")
    if snapshot.skipped:
        completeness.add(f"{len(snapshot.skipped)} files left out of the index (e.g. {snapshot.skipped[0][0]}: "
                         f"{snapshot.skipped[0][1]})")
    return completeness


def take_snapshot(index: WorkspaceIndex, wait: float) -> Snapshot:
    if wait > 0 and index.state != "ready":
        index.wait_ready(wait)
    return index.snapshot()


def workspace_path(index: WorkspaceIndex, value: str, what: str = "path") -> str:
    """The workspace-relative path of a path or URI; refused when it lies outside the workspace."""
    if not value or not value.strip():
        raise NavigationError(f"{what} is empty")
    relative = index.relative_path(value.strip())
    if relative is None:
        if (index.root / value.strip()).resolve() == index.root:
            return ""
        raise NavigationError(f"{what} {value} is outside the workspace {index.root}")
    return relative


def indexed_file(index: WorkspaceIndex, snapshot: Snapshot, value: str, what: str = "path") -> str:
    path = workspace_path(index, value, what)
    if path not in snapshot.files:
        skipped = dict(snapshot.skipped).get(path)
        if skipped is not None:
            raise NavigationError(f"{what} {path} is not indexed ({skipped})")
        if path in snapshot.pending:
            raise NavigationError(f"{path} is not indexed yet (the index is still building)")
        if not (index.root / path).exists():
            raise NavigationError(f"{what} {path} does not exist")
        left_out = _left_out_directory(path)
        if left_out is not None:
            raise NavigationError(f"{what} {path} is not indexed: it is inside {left_out}")
        raise NavigationError(f"{path} is not a source file the index knows (no indexed language)")
    return path


def _left_out_directory(path: str) -> str | None:
    """The directory around `path` that the walk does not enter, and why (`walk.SKIPPED_DIRECTORY_NAMES`)."""
    from lsp_hub.index.walk import SKIPPED_DIRECTORY_NAMES

    parts = path.split("/")[:-1]
    for depth, name in enumerate(parts):
        directory = "/".join(parts[: depth + 1])
        if name.startswith("."):
            return f"{directory}, a hidden directory"
        if name in SKIPPED_DIRECTORY_NAMES:
            return f"{directory}, a directory the index leaves out (vendored code, dependencies or build output)"
    return None


def _definitions_at(snapshot: Snapshot, path: str, line: int, column: int) -> list[SymbolRef]:
    from lsp_hub.index.symbols import definition_targets

    targets = definition_targets(snapshot, path, line, column)
    if targets:
        return [SymbolRef(target_path, definition) for target_path, definition in targets]
    outline = snapshot.files[path].outline()
    enclosing = enclosing_definition(outline, Span(line, column, line, column), ALL_KINDS)
    return [SymbolRef(path, enclosing)] if enclosing is not None else []


def find_symbols(index: WorkspaceIndex, snapshot: Snapshot, symbol: str) -> list[SymbolRef]:
    """Every definition `symbol` may mean (name path, or FILE:LINE[:COL]); raises on an unknown one."""
    from lsp_hub.index.callers import resolve_targets_by_name

    symbol = symbol.strip()
    if not symbol:
        raise NavigationError("symbol is empty: give a name (Class.method, module.func) or FILE:LINE:COL")
    position = _POSITION.match(symbol)
    if position is not None and ("/" in position["path"] or "." in position["path"]):
        path = indexed_file(index, snapshot, position["path"], "file")
        line, column = int(position["line"]) - 1, max(0, int(position["column"] or 1) - 1)
        found = _definitions_at(snapshot, path, max(0, line), column)
        if not found:
            raise NavigationError(f"no definition at {path}:{line + 1}:{column + 1}")
        return found
    found = [SymbolRef(path, definition) for path, definition in resolve_targets_by_name(snapshot, symbol)]
    qualifier = re.split(r"::|\.", symbol)[-2] if re.search(r"::|\.", symbol) else None
    if qualifier is not None and not any(ref.definition.container == qualifier for ref in found):
        # `store.save` names a module's function: not the methods of the module's classes.
        found = [ref for ref in found if ref.definition.container is None] or found
    if not found and qualifier is not None:
        found = _struct_fields_named(snapshot, qualifier, re.split(r"::|\.", symbol)[-1])
    if not found:
        raise NavigationError(f"unknown symbol {symbol!r}: no definition of that name in the index"
                              + _not_ready_note(index)
                              + (_defined_elsewhere(snapshot, symbol) if qualifier is not None else ""))
    return found


def _struct_fields_named(snapshot: Snapshot, struct: str, name: str) -> list[SymbolRef]:
    """`Context.Keys`: a struct's field, which no name table holds (`records.OUTLINE_ONLY`), in the files defining
    the struct."""
    return [
        SymbolRef(path, definition)
        for path in name_tables(snapshot).definers.get(struct, ())
        for definition in snapshot.files[path].outline().definitions
        if definition.kind == "field" and definition.name == name and definition.container == struct
    ]


def _defined_elsewhere(snapshot: Snapshot, symbol: str) -> str:
    """`; 'save' is defined as Store.save (shop/store.py:2), ...`: where the bare name of `Container.name` is, so
    that the next question can name one (`App.make_response` asked, `Flask.make_response` meant)."""
    from lsp_hub.index.symbols import definitions_named

    name = re.split(r"::|\.", symbol)[-1]
    found = definitions_named(snapshot, name)
    if not found:
        return ""
    shown = ", ".join(
        f"{qualified_name(definition)} ({path}:{definition.span.start_line + 1})"
        for path, definition in found[:ELSEWHERE_SHOWN]
    )
    more = f" +{len(found) - ELSEWHERE_SHOWN}" if len(found) > ELSEWHERE_SHOWN else ""
    return f"; {name!r} is defined as {shown}{more}"


def one_symbol(index: WorkspaceIndex, snapshot: Snapshot, symbol: str) -> SymbolRef:
    """The one definition `symbol` means; raises `AmbiguousSymbol` when it means several."""
    found = find_symbols(index, snapshot, symbol)
    # A Java or C# class and its constructors share a name: the name means the class (`Foo.Foo`: a constructor).
    classes = {(ref.path, ref.definition.name) for ref in found if ref.definition.kind in CLASS_KINDS}
    found = [ref for ref in found if not _constructor_of(ref, classes)] or found
    # Several definitions of one name in one scope of one file (a property's getter and setter, overloads) are one.
    distinct = list({(ref.path, ref.definition.container, ref.definition.name): ref for ref in found}.values())
    if len(distinct) > 1:
        preferred = [ref for ref in distinct if ref.definition.kind not in ("variable", "constant")]
        if len(preferred) == 1:
            return preferred[0]
        # A test's stand-in of the same name (express's tests define their own `View.prototype.render`) is not
        # what the name asks for; a test's own symbol is still reached through its file.
        outside_tests = [ref for ref in preferred or distinct if not is_test_file(ref.path)]
        if len(outside_tests) == 1:
            return outside_tests[0]
        raise AmbiguousSymbol(symbol, sorted(distinct, key=lambda ref: (ref.path, ref.first_line)))
    return distinct[0]


CLASS_KINDS = frozenset(("class", "interface", "type"))  # kinds of definitions whose members are methods


def _constructor_of(ref: SymbolRef, classes: set[tuple[str, str]]) -> bool:
    definition = ref.definition
    return (
        definition.kind == "method"
        and definition.container == definition.name
        and (ref.path, definition.name) in classes
    )


def _not_ready_note(index: WorkspaceIndex) -> str:
    if index.build_error is not None:
        return f" (it could not be built: {index.build_error})"
    return " (still building)" if index.state != "ready" else ""


def capped(items: list[Any], limit: int) -> tuple[list[Any], int]:
    """The first `limit` items (0: all) and how many were left out."""
    if limit <= 0 or len(items) <= limit:
        return items, 0
    return items[:limit], len(items) - limit


def more_line(count: int, what: str = "") -> list[str]:
    return [f"... {count} more{(' ' + what) if what else ''}"] if count > 0 else []


def join_lines(lines: Iterable[str]) -> str:
    return "\n".join(line for line in lines if line)


def read_lines(index: WorkspaceIndex, path: str, completeness: Completeness) -> list[str] | None:
    """A file's lines as on disk; None (with the reason in `completeness`) when it cannot be read."""
    try:
        text = (index.root / path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        completeness.add(f"could not read {path}: {error.strerror or error}")
        return None
    return text.splitlines()


def decorations(record: FileRecord) -> dict[int, tuple[int, tuple[str, ...]]]:
    """A file's definitions decorated above their first line (Python's), by that line (0-based): the line their
    decorators start on and the decorators as written, in order. `@staticmethod` or `@property` is part of what a
    definition is, which its range (from `def`, as its callers' regions) leaves out."""
    above: dict[int, list[tuple[int, str]]] = {}
    for line, written, own_line in record.decorators:
        if own_line < line:
            above.setdefault(line, []).append((own_line, written))
    return {line: (min(found)[0], tuple(written for _own, written in sorted(found))) for line, found in above.items()}
