"""What a TypeScript value made through generic type aliases may be: the classes and interfaces its maker's
definition names, directly or through the type aliases it names (followed to MAX_ALIAS_DEPTH). A typed client
(`const client = hc<typeof app>(...)`, `hc` cast `as Client<T>`, `Client` a conditional type reaching
`ClientResponse` through mapped types) gives such a cloud; members and calls on a value of the cloud stay in it
(`await client.posts.$get()`), and a method call on it counts for the one class of the cloud that defines the
method (`res.json()`: `ClientResponse.json`). No type is evaluated: which branch of a conditional type, what a
mapped type maps a key to, are not seen; where two classes of the cloud define the name, nothing is decided."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from lsp_hub.index.model import Definition
from lsp_hub.index.symbols import definitions_named
from lsp_hub.index.workspace import Snapshot

MAX_ALIAS_DEPTH = 8
MAX_CLOUD = 64  # classes and interfaces: beyond, the maker names too much for its result to be told
_CLASS_KINDS = frozenset(("class", "interface"))
_ECMA = frozenset(("typescript", "tsx", "javascript"))


@dataclass(frozen=True, slots=True)
class TypeCloud:
    """The classes and interfaces a value may be, by name; `promised`: those a call on it may give, the ones its
    aliases name in a `Promise<...>` (`await client.posts.$get()` is a ClientResponse), empty when none."""

    names: frozenset[str]
    promised: frozenset[str] = frozenset()

    def called(self) -> TypeCloud:
        """What a call on a value of the cloud may give."""
        return TypeCloud(self.promised) if self.promised else self


def _named_types(snapshot: Snapshot, path: str, definition: Definition, promised: set[str] | None = None) -> set[str]:
    """The names the definition's text uses (not calls); those right after `Promise<` added to `promised`."""
    record = snapshot.files.get(path)
    if record is None:
        return set()
    span = definition.span
    used = [
        reference
        for reference in record.file_index().references
        if span.start_line <= reference.span.start_line <= span.end_line and not reference.is_call
    ]
    if promised is not None:
        for before, after in pairwise(used):
            start = before.span
            if before.name == "Promise" and (after.span.start_line, after.span.start_col) == (
                start.end_line,
                start.end_col + 1,
            ):
                promised.add(after.name)
    return {reference.name for reference in used}


def type_cloud(snapshot: Snapshot, path: str, maker: Definition) -> TypeCloud | None:
    """The cloud of what calling `maker` (a function) gives; None when its definition names no class or
    interface of the workspace, or too many. Once per snapshot: every `res.json()` of a test file asks."""
    key = f"type_cloud {path} {maker.name} {maker.span.start_line}"
    return snapshot.derived(key, lambda s: _type_cloud(s, path, maker))


def _type_cloud(snapshot: Snapshot, path: str, maker: Definition) -> TypeCloud | None:
    promised: set[str] = set()
    names = _closure(snapshot, _named_types(snapshot, path, maker, promised), promised)
    if not names:
        return None
    resolved = _closure(snapshot, promised, None) if promised else set()
    return TypeCloud(frozenset(names), frozenset(resolved & names))


def _closure(snapshot: Snapshot, frontier: set[str], promised: set[str] | None) -> set[str]:
    """The classes and interfaces named in `frontier` or, followed to MAX_ALIAS_DEPTH, by its type aliases."""
    found: set[str] = set()
    followed: set[str] = set()
    for _depth in range(MAX_ALIAS_DEPTH):
        aliases: list[tuple[str, Definition]] = []
        for name in frontier - followed:
            followed.add(name)
            for where, definition in definitions_named(snapshot, name):
                if snapshot.files[where].language not in _ECMA:
                    continue
                if definition.kind in _CLASS_KINDS and definition.container is None:
                    found.add(name)
                elif definition.kind == "type" and definition.container is None:
                    aliases.append((where, definition))
        if len(found) > MAX_CLOUD:
            return set()
        frontier = set()
        for where, alias in aliases:
            frontier |= _named_types(snapshot, where, alias, promised)
        if not frontier - followed:
            break
    return found
