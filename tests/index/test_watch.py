"""A watched index sees files created, changed and deleted on disk without walking the tree; a watcher that cannot
be set up says why and the index is walked as before."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from index_helpers import write

from lsp_hub.index import api
from lsp_hub.index.ranking import reference_graph
from lsp_hub.index.skip_reasons import REASON_TOO_LARGE
from lsp_hub.index.watch import IndexWatcher
from lsp_hub.index.workspace import WorkspaceIndex

SETTLE_SECONDS = 10.0  # generous for a loaded machine; a watcher that works takes a fraction of a second


def _eventually(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def _names(index: WorkspaceIndex, path: str) -> list[str]:
    record = index.snapshot().files.get(path)
    return [] if record is None else [definition[0] for definition in record.definitions]


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[WorkspaceIndex, IndexWatcher]]:
    root = tmp_path / "project"
    write(root, "pkg/base.py", "def base():\n    return 1\n")
    write(root, ".gitignore", "generated/\n")
    index = WorkspaceIndex(root)
    watcher = IndexWatcher(index)
    assert watcher.start(), watcher.reason
    assert watcher.ensure_fresh()["walked"]  # once: what changed before the watch began
    yield index, watcher
    watcher.stop()
    index.close()


def test_created_changed_and_deleted_files_are_seen_without_a_walk(
        watched: tuple[WorkspaceIndex, IndexWatcher]) -> None:
    index, watcher = watched
    walks = index.walk_count
    write(index.root, "pkg/fresh.py", "def fresh_function():\n    pass\n")
    assert _eventually(lambda: _names(index, "pkg/fresh.py") == ["fresh_function"])
    write(index.root, "pkg/base.py", "def base():\n    return 1\n\ndef added_later():\n    pass\n")
    assert _eventually(lambda: _names(index, "pkg/base.py") == ["base", "added_later"])
    (index.root / "pkg/fresh.py").unlink()
    assert _eventually(lambda: "pkg/fresh.py" not in index.snapshot().files)
    for _query in range(3):
        assert watcher.ensure_fresh()["walked"] is False
    assert index.walk_count == walks
    assert watcher.status() == {"watching": True, "reason": None, "appliedChanges": 3}


def test_the_walks_rules_hold_for_watched_files(watched: tuple[WorkspaceIndex, IndexWatcher]) -> None:
    index, watcher = watched
    write(index.root, "generated/out.py", "def ignored_by_gitignore(): ...\n")
    write(index.root, "node_modules/lib/index.js", "function ignoredDirectory() {}\n")
    write(index.root, "pkg/huge.py", "x = 1\n" * (index.max_file_size // 6 + 10))
    write(index.root, "pkg/marker.py", "def marker(): ...\n")  # seen last: the others had their chance
    assert _eventually(lambda: "pkg/marker.py" in index.snapshot().files)
    time.sleep(0.3)
    files = index.snapshot().files
    assert not {"generated/out.py", "node_modules/lib/index.js", "pkg/huge.py"} & set(files)
    assert ("pkg/huge.py", REASON_TOO_LARGE) in index.snapshot().skipped
    assert watcher.ensure_fresh()["walked"] is False


def test_directories_moved_in_and_removed(watched: tuple[WorkspaceIndex, IndexWatcher], tmp_path: Path) -> None:
    index, watcher = watched
    outside = tmp_path / "elsewhere" / "library"
    for number in range(5):
        write(outside, f"module_{number}.py", f"def library_{number}(): ...\n")
    shutil.move(str(outside), str(index.root / "library"))
    expected = {f"library/module_{number}.py" for number in range(5)}
    assert _eventually(lambda: expected <= set(index.snapshot().files))
    shutil.rmtree(index.root / "library")
    assert _eventually(lambda: not expected & set(index.snapshot().files))
    assert watcher.ensure_fresh()["walked"] is False


def test_many_changes_at_once_are_applied_together(watched: tuple[WorkspaceIndex, IndexWatcher]) -> None:
    index, watcher = watched
    versions_before = index.snapshot().version
    for number in range(200):
        write(index.root, f"bulk/file_{number}.py", f"def bulk_{number}(): ...\n")
    expected = {f"bulk/file_{number}.py" for number in range(200)}
    assert _eventually(lambda: expected <= set(index.snapshot().files))
    assert index.snapshot().version - versions_before < 50  # bursts, not a snapshot per file
    assert watcher.ensure_fresh()["walked"] is False


def test_an_ignore_file_change_walks_once(watched: tuple[WorkspaceIndex, IndexWatcher]) -> None:
    index, watcher = watched
    write(index.root, "generated/now_wanted.py", "def now_wanted(): ...\n")
    write(index.root, ".gitignore", "build/\n")
    assert _eventually(lambda: watcher._walk_needed)
    assert watcher.ensure_fresh()["walked"] is True
    assert "generated/now_wanted.py" in index.snapshot().files
    assert watcher.ensure_fresh()["walked"] is False


def test_a_watcher_that_cannot_start_falls_back_to_walking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import watchfiles

    def refuse(*_arguments: object, **_options: object) -> Iterator[set[tuple[object, str]]]:
        raise OSError(28, "inotify watch limit reached")
        yield set()

    monkeypatch.setattr(watchfiles, "watch", refuse)
    write(tmp_path / "project", "a.py", "def a(): ...\n")
    index = WorkspaceIndex(tmp_path / "project")
    watcher = IndexWatcher(index)
    assert watcher.start() is False
    assert watcher.reason is not None and "inotify watch limit reached" in watcher.reason
    for expected_walks in (1, 2):
        result = watcher.ensure_fresh()
        assert result["walked"] is True and result["watching"] is False
        assert index.walk_count == expected_walks
    write(index.root, "b.py", "def b(): ...\n")
    watcher.ensure_fresh()
    assert "b.py" in index.snapshot().files
    index.close()


def test_graphs_built_before_a_burst_are_updated_after_it_and_none_are_built_unasked(
    watched: tuple[WorkspaceIndex, IndexWatcher],
) -> None:
    index, watcher = watched
    root = index.root
    write(root, "pkg/user.py", "from pkg.base import base\n\ndef use():\n    return base()\n")
    assert _eventually(lambda: "pkg/user.py" in index.snapshot().files)
    time.sleep(0.3)  # past the burst's own round
    assert not index.snapshot().is_derived("reference_graph")  # nobody asked for graph answers: none built

    before = api.repo_map(index, {})
    assert "pkg/user.py" in before["text"]
    write(root, "pkg/other.py", "from pkg.base import base\n\ndef other():\n    return base()\n")
    assert _eventually(
        lambda: "pkg/other.py" in index.snapshot().files and index.snapshot().is_derived("reference_graph")
    )
    updated = reference_graph(index.snapshot())
    assert "pkg/other.py" in updated.base_ranks  # the graph of the files as changed, made before any query

    watcher.keep_graphs = False
    write(root, "pkg/third.py", "def third():\n    return 3\n")
    assert _eventually(lambda: "pkg/third.py" in index.snapshot().files)
    time.sleep(0.3)
    assert not index.snapshot().is_derived("reference_graph")
