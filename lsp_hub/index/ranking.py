"""The ranked reference graph: files weighted by the links between them, PageRank over it, and the rank each
definition receives.

An edge A -> B when A uses a name B defines (`links.py`). As in aider's repo map, each link contributes
`multiplier * sqrt(uses in A) / sqrt(files defining the name)`: a name defined in many files says little about any
one of them, private `_names` and very common names (defined in many files, or referenced by a large share of all
files) count a tenth. Edges carrying a negligible share of a file's outgoing weight are pruned before ranking.

PageRank is networkx's power iteration run on edge arrays kept with the graph (`pagerank.py`).

Each file's row (its outgoing edges and what each of its links passes on) depends only on its links and on the
multipliers of the names it uses, so after a change only the rows of files whose links or multipliers changed are
recomputed; rows are summed in the same order either way, so an update equals a build bit for bit.
"""

from __future__ import annotations

import bisect
import itertools
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lsp_hub.index.graph_cache import graph_state
from lsp_hub.index.graph_inputs import GraphChanges, GraphInputs, NameTables, graph_inputs
from lsp_hub.index.links import FileLinks, file_links
from lsp_hub.index.pagerank import DAMPING, MAX_ITERATIONS, TOLERANCE, rank_vector, ranks_by_node, transition_matrix
from lsp_hub.index.rows import Row, factor_lookup, file_row, name_factor, test_files, unreachable_from
from lsp_hub.index.workspace import Snapshot

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import networkx as nx


class Passes:
    """What the links into one file pass on, as arrays in source order (then link order): each entry's source
    position, name position and weight. Kept across updates: a changed source's entries are replaced in place."""

    __slots__ = ("name_positions", "names", "positions", "sources", "target", "weights")

    def __init__(self, target: str) -> None:
        import numpy as np

        self.target = target
        self.names: list[str] = []
        self.positions: dict[str, int] = {}
        self.sources = np.zeros(0, dtype=np.intp)
        self.name_positions = np.zeros(0, dtype=np.intp)
        self.weights = np.zeros(0)

    def copy(self) -> Passes:
        other = Passes.__new__(Passes)
        other.target = self.target
        other.names = list(self.names)
        other.positions = dict(self.positions)
        other.sources, other.name_positions, other.weights = self.sources, self.name_positions, self.weights
        return other

    def fill(self, sources: Sequence[int], entries: Sequence[Sequence[tuple[str, float]]]) -> None:
        """Set the entries of an empty instance: `entries[i]` are source `sources[i]`'s, sources ascending. Each
        name's position is its first appearance's, as `_intern` gives them, all in C loops: a map fills the passes
        into a hundred files (on the standard library, 40,000 sources' entries)."""
        import numpy as np

        flat = list(itertools.chain.from_iterable(entries))
        names, weights = zip(*flat, strict=True) if flat else ((), ())
        self.names = list(dict.fromkeys(names))
        self.positions = {name: position for position, name in enumerate(self.names)}
        counts = np.fromiter(map(len, entries), dtype=np.intp, count=len(entries))
        self.sources = np.repeat(np.array(sources, dtype=np.intp), counts)
        self.name_positions = np.fromiter(map(self.positions.__getitem__, names), dtype=np.intp, count=len(names))
        self.weights = np.array(weights, dtype=float)

    def _intern(self, entries: Iterable[tuple[str, float]], name_positions: list[int], weights: list[float]) -> None:
        """Append each entry's name position (a new name gets the next one) and weight."""
        positions = self.positions
        for name, weight in entries:
            position = positions.get(name)
            if position is None:
                position = positions[name] = len(self.names)
                self.names.append(name)
            name_positions.append(position)
            weights.append(weight)

    def replace(self, source: int, entries: Iterable[tuple[str, float]]) -> None:
        """Make `entries` the entries of `source` (none when empty)."""
        import numpy as np

        name_positions: list[int] = []
        weights: list[float] = []
        self._intern(entries, name_positions, weights)
        start, end = np.searchsorted(self.sources, [source, source + 1])
        count = len(weights)
        self.sources = np.concatenate((self.sources[:start], np.full(count, source, dtype=np.intp), self.sources[end:]))
        self.name_positions = np.concatenate(
            (self.name_positions[:start], np.array(name_positions, dtype=np.intp), self.name_positions[end:])
        )
        self.weights = np.concatenate((self.weights[:start], np.array(weights, dtype=float), self.weights[end:]))


class ReferenceGraph:
    """The weighted file reference graph of one snapshot and the ranks computed on it."""

    def __init__(
        self,
        nodes: list[str],
        rows: dict[str, Row],
        incoming: dict[str, tuple[str, ...]],
        factors: dict[str, float | None],
        file_count: int,
        tests: frozenset[str] | None = None,
        index: dict[str, int] | None = None,
    ) -> None:
        """`index`, each node's position, when the caller has it (an update: the same nodes)."""
        self.nodes = nodes
        self.index = index if index is not None else {node: position for position, node in enumerate(nodes)}
        self.rows = rows
        self.incoming = incoming  # target -> files with links to it, sorted
        self.factors = factors  # the multipliers looked up so far (a cache: a build computes the same)
        self.file_count = file_count
        self._matrix: Any = None
        self._edge_arrays: tuple[list[int], list[int], list[float]] | None = None
        self._base_ranks: dict[str, float] | None = None
        self._base_vector: Any = None  # the base ranks in node order (numpy)
        self._out_weights: Any = None  # each node's outgoing weight in node order (numpy)
        self._definition_scores: dict[str, dict[str, float]] = {}
        self._shares: Any = None  # per node: base rank / outgoing weight
        self.passes_cache: dict[str, Passes] = {}
        self.saved_scores = 0  # how many files' definition scores graph_store.save_ranking stored
        self._graph: nx.DiGraph | None = None
        self._tests = tests  # the test files among the nodes, made on first use when not given (a stored graph)

    best_first: list[int] | None = None  # a stored ranking's best nodes in order; a map sorts this graph's itself

    @property
    def tests(self) -> frozenset[str]:
        """The test files among the nodes (kept: an update has the same nodes)."""
        if self._tests is None:
            self._tests = test_files(self.nodes)
        return self._tests

    def edges(self) -> Iterable[tuple[str, str, float]]:
        """The kept edges `(source, target, weight)`, sources in path order."""
        for source in self.nodes:
            for target, weight in self.rows[source].kept:
                yield source, target, weight

    @property
    def graph(self) -> nx.DiGraph:
        """The kept edges as a networkx graph (for inspection and tests; ranking does not use it)."""
        if self._graph is None:
            import networkx as nx

            graph = nx.DiGraph()
            graph.add_nodes_from(self.nodes)
            graph.add_weighted_edges_from(self.edges())
            self._graph = graph
        return self._graph

    @property
    def base_ranks(self) -> dict[str, float]:
        """PageRank without personalization."""
        if self._base_ranks is None:
            self._base_ranks = ranks_by_node(self.nodes, self.base_vector)
        return self._base_ranks

    @property
    def base_vector(self) -> Any:
        """`base_ranks` in node order."""
        if self._base_vector is None:
            self._base_vector = self.pagerank_vector()
        return self._base_vector

    def out_weights(self) -> Any:
        if self._out_weights is None:
            import numpy as np

            rows = self.rows
            self._out_weights = np.fromiter((rows[node].out_weight for node in self.nodes), float, len(self.nodes))
        return self._out_weights

    def out_weights_after(self, previous: ReferenceGraph, changed_rows: Iterable[str]) -> None:
        """`previous`'s outgoing weights (the same nodes) with the `changed_rows`' own."""
        if previous._out_weights is not None and previous.nodes is self.nodes:
            weights = self._out_weights = previous._out_weights.copy()
            for path in changed_rows:
                weights[self.index[path]] = self.rows[path].out_weight

    def definition_scores(self, path: str) -> dict[str, float]:
        """name -> the rank flowing to `path`'s definitions of that name (aider's symbol rank: a file passes its
        base rank on in proportion to each use's share of its outgoing weight)."""
        scores = self._definition_scores.get(path)
        if scores is None:
            import numpy as np

            passes = self._passes_into(path)
            if self._shares is None:
                out = self.out_weights()
                self._shares = np.divide(self.base_vector, out, out=np.zeros(len(self.nodes)), where=out > 0)
            # Summed in the order of the arrays (sources in path order, then link order): an update sums alike.
            size = len(passes.names)
            sums = np.bincount(
                passes.name_positions, weights=self._shares[passes.sources] * passes.weights, minlength=size
            )
            used = np.bincount(passes.name_positions, minlength=size)
            scores = self._definition_scores[path] = {
                name: total
                for name, total, count in zip(passes.names, sums.tolist(), used.tolist(), strict=True)
                if count
            }
        return scores

    def computed_scores(self) -> Mapping[str, dict[str, float]]:
        return self._definition_scores

    def _passes_into(self, path: str) -> Passes:
        passes = self.passes_cache.get(path)
        if passes is None:
            passes = self.passes_cache[path] = Passes(path)
            sources = self.incoming.get(path, ())
            rows = self.rows
            passes.fill(list(map(self.index.__getitem__, sources)), [rows[source].passes[path] for source in sources])
        return passes

    def edge_arrays(self) -> tuple[list[int], list[int], list[float]]:
        """The kept edges as (source positions, target positions, weights); made once (the ranking and the
        stored ranking both read them), whole rows at a time."""
        if self._edge_arrays is None:
            sources: list[int] = []
            targets: list[int] = []
            weights: list[float] = []
            for position in range(len(self.nodes)):
                self._add_row(position, sources, targets, weights)
            self._edge_arrays = sources, targets, weights
        return self._edge_arrays

    def _add_row(self, position: int, sources: list[int], targets: list[int], weights: list[float]) -> None:
        kept = self.rows[self.nodes[position]].kept
        if kept:
            kept_targets, kept_weights = zip(*kept, strict=True)
            sources.extend(itertools.repeat(position, len(kept)))
            targets.extend(map(self.index.__getitem__, kept_targets))
            weights.extend(kept_weights)

    def edge_arrays_after(self, previous: ReferenceGraph, changed_rows: Iterable[str]) -> None:
        """Make the edge arrays from `previous`'s (the same nodes) with the `changed_rows` made again: the other
        rows' edges are copied a slice at a time, in the same order as `edge_arrays` makes them, so the ranks
        computed on them equal a build's bit for bit (a row at a time took 0.3 s at 100,000 files)."""
        if previous._edge_arrays is None or previous.nodes is not self.nodes:
            return
        old_sources, old_targets, old_weights = previous._edge_arrays
        sources: list[int] = []
        targets: list[int] = []
        weights: list[float] = []
        copied = 0  # old edges up to here are in the new arrays, or replaced
        for position in sorted({self.index[path] for path in changed_rows}):
            start = bisect.bisect_left(old_sources, position, copied)
            end = bisect.bisect_left(old_sources, position + 1, start)
            sources += old_sources[copied:start]
            targets += old_targets[copied:start]
            weights += old_weights[copied:start]
            self._add_row(position, sources, targets, weights)
            copied = end
        sources += old_sources[copied:]
        targets += old_targets[copied:]
        weights += old_weights[copied:]
        self._edge_arrays = sources, targets, weights

    def pagerank(
        self,
        personalization: Mapping[str, float] | None = None,
        alpha: float = DAMPING,
        tolerance: float = TOLERANCE,
        max_iterations: int = MAX_ITERATIONS,
    ) -> dict[str, float]:
        """PageRank over the pruned, weighted graph; teleport and dangling mass follow the personalization."""
        return ranks_by_node(self.nodes, self.pagerank_vector(personalization, alpha, tolerance, max_iterations))

    def pagerank_vector(
        self,
        personalization: Mapping[str, float] | None = None,
        alpha: float = DAMPING,
        tolerance: float = TOLERANCE,
        max_iterations: int = MAX_ITERATIONS,
    ) -> Any:
        """`pagerank` in node order (numpy)."""
        if self._matrix is None:
            self._matrix = transition_matrix(len(self.nodes), *self.edge_arrays())
        return rank_vector(len(self.nodes), self.index, self._matrix, personalization, alpha, tolerance, max_iterations)


def reference_graph(snapshot: Snapshot) -> ReferenceGraph:
    return snapshot.derived("reference_graph", _reference_graph)


def base_pagerank(snapshot: Snapshot) -> Mapping[str, float]:
    """PageRank of the reference graph without personalization, cached per snapshot."""
    return reference_graph(snapshot).base_ranks


def _reference_graph(snapshot: Snapshot) -> ReferenceGraph:
    links = file_links(snapshot)
    inputs = graph_inputs(snapshot)
    changes = inputs.changes
    anchor = changes.anchor if changes is not None else None
    if changes is not None:
        changes.anchor = None  # built: nothing needs the anchor any more
    if changes is None or anchor is None or changes.paths_changed or not anchor.has_derived("reference_graph"):
        stored = _stored_graph(snapshot) if changes is None else None
        return stored if stored is not None else _built_graph(snapshot, links, inputs.tables)
    return _updated_graph(snapshot, links, inputs, reference_graph(anchor), file_links(anchor), changes)


def _stored_graph(snapshot: Snapshot) -> ReferenceGraph | None:
    """The graph as an earlier process stored it for these files (graph_cache), or None."""
    state = graph_state(snapshot)
    parts = state.take("nodes", "rows", "incoming", "factors") if state is not None else None
    if parts is None:
        return None
    nodes, rows, incoming, factors = parts
    kept_tests = state.take("tests") if state is not None else None  # judging every path again costs 0.3 s at 100k
    tests = frozenset(kept_tests[0]) if kept_tests is not None else None
    try:
        return ReferenceGraph(
            nodes, {path: Row(*row) for path, row in rows.items()}, incoming, factors, len(nodes), tests
        )
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        log.warning("stored graph of %s unreadable (%s); building it", snapshot.root, error)
        return None


def _built_graph(snapshot: Snapshot, links: Mapping[str, FileLinks], tables: NameTables) -> ReferenceGraph:
    nodes = sorted(snapshot.files)
    factors: dict[str, float | None] = {}
    factor = factor_lookup(factors, tables, len(nodes))
    tests = test_files(nodes)
    rows = {node: file_row(links[node], factor, unreachable_from(node, tests)) for node in nodes}
    incoming: dict[str, list[str]] = defaultdict(list)  # not setdefault(target, []): a new list for each edge
    for node in nodes:
        for target in rows[node].passes:
            incoming[target].append(node)
    return ReferenceGraph(
        nodes, rows, {target: tuple(sources) for target, sources in incoming.items()}, factors, len(nodes), tests
    )


def _updated_graph(
    snapshot: Snapshot,
    links: Mapping[str, FileLinks],
    inputs: GraphInputs,
    previous: ReferenceGraph,
    previous_links: Mapping[str, FileLinks],
    changes: GraphChanges,
) -> ReferenceGraph:
    """`previous` (the anchor's graph, same files) with the rows of files whose links or multipliers changed."""
    tables = inputs.tables
    file_count = len(snapshot.files)
    factors = dict(previous.factors)
    if changes.relinked is not None:  # the links were updated from `previous_links`: only these were made again
        redo = set(changes.relinked)
    else:
        redo = {path for path, file_links_ in links.items() if previous_links.get(path) is not file_links_}
    for name in changes.names | changes.referenced:
        if name in factors and factors[name] != name_factor(name, tables, file_count):
            del factors[name]
            redo.update(tables.referencers.get(name, ()))  # the files that can use it: by its name...
            redo.update(inputs.dependents.get(name, ()))  # ...or under an alias
    factor = factor_lookup(factors, tables, file_count)
    tests = previous.tests
    rows = dict(previous.rows)
    incoming = dict(previous.incoming)
    touched: dict[str, set[str]] = {}  # file -> the files whose links into it changed
    for path in sorted(redo):
        old_targets = set(rows[path].passes)
        row = rows[path] = file_row(links[path], factor, unreachable_from(path, tests))
        new_targets = set(row.passes)
        for target in old_targets | new_targets:
            touched.setdefault(target, set()).add(path)
        for target in old_targets - new_targets:
            incoming[target] = tuple(source for source in incoming[target] if source != path)
            if not incoming[target]:
                del incoming[target]
        for target in new_targets - old_targets:
            into = list(incoming.get(target, ()))
            bisect.insort(into, path)
            incoming[target] = tuple(into)
    graph = ReferenceGraph(previous.nodes, rows, incoming, factors, file_count, tests, previous.index)
    graph.edge_arrays_after(previous, redo)
    graph.out_weights_after(previous, redo)
    passes_cache = dict(previous.passes_cache)
    for target, changed_sources in touched.items():
        passes = passes_cache.get(target)
        if passes is not None:
            passes = passes_cache[target] = passes.copy()
            for source in sorted(changed_sources):
                passes.replace(graph.index[source], rows[source].passes.get(target, ()))
    graph.passes_cache = passes_cache
    return graph
