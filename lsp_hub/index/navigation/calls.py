"""The calls a definition makes, each resolved to the workspace definitions the index can tie it to (by the
file's imports and the language's scoping, as `graph.UseResolver` decides for the repo map), and the calls it
receives, grouped by caller. Shared by `zoom`, `call_tree` and `trace`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsp_hub.index.file_kinds import is_named_callback
from lsp_hub.index.graph import (
    MODULE_SCOPED_LANGUAGES,
    SELF_RECEIVERS,
    chain_head,
    language_family,
    use_resolver,
)
from lsp_hub.index.graph_inputs import COMMON_NAMES
from lsp_hub.index.model import COMPLEX_RECEIVER, Definition, FileIndex, Reference, Span
from lsp_hub.index.navigation.common import CLASS_KINDS, SymbolRef
from lsp_hub.index.receiver_types import OUTSIDE, TypeInference, WorkspaceClass, declared_class
from lsp_hub.index.symbols import definitions_named, enclosing_definition, plain_name_can_mean
from lsp_hub.index.type_clouds import TypeCloud
from lsp_hub.index.workspace import Snapshot

if TYPE_CHECKING:
    from lsp_hub.index.callers import CallerLookups

MAX_CALLERS_SEARCHED = 2000


BY_NAME = "by-name"  # a receiver the index cannot type, and the only workspace method of that name


@dataclass(slots=True)
class CallEdge:
    """One callee as written (`self.save`, `json.dumps`), how often the definition calls it, and what it means:
    its `targets`, or none and the number of workspace methods of that name it might be (`candidates`)."""

    written: str
    count: int
    targets: list[SymbolRef]
    resolved: str = ""  # BY_NAME when the only reason for the target is that it is the only one of its name
    candidates: int = 0  # for an unresolved call: same-named workspace methods it may mean

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"name": self.written, "count": self.count}
        if self.targets:
            result["definition"] = f"{self.targets[0].path}:{self.targets[0].first_line}"
            if len(self.targets) > 1:
                result["alternatives"] = len(self.targets) - 1
            if self.resolved:
                result["resolved"] = self.resolved
        elif self.candidates:
            result["candidates"] = self.candidates
        return result

    def text(self) -> str:
        times = f" x{self.count}" if self.count > 1 else ""
        if not self.targets:
            return f"{self.written}{times}{self.candidates_note()}"
        where = f"{self.targets[0].path}:{self.targets[0].first_line}"
        others = f" (+{len(self.targets) - 1} more)" if len(self.targets) > 1 else ""
        how = " (by name)" if self.resolved == BY_NAME else ""
        return f"{self.written}{times} -> {where}{others}{how}"

    def candidates_note(self) -> str:
        if not self.candidates:
            return ""
        return f" (unresolved: {self.candidates} candidate{'s' if self.candidates > 1 else ''})"


def _inside(outer: Span, line: int, column: int) -> bool:
    return (outer.start_line, outer.start_col) <= (line, column) < (outer.end_line, outer.end_col)


class _CallResolver:
    """What the calls written in one definition's body mean. A receiver is typed where the code shows its type
    (`receiver_types`: a constructor or annotation of a local variable, a parameter's annotation, `self.repo` typed
    in its class); a call on a receiver the index cannot type goes to the only workspace method of its name, or to
    none (with the count of candidates): never to an arbitrary one of several."""

    def __init__(self, snapshot: Snapshot, ref: SymbolRef, file_index: FileIndex) -> None:
        self.snapshot = snapshot
        self.ref = ref
        self.file_index = file_index
        self.resolver = use_resolver(snapshot)
        self.family = language_family(file_index.language)
        self.types = TypeInference(snapshot, ref.path, file_index)

    def edge(self, name: str, receiver: str | None, count: int, context: Definition) -> CallEdge:
        """The edge for calls of `receiver.name`, typed as written in `context` (the function around the first
        of them: a method of a class being zoomed into, a function nested in `ref`, or `ref` itself)."""
        shown_receiver = "(...)" if receiver == COMPLEX_RECEIVER else receiver
        written = f"{shown_receiver}.{name}" if receiver else name
        found, how, candidates = self._resolve(name, receiver, context)
        ref = self.ref
        targets = [
            SymbolRef(path, definition)
            for path, definition in found
            if (path, definition.span.start_line) != (ref.path, ref.definition.span.start_line)
            or name == ref.definition.name
        ]
        return CallEdge(written, count, targets, how if targets else "", 0 if targets else candidates)

    def _resolve(
        self, name: str, receiver: str | None, context: Definition
    ) -> tuple[list[tuple[str, Definition]], str, int]:
        """(definitions, how, candidates): how is BY_NAME or ""; candidates counts same-named methods when none
        is chosen."""
        path = self.ref.path
        if receiver is None:
            files = self.resolver.targets(path, name, None)
            found = definitions_named(self.snapshot, self.resolver.imported_name(path, name, None), files)
            language = self.file_index.language
            if language in MODULE_SCOPED_LANGUAGES:
                # A plain name in Python or TypeScript is a local, a module-level definition, an import or a
                # builtin: never a class's member (`callback(...)` of a parameter is not `Command.callback`).
                return [entry for entry in found if plain_name_can_mean(self.snapshot, language, *entry)], "", 0
            # A plain call means a function or a class (its constructor), not a method of some class.
            free = [entry for entry in found if entry[1].kind != "method" or entry[0] != path]
            return free or found, "", 0
        bound = self.resolver.bindings.get(path, {}).get(receiver)
        if bound is not None:  # `ImportedClass.method()`, `module.func()`: where the import leads
            if any(entry[1].kind == "class" for entry in self._visible(receiver)):
                return WorkspaceClass(self.snapshot, receiver).member(name), "", 0
            files = self.resolver.targets(path, name, receiver)
            return (
                [entry for entry in definitions_named(self.snapshot, name, files) if entry[1].container is None],
                "",
                0,
            )
        known = self._receiver_class(receiver, context)
        if isinstance(known, WorkspaceClass):
            # Empty: a method the class inherits from outside the workspace. `super().name()`: a base's, never its own.
            return known.member(name, bases_only=receiver == "super"), "", 0
        if known == OUTSIDE or not self.resolver.targets(path, name, receiver):
            return [], "", 0  # an object from outside the workspace (`log.info()`, `json.dumps()`)
        if chain_head(receiver) not in (None, *SELF_RECEIVERS):  # `pkg.mod.func()`: the resolver matched the path
            files = self.resolver.targets(path, name, receiver)
            functions = [entry for entry in definitions_named(self.snapshot, name, files) if entry[1].container is None]
            if functions:
                return functions, "", 0
        methods = [
            (definition_path, definition)
            for definition_path, definition in definitions_named(self.snapshot, name)
            if definition.container is not None
            and language_family(self.snapshot.files[definition_path].language) == self.family
        ]
        if len(methods) == 1 and name not in COMMON_NAMES:
            return methods, BY_NAME, 1
        return [], "", len(methods)

    def _receiver_class(self, receiver: str, context: Definition) -> WorkspaceClass | str | None:
        """The receiver's class when the code shows it: `self`/`this` (the method's class), a variable or
        parameter with a visible type, a module variable with one, or the name of a class itself (`Cart.make()`)."""
        # A zoom into a class: `self` in its body is the class.
        container = context.name if context.kind in CLASS_KINDS else context.container
        if receiver in SELF_RECEIVERS:
            return WorkspaceClass(self.snapshot, container) if container is not None else None
        if receiver == COMPLEX_RECEIVER:
            return None
        inferred = self.types.receiver_class(receiver, context)
        if inferred is not None and not isinstance(inferred, TypeCloud):  # a cloud names no one class
            return inferred
        if "." in receiver or "::" in receiver:
            return None
        declared = declared_class(self.file_index, receiver)
        if declared is None and any(entry[1].kind == "class" for entry in self._visible(receiver)):
            declared = receiver  # `Cart.make()` with Cart defined or imported here
        return WorkspaceClass(self.snapshot, declared) if declared is not None else None

    def _visible(self, name: str) -> list[tuple[str, Definition]]:
        return definitions_named(self.snapshot, name, self.resolver.targets(self.ref.path, name, None))


def outgoing_calls(snapshot: Snapshot, ref: SymbolRef) -> list[CallEdge]:
    """The calls written inside `ref`'s body, de-duplicated, most frequent first (then in order of appearance)."""
    record = snapshot.files[ref.path]
    file_index = record.file_index()
    definition = ref.definition
    span = definition.span
    counts: Counter[tuple[str, str | None]] = Counter()
    contexts: dict[tuple[str, str | None], Definition] = {}
    a_callback = is_named_callback(definition.name)  # a test's or a route's: `it("adds")`, `app.get("/x")`
    for reference in file_index.references:
        if reference.is_call and _inside(span, reference.span.start_line, reference.span.start_col):
            if (
                a_callback
                and reference.caller != definition.name
                and _outside_callback(file_index, definition, reference)
            ):
                continue  # `it(...)` itself, or a call in its title: the registering call, not one its callback makes
            key = (reference.name, reference.receiver)
            counts[key] += 1
            if key not in contexts:
                contexts[key] = _context(file_index, definition, reference)
    resolver = _CallResolver(snapshot, ref, file_index)
    edges = [resolver.edge(*key, count, contexts[key]) for key, count in counts.items()]
    edges.sort(key=lambda edge: -edge.count)  # stable: first appearance breaks ties
    return edges


def _outside_callback(file_index: FileIndex, named: Definition, reference: Reference) -> bool:
    """Whether a call within a named callback's span (a test's, a route's) is outside its callback: the definition
    itself is the innermost one around it, yet not its caller (a function defined in the callback is the innermost
    one around its calls)."""
    inner = enclosing_definition(file_index, reference.span)
    return inner is None or inner.span == named.span


CONSTRUCTOR_NAMES = frozenset(("__init__", "constructor"))


def constructor_of(snapshot: Snapshot, ref: SymbolRef) -> SymbolRef | None:
    """What calling `ref` runs: `ref` itself, or for a class its `__init__` (`constructor` in TS/JS), None for a
    class that defines none (its calls are those of its methods, made later, not by the construction)."""
    definition = ref.definition
    if definition.kind != "class":
        return ref
    for member in snapshot.files[ref.path].outline().definitions:
        if (
            member.container == definition.name
            and member.name in CONSTRUCTOR_NAMES
            and _inside(definition.span, member.span.start_line, member.span.start_col)
        ):
            return SymbolRef(ref.path, member)
    return None


def _context(file_index: FileIndex, definition: Definition, reference: Reference) -> Definition:
    """The function whose locals and class type a call in `definition`'s body: the method around it when
    `definition` is a class, `definition` itself otherwise (a nested function keeps its outer method's class)."""
    if reference.caller is None or reference.caller == definition.name:
        return definition
    inner = enclosing_definition(file_index, reference.span)
    if inner is None or (inner.container is None and definition.container is not None):
        return definition
    return inner


@dataclass(slots=True)
class CallerGroup:
    """One caller of a definition (a function, or a file's module level) and how many calls it makes to it."""

    caller: SymbolRef | None  # None: module-level code of `path`
    path: str
    count: int
    first_line: int

    def to_json(self) -> dict[str, Any]:
        return {
            "caller": self.caller.name if self.caller else "<module>",
            "path": self.path,
            "line": self.first_line,
            "count": self.count,
        }

    def text(self) -> str:
        times = f" x{self.count}" if self.count > 1 else ""
        name = self.caller.name if self.caller else "<module>"
        return f"{name}{times} ({self.path}:{self.first_line})"


def incoming_calls(
    snapshot: Snapshot,
    refs: list[SymbolRef],
    max_callers: int = MAX_CALLERS_SEARCHED,
    lookups: CallerLookups | None = None,
) -> tuple[list[CallerGroup], bool]:
    """The callers of `refs` grouped by calling definition, most calls first; and whether the search was cut.
    `lookups` (`callers.CallerLookups`) is shared by the searches of one question."""
    from lsp_hub.index.callers import find_callers

    found = find_callers(snapshot, [(ref.path, ref.definition) for ref in refs], 1, max_callers, lookups)
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
        enclosing = enclosing_definition(
            outline, Span(start["line"], start["character"], start["line"], start["character"])
        )
        key = (path, enclosing.span.start_line if enclosing else None)
        group = groups.get(key)
        if group is None:
            group = groups[key] = CallerGroup(
                SymbolRef(path, enclosing) if enclosing else None, path, 0, start["line"] + 1
            )
        group.count += 1
    ordered = sorted(groups.values(), key=lambda group: (-group.count, group.path, group.first_line))
    return ordered, bool(found.get("truncated"))


def snapshot_path(snapshot: Snapshot, uri: str) -> str | None:
    from urllib.parse import unquote

    prefix = snapshot.root.as_uri() + "/"
    path = unquote(uri[len(prefix) :]) if uri.startswith(prefix) else None
    return path if path in snapshot.files else None
