"""A cold `lsp-hub repomap` hands the save of what it built to a child that outlives it (Linux): the program ends
once the map is written, the cache directory's mark names the child until the graphs are stored, and a process
reading stored graphs from that cache waits for it, so a map asked right after a cold one is answered from them."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_hub.index import pending_save
from lsp_hub.index.store import IndexStore, database_path

REPOSITORY = Path(__file__).resolve().parents[2]
SAVE_DELAY = 4.0

# The `lsp-hub` script, with the child's save slowed down so that a program waiting for it would show.
SLOW_SAVE_PROGRAM = f"""
import sys, time
from lsp_hub.index import background

stored = background.keep_graphs
background.keep_graphs = lambda index: (time.sleep({SAVE_DELAY}), stored(index))
sys.argv = ["lsp-hub", *sys.argv[1:]]
from lsp_hub.cli import script
raise SystemExit(script())
"""

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the save outlives the program on Linux alone (fork without exec)"
)


def _environment(cache: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(REPOSITORY)}


def _stored_graph_keys(root: Path, cache_dir: Path) -> set[str]:
    with sqlite3.connect(database_path(root, cache_dir)) as connection:
        return {key for (key,) in connection.execute("SELECT key FROM graphs")}


@linux_only
def test_a_cold_map_ends_before_its_save_which_the_next_map_waits_for(tmp_path: Path) -> None:
    root = tmp_path / "sample"
    shutil.copytree(REPOSITORY / "examples" / "sample", root, ignore=shutil.ignore_patterns(".lsp-hub*"))
    cache = tmp_path / "cache"
    cache_dir = cache / "lsp-hub"

    started = time.monotonic()
    cold = subprocess.run(
        [sys.executable, "-c", SLOW_SAVE_PROGRAM, "repomap", str(root)],
        capture_output=True,  # read to the end: a child still holding the output would keep this waiting
        text=True,
        env=_environment(cache),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    took = time.monotonic() - started
    assert cold.returncode == 0, cold.stderr
    assert cold.stdout.strip() and cold.stderr == ""
    assert took < SAVE_DELAY - 0.5, f"the program waited for its save ({took:.1f} s)"
    mark = cache_dir / pending_save.MARK_FILE_NAME
    assert mark.exists(), "the save under way is marked"
    assert not pending_save.claim(cache_dir)  # it names a running process

    warm = subprocess.run(
        [sys.executable, "-m", "lsp_hub", "repomap", str(root)],
        capture_output=True,
        text=True,
        env=_environment(cache),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout == cold.stdout
    # It waited for the save rather than building again: the graphs were stored before it read them.
    assert {"ranking", "graph_state"} <= _stored_graph_keys(root, cache_dir)
    assert not mark.exists()  # released by the child when done


def test_reading_stored_graphs_waits_while_the_marked_save_runs(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    store = IndexStore(root, tmp_path)
    assert store.load_graph("ranking", "fingerprint") is None  # opens the database, nothing stored
    started = time.monotonic()
    store.load_graph("ranking", "fingerprint")
    assert time.monotonic() - started < 0.2  # no save under way: no wait

    saver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
    reaping = threading.Thread(target=saver.wait)  # as init reaps the child of a program that has ended
    reaping.start()
    pending_save.claim(tmp_path)
    pending_save.hand_to(tmp_path, saver.pid)
    started = time.monotonic()
    assert store.load_graph("ranking", "fingerprint") is None
    waited = time.monotonic() - started
    reaping.join()
    assert 0.3 <= waited < 10  # until the saver ended
    store.close()


def test_a_mark_is_claimed_once_and_a_stale_one_replaced(tmp_path: Path) -> None:
    assert pending_save.claim(tmp_path)
    mark = tmp_path / pending_save.MARK_FILE_NAME
    assert mark.read_text().split()[0] == str(os.getpid())
    assert pending_save.wait_for_saves(tmp_path) < 0.1  # this process's own mark keeps it waiting for nothing
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pending_save.hand_to(tmp_path, int(ended.stdout))
    assert pending_save.wait_for_saves(tmp_path) < 0.1  # names a process that has ended: stale
    assert pending_save.claim(tmp_path)  # and replaced
    pending_save.release(tmp_path)
    assert not mark.exists()


def test_a_mark_made_on_another_machine_is_not_waited_for(tmp_path: Path) -> None:
    (tmp_path / pending_save.MARK_FILE_NAME).write_text(f"{os.getpid()} another-machine-{os.getpid()}")
    assert pending_save.wait_for_saves(tmp_path, timeout=5) < 0.1  # this pid on that machine means nothing here


def test_the_first_process_of_a_container_does_its_work_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    from lsp_hub.platform import detached

    monkeypatch.setattr(os, "getpid", lambda: 1)
    assert not detached.available()  # its end would kill a child doing the work


def test_a_child_done_before_it_was_named_still_removes_the_mark(tmp_path: Path) -> None:
    claimant = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        mark = tmp_path / pending_save.MARK_FILE_NAME
        mark.write_text(f"{claimant.pid} {socket.gethostname()}")  # as the claimant wrote it, before naming the child
        pending_save.release(tmp_path)  # the child, not named: the mark is not its own
        assert mark.exists()
        pending_save.release(tmp_path, handed_by=claimant.pid)
        assert not mark.exists()  # else every reader would wait on the claimant, alive, for nothing
    finally:
        claimant.kill()
        claimant.wait()


def test_the_graphs_are_stored_when_writing_the_map_fails(tmp_path: Path) -> None:
    from lsp_hub.index import background
    from lsp_hub.index.workspace import WorkspaceIndex

    root = tmp_path / "sample"
    shutil.copytree(REPOSITORY / "examples" / "sample", root, ignore=shutil.ignore_patterns(".lsp-hub*"))
    index = WorkspaceIndex(root, cache_dir=tmp_path / "cache")
    index.build()

    def reader_left(_map: dict[str, object]) -> None:
        raise BrokenPipeError("the reader left (`lsp-hub repomap | head`)")

    def in_this_process(work: Callable[[], None]) -> int:
        work()
        return 2**22 + 1  # a pid no process has: the mark it leaves is stale at once

    with pytest.raises(BrokenPipeError):
        background.map_then_store(index, {"tokenBudget": 200}, reader_left, in_this_process)
    index.close()
    assert {"ranking", "graph_state"} <= _stored_graph_keys(root, tmp_path / "cache")
    assert pending_save.wait_for_saves(tmp_path / "cache") < 0.1
