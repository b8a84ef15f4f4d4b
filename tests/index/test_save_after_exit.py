"""A cold `lsp-hub repomap` hands the save of what it built to a child that outlives it (Linux): the program ends
once the map is written, the child holds the cache's save lock until the graphs are stored, and a process reading
stored graphs from that cache waits for it, so a map asked right after a cold one is still answered from them."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lsp_hub.index import save_lock
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
    lock = save_lock.take(cache_dir)
    assert lock is None, "the save under way holds the lock"

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
    assert save_lock.wait_for_saves(cache_dir) < 0.1


def test_reading_stored_graphs_waits_while_a_save_holds_the_lock(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    store = IndexStore(root, tmp_path)
    assert store.load_graph("ranking", "fingerprint") is None  # opens the database, nothing stored
    started = time.monotonic()
    store.load_graph("ranking", "fingerprint")
    assert time.monotonic() - started < 0.2  # no save under way: no wait

    lock = save_lock.take(tmp_path)
    if lock is None:
        pytest.skip("no flock on this system, so no save outlives its program here")
    releasing = threading.Timer(0.6, save_lock.release, args=(lock,))
    releasing.start()
    started = time.monotonic()
    assert store.load_graph("ranking", "fingerprint") is None
    assert time.monotonic() - started >= 0.5
    releasing.join()
    store.close()


def test_a_second_save_does_not_take_a_lock_another_holds(tmp_path: Path) -> None:
    first = save_lock.take(tmp_path)
    if first is None:
        pytest.skip("no flock on this system, so no save outlives its program here")
    assert save_lock.take(tmp_path) is None
    save_lock.release(first)
    second = save_lock.take(tmp_path)
    assert second is not None
    save_lock.release(second)
