"""The records every workspace root shares: a copy of an indexed tree is indexed by looking up, parsing nothing;
damage costs a parse, never an error; the store stays within its bound."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from index_helpers import copy_beside, write

from lsp_hub.index.api import repo_map
from lsp_hub.index.background import keep_graphs
from lsp_hub.index.graph_store import STATE_KEY
from lsp_hub.index.records import EMPTY_PACKED, content_digest
from lsp_hub.index.shared_records import (
    TOUCH_GRANULARITY_SECONDS,
    SharedRecords,
    SharedRecordsLocation,
    shared_records_path,
)
from lsp_hub.index.store import EXTRACTOR_VERSION, default_cache_dir
from lsp_hub.index.workspace import WorkspaceIndex


def _definitions(index: WorkspaceIndex) -> dict[str, list[str]]:
    return {path: [d[0] for d in record.definitions] for path, record in index.snapshot().files.items()}


def test_a_copy_of_an_indexed_tree_is_built_without_parsing(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    assert first.parse_count == 9
    first.close()

    copy = WorkspaceIndex(copy_beside(root, "pyapp-worktree"))
    statistics = copy.build()
    assert statistics["files"] == 9
    assert copy.parse_count == 0
    assert _definitions(copy) == _definitions(first)
    write(copy.root, "pyapp/new_module.py", "def brand_new():\n    return 1\n")
    copy.build()
    assert copy.parse_count == 1  # new content is parsed, and only that
    copy.close()


def test_worker_processes_look_up_the_shared_records(tmp_path: Path) -> None:
    root = tmp_path / "many"
    for number in range(12):
        write(root, f"pkg/module_{number}.py", f"def function_{number}():\n    return {number}\n")
    first = WorkspaceIndex(root, in_process_limit=2, max_workers=2)
    first.build()
    assert first.parse_count == 12
    first.close()

    copy = WorkspaceIndex(copy_beside(root, "many-clone"), in_process_limit=2, max_workers=2)
    copy.build()
    assert copy.parse_count == 0
    assert _definitions(copy) == _definitions(first)
    copy.close()


def _shared_database() -> Path:
    return shared_records_path(default_cache_dir())


def test_a_damaged_shared_entry_is_dropped_and_parsed_again(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    first.close()
    damaged = content_digest((root / "pyapp/models.py").read_bytes())
    with sqlite3.connect(_shared_database()) as connection:
        changed = connection.execute("UPDATE records SET data = x'28ffff00' WHERE digest = ?", (damaged,)).rowcount
    connection.close()
    assert changed == 1

    copy = WorkspaceIndex(copy_beside(root, "pyapp-clone"))
    copy.build()  # no exception: the lookup reads counts only, the results are checked when used
    assert copy.parse_count == 0
    assert _definitions(copy) == _definitions(first)  # models.py's entry failed its check: parsed from the file
    assert copy.shared is not None and copy.shared.dropped == 1
    assert copy.shared.get(damaged, "python") is not None  # and a good entry put back
    copy.close()
    third = WorkspaceIndex(copy_beside(root, "pyapp-third"))
    third.build()
    assert third.parse_count == 0
    assert _definitions(third) == _definitions(first)
    third.close()


def test_a_shared_database_that_is_not_one_is_made_anew(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    database = _shared_database()
    database.parent.mkdir(parents=True, exist_ok=True)
    database.write_bytes(b"not a database at all" * 200)
    index = WorkspaceIndex(root)
    assert index.build()["files"] == 9
    index.close()
    copy = WorkspaceIndex(copy_beside(root, "pyapp-copy"))
    copy.build()
    assert copy.parse_count == 0
    copy.close()


def test_the_store_keeps_within_its_bound_dropping_the_least_recently_used(tmp_path: Path) -> None:
    store = SharedRecords(SharedRecordsLocation(str(tmp_path / "records.sqlite3"), EXTRACTOR_VERSION), 10_000)
    entry = b"(" + bytes(999)  # looks packed; a thousand bytes
    digests = [bytes([number]) * 16 for number in range(20)]
    for number, digest in enumerate(digests):
        store.put([(digest, "python", entry, 0)])
        with sqlite3.connect(store.path) as connection:  # distinct times of use, oldest first
            connection.execute("UPDATE records SET used = ? WHERE digest = ?", (1000 + number, digest))
        connection.close()
    assert store.stored_bytes() == 20_000
    store.touch([(digests[0], "python")])  # used now: the newest
    dropped = store.trim()
    assert store.stored_bytes() <= 10_000
    assert dropped == 11
    assert store.get(digests[0], "python") is not None
    assert store.get(digests[1], "python") is None
    assert store.get(digests[19], "python") is not None
    store.close()


def test_several_writers_at_once(tmp_path: Path) -> None:
    roots = []
    for copy_number in range(3):
        root = tmp_path / f"checkout-{copy_number}"
        for number in range(30):
            text = f"def same_{number}():\n    pass\n\ndef own_{copy_number}_{number}(): ...\n"
            write(root, f"src/m{number}.py", text)
        roots.append(root)
    problems: list[BaseException] = []

    def build(root: Path) -> None:
        try:
            index = WorkspaceIndex(root)
            index.build()
            index.close()
        except BaseException as error:  # handed to the test's thread
            problems.append(error)

    threads = [threading.Thread(target=build, args=(root,)) for root in roots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert problems == []
    store = SharedRecords(SharedRecordsLocation(str(_shared_database()), EXTRACTOR_VERSION))
    for root in roots:
        for number in range(30):
            assert store.get(content_digest((root / f"src/m{number}.py").read_bytes()), "python") is not None
    store.close()


def test_graphs_of_an_identical_set_of_files_are_reused(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    expected = repo_map(first)
    keep_graphs(first)
    first.close()

    copy = WorkspaceIndex(copy_beside(root, "pyapp-again"))
    copy.build()
    assert copy.store is not None
    assert copy.store.load_graph(STATE_KEY, copy.snapshot().fingerprint()) is not None  # from the first root
    assert repo_map(copy) == expected
    copy.close()


def test_records_hold_no_bytes_once_the_cache_has_them(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    cold = WorkspaceIndex(root)
    cold.build()
    assert not any(record.holds_encoded for record in cold.snapshot().files.values())
    expected = {path: record.packed for path, record in cold.snapshot().files.items()}
    cold.close()
    warm = WorkspaceIndex(root)
    warm.build()
    files = warm.snapshot().files
    assert not any(record.holds_encoded for record in files.values())
    assert {path: record.packed for path, record in files.items()} == expected  # read back on use
    write(root, "pyapp/models.py", "def rewritten(): ...\n")
    warm.build()
    assert files["pyapp/models.py"].packed == expected["pyapp/models.py"]  # an old snapshot: the shared records
    warm.close()


def test_results_lost_from_both_caches_are_parsed_again_or_read_as_empty(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    index = WorkspaceIndex(root)
    index.build()
    files = index.snapshot().files
    expected = {path: files[path].packed for path in ("pyapp/models.py", "pyapp/service.py")}
    assert index.store is not None
    with sqlite3.connect(index.store.path) as connection:
        connection.execute("DELETE FROM files")
    connection.close()
    with sqlite3.connect(_shared_database()) as connection:
        connection.execute("DELETE FROM records")
    connection.close()
    parsed = index.parse_count
    assert files["pyapp/models.py"].packed == expected["pyapp/models.py"]  # the file is unchanged: parsed again
    write(root, "pyapp/service.py", "def changed_meanwhile(): ...\n")
    assert files["pyapp/service.py"].packed == EMPTY_PACKED  # its content is gone: empty, and the log says so
    assert index.parse_count == parsed  # a read back is not an index change
    index.close()


def test_a_build_that_stored_nothing_does_not_measure_the_store(copy_repo: Callable[[str], Path]) -> None:
    """Trimming sums every entry's size; a warm build adds nothing, so it does not trim (or open the store)."""
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    assert first.shared is not None and not first.shared.grown  # it stored, then trimmed
    first.close()
    warm = WorkspaceIndex(root)
    assert warm.shared is not None
    sizes: list[int] = []
    warm.shared.stored_bytes = lambda: sizes.append(1) or 0  # type: ignore[method-assign]
    warm.build()
    assert warm.parse_count == 0 and sizes == []
    warm.close()


def test_a_store_found_damaged_while_reading_is_made_anew(tmp_path: Path) -> None:
    store = SharedRecords(SharedRecordsLocation(str(tmp_path / "records.sqlite3"), EXTRACTOR_VERSION))
    entry = b"(" + bytes(999)
    store.put([(bytes(16), "python", entry, 3)])
    store.close()
    data = bytearray(store.path.read_bytes())
    data[4096 : len(data)] = b"\xff" * (len(data) - 4096)  # every page but the header's: a malformed file
    store.path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(f"{store.path}{suffix}").unlink(missing_ok=True)
    assert store.definitions_of(bytes(16), "python") is None  # no exception
    store.put([(bytes(16), "python", entry, 3)])
    assert store.definitions_of(bytes(16), "python") == 3  # made anew, and usable
    store.close()


def test_hits_refresh_their_time_of_use_only_when_it_is_due(copy_repo: Callable[[str], Path]) -> None:
    """A new worktree finds every file in the store: rewriting each row's time of use on every hit would cost
    more than the lookups, so an entry is touched only when its time of use is older than the granularity."""
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    first.close()
    now = int(time.time())

    def set_used(value: int) -> None:
        with sqlite3.connect(_shared_database()) as connection:
            connection.execute("UPDATE records SET used = ?", (value,))
        connection.close()

    def used_times() -> set[int]:
        with sqlite3.connect(_shared_database()) as connection:
            found = {row[0] for row in connection.execute("SELECT used FROM records")}
        connection.close()
        return found

    recent = now - TOUCH_GRANULARITY_SECONDS // 2
    set_used(recent)
    copy = WorkspaceIndex(copy_beside(root, "pyapp-recent"))
    copy.build()
    assert copy.parse_count == 0
    copy.close()
    assert used_times() == {recent}  # not due: left alone

    stale = now - 2 * TOUCH_GRANULARITY_SECONDS
    set_used(stale)
    copy = WorkspaceIndex(copy_beside(root, "pyapp-stale"))
    copy.build()
    assert copy.parse_count == 0
    copy.close()
    assert min(used_times()) >= now  # due: every hit refreshed


def test_rows_of_files_found_in_the_shared_records_are_stored_at_once_in_order(tmp_path: Path) -> None:
    """They hold no results to let go of, so they wait for the end of the build: one transaction, sorted by path
    (500 commits, and inserts all over the table, were most of a new worktree's time)."""
    root = tmp_path / "many"
    for number in range(300):
        write(root, f"pkg{number % 7}/module_{number}.py", f"def function_{number}():\n    return {number}\n")
    first = WorkspaceIndex(root, in_process_limit=2)
    first.build()
    first.close()

    copy = WorkspaceIndex(copy_beside(root, "many-worktree"), in_process_limit=2)
    assert copy.store is not None
    writes: list[list[str]] = []
    original = copy.store.write

    def counting(upserts, deletions=(), rows=()):  # type: ignore[no-untyped-def]
        upserts, rows = list(upserts), list(rows)
        writes.append([row.path for row in upserts] + [row[0] for row in rows])
        return original(upserts, deletions, rows)

    copy.store.write = counting  # type: ignore[method-assign]
    copy.build()
    assert copy.parse_count == 0
    assert len(writes) == 1 and sorted(writes[0]) == sorted(copy.snapshot().files)
    copy.close()
    again = WorkspaceIndex(copy.root)
    again.build()  # warm from those rows
    assert again.parse_count == 0 and len(again.snapshot().files) == 300
    again.close()
