"""PageRank over a graph kept as edge arrays (`ranking.ReferenceGraph`, `graph_store.StoredRanking`).

networkx's power iteration (`_pagerank_scipy`: damping 0.85, dangling and teleport mass following the
personalization, L1 tolerance N * 1e-6), the sparse product done by numpy's bincount: networkx would rebuild a
scipy matrix from a DiGraph on every call, which costs more than the iteration, and importing networkx and scipy
costs more than a warm map; tests compare the two. Ranks come as a vector in node order: a map picks its best files
from it without making a dictionary of every file (0.1 s at 100,000 files).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DAMPING = 0.85
TOLERANCE = 1.0e-6
MAX_ITERATIONS = 100


def transition_matrix(size: int, sources: list[int], targets: list[int], weights: list[float]) -> Any:
    """The kept edges with each row normalised to sum 1 (as networkx normalises them), and the dangling rows. Kept
    as edge arrays: numpy's bincount does the sparse product, so scipy is not imported for it."""
    import numpy as np

    source_array = np.array(sources, dtype=np.intp)
    weight_array = np.array(weights, dtype=float)
    sums = np.bincount(source_array, weights=weight_array, minlength=size)
    normalised = weight_array / sums[source_array] if len(weight_array) else weight_array
    return source_array, np.array(targets, dtype=np.intp), normalised, np.flatnonzero(sums == 0)


def rank_vector(
    size: int,
    index: Mapping[str, int],
    transition: Any,
    personalization: Mapping[str, float] | None,
    alpha: float = DAMPING,
    tolerance: float = TOLERANCE,
    max_iterations: int = MAX_ITERATIONS,
) -> Any:
    """The ranks of nodes 0..size-1 (a numpy vector, empty for no nodes); `index` places the personalization's
    nodes."""
    import numpy as np

    if size == 0:
        return np.zeros(0)
    teleport = np.full(size, 1.0 / size)
    if personalization:
        vector = np.zeros(size)
        for node, value in personalization.items():
            position = index.get(node)
            if position is not None:
                vector[position] = max(0.0, float(value))
        if vector.sum() > 0:
            teleport = vector / vector.sum()
    sources, targets, weights, dangling = transition
    ranks = np.full(size, 1.0 / size)
    for _iteration in range(max_iterations):
        previous = ranks
        flow = np.bincount(targets, weights=ranks[sources] * weights, minlength=size)  # ranks @ the matrix
        ranks = alpha * (flow + ranks[dangling].sum() * teleport) + (1 - alpha) * teleport
        if np.absolute(ranks - previous).sum() < size * tolerance:
            break
    return ranks


def ranks_by_node(nodes: list[str], vector: Any) -> dict[str, float]:
    return dict(zip(nodes, vector.tolist(), strict=True))


def best_positions(nodes: list[str], vector: Any, count: int) -> list[int]:
    """The positions of the `count` best-ranked nodes, by rank then path: numpy finds the count-th rank without
    sorting the rest (100,000 files took 0.2 s sorted); a small graph is sorted without numpy (a warm map of a small
    repository imports none)."""
    if len(nodes) <= count:
        ranked = enumerate(zip(nodes, vector, strict=True))
        ordered = sorted((-float(value), node, position) for position, (node, value) in ranked)
        return [position for _rank, _node, position in ordered]
    import numpy as np

    values = np.asarray(vector, dtype=float)
    threshold = np.partition(values, len(nodes) - count)[len(nodes) - count]
    positions = np.flatnonzero(values >= threshold).tolist()  # ties at the threshold too: sorted by path below
    paths = [nodes[position] for position in positions]
    ordered = sorted(zip((-values[positions]).tolist(), paths, positions, strict=True))
    return [position for _rank, _node, position in ordered[:count]]
