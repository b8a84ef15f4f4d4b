"""A tree nothing is known of is handed to the workers while its walk goes on (`walk_feed`): the index it builds is
the one a build from the whole walk makes (files, skips, markers, stored rows, what was parsed), a stop during the
walk ends the build promptly, and a pool that fails mid-walk leaves no file out."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from index_helpers import copy_beside, write

from lsp_hub.index import builder, parse_pool, walk_feed
from lsp_hub.index.parse_worker import ParseJob
from lsp_hub.index.store import IndexStore
from lsp_hub.index.walk import IndexingCancelled, WalkResult
from lsp_hub.index.worker_processes import WorkerDied
from lsp_hub.index.workspace import WorkspaceIndex

REPOSITORY = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a feed needs two workers")


def _tree(root: Path) -> None:
    for number in range(60):
        write(root, f"pkg{number % 12}/sub/module_{number}.py", f"def function_{number}():\n    return {number}\n")
    write(root, "pkg0/blob.py", b"\0binary")
    write(root, "pkg1/huge.py", "x = 1\n" * 2000)  # over the size cap below
    write(root, "pkg2/.gitignore", "ignored.py\n")
    write(root, "pkg2/ignored.py", "def hidden():\n    pass\n")
    write(root, "pkg3/go.mod", "module example.com/tree\n")
    write(root, "pkg3/notes.txt", "not source\n")
    write(root, ".hidden/secret.py", "def secret():\n    pass\n")


def _slow_walk(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The walk pauses after each directory: still going when the first batches are handed out."""
    original = builder.walk_workspace

    def walk(
        root: Path,
        max_file_size: int,
        should_stop: Callable[[], bool] | None = None,
        files_found: Callable[[int], None] | None = None,
        result: WalkResult | None = None,
    ) -> WalkResult:
        def found(count: int) -> None:
            if files_found is not None:
                files_found(count)
            time.sleep(seconds)

        return original(root, max_file_size, should_stop, found, result)

    monkeypatch.setattr(builder, "walk_workspace", walk)


def _feed_early(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Batches cut from the 10th file found, 7 at a time; returns, per build run in workers, whether its walk was
    still going when the workers began."""
    monkeypatch.setattr(walk_feed, "STREAM_AFTER_FILES", 10)
    monkeypatch.setattr(walk_feed, "STREAM_BATCH_FILES", 7)  # files found: 60, so 4 are left to the end
    walking: list[bool] = []
    original = parse_pool.ParseRunning._run_in_workers

    def run(self: parse_pool.ParseRunning, *arguments: Any) -> None:
        feed = arguments[-1]
        walking.append(feed is not None and not feed.finished)
        original(self, *arguments)

    monkeypatch.setattr(parse_pool.ParseRunning, "_run_in_workers", run)
    return walking


def _index_of(root: Path) -> dict[str, Any]:
    index = WorkspaceIndex(root, max_workers=2, in_process_limit=5, max_file_size=4096)
    index.build()
    snapshot = index.snapshot()
    found = {
        "files": {path: (r.digest, r.size, r.language, r.definition_count) for path, r in snapshot.files.items()},
        "skipped": snapshot.skipped,
        "skip_counts": dict(snapshot.skip_counts),
        "markers": dict(snapshot.markers),
        "parsed": index.parse_count,
        "pending": snapshot.pending,
    }
    index.close()
    found["rows"] = {
        path: (row.language, row.size, row.digest, row.skip_reason, row.definitions)
        for path, row in IndexStore(root).load_identities().items()
    }
    return found


def test_a_build_fed_during_its_walk_equals_one_from_the_whole_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = tmp_path / "first"
    _tree(first)
    _index_of(first)  # the shared records hold its files now
    for name in ("whole", "fed"):
        copy = copy_beside(first, name)
        # Content no checkout had (each copy its own, or the first build's parse would serve the second).
        write(copy, "pkg4/sub/module_4.py", f"def changed():\n    return {name.ljust(5)!r}\n")
        (copy / "pkg5/sub/module_5.py").unlink()
    whole = _index_of(tmp_path / "whole")
    walking = _feed_early(monkeypatch)
    _slow_walk(monkeypatch, 0.01)
    fed = _index_of(tmp_path / "fed")
    assert walking == [True]  # handed out while the walk went on
    changed = "pkg4/sub/module_4.py"
    assert fed["files"].pop(changed)[1:] == whole["files"].pop(changed)[1:]
    assert fed["rows"].pop(changed)[:2] == whole["rows"].pop(changed)[:2]
    assert fed == whole
    assert fed["parsed"] == 1 and len(fed["files"]) == 58 and not fed["pending"]  # 59, the changed one popped
    assert {reason for _path, reason in fed["skipped"]} == {"binary", "too_large"}
    assert fed["skip_counts"]["gitignored"] == 1 and fed["skip_counts"]["hidden_directory"] == 1
    assert list(fed["markers"]) == ["pkg3/go.mod"]


def test_a_build_stopped_during_its_fed_walk_ends_promptly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path / "tree")
    _feed_early(monkeypatch)
    _slow_walk(monkeypatch, 0.05)  # 20 directories: a second of walking
    index = WorkspaceIndex(tmp_path / "tree", max_workers=2, in_process_limit=5, use_cache=False)
    stopped_at: list[float] = []

    def stop_at_the_first_results(done: int, total: int) -> None:
        if done and not stopped_at:
            stopped_at.append(time.perf_counter())
            index.stop()

    with pytest.raises(IndexingCancelled):
        index.build(stop_at_the_first_results)
    assert stopped_at and time.perf_counter() - stopped_at[0] < 1.0
    assert not [thread for thread in threading.enumerate() if thread.name == "index-walk"]


def test_a_pool_failing_during_a_fed_walk_leaves_no_file_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path / "tree")
    whole = _index_of(copy_beside(tmp_path / "tree", "whole"))
    _feed_early(monkeypatch)
    _slow_walk(monkeypatch, 0.01)

    def broken(self: parse_pool.ParseRunning, root: str, batches: list[list[ParseJob]], *rest: Any) -> None:
        remaining, feed = rest[1], rest[-1]
        for batch in feed.batches(1.0):  # one handed out and lost with the pool
            remaining[id(batch)] = batch
        raise WorkerDied("a worker died")

    monkeypatch.setattr(parse_pool.ParseRunning, "_run_in_workers", broken)
    fed = _index_of(tmp_path / "tree")
    assert fed["files"] == whole["files"] and fed["rows"] == whole["rows"]


def test_a_fed_build_that_fails_stops_the_walk_and_raises_its_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path / "tree")
    _feed_early(monkeypatch)
    directories: list[int] = []
    _slow_walk(monkeypatch, 0.05)
    original = builder.walk_workspace

    def counting_walk(*arguments: Any) -> WalkResult:
        found = arguments[3]
        return original(*arguments[:3], lambda count: (directories.append(count), found(count)), *arguments[4:])

    monkeypatch.setattr(builder, "walk_workspace", counting_walk)

    def broken(*_arguments: Any) -> None:
        raise RuntimeError("a bug in taking a result")

    monkeypatch.setattr(builder.IndexBuilding, "_apply_outcome", broken)
    index = WorkspaceIndex(tmp_path / "tree", max_workers=2, in_process_limit=5, use_cache=False)
    with pytest.raises(RuntimeError, match="a bug"):
        index.build()
    assert len(directories) < 20  # the walk stopped part way (it enters 25 directories)
    assert not [thread for thread in threading.enumerate() if thread.name == "index-walk"]


def test_the_rows_of_a_fed_build_are_stored_before_its_process_exits(tmp_path: Path) -> None:
    """A one-shot command writes a build's last rows beside its map (`store_beside`) and exits without closing:
    the write a fed build starts (its walk in a thread of its own) is waited for all the same."""
    root = tmp_path / "tree"
    _tree(root)
    program = f"""
import time
from lsp_hub.index import store, walk_feed
from lsp_hub.index.workspace import WorkspaceIndex
walk_feed.STREAM_AFTER_FILES, walk_feed.STREAM_BATCH_FILES = 10, 7
write_rows = store.write_rows
store.write_rows = lambda *arguments: (time.sleep(0.5), write_rows(*arguments))  # still writing at the end
index = WorkspaceIndex({str(root)!r}, max_workers=2, in_process_limit=5, max_file_size=4096, store_beside=True)
index.build()
assert index.walk_count == 1 and len(index.snapshot().files) == 60
"""
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")])),
    }
    subprocess.run([sys.executable, "-c", program], env=environment, check=True, timeout=60)
    assert len(IndexStore(root).load_identities()) == 61  # and the binary file, left out


def test_batches_are_cut_again_by_size_at_the_walks_end_only_when_files_are_being_parsed() -> None:
    """Largest first matters when batches parse (a cold build); a new worktree's look-ups take as long as each
    other, and cutting its waiting batches again cost 0.1 s at 100,000 files."""
    assert parse_pool._parsing(0, 0)  # nothing taken yet: as for a parse
    assert parse_pool._parsing(10, 90) and parse_pool._parsing(70, 10)
    assert not parse_pool._parsing(99_000, 1_000)
