"""Graphs over the files of a snapshot (networkx), and the tables they are built from.

- Name tables: which files define and which reference each name.
- The import graph: an edge A -> B when A imports B (resolved by `resolve.py`).
- The reference graph: an edge A -> B when A references a name B defines. As in aider's repo map, each use of a
  name contributes `multiplier * sqrt(uses in A) / sqrt(files defining the name)`: a name defined in many files says
  little about any one of them, private `_names` and very common names (defined in many files, or referenced by a
  large share of all files) count a tenth, and a name A imports from a known file only points at that file.
- Personalized PageRank over the reference graph: `nx.pagerank` (damping 0.85; networkx computes it with scipy).
  Edges carrying a negligible share of a file's outgoing weight are pruned first, which keeps it fast.

Everything is computed lazily per snapshot and cached on it, so it is rebuilt only after a change.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx

from lsp_hub.index.model import COMPLEX_RECEIVER
from lsp_hub.index.records import D_CONTAINER, D_NAME, D_SIGNATURE, I_ALIASES, I_NAMES
from lsp_hub.index.resolve import ImportResolver, ResolvedImport
from lsp_hub.index.workspace import Snapshot

DAMPING = 0.85
MAX_DEFINERS = 64  # names defined in more files than this carry almost no weight; they are left out of the graph
COMMON_DEFINER_COUNT = 5  # defined in more files than this: a common name
COMMON_REFERENCER_SHARE = 0.05  # referenced by more than this share of all files (and at least 10): a common name
PRIVATE_OR_COMMON_FACTOR = 0.1
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
# Edges carrying less than this share of their source's outgoing weight are dropped from the power iteration (about
# half of all edges on the standard library, 2-3% of the weight): they cannot change a ranking, only slow it down.
PRUNE_SHARE = 0.002


@dataclass(frozen=True, slots=True)
class NameTables:
    definers: Mapping[str, tuple[str, ...]]  # name -> files defining it, sorted
    referencers: Mapping[str, tuple[str, ...]]  # name -> files referencing it, sorted
    member_definers: Mapping[str, tuple[str, ...]]  # name -> files defining it inside a class/namespace


def name_tables(snapshot: Snapshot) -> NameTables:
    return snapshot.derived("name_tables", _build_name_tables)


def _build_name_tables(snapshot: Snapshot) -> NameTables:
    definers: dict[str, list[str]] = defaultdict(list)
    referencers: dict[str, list[str]] = defaultdict(list)
    member_definers: dict[str, list[str]] = defaultdict(list)
    for path in sorted(snapshot.files):
        record = snapshot.files[path]
        for name in record.defined_names():
            definers[name].append(path)
        for name in record.reference_counts():
            referencers[name].append(path)
        members = {definition[D_NAME] for definition in record.definitions if definition[D_CONTAINER] is not None}
        for name in members:
            member_definers[name].append(path)
    return NameTables(
        {name: tuple(paths) for name, paths in definers.items()},
        {name: tuple(paths) for name, paths in referencers.items()},
        {name: tuple(paths) for name, paths in member_definers.items()},
    )


def import_resolver(snapshot: Snapshot) -> ImportResolver:
    return snapshot.derived("import_resolver", lambda s: ImportResolver(s.files, s.markers))


def resolved_imports(snapshot: Snapshot) -> Mapping[str, list[ResolvedImport]]:
    """Every file's imports, resolved."""

    def build(s: Snapshot) -> dict[str, list[ResolvedImport]]:
        resolver = import_resolver(s)
        return {path: resolver.resolve_file(path) for path in s.files}

    return snapshot.derived("resolved_imports", build)


def import_bindings(snapshot: Snapshot) -> Mapping[str, Mapping[str, tuple[str, ...]]]:
    """Per file, the local names its imports bind -> the workspace files they come from (empty: external)."""
    return _import_names(snapshot)[0]


def import_renames(snapshot: Snapshot) -> Mapping[str, Mapping[str, str]]:
    """Per file, local names bound to an imported name of another spelling (`from m import a as b`: b -> a)."""
    return _import_names(snapshot)[1]


def _import_names(
    snapshot: Snapshot,
) -> tuple[Mapping[str, Mapping[str, tuple[str, ...]]], Mapping[str, Mapping[str, str]]]:
    def build(s: Snapshot) -> tuple[dict[str, dict[str, tuple[str, ...]]], dict[str, dict[str, str]]]:
        all_bindings: dict[str, dict[str, tuple[str, ...]]] = {}
        all_renames: dict[str, dict[str, str]] = {}
        for path, imports in resolved_imports(s).items():
            bindings: dict[str, tuple[str, ...]] = {}
            renames: dict[str, str] = {}
            for raw, resolved in zip(s.files[path].imports, imports, strict=False):
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
        return all_bindings, all_renames

    return snapshot.derived("import_names", build)


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


def name_multiplier(name: str, definer_count: int, referencer_count: int, file_count: int) -> float:
    """How much one name says about the files that define it (1 for a distinctive name)."""
    multiplier = 1.0
    if name in COMMON_NAMES:
        multiplier *= PRIVATE_OR_COMMON_FACTOR
    if name.startswith("_"):
        multiplier *= PRIVATE_OR_COMMON_FACTOR
    if definer_count > COMMON_DEFINER_COUNT:
        multiplier *= PRIVATE_OR_COMMON_FACTOR
    if referencer_count >= 10 and referencer_count > COMMON_REFERENCER_SHARE * file_count:
        multiplier *= PRIVATE_OR_COMMON_FACTOR
    return multiplier


class ReferenceGraph:
    """The weighted file reference graph and the ranks computed on it."""

    def __init__(self, nodes: list[str], outgoing: list[dict[int, float]]) -> None:
        """`outgoing[i]` maps target node positions to the summed edge weight from node i."""
        self.nodes = nodes
        self.index = {node: position for position, node in enumerate(nodes)}
        self.out_weight: dict[str, float] = {}
        kept: list[tuple[str, str, float]] = []
        for source_index, targets in enumerate(outgoing):
            total = sum(targets.values())
            self.out_weight[nodes[source_index]] = total
            if total <= 0.0:
                continue
            threshold = PRUNE_SHARE * total
            kept.extend((nodes[source_index], nodes[target_index], weight)
                        for target_index, weight in targets.items() if weight >= threshold)
        # The edges the ranking uses (pruned); networkx normalises each file's outgoing weights.
        self.graph = nx.DiGraph()
        self.graph.add_nodes_from(nodes)
        self.graph.add_weighted_edges_from(kept)
        self.base_ranks: dict[str, float] = {}
        self.definition_scores: dict[str, dict[str, float]] = {}  # path -> name -> rank flowing to it

    def score_definitions(self, contributions: list[tuple[int, str, float, tuple[int, ...]]]) -> None:
        """Rank the graph without personalization, then give each definition the rank its uses pass on (aider's
        symbol rank: a file passes its rank on in proportion to each use's share of its outgoing weight)."""
        self.base_ranks = self.pagerank()
        nodes = self.nodes
        shares = [self.base_ranks[node] / weight if weight > 0 else 0.0
                  for node, weight in ((node, self.out_weight[node]) for node in nodes)]
        scores: dict[str, dict[str, float]] = {}
        for source_position, name, weight, targets in contributions:
            amount = shares[source_position] * weight
            for target in targets:
                by_name = scores.get(nodes[target])
                if by_name is None:
                    by_name = scores[nodes[target]] = {}
                by_name[name] = by_name.get(name, 0.0) + amount
        self.definition_scores = scores

    def pagerank(
        self, personalization: Mapping[str, float] | None = None, alpha: float = DAMPING, tolerance: float = 1.0e-6,
        max_iterations: int = 100,
    ) -> dict[str, float]:
        """networkx's PageRank (scipy-backed) over the pruned, weighted graph; teleport and dangling mass follow
        the personalization, as networkx does."""
        if not self.nodes:
            return {}
        vector = None
        if personalization:
            vector = {node: max(0.0, float(value)) for node, value in personalization.items() if node in self.index}
            if not any(vector.values()):
                vector = None
        return dict(nx.pagerank(self.graph, alpha=alpha, personalization=vector, weight="weight",
                                tol=tolerance, max_iter=max_iterations))


def reference_graph(snapshot: Snapshot) -> ReferenceGraph:
    return snapshot.derived("reference_graph", _build_reference_graph)


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


def _build_reference_graph(snapshot: Snapshot) -> ReferenceGraph:
    tables = name_tables(snapshot)
    resolver = use_resolver(snapshot)
    file_count = len(snapshot.files)
    definers_of = tables.definers
    referencers_of = tables.referencers
    nodes = sorted(snapshot.files)
    position_of = {node: position for position, node in enumerate(nodes)}
    multipliers: dict[str, float | None] = {}
    outgoing: list[dict[int, float]] = []
    # (source position, name, weight, target positions): kept to score definitions once the ranks are known.
    contributions: list[tuple[int, str, float, tuple[int, ...]]] = []
    sqrt = math.sqrt
    for source_position, source in enumerate(nodes):
        targets: dict[int, float] = {}
        outgoing.append(targets)
        for name, by_receiver in snapshot.files[source].reference_uses().items():
            for receiver, uses in by_receiver.items():
                used = resolver.imported_name(source, name, receiver)  # an alias counts for the name it imports
                try:
                    multiplier = multipliers[used]
                except KeyError:
                    multiplier = multipliers[used] = _name_factor(used, definers_of, referencers_of, file_count)
                if multiplier is None:
                    continue
                positions = tuple(
                    position_of[target] for target in resolver.targets(source, name, receiver) if target != source
                )
                if not positions:
                    continue
                weight = multiplier * sqrt(uses)
                contributions.append((source_position, used, weight, positions))
                for position in positions:
                    targets[position] = targets.get(position, 0.0) + weight
    graph = ReferenceGraph(nodes, outgoing)
    graph.score_definitions(contributions)
    return graph


def _name_factor(
    name: str, definers_of: Mapping[str, tuple[str, ...]], referencers_of: Mapping[str, tuple[str, ...]],
    file_count: int,
) -> float | None:
    """multiplier / sqrt(definer count) for a name, or None for names left out of the graph."""
    definers = definers_of.get(name)
    if not definers or len(definers) > MAX_DEFINERS:
        return None
    multiplier = name_multiplier(name, len(definers), len(referencers_of.get(name, ())), file_count)
    return multiplier / math.sqrt(len(definers))


def base_pagerank(snapshot: Snapshot) -> Mapping[str, float]:
    """PageRank of the reference graph without personalization, cached per snapshot."""
    return reference_graph(snapshot).base_ranks


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
