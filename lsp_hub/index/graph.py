"""What the graphs over a snapshot's files are made of: name tables, resolved imports, and which files a use of a
name may mean.

- Name tables: which files define and which reference each name.
- Resolved imports and the names they bind, per file; the import graph (networkx): an edge A -> B when A imports B.
- `UseResolver`: the files a use of a name in a file may refer to, by the language's scoping and the file's imports
  (`links.py` turns every file's uses into its links, `ranking.py` the links into the ranked reference graph).

Everything is computed lazily per snapshot and cached on it. `graph_inputs` is not rebuilt after a change: it is
updated from the snapshot's anchor (the last snapshot whose graphs were computed) for the files that differ, and
records what changed (`GraphChanges`) so that the links and the ranking can be updated the same way. An update
gives exactly what a build from scratch gives (tests compare both on a real corpus).
"""

from __future__ import annotations

import bisect
import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsp_hub.index.graph_cache import graph_state
from lsp_hub.index.model import COMPLEX_RECEIVER
from lsp_hub.index.records import D_CONTAINER, D_NAME, D_SIGNATURE, I_ALIASES, I_NAMES, FileRecord
from lsp_hub.index.resolve import ImportResolver, ResolvedImport
from lsp_hub.index.workspace import Snapshot

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import networkx as nx

DAMPING = 0.85
MAX_DEFINERS = 64  # names defined in more files than this carry almost no weight; they are left out of the graph
# Methods of built-in types and builtins: `x.append()` or `s.lower()` almost never means a workspace definition of
# that name, however many files call it.
COMMON_NAMES = frozenset("""
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
""".split())  # noqa: SIM905 (a word list reads better as text)
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


def changed_files(old: Mapping[str, FileRecord], new: Mapping[str, FileRecord]) -> set[str]:
    """Files present in only one of two snapshots, or with another record (records are replaced, never mutated)."""
    changed = {path for path, record in new.items() if old.get(path) is not record}
    changed.update(path for path in old if path not in new)
    return changed


def update_limit(file_count: int) -> int:
    return max(UPDATE_MIN_FILES, int(UPDATE_MAX_SHARE * file_count))


def _graph_inputs(snapshot: Snapshot) -> GraphInputs:
    anchor = snapshot.anchor
    if anchor is not None and anchor.has_derived("graph_inputs") and anchor.markers == snapshot.markers:
        changed = changed_files(anchor.files, snapshot.files)
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
        return GraphInputs(NameTables(*tables), dependents, ImportResolver(snapshot.files, snapshot.markers), imports,
                           bindings, renames, None)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        log.warning("stored graph inputs of %s unreadable (%s); building them", snapshot.root, error)
        return None


def _built_inputs(snapshot: Snapshot) -> GraphInputs:
    definers: dict[str, list[str]] = defaultdict(list)
    referencers: dict[str, list[str]] = defaultdict(list)
    member_definers: dict[str, list[str]] = defaultdict(list)
    dependents: dict[str, list[str]] = defaultdict(list)
    for path in sorted(snapshot.files):
        record = snapshot.files[path]
        for name in record.defined_names():
            definers[name].append(path)
        for name in record.reference_counts():
            referencers[name].append(path)
        for name in member_names(record):
            member_definers[name].append(path)
        for name in dependency_names(record):
            dependents[name].append(path)
    tables = NameTables(
        {name: tuple(paths) for name, paths in definers.items()},
        {name: tuple(paths) for name, paths in referencers.items()},
        {name: tuple(paths) for name, paths in member_definers.items()},
    )
    resolver = ImportResolver(snapshot.files, snapshot.markers)
    resolved = {path: resolver.resolve_file(path) for path in snapshot.files}
    bindings: dict[str, Mapping[str, tuple[str, ...]]] = {}
    renames: dict[str, Mapping[str, str]] = {}
    for path, imports in resolved.items():
        _set_import_names(bindings, renames, path, snapshot.files[path], imports)
    return GraphInputs(tables, {name: tuple(paths) for name, paths in dependents.items()}, resolver, resolved,
                       bindings, renames, None)


def member_names(record: FileRecord) -> frozenset[str]:
    return frozenset(definition[D_NAME] for definition in record.definitions if definition[D_CONTAINER] is not None)


def dependency_names(record: FileRecord) -> frozenset[str]:
    """Names whose definers decide where this file's uses point, besides the names it references: names it imports
    under another spelling, and the classes its fields are typed with."""
    names = {imported for raw in record.imports for _local, imported in raw[I_ALIASES] if imported != "*"}
    names.update(type_name for _owner, _attribute, type_name in record.field_types)
    return frozenset(names)


def _updated_inputs(base: GraphInputs, anchor: Snapshot, snapshot: Snapshot, changed: set[str]) -> GraphInputs:
    """`base` (the anchor's inputs) brought up to date for the `changed` files; equal to `_built_inputs`."""
    old_files, new_files = anchor.files, snapshot.files
    definers = dict(base.tables.definers)
    referencers = dict(base.tables.referencers)
    member_definers = dict(base.tables.member_definers)
    dependents = dict(base.dependents)
    changed_names: set[str] = set()
    changed_referenced: set[str] = set()
    for path in sorted(changed):
        old, new = old_files.get(path), new_files.get(path)
        empty: frozenset[str] = frozenset()
        old_defined = old.defined_names() if old is not None else empty
        new_defined = new.defined_names() if new is not None else empty
        old_members = member_names(old) if old is not None else empty
        new_members = member_names(new) if new is not None else empty
        if old is not None and new is not None and old.language != new.language:
            changed_names.update(old_defined | new_defined | old_members | new_members)  # another language family
        changed_names.update(_move(definers, path, old_defined, new_defined))
        changed_names.update(_move(member_definers, path, old_members, new_members))
        changed_referenced.update(_move(
            referencers, path, frozenset(old.reference_counts()) if old is not None else empty,
            frozenset(new.reference_counts()) if new is not None else empty,
        ))
        _move(dependents, path, dependency_names(old) if old is not None else empty,
              dependency_names(new) if new is not None else empty)
    tables = NameTables(definers, referencers, member_definers)

    paths_changed = old_files.keys() != new_files.keys()
    csharp = any(record is not None and record.language == "csharp"
                 for path in changed for record in (old_files.get(path), new_files.get(path)))
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
            resolved[path] = resolver.resolve_file(path)
            rewired.add(path)
    for path in rewired:
        bindings.pop(path, None)
        renames.pop(path, None)
        _set_import_names(bindings, renames, path, new_files[path], resolved[path])
    # A changed file whose imports read and resolve as before binds the same names: no other file's uses move.
    rewired = {path for path in rewired if path not in changed or _rewires(old_files.get(path), new_files[path])}
    changes = GraphChanges(anchor, frozenset(changed), frozenset(changed_names), frozenset(changed_referenced),
                           frozenset(rewired), paths_changed)
    return GraphInputs(tables, dependents, resolver, resolved, bindings, renames, changes)


def _rewires(old: FileRecord | None, new: FileRecord) -> bool:
    return old is None or old.imports != new.imports or old.language != new.language


def _move(table: dict[str, tuple[str, ...]], path: str, old: Iterable[str], new: Iterable[str]) -> set[str]:
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
    all_bindings: dict[str, Mapping[str, tuple[str, ...]]], all_renames: dict[str, Mapping[str, str]], path: str,
    record: FileRecord, imports: list[ResolvedImport],
) -> None:
    """The local names `path`'s imports bind (and rename), into the per-file tables."""
    bindings: dict[str, tuple[str, ...]] = {}
    renames: dict[str, str] = {}
    for raw, resolved in zip(record.imports, imports, strict=False):
        aliases = raw[I_ALIASES]
        renamed = {imported for _local, imported in aliases}
        for name, files in resolved.names:
            if name not in renamed:  # `from m import a as b` binds b, not a
                bindings[name] = files
        if "*" not in renamed:  # `import a.b as z` binds z, not a.b
            for alias in resolved.aliases:
                bindings[alias] = resolved.files
        for local, imported in aliases:
            if imported == "*":
                bindings[local] = resolved.files
            else:
                bindings[local] = dict(resolved.names).get(imported, resolved.files)
                renames[local] = imported
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


def import_graph(snapshot: Snapshot) -> nx.DiGraph:
    """Files as nodes; an edge A -> B when A imports B (a module, or a submodule named in a from-import)."""

    def build(s: Snapshot) -> nx.DiGraph:
        import networkx as nx  # here: only the commands that walk import paths need it

        graph = nx.DiGraph()
        graph.add_nodes_from(s.files)
        for path, imports in resolved_imports(s).items():
            for resolved in imports:
                targets = set(resolved.files)
                for _name, files in resolved.names:
                    targets.update(files)
                for target in targets:
                    if target != path:
                        graph.add_edge(path, target)
        return graph

    return snapshot.derived("import_graph", build)


SELF_RECEIVERS = frozenset(("self", "this", "cls", "super", "Self"))
# `name = callee(`, `name: T = callee(`, `const name = callee(`, `let name = new callee(`: a variable made by a call.
_MADE_BY_CALL = re.compile(r"(?:(?:const|let|var)\s+)?[\w$]+\s*(?::[^=]*)?=\s*(?:new\s+)?([\w$.]+)\s*\(")
# Languages whose files can use each other's names; every other language only its own.
_LANGUAGE_FAMILIES = {"typescript": "ecma", "tsx": "ecma", "javascript": "ecma", "c": "c", "cpp": "c"}


def language_family(language: str) -> str:
    return _LANGUAGE_FAMILIES.get(language, language)

# Languages whose plain (receiver-less) names come only from the file itself, its imports, or builtins.
MODULE_SCOPED_LANGUAGES = frozenset(("python", "typescript", "tsx", "javascript"))
# Languages whose plain names also come from the other files of the same directory (a Go or Java package).
PACKAGE_SCOPED_LANGUAGES = frozenset(("go", "java"))


class UseResolver:
    """Which files a use of a name may refer to, by the language's scoping and the file's imports."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.tables = name_tables(snapshot)
        self.bindings = import_bindings(snapshot)
        self.renames = import_renames(snapshot)
        self._star_sources: dict[str, tuple[str, ...]] = {}
        self._family_of = {path: language_family(record.language) for path, record in snapshot.files.items()}
        self._definers: dict[tuple[str, str], tuple[str, ...]] = {}
        self._member_definers: dict[tuple[str, str], tuple[str, ...]] = {}
        self._made_outside: dict[str, frozenset[str]] = {}  # per file: module variables made by outside calls

    def _in_family(
        self, cache: dict[tuple[str, str], tuple[str, ...]], table: Mapping[str, tuple[str, ...]], name: str,
        family: str,
    ) -> tuple[str, ...]:
        """The files of `table[name]` whose language a file of `family` can use: a Python `x.info()` never means a
        TypeScript method, however the names match."""
        key = (name, family)
        found = cache.get(key)
        if found is None:
            family_of = self._family_of
            found = cache[key] = tuple(path for path in table.get(name, ()) if family_of.get(path) == family)
        return found

    def star_sources(self, path: str) -> tuple[str, ...]:
        """Files whose names `path` imports wholesale (`from m import *`, `export * from`)."""
        sources = self._star_sources.get(path)
        if sources is None:
            record = self.snapshot.files[path]
            ecma = record.language in _ECMA
            found: list[str] = []
            for raw, resolved in zip(record.imports, resolved_imports(self.snapshot).get(path, ()), strict=False):
                if resolved.files and ("*" in raw[I_NAMES] or (ecma and not raw[I_NAMES])):
                    found.extend(resolved.files)
            sources = self._star_sources[path] = tuple(found)
        return sources

    def targets(self, source: str, name: str, receiver: str | None) -> tuple[str, ...]:
        """The files among those defining `name` that `receiver.name` (or plain `name`) in `source` may mean."""
        record = self.snapshot.files[source]
        family = self._family_of.get(source, record.language)
        source_bindings = self.bindings.get(source, {})
        if receiver is None:
            exported = self.renames.get(source, {}).get(name)
            if exported is not None:  # `b` after `from m import a as b`: m's a
                definers = self._in_family(self._definers, self.tables.definers, exported, family)
                return self._bound_targets(source_bindings.get(name, ()), exported, definers)
        definers = self._in_family(self._definers, self.tables.definers, name, family)
        if not definers:
            return ()
        if receiver is None:
            bound = source_bindings.get(name)
            if bound is not None:
                return self._bound_targets(bound, name, definers)
            if name in record.defined_names():
                return (source,)
            language = record.language
            # A TS/JS file without imports may be a script whose names are global: it can use any definer.
            if language in MODULE_SCOPED_LANGUAGES and (language == "python" or record.imports):
                star = self.star_sources(source)
                if star:
                    origins = name_origins(self.snapshot, star, name)
                    starred = tuple(path for path in definers if path in origins)
                    if starred:
                        return starred
                return ()  # neither defined, imported nor star-imported here: a builtin or an undeclared global
            if language in PACKAGE_SCOPED_LANGUAGES:
                directory = source.rpartition("/")[0]
                return tuple(path for path in definers if path.rpartition("/")[0] == directory)
            return definers
        if receiver in SELF_RECEIVERS:
            return (source,) if name in record.defined_names() else definers
        bound = source_bindings.get(receiver)
        if bound is not None:  # `module.name`, `ImportedClass.name`, `package.module.name` after `import a.b`
            return self._bound_targets(bound, name, definers)
        members = self._in_family(self._member_definers, self.tables.member_definers, name, family)
        if receiver == COMPLEX_RECEIVER:  # `make().name`: a member of whatever the expression gives
            return members if record.language in MODULE_SCOPED_LANGUAGES else definers
        if chain_head(receiver) is not None:
            return self._chain_targets(source, source_bindings, record.language, name, receiver, definers, members)
        if self._from_outside(source, receiver):
            return ()  # `log.info()` after `log = logging.getLogger(...)`: a method of an outside object
        return definers

    def _from_outside(self, source: str, receiver: str) -> bool:
        """Whether `receiver` is a module-level variable of `source` made by calling into an import from outside
        the workspace (`log = logging.getLogger(__name__)`, `app = Flask(__name__)`)."""
        made_outside = self._made_outside.get(source)
        if made_outside is None:
            made_outside = self._made_outside[source] = self._variables_made_outside(source)
        return receiver in made_outside

    def _variables_made_outside(self, source: str) -> frozenset[str]:
        bindings = self.bindings.get(source)
        if not bindings:
            return frozenset()
        found: set[str] = set()
        seen: set[str] = set()
        for definition in self.snapshot.files[source].definitions:
            name = definition[D_NAME]
            if definition[D_CONTAINER] is not None or name in seen:
                continue
            seen.add(name)  # the first module-level definition of a name decides, as before
            made_by = _MADE_BY_CALL.match(definition[D_SIGNATURE])
            if made_by is not None and bindings.get(made_by.group(1).split(".", 1)[0]) == ():
                found.add(name)
        return frozenset(found)

    def _chain_targets(
        self, source: str, source_bindings: Mapping[str, tuple[str, ...]], language: str, name: str, receiver: str,
        definers: tuple[str, ...], members: tuple[str, ...],
    ) -> tuple[str, ...]:
        """`a.b.name`: a member of `self.field` (of the field's class when the file types it), a function of
        module `a.b`, or a member of an object found through a module; `os.path.name` with `os` from outside the
        workspace means nothing here."""
        separator = "::" if "::" in receiver else "."
        head, _, rest = receiver.partition(separator)
        if head in SELF_RECEIVERS:
            types = {type_name for _owner, attribute, type_name in self.snapshot.files[source].field_types
                     if attribute == rest}
            if len(types) == 1:  # every class of the file that has this attribute gives it the same type
                [type_name] = types
                typed = tuple(path for path in members if type_name in self.snapshot.files[path].defined_names())
                if typed:
                    return typed
            return members
        bound_head = source_bindings.get(head)
        if bound_head is not None and not bound_head:
            return ()
        if language not in MODULE_SCOPED_LANGUAGES:
            return definers
        module_suffix = "/" + receiver.replace(separator, "/")
        in_module = {path for path in definers if ("/" + module_path(path)).endswith(module_suffix)}
        in_module.update(members)
        return tuple(path for path in definers if path in in_module)

    def imported_name(self, source: str, name: str, receiver: str | None) -> str:
        """The name a use in `source` refers to in the files `targets` gives: the imported name for a local alias
        (`b` after `from m import a as b` is `a`), else the name itself."""
        if receiver is None:
            return self.renames.get(source, {}).get(name, name)
        return name

    def _bound_targets(self, bound: tuple[str, ...], name: str, definers: tuple[str, ...]) -> tuple[str, ...]:
        if not bound:
            return ()  # imported from outside the workspace
        origins = name_origins(self.snapshot, bound, name)
        return tuple(path for path in definers if path in origins)


def chain_head(receiver: str | None) -> str | None:
    """`a` of a chain receiver `a.b` or `a::b`; None for a plain name, a single name or an expression."""
    if receiver is None or receiver == COMPLEX_RECEIVER:
        return None
    for separator in ("::", "."):
        if separator in receiver:
            return receiver.split(separator, 1)[0]
    return None


def module_path(path: str) -> str:
    """`a/b.py`, `a/b/__init__.py`, `a/b/index.ts` -> `a/b`: the module a file is, as a path."""
    stem = path.rsplit(".", 1)[0] if "." in path.rpartition("/")[2] else path
    for package_file in ("/__init__", "/index", "/mod"):
        if stem.endswith(package_file):
            return stem[: -len(package_file)]
    return stem


def use_resolver(snapshot: Snapshot) -> UseResolver:
    return snapshot.derived("use_resolver", UseResolver)


MAX_REEXPORT_DEPTH = 6
_ECMA = frozenset(("typescript", "tsx", "javascript"))


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
    _collect_origins(snapshot, files, name, found, set(), 0)
    result = frozenset(found) if found else frozenset(files)
    cache[key] = result
    return result


def _collect_origins(
    snapshot: Snapshot, files: tuple[str, ...], name: str, found: set[str], seen: set[str], depth: int
) -> None:
    if depth > MAX_REEXPORT_DEPTH:
        return
    bindings = import_bindings(snapshot)
    for path in files:
        if path in seen:
            continue
        seen.add(path)
        record = snapshot.files.get(path)
        if record is None:
            continue
        if name in record.defined_names():
            found.add(path)
            continue
        bound = bindings.get(path, {}).get(name)
        if bound:
            _collect_origins(snapshot, bound, name, found, seen, depth + 1)
            continue
        ecma = record.language in _ECMA
        for raw, resolved in zip(record.imports, resolved_imports(snapshot).get(path, ()), strict=False):
            imported_names = raw[I_NAMES]
            if resolved.files and ("*" in imported_names or (ecma and not imported_names)):
                _collect_origins(snapshot, resolved.files, name, found, seen, depth + 1)
