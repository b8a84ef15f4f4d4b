"""Where an imported name comes from: the files that define it, re-exports followed (`name_origins`: `from .a
import x` in a package's `__init__`, `export { x } from './a'`, star imports), and the name it has there when a
re-export on the way renames it (`renamed_origin`). The resolver (`graph.py`) asks for every use bound by an import.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence

from lsp_hub.index.graph_inputs import GraphInputs, alias_users, graph_inputs, name_tables
from lsp_hub.index.records import I_NAMES, FileRecord
from lsp_hub.index.resolve import ResolvedImport
from lsp_hub.index.workspace import Snapshot

MAX_REEXPORT_DEPTH = 6
_ECMA = frozenset(("typescript", "tsx", "javascript"))


def defines(definers: Mapping[str, tuple[str, ...]], path: str, name: str) -> bool:
    """Whether `path` defines `name`, by the name tables (each name's definers sorted): asked for every use, which
    a set of names per file answered at the cost of holding one for every file (at 100,000 files, 140 MB)."""
    files = definers.get(name, ())
    position = bisect_left(files, path)
    return position < len(files) and files[position] == path


def name_origins(snapshot: Snapshot, files: tuple[str, ...], name: str) -> frozenset[str]:
    """The files that really define `name` when it is imported from `files`, following re-exports (`from .a import
    x` in a package `__init__`, `export { x } from './a'`, `export * from './a'`, star imports). Falls back to
    `files` when no definition is found. Cached per snapshot."""
    cache: dict[tuple[tuple[str, ...], str], frozenset[str]] = snapshot.derived("name_origins", lambda _s: {})
    key = (files, name)
    cached = cache.get(key)
    if cached is not None:
        return cached
    found: set[str] = set()
    _collect_origins(snapshot, graph_inputs(snapshot), files, name, found, set(), 0)
    result = frozenset(found) if found else frozenset(files)
    cache[key] = result
    return result


def _collect_origins(
    snapshot: Snapshot,
    inputs: GraphInputs,
    files: tuple[str, ...],
    name: str,
    found: set[str],
    seen: set[str],
    depth: int,
) -> None:
    if depth > MAX_REEXPORT_DEPTH:
        return
    bindings, definers, resolved_of = inputs.bindings, inputs.tables.definers, inputs.resolved
    for path in files:
        if path in seen:
            continue
        seen.add(path)
        record = snapshot.files.get(path)
        if record is None:
            continue
        if defines(definers, path, name):
            found.add(path)
            continue
        bound = bindings.get(path, {}).get(name)
        if bound:
            _collect_origins(snapshot, inputs, bound, name, found, seen, depth + 1)
            continue
        for files_of_star in star_imported(record, resolved_of.get(path, ())):
            _collect_origins(snapshot, inputs, files_of_star, name, found, seen, depth + 1)


def star_imported(record: FileRecord, resolved: Sequence[ResolvedImport]) -> list[tuple[str, ...]]:
    """The files of each of a file's imports that take a module's names wholesale (`from m import *`,
    `export * from './m'`)."""
    ecma = record.language in _ECMA
    return [
        found.files
        for raw, found in zip(record.imports, resolved, strict=False)
        if found.files and ("*" in raw[I_NAMES] or (ecma and not raw[I_NAMES]))
    ]


def renamed_origin(snapshot: Snapshot, files: tuple[str, ...], name: str) -> tuple[tuple[str, ...], str] | None:
    """Where `name`, imported from `files`, comes from when a re-export on the way gives it another name
    (`export { getErrorShape as getTRPCErrorShape } from './core'` in the barrel a file imports
    `getTRPCErrorShape` from, `from .core import a as b` in a package's `__init__`): the files the last renaming
    re-export binds, and the name there, whose origins `name_origins` follows from them. None when no re-export
    on the way renames it, or a file on the way defines it. Cached per snapshot."""
    cache: dict[tuple[tuple[str, ...], str], tuple[tuple[str, ...], str] | None] = snapshot.derived(
        "renamed_origins", lambda _s: {}
    )
    key = (files, name)
    if key not in cache:
        cache[key] = _renamed_origin(snapshot, graph_inputs(snapshot), files, name, set(), 0)
    return cache[key]


def _renamed_origin(
    snapshot: Snapshot, inputs: GraphInputs, files: tuple[str, ...], name: str, seen: set[str], depth: int
) -> tuple[tuple[str, ...], str] | None:
    if depth > MAX_REEXPORT_DEPTH:
        return None
    for path in files:
        record = snapshot.files.get(path)
        if path in seen or record is None or defines(inputs.tables.definers, path, name):
            continue
        seen.add(path)
        bound = inputs.bindings.get(path, {}).get(name)
        if bound:
            exported = inputs.renames.get(path, {}).get(name)
            if exported is not None:
                return _renamed_origin(snapshot, inputs, bound, exported, seen, depth + 1) or (bound, exported)
            found = _renamed_origin(snapshot, inputs, bound, name, seen, depth + 1)
        else:
            found = None
            for files_of_star in star_imported(record, inputs.resolved.get(path, ())):
                found = found or _renamed_origin(snapshot, inputs, files_of_star, name, seen, depth + 1)
        if found is not None:
            return found
    return None


def name_users(snapshot: Snapshot, name: str) -> tuple[list[tuple[str, str]], frozenset[tuple[str, str]]]:
    """(file, name used) for every file that may use `name`: by that name, under an alias it imports it as (`from m
    import name as other`), or under a name a re-export gave it (`renamed_users`); and the last as a set: the only
    ones beside the name itself that a receiver may qualify (`module.other()`; an alias is never `x.other()`)."""
    uses = [(source, name) for source in name_tables(snapshot).referencers.get(name, ())]
    uses.extend(alias_users(snapshot).get(name, ()))
    exported_as = renamed_users(snapshot, (name,))
    uses.extend(exported_as)
    return uses, frozenset(exported_as)


def renamed_users(snapshot: Snapshot, names: Iterable[str]) -> list[tuple[str, str]]:
    """(file, name it uses) for the files that may use one of `names` under a name a re-export gave it (`export {
    a as b } from './m'`: b's users, with b), and under the names re-exports of those gave them in turn. They
    neither reference nor import `names` themselves; the resolver says which of them really reach the definitions
    (`renamed_origin`)."""
    frontier = set(names)
    if not frontier:
        return []  # an edit that changed no definer: the alias table is not made for it
    tables, aliases = name_tables(snapshot), alias_users(snapshot)
    found: list[tuple[str, str]] = []
    seen = set(frontier)
    for _depth in range(MAX_REEXPORT_DEPTH + 1):
        renamed = {local for name in frontier for _exporter, local in aliases.get(name, ()) if local not in seen}
        if not renamed:
            break
        for local in sorted(renamed):
            found.extend((source, local) for source in tables.referencers.get(local, ()))
            found.extend(aliases.get(local, ()))
        seen |= renamed
        frontier = renamed
    return found
