"""Work the index does beside or after its answers, off the query's path: graphs prepared for the next change and
kept in the cache for the next process, and relevance weights fitted to the repository's history. The hub runs it
in idle time (`proxy/index_shared.py`), the CLI beside a map (`cli.py`)."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

from lsp_hub.index.workspace import WorkspaceIndex

log = logging.getLogger(__name__)

GRAPH_SAVE_INTERVAL = 30.0  # seconds between two saves of a hub's graphs to the cache


def prepare_graphs(index: WorkspaceIndex) -> None:
    """Build the current snapshot's graphs if they are not there (a map answered from a stored ranking has none):
    the next change then updates them instead of building them while a query waits."""
    from lsp_hub.index.graph_store import drop_stored_ranking, save_graphs
    from lsp_hub.index.ranking import reference_graph
    from lsp_hub.index.walk import IndexingCancelled

    with contextlib.suppress(IndexingCancelled):
        snapshot = index.snapshot()
        ranks = reference_graph(snapshot).base_ranks
        drop_stored_ranking(snapshot)
        save_graphs(snapshot, min_interval=GRAPH_SAVE_INTERVAL)  # for the next hub started on these files
        log.debug("graphs ready for %d files", len(ranks))


def tune_relevance(index: WorkspaceIndex) -> dict[str, Any]:
    """Fit relevantFiles' weights to the repository's own recent history (idle time; a few seconds at most, once
    per HEAD): {weights: "repository" | "default", queries, values}."""
    from lsp_hub.index import relevance_tuning
    from lsp_hub.index.walk import IndexingCancelled

    try:
        return relevance_tuning.summary(relevance_tuning.tune(index.snapshot()))
    except IndexingCancelled:
        return {"weights": "default", "queries": 0}


def keep_graphs_beside(index: WorkspaceIndex) -> threading.Thread | None:
    """Start storing the current snapshot's graphs in the cache when this process builds them (None when it
    answers from a stored ranking and builds nothing), in a thread beside what the caller does next: a map's
    ranking and rendering run while SQLite writes (one transaction: a process ended mid-save leaves the previous
    entry). The graphs are built here, before the thread starts. Join the thread before exit."""
    from lsp_hub.index.graph_store import ranking, save_graphs
    from lsp_hub.index.ranking import ReferenceGraph

    snapshot = index.snapshot()
    if not isinstance(ranking(snapshot), ReferenceGraph):
        return None
    snapshot.fingerprint()  # derived under the snapshot's lock: not in the thread, where it would wait on the map's
    saving = threading.Thread(target=save_graphs, args=(snapshot,), name="index-graph-save")
    saving.start()
    return saving


def keep_graphs(index: WorkspaceIndex) -> None:
    """Store the current snapshot's graphs in the cache if this process built them (nothing to do otherwise)."""
    from lsp_hub.index.graph_store import save_graphs

    save_graphs(index.snapshot())
