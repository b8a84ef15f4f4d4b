"""Building the index: cold, warm from the cache, in worker processes, incrementally; cache corruption."""

from __future__ import annotations

import collections
import gc
import os
import pickle
import sqlite3
import subprocess
import sys
import time
import weakref
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_hub.index import records
from lsp_hub.index.parse_pool import MIN_BATCH_BYTES, _guided_batches
from lsp_hub.index.parse_worker import ParseJob, parse_source
from lsp_hub.index.records import P_REFERENCES, FileRecord, content_digest, decode_packed, encode_packed
from lsp_hub.index.shared_records import shared_records_path
from lsp_hub.index.store import SCHEMA_VERSION, IndexStore, database_path
from lsp_hub.index.walk import IndexingCancelled
from lsp_hub.index.workspace import WorkspaceIndex, relative_path
from tests.conftest import descendant_pids
from tests.index.index_helpers import write


def definition_names(index: WorkspaceIndex, path: str) -> list[str]:
    return [definition.name for definition in index.snapshot().files[path].file_index().definitions]


def test_cold_build_statistics_and_progress(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    index = WorkspaceIndex(root)
    assert index.state == "empty"
    calls: list[tuple[int, int]] = []
    statistics = index.build(progress=lambda done, total: calls.append((done, total)))
    assert index.state == "ready"
    assert statistics["state"] == "ready"
    assert statistics["files"] == 9
    assert statistics["languages"] == {"python": 9}
    assert statistics["symbols"] == sum(len(r.definitions) for r in index.snapshot().files.values()) > 20
    assert statistics["parsedFiles"] == 9
    assert isinstance(statistics["lastBuildSeconds"], float)
    assert calls[0] == (0, 9) and calls[-1] == (9, 9)
    assert index.snapshot().complete


def test_warm_start_parses_nothing_and_a_touched_file_with_same_content_is_not_reparsed(
    copy_repo: Callable[[str], Path], isolated_cache: Path
) -> None:
    root = copy_repo("pyapp")
    cold = WorkspaceIndex(root)
    cold.build()
    cold.close()
    assert database_path(root.resolve()).parent == isolated_cache / "lsp-hub"

    warm = WorkspaceIndex(root)
    warm.build()
    assert warm.parse_count == 0
    assert warm.snapshot().symbol_count() == cold.snapshot().symbol_count()
    assert definition_names(warm, "pyapp/models.py") == definition_names(cold, "pyapp/models.py")

    models = root / "pyapp" / "models.py"
    os.utime(models, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    warm.build()
    assert warm.parse_count == 0  # content digest unchanged

    models.write_text(models.read_text() + "\n\ndef added() -> None:\n    pass\n")
    statistics = warm.build()
    assert warm.parse_count == 1 and statistics["parsedFiles"] == 1
    assert "added" in definition_names(warm, "pyapp/models.py")

    (root / "pyapp" / "other.py").unlink()
    warm.build()
    assert "pyapp/other.py" not in warm.snapshot().files
    warm.close()
    # The cache followed: a third process start sees the edit and the deletion without parsing.
    third = WorkspaceIndex(root)
    third.build()
    assert third.parse_count == 0
    assert "added" in definition_names(third, "pyapp/models.py")
    assert "pyapp/other.py" not in third.snapshot().files


@pytest.mark.parametrize("damage", ["garbage", "old_version"])
def test_a_corrupt_or_outdated_cache_is_rebuilt(copy_repo: Callable[[str], Path], damage: str) -> None:
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    first.close()
    database = database_path(root.resolve())
    if damage == "garbage":
        for suffix in ("-wal", "-shm"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)
        database.write_bytes(b"this is not a database" * 100)
    else:
        with sqlite3.connect(database) as connection:
            connection.execute("UPDATE meta SET value = '0.0' WHERE key = 'schema_version'")
        connection.close()
    # Without it the records every root shares would answer (tests/index/test_shared_records.py).
    with sqlite3.connect(shared_records_path(database.parent)) as connection:
        connection.execute("DELETE FROM records")
    connection.close()

    second = WorkspaceIndex(root)
    statistics = second.build()
    assert second.store is not None and second.store.recovered
    assert statistics["files"] == 9 and second.parse_count == 9
    second.close()
    with sqlite3.connect(database) as connection:
        version = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        rows = connection.execute("SELECT count(*) FROM files").fetchone()[0]
    connection.close()
    assert (version, rows) == (SCHEMA_VERSION, 9)
    third = WorkspaceIndex(root)
    third.build()
    assert third.parse_count == 0


def test_a_damaged_row_is_read_again_from_its_file_and_the_rest_stay(copy_repo: Callable[[str], Path]) -> None:
    """A warm start reads the rows' identities only (not their results, which would read the whole cache); a
    row whose results are damaged is found when they are read, and its file parsed again, alone."""
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    expected = definition_names(first, "pyapp/models.py")
    first.close()
    database = database_path(root.resolve())
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE files SET data = x'00ff' WHERE path = 'pyapp/models.py'")
    connection.close()
    with sqlite3.connect(shared_records_path(database.parent)) as connection:
        connection.execute("DELETE FROM records")  # else the shared records would answer
    connection.close()

    second = WorkspaceIndex(root)
    assert second.build()["files"] == 9
    assert second.parse_count == 0 and second.store is not None and not second.store.recovered
    assert definition_names(second, "pyapp/models.py") == expected
    assert definition_names(second, "pyapp/other.py")  # read from the cache as they were
    parsed_again = content_digest((root / "pyapp/models.py").read_bytes())
    assert second.shared is not None and second.shared.get(parsed_again, "python") is not None  # from the file
    second.close()


def test_worker_processes_give_the_same_results_as_in_process_parsing(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("tsapp")
    in_process = WorkspaceIndex(root, use_cache=False)
    in_process.build()
    parallel = WorkspaceIndex(root, use_cache=False, in_process_limit=2, max_workers=2)
    progress: list[tuple[int, int]] = []
    parallel.build(progress=lambda done, total: progress.append((done, total)))
    assert progress[-1] == (8, 8)
    assert parallel.parse_count == in_process.parse_count == 8
    for path, record in in_process.snapshot().files.items():
        assert parallel.snapshot().files[path].packed == record.packed


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to list child processes")
def test_a_worker_build_leaves_no_process_behind(copy_repo: Callable[[str], Path]) -> None:
    """The forkserver that starts the workers holds tree-sitter (about 35 MB): it ends with the last pool (stopped
    in a thread, so that the build does not wait for it to exit). It is left for multiprocessing to reap, which does
    when it next needs a forkserver: an exited process holds no memory."""
    root = copy_repo("tsapp")
    before = set(descendant_pids(os.getpid()))
    seen: set[int] = set()

    def left_behind() -> set[int]:
        deadline = time.monotonic() + 10.0
        while (left := set(descendant_pids(os.getpid(), live_only=True)) - before) and time.monotonic() < deadline:
            time.sleep(0.02)
        return left

    index = WorkspaceIndex(root, use_cache=False, in_process_limit=2, max_workers=2)
    index.build(progress=lambda done, total: seen.update(set(descendant_pids(os.getpid())) - before))
    assert seen, "the build ran no worker process"
    assert left_behind() == set()
    again = WorkspaceIndex(root, use_cache=False, in_process_limit=2, max_workers=2)  # and starts again on demand
    again.build()
    assert again.parse_count == 8
    again_right_away = WorkspaceIndex(root, use_cache=False, in_process_limit=2, max_workers=2)  # while it stops
    again_right_away.build()
    assert again_right_away.parse_count == 8 and left_behind() == set()


def test_a_record_keeps_its_references_encoded_and_their_counts_decoded() -> None:
    outcome = parse_source(
        ParseJob("m.py", "python", None), b"def f(x):\n    g(x)\n    x.g()\n    g(1)\n", 40, 1, 1 << 20
    )
    assert outcome.packed is not None
    for record in (outcome.record(), pickle.loads(pickle.dumps(outcome)).record()):
        assert record.packed == outcome.packed and record.references == outcome.packed[P_REFERENCES]
        assert record.reference_uses() == {"g": {None: 2, "x": 1}}
        assert [definition[0] for definition in record.definitions] == ["f"] and record.definition_count == 1
        assert record._head is not None and record._head[P_REFERENCES] == ()  # what stays decoded holds none
        moved = record.with_identity(41, 2, record.digest)
        assert moved.reference_uses() is record.reference_uses() and moved.packed == record.packed
    damaged = FileRecord("bad.py", 3, 1, b"", b"(\x02\xff", "python", 0)  # a tuple cut short
    assert damaged.definitions == () and damaged.references == () and damaged.reference_uses() == {}


def test_only_the_last_file_indexes_built_stay_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records, "FILE_INDEXES_KEPT", 2)
    made = [
        parse_source(
            ParseJob(f"m{number}.py", "python", None), f"def f{number}(): pass\n".encode(), 20, 1, 1 << 20
        ).record()
        for number in range(3)
    ]
    first = made[0].file_index()
    made[1].file_index()
    assert made[0].file_index() is first  # still kept
    made[2].file_index()
    assert made[0]._file_index is None and made[1]._file_index is not None
    rebuilt = made[0].file_index()
    assert rebuilt is not first and rebuilt == first


def test_a_record_nobody_holds_is_freed_with_its_file_index(monkeypatch: pytest.MonkeyPatch) -> None:
    # A file edited all day makes a new record per change: the old ones must not live on in the kept queue.
    monkeypatch.setattr(records, "FILE_INDEXES_KEPT", 4)
    monkeypatch.setattr(records, "_kept", collections.deque())
    alive = []
    for number in range(50):
        record = parse_source(
            ParseJob("m.py", "python", None), f"def f{number}(): pass\n".encode(), 20, 1, 1 << 20
        ).record()
        record.file_index()
        alive.append(weakref.ref(record))
        del record
    gc.collect()
    assert sum(reference() is not None for reference in alive) == 0
    assert len(records._kept) <= 4
    held = [
        parse_source(ParseJob(f"k{number}.py", "python", None), b"def g(): pass\n", 14, 1, 1 << 20).record()
        for number in range(6)
    ]
    for record in held:
        record.file_index()
    assert [record._file_index is not None for record in held] == [False, False, True, True, True, True]


def test_an_outline_is_the_file_index_without_references_and_calls_are_read_by_name() -> None:
    source = b"def f(x):\n    g(x)\n    x.g()\n    h = g\n    return f(1)\n"
    record = parse_source(ParseJob("m.py", "python", None), source, len(source), 1, 1 << 20).record()
    outline = record.outline()
    assert outline.references == [] and record.outline() is outline
    complete = record.file_index()  # asked for after an outline: completed, not the outline
    assert complete.references and complete.definitions == outline.definitions
    assert record.calls_named("g") == [
        reference for reference in complete.references if reference.name == "g" and reference.is_call
    ]
    assert [reference.receiver for reference in record.calls_named("g")] == [None, "x"]


def test_a_worker_result_crosses_processes_in_marshal_form_and_the_cache_stores_those_bytes(
    tmp_path: Path,
) -> None:
    outcome = parse_source(ParseJob("m.py", "python", None), b"def f():\n    g()\n", 17, 1, 1 << 20)
    assert outcome.packed is not None and outcome.encoded is None
    received = pickle.loads(pickle.dumps(outcome))
    # Not decoded on arrival: the record keeps the bytes, with the definition count beside them.
    assert received.packed is None and received.definitions == 1
    assert received.encoded == encode_packed(outcome.packed)
    assert received.record().packed == outcome.packed
    assert (received.path, received.digest, received.size, received.parsed) == ("m.py", outcome.digest, 17, True)

    index = WorkspaceIndex(tmp_path, cache_dir=tmp_path / "cache")
    index.build()  # an empty workspace: creates the cache
    upserts: list = []
    index._apply_outcome(received, {}, {}, {}, upserts, [])
    assert upserts[0].encoded is received.encoded  # stored without encoding again
    assert index.store is not None
    index.store.write(upserts)
    index.close()
    stored = IndexStore(tmp_path.resolve(), tmp_path / "cache").load()
    # Loaded rows keep their bytes (decoded when the file is first read), with the definition count beside them.
    assert stored["m.py"].definitions == 1
    assert stored["m.py"].encoded is not None and decode_packed(stored["m.py"].encoded) == outcome.packed


def test_batches_shrink_towards_the_end_so_the_workers_finish_together() -> None:
    sizes = {f"f{number}.py": (number * 7919) % 300_000 for number in range(2000)}
    jobs = [ParseJob(path, "python", None) for path in sizes]
    batches = _guided_batches(jobs, sizes, workers=2)
    assert sorted(job.path for batch in batches for job in batch) == sorted(sizes)  # every file exactly once
    costs = [sum(sizes[job.path] + 512 for job in batch) for batch in batches]
    assert costs[0] > 4 * costs[-1]  # large batches first, small ones last
    assert all(cost >= MIN_BATCH_BYTES for cost in costs[:-1])
    assert max(sizes[job.path] for job in batches[-1]) <= min(sizes[job.path] for job in batches[0])
    assert _guided_batches([], {}, workers=2) == []


def test_binary_and_non_utf8_files(tmp_path: Path) -> None:
    write(tmp_path, "blob.py", b"\x00\x01\x02binary")
    latin1 = "def caf\xe9():\n    return 'd\xe9j\xe0 vu'\n\ndef plain():\n    pass\n".encode("latin-1")
    write(tmp_path, "latin1.py", latin1)
    index = WorkspaceIndex(tmp_path)
    index.build()
    snapshot = index.snapshot()
    assert list(snapshot.files) == ["latin1.py"]
    assert "plain" in definition_names(index, "latin1.py")
    assert snapshot.skipped == (("blob.py", "binary"),)
    assert snapshot.completeness() == {"complete": False, "skippedFiles": [{"path": "blob.py", "reason": "binary"}]}
    index.close()
    warm = WorkspaceIndex(tmp_path)
    warm.build()
    assert warm.parse_count == 0
    assert warm.snapshot().skipped == (("blob.py", "binary"),)  # known from the cache, not re-read


def test_a_file_the_extractor_fails_on_is_left_out_and_the_rest_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """One header of fmt made the extractor raise, and the whole build with it: the daemon's index stayed at
    "building, 0 files" and every refresh failed again. Such a file is left out with its reason (in the cache too,
    until it changes), the failure logged on one line, and the rest indexed."""
    from lsp_hub.index import extract

    real = extract.extract_packed

    def failing(source: bytes, language: str) -> object:
        if b"EXPLODE" in source:
            raise IndexError("string index out of range")
        return real(source, language)

    monkeypatch.setattr(extract, "extract_packed", failing)
    write(tmp_path, "bad.py", "EXPLODE = 1\n")
    write(tmp_path, "good.py", "def fine():\n    return 1\n")
    index = WorkspaceIndex(tmp_path)
    with caplog.at_level("WARNING", logger="lsp_hub.index.workspace"):
        index.build()
    snapshot = index.snapshot()
    assert list(snapshot.files) == ["good.py"]
    assert snapshot.skipped == (("bad.py", "extraction_failed"),)
    assert "bad.py left out of the index: extracting its python failed (IndexError: string index out of range)" in (
        caplog.text
    )
    write(tmp_path, "bad.py", "FIXED = 1\n")
    assert index.update_file(tmp_path / "bad.py")
    assert sorted(index.snapshot().files) == ["bad.py", "good.py"] and index.snapshot().skipped == ()
    index.close()


def test_a_build_that_raises_says_so_until_one_succeeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build that raised left the index "building, 0 files" in every status for the life of the daemon. It is
    "failed" with the error beside it, answers say the index could not be built, and a later build clears it."""
    from lsp_hub.index import api
    from lsp_hub.index.navigation.common import index_completeness

    write(tmp_path, "good.py", "def fine():\n    return 1\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)

    def broken(progress: object = None) -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(index, "_build", broken)
    with pytest.raises(RuntimeError):
        index.build()
    assert index.statistics()["state"] == "failed"
    assert api.status(index)["error"] == "RuntimeError: a bug of ours"
    reasons = index_completeness(index, index.snapshot()).reasons
    assert reasons == ["the index could not be built (RuntimeError: a bug of ours)"]
    monkeypatch.undo()
    index.build()
    assert index.statistics()["state"] == "ready" and "error" not in index.statistics()
    assert index_completeness(index, index.snapshot()).complete
    index.close()


def test_incremental_updates_from_documents_and_disk(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    index = WorkspaceIndex(root)
    index.build()
    before = index.snapshot()
    models = root / "pyapp" / "models.py"

    assert index.update_file(models.as_uri(), b"def only_in_editor():\n    pass\n")
    assert definition_names(index, "pyapp/models.py") == ["only_in_editor"]
    assert "User" in [d.name for d in before.files["pyapp/models.py"].file_index().definitions]  # old snapshot kept
    index.build()  # a build keeps the open document's text
    assert definition_names(index, "pyapp/models.py") == ["only_in_editor"]
    assert index.update_file(str(models), None)  # closed: back to the disk version
    assert "User" in definition_names(index, "pyapp/models.py")
    assert not index.update_file("pyapp/models.py", None)  # nothing changed on disk

    write(root, "pyapp/extra.py", "def extra():\n    pass\n")
    parses = index.parse_count
    assert index.update_file("pyapp/extra.py")
    assert index.parse_count == parses + 1
    assert definition_names(index, "pyapp/extra.py") == ["extra"]
    (root / "pyapp" / "extra.py").unlink()
    assert index.update_file("pyapp/extra.py")
    assert "pyapp/extra.py" not in index.snapshot().files

    write(root, ".gitignore", "ignored.py\n")
    write(root, "ignored.py", "def hidden():\n    pass\n")
    assert not index.update_file("ignored.py", b"def hidden():\n    pass\n")
    assert "ignored.py" not in index.snapshot().files
    assert index.remove_file("pyapp/cli.py")
    assert "pyapp/cli.py" not in index.snapshot().files
    with pytest.raises(ValueError, match="not inside the workspace"):
        index.update_file("/somewhere/else.py")


def test_relative_path_accepts_uris_absolute_and_relative_paths(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    assert relative_path(root, (root / "a b" / "c.py").as_uri()) == "a b/c.py"
    assert relative_path(root, str(root / "x.py")) == "x.py"
    assert relative_path(root, "./pkg/y.py") == "pkg/y.py"
    assert relative_path(root, "../outside.py") is None
    assert relative_path(root, "/elsewhere/z.py") is None


def test_a_stopped_index_abandons_its_build_without_waiting_for_the_workers(tmp_path: Path) -> None:
    body = "".join(f"def function_{i}(value):\n    return value + {i}\n\n\n" for i in range(40))
    for number in range(400):
        write(tmp_path, f"package/module_{number}.py", body)
    index = WorkspaceIndex(tmp_path, use_cache=False, max_workers=2, in_process_limit=10)
    stopped_at: list[float] = []

    def stop_after_the_first_results(done: int, total: int) -> None:
        if done and not stopped_at:
            stopped_at.append(time.perf_counter())
            index.stop()

    with pytest.raises(IndexingCancelled):
        index.build(stop_after_the_first_results)
    assert stopped_at and time.perf_counter() - stopped_at[0] < 1.0
    assert len(index.snapshot().files) < 400  # it did stop part way
    with pytest.raises(IndexingCancelled):  # and stays stopped
        index.build()


def test_a_worker_ends_when_the_process_that_owns_it_dies() -> None:
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from lsp_hub.index.parse_worker import worker_initializer\n"
            f"worker_initializer({owner.pid}); print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
        owner.kill()
        owner.wait()
        assert worker.wait(timeout=5) == 0
    finally:
        owner.kill()
        worker.kill()


def test_a_worker_killed_during_a_build_leaves_no_file_out(tmp_path: Path) -> None:
    """The batches a killed worker held are parsed in this process: the index is whole, as a build without it."""
    import multiprocessing

    body = "".join(f"def function_{i}(value):\n    return value + {i}\n\n\n" for i in range(40))
    for number in range(300):
        write(tmp_path, f"package/module_{number}.py", body)
    killed: list[int] = []

    def kill_a_worker(done: int, total: int) -> None:
        if done and not killed:
            for child in multiprocessing.active_children():
                if child.name == "lsp-hub-index-worker":
                    child.kill()
                    killed.append(child.pid or 0)
                    return

    index = WorkspaceIndex(tmp_path, use_cache=False, max_workers=2, in_process_limit=10)
    index.build(kill_a_worker)
    assert killed, "no worker was running"
    assert len(index.snapshot().files) == 300
    assert index.parse_count == 300
