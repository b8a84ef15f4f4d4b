"""What the graphs over a snapshot's files are made of: name tables (which files define and which reference each
name), resolved imports and the names they bind per file, and the import graph (networkx: an edge A -> B when A
imports B).

Everything is computed lazily per snapshot and cached on it. `graph_inputs` is not rebuilt after a change: it is
updated from the snapshot's anchor (the last snapshot whose graphs were computed) for the files that differ, and
records what changed (`GraphChanges`) so that the links and the ranking can be updated the same way. An update
gives exactly what a build from scratch gives (tests compare both on a real corpus). Which files a use of a name
may mean is `graph.py`.
"""

from __future__ import annotations

import bisect
import logging
from collections import defaultdict
from collections.abc import Container, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsp_hub.index.graph_cache import graph_state
from lsp_hub.index.import_parts import ImportNames, import_names
from lsp_hub.index.layered_table import LayeredTable
from lsp_hub.index.records import FileRecord, linkable_names
from lsp_hub.index.resolve import ImportResolver, ResolvedImport
from lsp_hub.index.snapshot import changed_files
from lsp_hub.index.table_parts import SortedTables, dependency_names, member_names
from lsp_hub.index.workspace import Snapshot

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import networkx as nx

MAX_DEFINERS = 64  # names defined in more files than this carry almost no weight; they are left out of the graph
# Methods of built-in types and builtins: `x.append()` or `s.lower()` almost never means a workspace definition of
# that name, however many files call it.
COMMON_NAMES = frozenset(
    """
append extend insert remove pop clear index count sort reverse copy keys values items get update setdefault add
discard union intersection difference lower upper strip lstrip rstrip split rsplit join replace startswith endswith
find rfind format encode decode splitlines partition rpartition title capitalize isdigit isalpha read write close
readline readlines open seek tell flush send recv push shift unshift slice splice concat map filter reduce forEach
some every includes indexOf toString valueOf then catch finally trim toLowerCase toUpperCase substring charAt has set
delete size length apply call bind next iter len str repr sum min max sorted list dict tuple int float bool print
isinstance hasattr getattr setattr type super object exec eval id hash range enumerate zip run start stop name value
main test setUp tearDown __init__ __new__ __call__ __repr__ __str__ __eq__ __hash__ __enter__ __exit__ __iter__
__next__ __len__ __getitem__ __setitem__ __contains__ new Println Printf Sprintf Errorf Error String
casefold translate expandtabs zfill center ljust rjust isupper islower isspace isalnum isidentifier isnumeric
isdecimal isprintable istitle swapcase removeprefix removesuffix maketrans issubset issuperset isdisjoint
symmetric_difference difference_update intersection_update fromkeys popitem hex fromhex
isatty fileno getvalue read1 readinto readable writable seekable truncate detach
is_some is_none is_ok is_err is_empty as_ref as_mut as_str as_bytes as_slice unwrap unwrap_or unwrap_or_else
unwrap_or_default expect ok err ok_or ok_or_else map_err and_then or_else take into from try_from try_into clone
to_string to_owned to_vec iter iter_mut into_iter collect contains fmt eq ne cmp partial_cmp default borrow
borrow_mut deref deref_mut drop poll poll_next poll_ready call extend_from_slice push_str with_capacity
equals hashCode compareTo getClass
ToString Equals GetHashCode CompareTo GetType Dispose DisposeAsync GetEnumerator MoveNext TryGetValue ContainsKey
WriteLine WriteAsync WriteLineAsync ReadAsync FlushAsync InvokeAsync
""".split()  # noqa: SIM905 (a word list reads better as text)
)
# An update from the anchor touching more files than this share (and at least UPDATE_MIN_FILES) builds anew instead.
UPDATE_MAX_SHARE = 0.2
UPDATE_MIN_FILES = 64


@dataclass(frozen=True, slots=True)
class NameTables:
    definers: Mapping[str, tuple[str, ...]]  # name -> files defining it, sorted
    referencers: Mapping[str, tuple[str, ...]]  # name -> files referencing it, sorted
    member_definers: Mapping[str, tuple[str, ...]]  # name -> files defining it inside a class/namespace


def name_tables(snapshot: Snapshot) -> NameTables:
    return graph_inputs(snapshot).tables


def import_resolver(snapshot: Snapshot) -> ImportResolver:
    return graph_inputs(snapshot).resolver


def resolved_imports(snapshot: Snapshot) -> Mapping[str, list[ResolvedImport]]:
    """Every file's imports, resolved."""
    return graph_inputs(snapshot).resolved


def import_bindings(snapshot: Snapshot) -> Mapping[str, Mapping[str, tuple[str, ...]]]:
    """Per file, the local names its imports bind -> the workspace files they come from (empty: external)."""
    return graph_inputs(snapshot).bindings


def import_renames(snapshot: Snapshot) -> Mapping[str, Mapping[str, str]]:
    """Per file, local names bound to an imported name of another spelling (`from m import a as b`: b -> a)."""
    return graph_inputs(snapshot).renames


@dataclass(slots=True)
class GraphChanges:
    """How a snapshot's graph inputs differ from its anchor's."""

    anchor: Snapshot | None  # dropped (None) once the snapshot's own graphs are built
    changed: frozenset[str]  # files added, removed or changed since the anchor
    names: frozenset[str]  # names whose definers or member definers changed
    referenced: frozenset[str]  # names whose referencers changed
    rewired: frozenset[str]  # files (still present) whose imports or their resolution changed
    paths_changed: bool  # files were added or removed
    # Files whose links were made again (the others' are the anchor's own objects); None until links are made.
    relinked: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class GraphInputs:
    tables: NameTables
    # name -> files whose uses depend on its definers although they do not reference it by that name: files that
    # import it under another name (`from m import a as b`), or type a field with it.
    dependents: Mapping[str, tuple[str, ...]]
    resolver: ImportResolver
    resolved: Mapping[str, list[ResolvedImport]]
    bindings: Mapping[str, Mapping[str, tuple[str, ...]]]
    renames: Mapping[str, Mapping[str, str]]
    changes: GraphChanges | None  # None: built from scratch


def graph_inputs(snapshot: Snapshot) -> GraphInputs:
    return snapshot.derived("graph_inputs", _graph_inputs)


def changed_since_anchor(anchor: Snapshot, snapshot: Snapshot) -> set[str]:
    """`changed_files` of the anchor and the snapshot, from the files the workspace's changes named when it did."""
    named = snapshot.changed_from_anchor
    if named is None:
        return changed_files(anchor.files, snapshot.files)
    old, new = anchor.files, snapshot.files
    return {path for path in named if old.get(path) is not new.get(path)}


def update_limit(file_count: int) -> int:
    return max(UPDATE_MIN_FILES, int(UPDATE_MAX_SHARE * file_count))


def _graph_inputs(snapshot: Snapshot) -> GraphInputs:
    anchor = snapshot.anchor
    if anchor is not None and anchor.has_derived("graph_inputs") and anchor.markers == snapshot.markers:
        changed = changed_since_anchor(anchor, snapshot)
        if len(changed) <= update_limit(len(snapshot.files)):
            return _updated_inputs(graph_inputs(anchor), anchor, snapshot, changed)
    stored = _stored_inputs(snapshot)
    return stored if stored is not None else _built_inputs(snapshot)


def _stored_inputs(snapshot: Snapshot) -> GraphInputs | None:
    """The inputs as an earlier process stored them for these files (graph_cache), or None."""
    state = graph_state(snapshot)
    parts = state.take("tables", "dependents", "resolved", "bindings", "renames") if state is not None else None
    if parts is None:
        return None
    tables, dependents, resolved, bindings, renames = parts
    try:
        imports = {path: [ResolvedImport(*entry) for entry in entries] for path, entries in resolved.items()}
        return GraphInputs(
            NameTables(*tables),
            dependents,
            ImportResolver(snapshot.files, snapshot.markers),
            imports,
            bindings,
            renames,
            None,
        )
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        log.warning("stored graph inputs of %s unreadable (%s); building them", snapshot.root, error)
        return None


def _built_inputs(snapshot: Snapshot) -> GraphInputs:
    parts = snapshot.table_parts
    snapshot.table_parts = None
    gathered = parts.tables_for(snapshot.files) if parts is not None else None
    definers, referencers, member_definers, dependents = gathered or _built_tables(snapshot)
    tables = NameTables(definers, referencers, member_definers)
    import_parts = snapshot.import_parts
    snapshot.import_parts = None
    if import_parts is not None:  # a cold build resolved most files' imports while its workers parsed
        resolver, resolved_early, names_early = import_parts.taken(snapshot.files, snapshot.markers)
    else:
        resolver, resolved_early, names_early = ImportResolver(snapshot.files, snapshot.markers), {}, {}
    resolved = {}
    bindings: dict[str, Mapping[str, tuple[str, ...]]] = {}
    renames: dict[str, Mapping[str, str]] = {}
    for path, record in snapshot.files.items():
        imports = resolved_early.get(path)
        if imports is None:
            imports = resolver.resolve_file(path)
            names = import_names(record, imports)
        else:
            names = names_early[path]
        resolved[path] = imports
        _set_import_names(bindings, renames, path, names)
    return GraphInputs(tables, dependents, resolver, resolved, bindings, renames, None)


def _built_tables(snapshot: Snapshot) -> SortedTables:
    """Definers, referencers, member definers and dependents of every name, each file list sorted."""
    definers: dict[str, list[str]] = defaultdict(list)
    referencers: dict[str, list[str]] = defaultdict(list)
    member_definers: dict[str, list[str]] = defaultdict(list)
    dependents: dict[str, list[str]] = defaultdict(list)
    for path in sorted(snapshot.files):
        record = snapshot.files[path]
        for name in linkable_names(record):  # none kept per record (table_parts)
            definers[name].append(path)
        for name in record.reference_uses():
            referencers[name].append(path)
        for name in member_names(record):
            member_definers[name].append(path)
        for name in dependency_names(record):
            dependents[name].append(path)
    alone: dict[str, tuple[str]] = {}
    sorted_definers, sorted_referencers, sorted_members, sorted_dependents = (
        {name: _shared_single(paths, alone) for name, paths in table.items()}
        for table in (definers, referencers, member_definers, dependents)
    )
    return sorted_definers, sorted_referencers, sorted_members, sorted_dependents


def _shared_single(paths: list[str], alone: dict[str, tuple[str]]) -> tuple[str, ...]:
    """The paths as a tuple; one path as the same tuple for every name of that path in `alone` (see table_parts)."""
    if len(paths) != 1:
        return tuple(paths)
    single = alone.get(paths[0])
    if single is None:
        single = alone[paths[0]] = (paths[0],)
    return single


def _updated_inputs(base: GraphInputs, anchor: Snapshot, snapshot: Snapshot, changed: set[str]) -> GraphInputs:
    """`base` (the anchor's inputs) brought up to date for the `changed` files; equal to `_built_inputs`."""
    old_files, new_files = anchor.files, snapshot.files
    definers = LayeredTable(base.tables.definers)  # 1.26 million names at 100,000 files: layered, not copied
    referencers = LayeredTable(base.tables.referencers)
    member_definers = dict(base.tables.member_definers)
    dependents = dict(base.dependents)
    changed_names: set[str] = set()
    changed_referenced: set[str] = set()
    for path in sorted(changed):
        old, new = old_files.get(path), new_files.get(path)
        empty: frozenset[str] = frozenset()
        old_defined = frozenset(linkable_names(old)) if old is not None else empty
        new_defined = frozenset(linkable_names(new)) if new is not None else empty
        old_members, old_dependencies = old.graph_names() if old is not None else (empty, empty)
        new_members, new_dependencies = new.graph_names() if new is not None else (empty, empty)
        if old is not None and new is not None and old.language != new.language:
            changed_names.update(old_defined | new_defined | old_members | new_members)  # another language family
        changed_names.update(_move(definers, path, old_defined, new_defined))
        changed_names.update(_move(member_definers, path, old_members, new_members))
        changed_referenced.update(
            _move(
                referencers,
                path,
                frozenset(old.reference_counts()) if old is not None else empty,
                frozenset(new.reference_counts()) if new is not None else empty,
            )
        )
        _move(dependents, path, old_dependencies, new_dependencies)
    tables = NameTables(definers, referencers, member_definers)

    paths_changed = old_files.keys() != new_files.keys()
    csharp = any(
        record is not None and record.language == "csharp"
        for path in changed
        for record in (old_files.get(path), new_files.get(path))
    )
    resolved = dict(base.resolved)
    bindings = dict(base.bindings)
    renames = dict(base.renames)
    rewired: set[str] = set()
    if paths_changed or csharp:
        # Which module an import means depends on the set of files (and C# namespaces): resolve every file again
        # and keep what changed.
        resolver = ImportResolver(new_files, snapshot.markers)
        for path in list(resolved):
            if path not in new_files:
                del resolved[path]
                bindings.pop(path, None)
                renames.pop(path, None)
        for path in new_files:
            imports = resolver.resolve_file(path)
            if path in changed or imports != resolved.get(path):
                resolved[path] = imports
                rewired.add(path)
    else:
        resolver = base.resolver.with_files(new_files)
        for path in changed:
            # With the same paths and markers, a file whose imports read as before resolves, binds and renames as
            # before (1,000 files resolved again cost 0.1 s).
            if _rewires(old_files.get(path), new_files[path]):
                resolved[path] = resolver.resolve_file(path)
                rewired.add(path)
    for path in rewired:
        bindings.pop(path, None)
        renames.pop(path, None)
        _set_import_names(bindings, renames, path, import_names(new_files[path], resolved[path]))
    # A changed file whose imports read and resolve as before binds the same names: no other file's uses move.
    rewired = {path for path in rewired if path not in changed or _rewires(old_files.get(path), new_files[path])}
    changes = GraphChanges(
        anchor,
        frozenset(changed),
        frozenset(changed_names),
        frozenset(changed_referenced),
        frozenset(rewired),
        paths_changed,
    )
    return GraphInputs(tables, dependents, resolver, resolved, bindings, renames, changes)


def _rewires(old: FileRecord | None, new: FileRecord) -> bool:
    return old is None or old.imports != new.imports or old.language != new.language


def _move(table: MutableMapping[str, tuple[str, ...]], path: str, old: Iterable[str], new: Iterable[str]) -> set[str]:
    """Take `path` out of the table's entries for the `old` names and into those for the `new` ones, keeping each
    entry sorted as a build does; returns the names whose entry changed."""
    old_set, new_set = set(old), set(new)
    for name in old_set - new_set:
        remaining = tuple(entry for entry in table.get(name, ()) if entry != path)
        if remaining:
            table[name] = remaining
        else:
            table.pop(name, None)
    for name in new_set - old_set:
        entries = list(table.get(name, ()))
        bisect.insort(entries, path)
        table[name] = tuple(entries)
    return old_set ^ new_set


def _set_import_names(
    all_bindings: dict[str, Mapping[str, tuple[str, ...]]],
    all_renames: dict[str, Mapping[str, str]],
    path: str,
    names: ImportNames,
) -> None:
    """The local names `path`'s imports bind (and rename), `import_names`, into the per-file tables."""
    bindings, renames = names
    if bindings:
        all_bindings[path] = bindings
    if renames:
        all_renames[path] = renames


def alias_users(snapshot: Snapshot) -> Mapping[str, tuple[tuple[str, str], ...]]:
    """Imported name -> (file, local name) for every file that imports it under another name."""

    def build(s: Snapshot) -> dict[str, tuple[tuple[str, str], ...]]:
        users: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for path, renames in import_renames(s).items():
            for local, imported in renames.items():
                users[imported].append((path, local))
        return {name: tuple(entries) for name, entries in users.items()}

    return snapshot.derived("alias_users", build)


def importers(snapshot: Snapshot, targets: Iterable[str]) -> dict[str, list[str]]:
    """target -> the files importing it (a module, or a submodule named in a from-import), in path order: the
    predecessors `import_graph` gives, found by one pass over the resolved imports instead of a graph of every
    file (which a write's dependents made again after each change: 18 ms on the standard library)."""
    return {target: sorted(kinds) for target, kinds in importer_kinds(snapshot, targets).items()}


def importer_kinds(snapshot: Snapshot, targets: Iterable[str]) -> dict[str, dict[str, bool]]:
    """target -> {file importing it: whether only as one file of a package it imports whole}, as `importers` finds
    them. A Go import, a Java `a.b.*` or a C# `using` imports a package: every file of it, none by name. Such an
    importer depends on the package (it stops building when any file of it does), not on this file's names unless
    it uses them: `impact` and a write's dependents rank it after the files that do, and say so."""
    wanted = set(targets)
    found: dict[str, dict[str, bool]] = {target: {} for target in wanted}
    for path, imports in resolved_imports(snapshot).items():
        for target, whole_package in imported_kinds(imports, wanted).items():
            if target != path:
                found[target][path] = whole_package
    return found


def imported_kinds(imports: Iterable[ResolvedImport], wanted: Container[str] | None = None) -> dict[str, bool]:
    """Each file one file's imports reach (those `wanted`, when given) -> whether only as one file of a package
    imported whole: true when every import reaching it takes in its package, naming none of it (`package_files`)."""
    kinds: dict[str, bool] = {}
    for resolved in imports:
        whole_package = package_files(resolved)
        for target in imported_files(resolved):
            if wanted is None or target in wanted:
                kinds[target] = kinds.get(target, True) and target in whole_package
    return kinds


def package_files(resolved: ResolvedImport) -> frozenset[str]:
    """The files an import takes in only as part of a package: its files when it has several, less those it names
    (`from . import a, b` of a directory without `__init__.py` names each module it imports)."""
    if len(resolved.files) < 2:
        return frozenset()
    return frozenset(resolved.files).difference(*(files for _name, files in resolved.names))


def imported_files(resolved: ResolvedImport) -> Iterator[str]:
    """The files one import imports: its module's, then each from-imported name's (a submodule, say)."""
    yield from resolved.files
    for _name, files in resolved.names:
        yield from files


def import_graph(snapshot: Snapshot) -> nx.DiGraph:
    """Files as nodes; an edge A -> B when A imports B (a module, or a submodule named in a from-import)."""

    def build(s: Snapshot) -> nx.DiGraph:
        import networkx as nx  # here: only the commands that walk import paths need it

        graph = nx.DiGraph()
        graph.add_nodes_from(s.files)
        for path, imports in resolved_imports(s).items():
            for resolved in imports:
                for target in set(imported_files(resolved)):
                    if target != path:
                        graph.add_edge(path, target)
        return graph

    return snapshot.derived("import_graph", build)
