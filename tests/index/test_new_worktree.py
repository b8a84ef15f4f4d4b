"""A new worktree of an indexed tree (a copy at another path, the same per-user cache) answers from what the first
root kept: its graphs are not stored again, and a ranking completed by one process keeps what it had for the next."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from lsp_hub.index.api import repo_map
from lsp_hub.index.background import keep_graphs
from lsp_hub.index.graph_store import StoredRanking, ranking, save_ranking
from lsp_hub.index.ranking import reference_graph
from lsp_hub.index.workspace import WorkspaceIndex


def _copy(root: Path, name: str) -> Path:
    target = root.parent / name
    shutil.copytree(root, target)
    return target


def test_graphs_found_in_the_shared_records_are_not_stored_again(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    repo_map(first)
    keep_graphs(first)
    first.close()

    copy = WorkspaceIndex(_copy(root, "pyapp-worktree"))
    copy.build()
    assert copy.store is not None
    saved: list[str] = []
    copy.store.save_graph = lambda key, fingerprint, data: saved.append(key)  # type: ignore[method-assign]
    snapshot = copy.snapshot()
    assert reference_graph(snapshot).nodes  # assembled from the first root's graphs
    keep_graphs(copy)
    assert saved == []
    copy.close()


def test_a_ranking_completed_by_a_later_process_keeps_the_scores_it_had(copy_repo: Callable[[str], Path]) -> None:
    """A stored ranking lacking a file's scores builds the graph for them; what it stores then must hold the scores
    it had too, or the next process lacks those and builds the graph again (each map dropping the other's)."""
    root = copy_repo("pyapp")

    def one_process(path: str) -> tuple[dict[str, float], bool]:
        """`path`'s definition scores, and whether the process had to build the graph for them."""
        index = WorkspaceIndex(root)
        index.build()
        snapshot = index.snapshot()
        scores = ranking(snapshot).definition_scores(path)
        built = snapshot.is_derived("reference_graph")
        save_ranking(snapshot)
        index.close()
        return scores, built

    models, built = one_process("pyapp/models.py")
    assert models and built  # nothing stored yet
    _service, built = one_process("pyapp/service.py")
    assert built  # the stored ranking lacked service.py's scores
    again, built = one_process("pyapp/models.py")
    assert not built and again == models
    index = WorkspaceIndex(root)
    index.build()
    assert isinstance(ranking(index.snapshot()), StoredRanking)
    index.close()
