"""The class of a receiver when the code shows it: a variable's annotation or constructor, a parameter's
annotation, an attribute typed in its class (`self.repo = Repo()`), a function's return annotation; and the classes
a workspace class inherits from, by the bases its definitions name. Syntax only: read from the per-file records
(`field_types`, `local_types`, signatures), never by running or importing the code. Shared by `callers` (who calls
a method) and `navigation.calls` (what a body calls)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from lsp_hub.index.graph import SELF_RECEIVERS, use_resolver
from lsp_hub.index.model import Definition, FileIndex
from lsp_hub.index.pytest_fixtures import fixture_type
from lsp_hub.index.signature_types import (
    class_bases,
    field_type,
    last_segment,
    parameter_annotation,
    parameter_type,
    return_type,
    signature_type,
)
from lsp_hub.index.symbols import definitions_named, has_parameter
from lsp_hub.index.type_clouds import TypeCloud, type_cloud
from lsp_hub.index.workspace import Snapshot


def declared_class(file_index: FileIndex, receiver: str) -> str | None:
    """The class of `receiver` when a definition in the file says it (`x = Cart()`, `x: Cart`, `new Cart(`,
    `Cart x = ...`): a field or module variable with a visible type."""
    for definition in file_index.definitions:
        if definition.name != receiver or definition.kind not in ("variable", "constant"):
            continue
        signature = definition.signature
        shown = signature_type(signature)
        if shown is not None:
            return shown
        typed = re.search(rf"\b([A-Z]\w*)(?:<[^>]*>)?\s+{re.escape(receiver)}\b", signature)
        if typed:
            return typed.group(1)
    return None


def attribute_type(file_index: FileIndex, owner: str, attribute: str) -> str | None:
    """The class of `owner`'s attribute when the file shows it: typed in a method (`self.x = X()`, `this.x = new
    X()`), or a class-body field with a visible type (`x: X`, `x = X()`)."""
    for field_owner, field_name, type_name in file_index.field_types:
        if field_owner == owner and field_name == attribute:
            from_parameter = _FROM_PARAMETER.match(type_name)
            if from_parameter is None:
                return type_name
            method, parameter = from_parameter.groups()  # `self.host = host` in `def __init__(self, host: Host)`
            for definition in file_index.definitions:
                if definition.name == method and definition.container == owner:
                    return parameter_annotation(definition.signature, parameter)
            return None
    for definition in file_index.definitions:
        if (
            definition.container == owner
            and definition.name == attribute
            and definition.kind in ("variable", "constant", "field")
        ):
            shown = field_type(file_index.language, definition.signature, attribute)
            if shown is not None:
                return shown
    return None


_FROM_PARAMETER = re.compile(r"(\w+)\((\w+)\)\Z")
_HEAD = re.compile(r"[A-Za-z_$][\w$]*")
_GETTER_TYPE = re.compile(r"get\s+[\w$]+\s*\(\s*\)\s*:\s*([A-Za-z_$][\w$]*)")
MAX_INHERITANCE_DEPTH = 6


@dataclass(frozen=True, slots=True)
class WorkspaceClass:
    """A class the workspace defines, by name, as a receiver's type turned out to be."""

    snapshot: Snapshot
    name: str

    def inherits(self, container: str) -> bool:
        """Whether a method of `container` can be called on this class: it is that class or (by the bases its
        definitions name, followed by name) inherits from it."""
        return any(container in level for level in self._levels())

    def member(self, name: str, bases_only: bool = False) -> list[tuple[str, Definition]]:
        """The definitions of `name` that a call on this class reaches: the class's own, else those of the nearest
        bases that define it (bases followed by name); empty when no workspace class defines it. `bases_only`: what
        `super().name()` in the class reaches."""
        found = definitions_named(self.snapshot, name)
        for depth, level in enumerate(self._levels()):
            if bases_only and depth == 0:
                continue
            members = [entry for entry in found if entry[1].container in level]
            if members:
                return members
        return []

    def _levels(self) -> Iterator[list[str]]:
        """This class, then its bases, then theirs, ... (to MAX_INHERITANCE_DEPTH levels)."""
        seen: set[str] = set()
        frontier = [self.name]
        for _level in range(MAX_INHERITANCE_DEPTH + 1):
            yield frontier
            bases: list[str] = []
            for name in frontier:
                if name in seen:
                    continue
                seen.add(name)
                for path, definition in definitions_named(self.snapshot, name):
                    if definition.kind == "class":
                        bases.extend(class_bases(definition.signature))
                        if self.snapshot.files[path].language == "go":
                            bases.extend(_embedded_types(self.snapshot, path, name))
            if not bases:
                return
            frontier = bases


def _embedded_types(snapshot: Snapshot, path: str, struct: str) -> list[str]:
    """The types a Go struct embeds (`RouterGroup`, `*sync.Mutex`: fields named by their type alone), whose
    methods its values have: gin's `engine.GET()` is RouterGroup's."""
    return [
        last_segment(field.signature.lstrip("*"))
        for field in snapshot.files[path].outline().definitions
        if field.kind == "field" and field.container == struct and " " not in field.signature.strip()
    ]


def cloud_definer(snapshot: Snapshot, cloud: TypeCloud, name: str) -> str | None:
    """The one class or interface of a cloud whose `name` a call reaches; None when none or several do."""
    containers = {
        member.container
        for class_name in cloud.names
        for _path, member in WorkspaceClass(snapshot, class_name).member(name)
    }
    return containers.pop() if len(containers) == 1 else None


# A receiver whose type the code shows to come from outside the workspace.
OUTSIDE = "outside"


def owned_by(owner: str, function: Definition) -> bool:
    """Whether a local type's owner is `function`: its name, or its name and a line within it when the file has
    several functions of that name (`test("x")@2590`: tests of one title in two `describe`s)."""
    if owner == function.name:
        return True
    name, at, line = owner.rpartition("@")
    return (
        bool(at)
        and name == function.name
        and line.isdigit()
        and (function.span.start_line <= int(line) <= function.span.end_line)
    )


# Names in annotations that wrap or stand for other types: what they give is not known from the name alone.
_TYPING_WRAPPERS = frozenset(
    (
        "Union",
        "Optional",
        "Annotated",
        "Final",
        "ClassVar",
        "Type",
        "type",
        "Any",
        "Self",
        "TypeAlias",
        "Callable",
        "Awaitable",
        "Coroutine",
    )
)


CONVENTION_LANGUAGES = frozenset(("typescript", "tsx"))
MAX_SCOPES = 4  # functions around a call whose variables may type its receiver
MIN_CONVENTION_ANNOTATIONS = 5
CONVENTION_SHARE = 0.9


def parameter_conventions(snapshot: Snapshot) -> Mapping[str, str]:
    """Variable name -> the type the workspace's TypeScript nearly always annotates it with (at least
    MIN_CONVENTION_ANNOTATIONS annotations, CONVENTION_SHARE of them this type): a framework's handlers type their
    context parameter only where the generics do not (`(c: Context) =>` in 106 of hono's annotations of `c`)."""

    def build(s: Snapshot) -> dict[str, str]:
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        for record in s.files.values():
            if record.language in CONVENTION_LANGUAGES:
                for _function, name, typed in record.outline().local_types:
                    if not typed.endswith("()"):
                        counts[name][typed] += 1
        conventions = {}
        for name, types in counts.items():
            total = sum(types.values())
            typed, most = types.most_common(1)[0]
            if total >= MIN_CONVENTION_ANNOTATIONS and most >= CONVENTION_SHARE * total:
                conventions[name] = typed
        return conventions

    return snapshot.derived("parameter_conventions", build)


class TypeInference:
    """The class of a Python receiver when the code shows it, beyond what its own file's module variables say:
    a variable of the calling function typed or made by a call (`s: Shop = ...`, `s = Shop()`, `s = make()` with
    `def make() -> Shop`), a parameter of the calling function (`def f(s: Shop)`), a module variable made by a call,
    and one attribute further (`a.shop` with `class A: shop: Shop`). Only classes the workspace defines count: a
    type the workspace does not define at all (an annotation naming no workspace definition, a variable made by
    calling into an outside import) answers OUTSIDE; anything else unknown answers None, and the caller falls back
    to the name rules."""

    def __init__(self, snapshot: Snapshot, source: str, file_index: FileIndex) -> None:
        self.snapshot = snapshot
        self.source = source
        self.file_index = file_index
        self.line: int | None = None
        self._resolving: set[str] = set()  # variables being typed: `x = x.next()` does not loop

    def receiver_class(
        self, receiver: str, caller: Definition | None, line: int | None = None
    ) -> WorkspaceClass | TypeCloud | str | None:
        """`line`: the call's (0-based), which picks among the anonymous callbacks' variables of one name."""
        self.line = line
        head, _, rest = receiver.partition(".")
        type_name = self._variable_type(head, caller)
        if isinstance(type_name, TypeCloud):
            return type_name  # `res.body.getReader()`: members of a cloud stay in it
        for attribute in rest.split(".") if rest else ():
            if type_name is None or type_name == OUTSIDE:
                break
            type_name = self._attribute_type(type_name, attribute)
        if type_name is None or type_name == OUTSIDE:
            return type_name
        if self._is_class(type_name):
            return WorkspaceClass(self.snapshot, type_name)
        if type_name in _TYPING_WRAPPERS or definitions_named(self.snapshot, type_name):
            return None  # `Union[...]`, a type alias or a TypeVar of the workspace: not for a name to decide
        return OUTSIDE

    def _variable_type(self, variable: str, caller: Definition | None) -> str | TypeCloud | None:
        if variable in SELF_RECEIVERS:
            return caller.container if caller is not None else None  # `self.shop`: an attribute of the class
        shown: set[str] = set()
        # The calling function, then the functions around it: a closure, or a decorated function inside a test
        # (`@app.route` above a nested `def index():` reads the test's `app = Flask(...)`).
        hidden = False
        for function in self._scopes(caller):
            shown = {
                typed
                for owner, name, typed in self.file_index.local_types
                if name == variable and owned_by(owner, function)
            }
            if not shown:
                annotated = parameter_type(self.file_index.language, function.signature, variable)
                if annotated is None and self.file_index.language == "python":
                    annotated = fixture_type(self.snapshot, self.source, function, variable)  # `def test(app):`
                shown = {annotated} if annotated else set()
            if shown:
                break
            if has_parameter(function.signature, variable):
                hidden = True  # an untyped parameter hides the variables of that name around its function
                break
        if not shown and not hidden:  # an anonymous callback's variable, else a module variable
            shown = self._unnamed_scope_types(variable)
        made = None
        unknown_call = False  # the variable is made by a call whose result is not known
        if len(shown) == 1 and next(iter(shown)).endswith("()"):
            made = self._returned_class(next(iter(shown))[:-2], caller)
            unknown_call = made is None
        if (not shown or unknown_call) and self.file_index.language in CONVENTION_LANGUAGES:
            convention = parameter_conventions(self.snapshot).get(variable)
            if convention is not None and self._is_class(convention):
                # hono's untyped `(c) => c.text()`, `const app2 = app.get(...)`: the type the name has nearly always
                return convention
        if len(shown) > 1:
            # `get_console() if file is None else Console(file=file)`: several ways of making one class is that class.
            made_by = {self._returned_class(typed[:-2], caller) if typed.endswith("()") else typed for typed in shown}
            agreed = made_by.pop() if len(made_by) == 1 else None
            return agreed if isinstance(agreed, str) else None
        if not shown:
            return None  # untyped
        [typed] = shown
        if typed == "Self" and caller is not None and caller.container is not None:
            return caller.container  # Rust's `let other: Self = other.into();` in an impl's method
        if unknown_call and self.file_index.language in CONVENTION_LANGUAGES:
            # an unknown call's result (`const app2 = app.get(...)`): what the name is made by elsewhere outside
            # named functions, when that is one class (`const app2 = new Hono()` in the other tests)
            elsewhere = {
                other
                for owner, name, other in self.file_index.local_types
                if name == variable and (owner == "" or owner.startswith("@")) and not other.endswith("()")
            }
            return elsewhere.pop() if len(elsewhere) == 1 else None
        return made if typed.endswith("()") else typed

    def _unnamed_scope_types(self, variable: str) -> set[str]:
        """The types of `variable` outside named functions: in the innermost anonymous function around the call
        (`@first-last` owners) that has it, else at module level; without the call's line, all of them."""
        regions: dict[str, set[str]] = {}
        for owner, name, typed in self.file_index.local_types:
            if name == variable and (owner == "" or owner.startswith("@")):
                regions.setdefault(owner, set()).add(typed)
        line = self.line
        if line is None:
            return set().union(*regions.values()) if regions else set()
        around = []
        for owner in regions:
            if owner:
                first, _, last = owner[1:].partition("-")
                if int(first) <= line <= int(last):
                    around.append((int(last) - int(first), owner))
        return regions[min(around)[1]] if around else regions.get("", set())

    def _scopes(self, caller: Definition | None) -> list[Definition]:
        """`caller` and the functions whose bodies hold it, innermost first (a few levels)."""
        scopes: list[Definition] = []
        current = caller
        while current is not None and len(scopes) < MAX_SCOPES:
            scopes.append(current)
            inner = current.span
            around = [
                definition
                for definition in self.file_index.definitions
                if definition.kind in ("function", "method")
                and definition.span != inner
                and (definition.span.start_line, definition.span.start_col) <= (inner.start_line, inner.start_col)
                and (definition.span.end_line, definition.span.end_col) >= (inner.end_line, inner.end_col)
            ]
            current = max(
                around, key=lambda definition: (definition.span.start_line, definition.span.start_col), default=None
            )
        return scopes

    def _returned_class(self, callee: str, caller: Definition | None = None) -> str | TypeCloud | None:
        """What calling `callee` gives: the class itself, or the return annotation of the function(s) so named
        (all that the workspace defines must agree); OUTSIDE for a function of an outside import
        (`asyncio.ensure_future`, `getLogger` after `from logging import getLogger`). In TS, the cloud of a
        function that names generic type aliases (`hc(...)`), and a call on a value of a cloud stays in it."""
        head = _HEAD.match(callee)
        head_name = head.group(0) if head else callee
        bound = use_resolver(self.snapshot).bindings.get(self.source, {}).get(head_name)
        if bound == ():
            return OUTSIDE
        if self.file_index.language in CONVENTION_LANGUAGES:
            if head is not None and head.end() < len(callee) and bound is None:
                if head_name in self._resolving:
                    return None
                self._resolving.add(head_name)
                try:
                    made = self._variable_type(head_name, caller)
                finally:
                    self._resolving.discard(head_name)
                return made.called() if isinstance(made, TypeCloud) else None
            makers = [
                (path, definition)
                for path, definition in definitions_named(self.snapshot, callee)
                if definition.kind == "function" and self.snapshot.files[path].language in CONVENTION_LANGUAGES
            ]
            if len(makers) == 1:
                path, maker = makers[0]
                constructed = {
                    typed
                    for owner, _name, typed in self.snapshot.files[path].outline().local_types
                    if owner == maker.name and not typed.endswith("()")
                }
                if len(constructed) == 1 and self._is_class(next(iter(constructed))):
                    return constructed.pop()  # a factory: `const app = new Hono(); ...; return app`
                return type_cloud(self.snapshot, path, maker)
        owner, _, callee = callee.rpartition("::")  # Rust's `Router::new`: a function of that type first
        callee = callee.rsplit(".", 1)[-1]
        found = definitions_named(self.snapshot, callee)
        owner = owner.rpartition("::")[2]
        if owner and any(definition.container == owner for _path, definition in found):
            found = [(path, definition) for path, definition in found if definition.container == owner]
        if any(definition.kind == "class" for _path, definition in found):
            return callee
        returned = set()
        for path, definition in found:
            if definition.kind in ("function", "method"):
                type_name = return_type(self.snapshot.files[path].language, definition.signature, definition.name)
                if type_name == "Self" and definition.container is not None:
                    type_name = definition.container
                returned.add(type_name)
        if len(returned) != 1:
            return None
        return returned.pop()

    def _attribute_type(self, class_name: str, attribute: str) -> str | None:
        for path, definition in definitions_named(self.snapshot, class_name):
            if definition.kind == "class":
                typed = attribute_type(self.snapshot.files[path].outline(), class_name, attribute)
                if typed is not None:
                    return typed
        for _path, definition in definitions_named(self.snapshot, attribute):
            getter = _GETTER_TYPE.match(definition.signature) if definition.container == class_name else None
            if getter is not None:  # TS `get req(): HonoRequest<P>`: `c.req.header()` is HonoRequest's
                return getter.group(1)
        return None

    def _is_class(self, name: str) -> bool:
        return any(definition.kind == "class" for _path, definition in definitions_named(self.snapshot, name))
