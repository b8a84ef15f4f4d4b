"""Work the index does beside or after its answers, off the query's path: graphs prepared for the next change and
kept in the cache for the next process, and relevance weights fitted to the repository's history. The hub runs it
in idle time (`proxy/index_shared.py`), the CLI beside a map (`cli.py`)."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from lsp_hub.index import pending_save
from lsp_hub.index.workspace import WorkspaceIndex

log = logging.getLogger(__name__)

GRAPH_SAVE_INTERVAL = 30.0  # seconds between two saves of a hub's graphs to the cache
# Container allocations between two collections of the youngest generation (Python's default: 700).
YOUNG_COLLECTION_THRESHOLD = 50_000


def collect_less_often() -> None:
    """For a process that keeps indexes (a hub): collect the youngest generation less often. A graph update after
    1,000 files changed allocates some hundred thousand containers, and at the default threshold the collections
    they set off took 60-85 ms of a 330-400 ms query at 100,000 files (measured: none at this threshold). What
    the index makes is freed by reference counting; cycles are rare, and still collected."""
    first, *older = gc.get_threshold()
    if first < YOUNG_COLLECTION_THRESHOLD:
        gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *older)


def prepare_graphs(index: WorkspaceIndex) -> None:
    """Build the current snapshot's graphs if they are not there (a map answered from a stored ranking has none):
    the next change then updates them instead of building them while a query waits."""
    from lsp_hub.index.graph_store import drop_stored_ranking, save_graphs, save_ranking
    from lsp_hub.index.ranking import reference_graph
    from lsp_hub.index.walk import IndexingCancelled

    with contextlib.suppress(IndexingCancelled):
        snapshot = index.snapshot()
        ranks = reference_graph(snapshot).base_ranks
        # For the next process started on these files: the ranking a one-shot map answers from, and the graphs a
        # hub updates. Here rather than after each map: storing the ranking cost a query 0.45 s at 100,000 files.
        save_ranking(snapshot, min_interval=GRAPH_SAVE_INTERVAL)
        drop_stored_ranking(snapshot)
        save_graphs(snapshot, min_interval=GRAPH_SAVE_INTERVAL)
        log.debug("graphs ready for %d files", len(ranks))


def keep_graphs_current(index: WorkspaceIndex) -> None:
    """Update the graphs for files just changed on disk, when graphs were built before them (a client asks for
    graph answers here): the watcher calls it once it has applied a burst, so a query that comes after finds them
    updated (a checkout of 1,000 files at 100,000 costs an update 0.2-0.3 s), and one that comes during it waits for
    this update rather than making its own. Nothing is built for a workspace nobody asked graph answers of."""
    from lsp_hub.index.ranking import reference_graph
    from lsp_hub.index.walk import IndexingCancelled

    snapshot = index.snapshot()
    if snapshot.anchor is None:
        return
    with contextlib.suppress(IndexingCancelled):
        reference_graph(snapshot).base_vector  # noqa: B018 - derived, and kept by the snapshot


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
    entry). The graphs are built and serialized here, before the thread starts: serializing holds Python's lock, and
    in the thread it only took it from the map (whose 0.1 s stretched to 0.2-0.3 s on the standard library; map and
    save together now take 235 ms against 251 ms, median of 12 alternated). Join the thread before exit."""
    from lsp_hub.index.graph_store import graphs_to_save, ranking
    from lsp_hub.index.ranking import ReferenceGraph

    snapshot = index.snapshot()
    if not isinstance(ranking(snapshot), ReferenceGraph):
        return None
    write = graphs_to_save(snapshot)
    if write is None:
        return None
    saving = threading.Thread(target=write, name="index-graph-save")
    saving.start()
    return saving


def keep_ranking(index: WorkspaceIndex) -> None:
    """Store the current snapshot's ranking in the cache if this process built its graph (a one-shot map, after
    printing it): the next process answers the same map from it without building any graph."""
    from lsp_hub.index.graph_store import save_ranking

    save_ranking(index.snapshot())


def keep_graphs(index: WorkspaceIndex) -> None:
    """Store the current snapshot's graphs in the cache if this process built them (nothing to do otherwise)."""
    from lsp_hub.index.graph_store import save_graphs

    save_graphs(index.snapshot())


RunAfterExit = Callable[[Callable[[], None]], int | None]  # work -> the pid of the child doing it, or None


def map_then_store(
    index: WorkspaceIndex,
    arguments: dict[str, Any],
    write: Callable[[dict[str, Any]], None],
    run_after_exit: RunAfterExit | None = None,
) -> dict[str, Any]:
    """A one-shot map as `lsp-hub repomap` makes it: the map, handed to `write`, and what it built stored for the
    next process: through `run_after_exit` when given (`save_after_exit`), else in a thread beside the map and
    after it. Returns the map."""
    from lsp_hub.index import api

    hand_on = run_after_exit if index.store is not None else None
    # Graphs this run builds serve the next run (with a focus or mention too).
    saving = None if hand_on is not None else keep_graphs_beside(index)
    result = api.repo_map(index, arguments)
    try:
        write(result)
    finally:  # a reader that left early (`| head`) still leaves the next run warm
        if hand_on is None or not save_after_exit(index, hand_on):
            keep_ranking(index)
            if saving is not None:
                saving.join()
            else:
                keep_graphs(index)  # a stored ranking lacked a file's scores, and the map built the graphs after all
    return result


def save_after_exit(index: WorkspaceIndex, run_after_exit: RunAfterExit) -> bool:
    """For a one-shot process that has written its answer and is about to end: store what `keep_graphs` and
    `keep_ranking` would, through `run_after_exit` (the platform room's: a child forked to outlive this process),
    so the process ends now (the issue's "save in the background"). On the standard library, serializing the graph
    state held the answering thread 0.08-0.1 s before the map and storing the ranking 0.01-0.02 s after it; the
    hand-over takes 0.02-0.05 s (closing the databases, the fork). The save is marked in the cache directory
    (`pending_save`) until it is done, and a process reading stored graphs from that cache waits for it.

    False, and nothing done, where the caller saves as before: nothing was built to store (no cache, or a map
    answered from a stored ranking), another save is under way there, or no child could be started."""
    store = index.store
    if store is None or not index.snapshot().is_derived("reference_graph"):
        return False
    store.join_writes()  # the rows written beside the map: no thread may hold a lock across the fork
    cache_dir = store.path.parent
    if not pending_save.claim(cache_dir):
        return False
    # SQLite's connections must not cross a fork (its locks belong to the process that took them): closed here, the
    # child opens its own when it stores (and this process, should it store after all).
    store.close()
    if store.shared is not None:
        store.shared.close()
    parent = os.getpid()

    def store_and_release() -> None:
        try:
            keep_graphs(index)
            keep_ranking(index)
        finally:
            pending_save.release(cache_dir, handed_by=parent)

    child = run_after_exit(store_and_release)
    if child is None:
        pending_save.release(cache_dir)
        return False
    pending_save.hand_to(cache_dir, child)
    return True
