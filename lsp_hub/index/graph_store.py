"""Graphs kept in the index cache, under the fingerprint of the files they were computed on (and of the graph code):

- the ranking (base ranks, kept edges, the definition scores computed): a later process with the same files
  answers a repo map from it without building any graph (`ranking`, `StoredRanking`, `save_ranking`);
- each file's contribution (its names in the name tables, its resolved imports, its links, its row of weighted
  edges and what they pass on): a later process with the same files assembles its graphs from them instead of
  resolving every use again, and updates them after a change like graphs it built itself (`stored_graphs`,
  `save_graphs`).

The store is only an accelerator: a missing, outdated or damaged entry means the graphs are built as usual.
"""

from __future__ import annotations

import logging
import marshal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lsp_hub.index.graph_cache import (
    RANKING_FORMAT,
    RANKING_KEY,
    STATE_FORMAT,
    STATE_KEY,
    graph_state,
    storable,
    stored,
)
from lsp_hub.index.graph_inputs import GraphInputs, graph_inputs
from lsp_hub.index.layered_table import flat_table
from lsp_hub.index.links import FileLinks, file_links
from lsp_hub.index.pagerank import best_positions, rank_vector, ranks_by_node, transition_matrix
from lsp_hub.index.ranking import ReferenceGraph, reference_graph
from lsp_hub.index.workspace import Snapshot

log = logging.getLogger(__name__)

# How many of the best-ranked nodes a stored ranking lists in order: a 1,024-token map looks at the best 512, and a
# larger budget or focus files at four or sixteen times that; a map wanting more sorts the ranks itself.
STORED_BEST_NODES = 8192

__all__ = [
    "RANKING_KEY",
    "STATE_KEY",
    "Ranking",
    "StoredGraphs",
    "StoredRanking",
    "ranking",
    "save_graphs",
    "save_ranking",
    "stored_graphs",
]


class StoredRanking:
    """The ranking of a snapshot as a previous process kept it (`save_ranking`). A file whose definition scores
    were not kept makes it build the graph after all."""

    def __init__(self, snapshot: Snapshot, stored: dict[str, Any]) -> None:
        self.snapshot = snapshot
        self.nodes: list[str] = stored["nodes"]
        self._index: dict[str, int] | None = None
        self._ranks: list[float] = stored["ranks"]
        if len(self._ranks) != len(self.nodes):
            raise ValueError("a stored ranking with ranks for other nodes")
        # The best-ranked nodes' positions, best first (`best_positions`): a map takes its files from them without
        # importing numpy or looking at every rank. Absent from rankings stored before they were kept.
        self.best_first: list[int] | None = stored.get("best")
        if self.best_first is not None and not all(0 <= position < len(self.nodes) for position in self.best_first):
            raise ValueError("a stored ranking whose best nodes are not among its nodes")
        self._base_ranks: dict[str, float] | None = None
        self._edges: tuple[list[int], list[int], list[float]] = stored["edges"]
        self._scores: dict[str, dict[str, float]] = stored["scores"]
        self._matrix: Any = None

    @property
    def index(self) -> dict[str, int]:
        """Each node's position, made when first asked (a map from the best nodes needs none: 20 ms at 100,000)."""
        if self._index is None:
            self._index = {node: position for position, node in enumerate(self.nodes)}
        return self._index

    @property
    def base_ranks(self) -> dict[str, float]:
        if self._base_ranks is None:
            self._base_ranks = dict(zip(self.nodes, self._ranks, strict=True))
        return self._base_ranks

    @property
    def base_vector(self) -> list[float]:
        """`base_ranks` in node order: the stored list (a warm map of a small repository imports no numpy)."""
        return self._ranks

    def definition_scores(self, path: str) -> dict[str, float]:
        scores = self._scores.get(path)
        if scores is None:
            return reference_graph(self.snapshot).definition_scores(path)
        return scores

    def stored_scores(self) -> Mapping[str, dict[str, float]]:
        """The definition scores the earlier process kept."""
        return self._scores

    def pagerank(self, personalization: Mapping[str, float] | None = None) -> dict[str, float]:
        return ranks_by_node(self.nodes, self.pagerank_vector(personalization))

    def pagerank_vector(self, personalization: Mapping[str, float] | None = None) -> Any:
        if self._matrix is None:
            self._matrix = transition_matrix(len(self.nodes), *self._edges)
        return rank_vector(len(self.nodes), self.index, self._matrix, personalization)


Ranking = ReferenceGraph | StoredRanking


def ranking(snapshot: Snapshot) -> Ranking:
    """The snapshot's ranking: kept by an earlier process for the same files, else the reference graph."""
    return snapshot.derived("ranking", _ranking)


def _ranking(snapshot: Snapshot) -> Ranking:
    if snapshot.anchor is not None or snapshot.is_derived("reference_graph"):
        return reference_graph(snapshot)  # built here, or updated from graphs this process has: no need to load
    try:
        kept = stored(snapshot, RANKING_KEY, RANKING_FORMAT)
        return StoredRanking(snapshot, kept) if kept is not None else reference_graph(snapshot)
    except (KeyError, TypeError, ValueError):  # a damaged entry: build the graph, which stores it again
        return reference_graph(snapshot)


def drop_stored_ranking(snapshot: Snapshot) -> None:
    """Once the snapshot's reference graph is built, let a stored ranking go: the graph answers the same (its ranks
    and scores are what the ranking stored), and a daemon would otherwise hold both (ranks, edges and positions of
    every file twice)."""
    if (
        snapshot.is_derived("reference_graph")
        and snapshot.is_derived("ranking")
        and isinstance(ranking(snapshot), StoredRanking)
    ):
        snapshot.forget("ranking")


def save_ranking(snapshot: Snapshot, min_interval: float = 0.0) -> None:
    """Keep the snapshot's ranking for the next process, when its files are as on disk and the reference graph
    computed something the stored ranking lacks; not again within `min_interval` seconds of the last save (a hub
    whose files change would otherwise hash every path and store every rank before answering each map)."""
    store = storable(snapshot)
    if store is None or not snapshot.is_derived("reference_graph"):
        return
    graph = reference_graph(snapshot)
    if graph.saved_scores == len(graph.computed_scores()) or store.seconds_since_saved(RANKING_KEY) < min_interval:
        return
    # A stored ranking that lacked some files' scores had the graph built for them: keep the scores it had too,
    # or each later map would miss those it dropped, build the graph for them and drop the others in turn.
    scores = dict(graph.computed_scores())
    earlier = ranking(snapshot) if snapshot.is_derived("ranking") else None
    if isinstance(earlier, StoredRanking):
        scores = {**earlier.stored_scores(), **scores}
    stored = {
        "format": RANKING_FORMAT,
        "nodes": graph.nodes,
        "ranks": [graph.base_ranks[node] for node in graph.nodes],
        "best": best_positions(graph.nodes, graph.base_vector, STORED_BEST_NODES),
        "edges": graph.edge_arrays(),
        "scores": scores,
    }
    store.save_graph(RANKING_KEY, snapshot.fingerprint(), marshal.dumps(stored))
    graph.saved_scores = len(graph.computed_scores())


@dataclass(frozen=True, slots=True)
class StoredGraphs:
    inputs: GraphInputs
    links: Mapping[str, FileLinks]
    graph: ReferenceGraph


def stored_graphs(snapshot: Snapshot) -> StoredGraphs | None:
    """The graphs of these files assembled from what an earlier process kept (graph_cache), or None when it kept
    none: the same objects the builders return."""
    if graph_state(snapshot) is None:
        return None
    return snapshot.derived(
        "stored_graphs",
        lambda snapshot: StoredGraphs(graph_inputs(snapshot), file_links(snapshot), reference_graph(snapshot)),
    )


def save_graphs(snapshot: Snapshot, min_interval: float = 0.0) -> None:
    """Keep the snapshot's graphs for the next process, when they are built and its files are as on disk; not
    again within `min_interval` seconds of the last save (a hub whose files an agent rewrites would otherwise
    store ten megabytes after every map)."""
    write = graphs_to_save(snapshot, min_interval)
    if write is not None:
        write()


def graphs_to_save(snapshot: Snapshot, min_interval: float = 0.0) -> Callable[[], None] | None:
    """`save_graphs` in two steps: the state serialized now, and the function that stores it (None: nothing to
    store). The storing holds Python's lock only briefly (SQLite, the checksum), so a thread can do it beside other
    work; serializing holds it throughout, and in a thread it only stretched the work beside it by as much."""
    store = storable(snapshot)
    if store is None or not snapshot.is_derived("reference_graph"):
        return None
    fingerprint = snapshot.fingerprint()
    if store.graph_saved(STATE_KEY) == fingerprint or store.seconds_since_saved(STATE_KEY) < min_interval:
        return None
    data = marshal.dumps(_shared_state(snapshot))
    return lambda: store.save_graph(STATE_KEY, fingerprint, data)


def _shared_state(snapshot: Snapshot) -> dict[str, Any]:
    """The graph state to store, the resolved imports and the names they bind with each distinct name, path and
    tuple of paths one object: marshal writes an object met again as a reference to the first, so the process
    loading the state holds each once too. The resolver makes a tuple of its own for each import's files and each
    imported name's; the other parts share theirs as built (the name tables' one-path tuples: `table_parts`), and
    are stored as they are, not copied: the copy is transient memory on top of the building process's peak. On a
    20,000-file monorepo a daemon holding the loaded graphs took 179 MB unshared, 149 MB shared."""
    inputs = graph_inputs(snapshot)
    graph = reference_graph(snapshot)
    tables = inputs.tables
    texts: dict[str, str] = {node: node for node in graph.nodes}
    groups: dict[tuple[str, ...], tuple[str, ...]] = {}
    text = texts.setdefault
    known = groups.get

    def made(group: tuple[str, ...]) -> tuple[str, ...]:
        found = groups[group] = tuple([text(path, path) for path in group])
        return found

    def paths(group: tuple[str, ...]) -> tuple[str, ...]:
        found = known(group)  # not `known(group) or made(group)`: most imports bind no alias, and `()` is falsy
        return found if found is not None else made(group)

    for files in tables.definers.values():  # most groups the resolver makes are a name's definers: share those
        if len(files) == 1:
            groups.setdefault(files, files)
    return {
        "format": STATE_FORMAT,
        "nodes": graph.nodes,
        "tables": (flat_table(tables.definers), flat_table(tables.referencers), tables.member_definers),
        "dependents": inputs.dependents,
        "resolved": {
            path: [
                (
                    text(entry.module, entry.module),
                    paths(entry.files),
                    tuple([(text(name, name), paths(files)) for name, files in entry.names]),
                    paths(entry.aliases),
                )
                for entry in entries
            ]
            for path, entries in inputs.resolved.items()
        },
        "bindings": {
            path: {text(name, name): paths(files) for name, files in bound.items()}
            for path, bound in inputs.bindings.items()
        },
        "renames": inputs.renames,
        "links": file_links(snapshot),
        "rows": {path: (row.out_weight, row.kept, row.passes) for path, row in graph.rows.items()},
        "incoming": graph.incoming,
        "factors": graph.factors,
        "tests": sorted(graph.tests),
    }
