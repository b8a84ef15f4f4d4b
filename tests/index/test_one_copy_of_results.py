"""A cold build keeps one copy of what it parsed: in the shared records, with this root's rows naming it there, as a
new worktree's rows do. Where the shared records cannot hold it (a failed write, a root larger than half their
bound), the root's rows hold the results themselves; nothing is lost either way."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from index_helpers import write

from lsp_hub.index.shared_records import TOUCH_GRANULARITY_SECONDS, SharedRecords
from lsp_hub.index.workspace import WorkspaceIndex

FILES = 12


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for number in range(FILES):
        write(
            root,
            f"pkg/module_{number}.py",
            f"from pkg.module_{(number + 1) % FILES} import function_{(number + 1) % FILES}\n\n\n"
            f"def function_{number}(value):\n    return function_{(number + 1) % FILES}(value) + {number}\n",
        )
    return root


def _rows_holding_results(index: WorkspaceIndex) -> dict[str, bool]:
    assert index.store is not None
    index.store.join_writes()
    with sqlite3.connect(index.store.path) as connection:
        rows = connection.execute("SELECT path, data IS NOT NULL FROM files").fetchall()
    connection.close()
    return {path: bool(holds) for path, holds in rows}


def _results(index: WorkspaceIndex) -> dict[str, object]:
    return {path: record.packed for path, record in index.snapshot().files.items()}


def _assert_read_back_unparsed(root: Path, expected: dict[str, object], workers: int) -> None:
    """The next process finds every file's results, references included, and parses nothing."""
    warm = WorkspaceIndex(root, in_process_limit=2, max_workers=workers)
    warm.build()
    assert warm.parse_count == 0
    assert _results(warm) == expected
    warm.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_parsed_results_are_kept_once_and_read_back_by_the_next_process(tmp_path: Path, workers: int) -> None:
    root = _tree(tmp_path)
    cold = WorkspaceIndex(root, in_process_limit=2, max_workers=workers)
    cold.build()
    assert cold.parse_count == FILES
    expected = _results(cold)
    assert len(expected) == FILES
    assert _rows_holding_results(cold) == dict.fromkeys(expected, False)  # named in the shared records
    assert cold.shared is not None
    assert all(cold.shared.get(record.digest, "python") for record in cold.snapshot().files.values())
    cold.close()

    _assert_read_back_unparsed(root, expected, workers)


def test_rows_hold_the_results_when_the_shared_records_refuse_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path)
    with monkeypatch.context() as patched:
        patched.setattr(SharedRecords, "put", lambda _self, _entries, **_held: False)  # a full disk, a locked database
        cold = WorkspaceIndex(root, in_process_limit=2, max_workers=2)
        cold.build()
        expected = _results(cold)
        assert _rows_holding_results(cold) == dict.fromkeys(expected, True)
        cold.close()

    _assert_read_back_unparsed(root, expected, 2)


def test_a_root_past_half_the_shared_bound_keeps_a_copy_of_the_rest_which_is_trimmed_first(tmp_path: Path) -> None:
    probe = WorkspaceIndex(_tree(tmp_path / "probe"), use_cache=False)
    probe.build()
    one_file = max(len(record.encoded) for record in probe.snapshot().files.values())
    probe.close()
    root = _tree(tmp_path)
    cold = WorkspaceIndex(root, in_process_limit=2, max_workers=1)
    assert cold.shared is not None
    cold.shared.max_bytes = 2 * 3 * one_file  # half of it: three files' results
    cold.build()
    holding = _rows_holding_results(cold)
    assert any(holding.values()) and not all(holding.values())
    # Twelve files' results in a bound of six: the trim at the end takes the entries this root holds itself, and
    # leaves those its bare rows name.
    files = cold.snapshot().files
    assert all(cold.shared.get(files[path].digest, "python") for path, held in holding.items() if not held)
    assert not all(cold.shared.get(files[path].digest, "python") for path, held in holding.items() if held)
    expected = _results(cold)
    cold.close()

    _assert_read_back_unparsed(root, expected, 1)


def _shared_used(index: WorkspaceIndex) -> set[int]:
    assert index.shared is not None
    with sqlite3.connect(index.shared.path) as connection:
        found = {row[0] for row in connection.execute("SELECT used FROM records")}
    connection.close()
    return found


def _set_shared_used(index: WorkspaceIndex, used: int) -> None:
    assert index.shared is not None
    with sqlite3.connect(index.shared.path) as connection:
        connection.execute("UPDATE records SET used = ?", (used,))
    connection.close()


def _a_day_later(index: WorkspaceIndex) -> None:
    """As if the root's last refresh were a day old."""
    assert index.store is not None
    with sqlite3.connect(index.store.path) as connection:
        connection.execute("DELETE FROM meta WHERE key = 'shared_touched'")
    connection.close()


def _near_the_bound(index: WorkspaceIndex) -> None:
    """A bound the shared records' file takes half of, which their entries alone do not pass (no trim)."""
    assert index.shared is not None
    index.shared.max_bytes = 2 * index.shared.path.stat().st_size
    assert index.shared.near_bound()


def test_a_root_in_use_near_the_bound_refreshes_its_shared_entries_once_a_day(tmp_path: Path) -> None:
    """A warm start reads the root's own rows, never the shared records: without a refresh, the bound would trim
    the entries of a root in daily use first, as if nobody read them, and the root would parse those files again."""
    root = _tree(tmp_path)
    cold = WorkspaceIndex(root, in_process_limit=2, max_workers=1)
    cold.build()
    stale = int(time.time()) - 2 * TOUCH_GRANULARITY_SECONDS
    _set_shared_used(cold, stale)
    cold.close()

    far = WorkspaceIndex(root, in_process_limit=2, max_workers=1)
    assert far.shared is not None and not far.shared.near_bound()
    far.build()
    assert _shared_used(far) == {stale}  # far from the bound nothing is trimmed: no work for nothing
    _a_day_later(far)
    far.close()

    warm = WorkspaceIndex(root, in_process_limit=2, max_workers=1)
    _near_the_bound(warm)
    started = int(time.time())
    warm.build()
    assert warm.parse_count == 0
    assert len(_shared_used(warm)) == 1 and min(_shared_used(warm)) >= started  # every entry refreshed
    _set_shared_used(warm, stale)
    warm.build()
    assert _shared_used(warm) == {stale}  # once a day: the same process, or the next, leaves them
    warm.close()
    again = WorkspaceIndex(root, in_process_limit=2, max_workers=1)
    _near_the_bound(again)
    again.build()
    assert _shared_used(again) == {stale}
    again.close()


def test_a_watched_root_that_is_not_built_again_refreshes_its_shared_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon may watch a root for days without building it again: the watch asks for the refresh too."""
    from lsp_hub.index import watch

    root = _tree(tmp_path)
    cold = WorkspaceIndex(root, in_process_limit=2, max_workers=1)
    cold.build()
    cold.close()
    index = WorkspaceIndex(root, in_process_limit=2, max_workers=1)
    index.build()
    _near_the_bound(index)
    _a_day_later(index)
    stale = int(time.time()) - 2 * TOUCH_GRANULARITY_SECONDS
    _set_shared_used(index, stale)
    monkeypatch.setattr(watch, "SHARED_REFRESH_CHECK_SECONDS", 0.0)
    watcher = watch.IndexWatcher(index)
    try:
        assert watcher.start(), watcher.reason
        deadline = time.monotonic() + 10
        while _shared_used(index) == {stale} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert min(_shared_used(index)) > stale
    finally:
        watcher.stop()
        index.close()


def test_a_refresh_takes_the_longest_unused_entries_first_up_to_its_limit(tmp_path: Path) -> None:
    """SQLite rewrites each row it updates, results and all: a large root's entries are refreshed a part a day."""
    root = _tree(tmp_path)
    index = WorkspaceIndex(root, in_process_limit=2, max_workers=1)
    index.build()
    assert index.shared is not None and index.store is not None
    now = int(time.time())
    oldest = now - 10 * TOUCH_GRANULARITY_SECONDS
    with sqlite3.connect(index.shared.path) as connection:  # twelve entries, one day older each
        digests = [row[0] for row in connection.execute("SELECT digest FROM records ORDER BY digest")]
        for age, digest in enumerate(digests):
            connection.execute("UPDATE records SET used = ? WHERE digest = ?", (oldest - age * 86400, digest))
    connection.close()
    index.shared.touch_named_by(index.store.path, limit=5)
    with sqlite3.connect(index.shared.path) as connection:
        fresh = {row[0] for row in connection.execute("SELECT digest FROM records WHERE used >= ?", (now,))}
    connection.close()
    assert fresh == set(digests[-5:])  # the five longest unused
    index.close()


def test_rows_whose_shared_results_are_gone_are_dropped_and_parsed_again_by_the_workers(tmp_path: Path) -> None:
    """Deleted (or made anew after damage, or trimmed), the shared records no longer hold what the rows name: the
    daily check drops those rows, and the next build parses the files in its workers, not one by one on use."""
    root = _tree(tmp_path)
    cold = WorkspaceIndex(root, in_process_limit=2, max_workers=2)
    cold.build()
    expected = _results(cold)
    assert cold.shared is not None
    shared_path = cold.shared.path
    cold.close()
    with sqlite3.connect(shared_path) as connection:
        connection.execute("DELETE FROM records")
    connection.close()

    warm = WorkspaceIndex(root, in_process_limit=2, max_workers=2)
    warm.build()  # the first check of this root: due
    assert warm.parse_count == 0
    assert _rows_holding_results(warm) == {}  # dropped
    one = "pkg/module_0.py"
    assert warm.snapshot().files[one].packed == expected[one]  # still answered meanwhile: parsed on use, put back
    warm.close()

    again = WorkspaceIndex(root, in_process_limit=2, max_workers=2)
    again.build()
    assert again.parse_count == FILES - 1  # the workers parse the rest, and find the one put back
    assert _results(again) == expected
    assert again.shared is not None
    assert all(again.shared.get(record.digest, "python") for record in again.snapshot().files.values())
    again.close()


def test_a_damaged_note_of_the_last_refresh_reads_as_due_and_is_written_anew(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    index = WorkspaceIndex(root, in_process_limit=2, max_workers=1)
    index.build()
    assert index.store is not None
    with sqlite3.connect(index.store.path) as connection:
        connection.execute("INSERT OR REPLACE INTO meta VALUES ('shared_touched', 'not a time')")
    connection.close()
    assert index.store.shared_refresh_due(time.time() - 60)  # due, not an exception that would end a watch
    assert not index.store.shared_refresh_due(time.time() - 60)  # the note is good again
    index.close()
