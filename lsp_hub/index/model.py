"""Plain data produced by parsing one file; shared by extraction, storage and the graph algorithms.

Positions are 0-based (line, column) with the column counted in UTF-16 code units, as LSP counts them.
Everything here is JSON-serialisable through `dataclasses.asdict` so the cache can store it. The frozen classes
pickle as plain constructor calls (`__reduce__`): about twice as fast as the generic dataclass state protocol, which
matters when worker processes send hundreds of thousands of them back to the parent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

COMPLEX_RECEIVER = "?"  # a receiver that is an expression (a call, an index, ...), not a name

SymbolKind = Literal["function", "method", "class", "interface", "type", "constant", "variable", "module", "field"]


@dataclass(frozen=True, slots=True)
class Span:
    """A range in a file: start inclusive, end exclusive; lines and UTF-16 columns, 0-based."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int

    def __reduce__(self) -> tuple[type[Span], tuple[int, int, int, int]]:
        return (Span, (self.start_line, self.start_col, self.end_line, self.end_col))


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    kind: SymbolKind
    span: Span  # the whole definition node
    name_span: Span  # just the identifier
    signature: str  # the first line(s) of the definition, trimmed, for repo maps
    container: str | None = None  # enclosing class/namespace name, e.g. the class of a method

    def __reduce__(self) -> tuple[type[Definition], tuple[str, str, Span, Span, str, str | None]]:
        return (Definition, (self.name, self.kind, self.span, self.name_span, self.signature, self.container))


@dataclass(frozen=True, slots=True)
class Reference:
    """A use of a name: a call, or any other reference the tags query reports."""

    name: str
    span: Span
    is_call: bool
    caller: str | None = None  # name of the enclosing definition (function/method), None at module level
    # `x.foo()`: "x"; `a.b.foo()`: "a.b"; `make().foo()`: "?" (an expression); `foo()`: None (a plain name)
    receiver: str | None = None

    def __reduce__(self) -> tuple[type[Reference], tuple[str, Span, bool, str | None, str | None]]:
        return (Reference, (self.name, self.span, self.is_call, self.caller, self.receiver))


@dataclass(frozen=True, slots=True)
class Import:
    """One imported module, as written in the source, plus the names taken from it."""

    module: str  # e.g. "pkg.sub", "./util", "github.com/a/b/c", "crate::foo::bar", "stdio.h"
    names: tuple[str, ...] = ()  # names imported from the module ("from m import a, b"); empty for `import m`
    level: int = 0  # Python relative-import level (number of leading dots); 0 elsewhere
    span: Span | None = None
    # Names bound under another name: (local, imported name), or (local, "*") for the module itself
    # (`from m import a as b` -> (("b", "a"),); `import m as z` and `import * as z from "m"` -> (("z", "*"),)).
    aliases: tuple[tuple[str, str], ...] = ()

    def __reduce__(
        self,
    ) -> tuple[type[Import], tuple[str, tuple[str, ...], int, Span | None, tuple[tuple[str, str], ...]]]:
        return (Import, (self.module, self.names, self.level, self.span, self.aliases))


@dataclass(slots=True)
class FileIndex:
    """Everything the index knows about one file."""

    path: str  # workspace-relative POSIX path
    language: str
    definitions: list[Definition] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    syntax_error_count: int = 0
    line_count: int = 0
    # (class, attribute, type name) for attributes whose type the code shows: `self.store = IndexStore(...)`,
    # `this.cart = new Cart()`, `cart: Cart` as a class field. Calls through them (`self.store.write()`) use it.
    field_types: list[tuple[str, str, str]] = field(default_factory=list)
    # (function or "" at module level, variable, type) for variables whose type the code shows: `s: Shop = ...`
    # gives "Shop", `s = make()` gives "make()" (its class, or make's return annotation, is found at query time).
    local_types: list[tuple[str, str, str]] = field(default_factory=list)
    # (0-based line of a decorated definition's start, decorator as written without arguments): `@app.route("/")`
    # above `def index():` gives (its line, "app.route"). What marks route, command and test handlers.
    decorators: list[tuple[int, str]] = field(default_factory=list)
    # (handler name, registering call as written) for a named function registered by a call whose first argument is
    # a string: `app.get("/x", handler)` gives ("handler", "app.get") (TS/JS route handlers).
    registrations: list[tuple[str, str]] = field(default_factory=list)
