"""A new worktree of an indexed tree (a copy at another path, the same per-user cache) answers from what the first
root kept: its files are looked up a batch at a time (content no checkout had is parsed), its graphs are not stored
again, and a ranking completed by one process keeps what it had for the next."""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from index_helpers import copy_beside, write

from lsp_hub.index import store as store_module
from lsp_hub.index import store_rows
from lsp_hub.index.api import repo_map
from lsp_hub.index.background import keep_graphs
from lsp_hub.index.graph_store import StoredRanking, ranking, save_ranking
from lsp_hub.index.parse_worker import ParseJob, parse_batch
from lsp_hub.index.ranking import reference_graph
from lsp_hub.index.records import content_digest
from lsp_hub.index.shared_records import LOOKUP_VARIABLES, SharedRecords, SharedRecordsLocation
from lsp_hub.index.skip_reasons import REASON_BINARY
from lsp_hub.index.store import EXTRACTOR_VERSION, IndexStore, StoredFile, database_path
from lsp_hub.index.store_rows import StoredRow
from lsp_hub.index.walk import WalkResult
from lsp_hub.index.workspace import WorkspaceIndex


def test_graphs_found_in_the_shared_records_are_not_stored_again(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    repo_map(first)
    keep_graphs(first)
    first.close()

    copy = WorkspaceIndex(copy_beside(root, "pyapp-worktree"))
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


def test_one_query_finds_only_the_entries_of_that_content_and_language(tmp_path: Path) -> None:
    store = SharedRecords(SharedRecordsLocation(str(tmp_path / "records.sqlite3"), EXTRACTOR_VERSION))
    entry = b"(" + bytes(10)
    known = [content_digest(f"file {number}".encode()) for number in range(LOOKUP_VARIABLES + 100)]
    store.put([(digest, "python", entry, number) for number, digest in enumerate(known)])
    store.put([(content_digest(b"typescript only"), "typescript", entry, 7)])
    unknown = content_digest(b"never stored")
    asked = [(digest, "python") for digest in known] + [
        (unknown, "python"),
        (content_digest(b"typescript only"), "python"),  # the same content parsed as another language is not it
    ]
    found = store.lookup_many(asked)
    assert {key: definitions for key, (definitions, _used) in found.items()} == {
        (digest, "python"): number for number, digest in enumerate(known)
    }
    store.close()


def test_a_batch_sends_back_files_found_in_the_shared_records_and_parses_the_rest(
    copy_repo: Callable[[str], Path],
) -> None:
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    expected = first.snapshot().files["pyapp/models.py"]
    assert first.shared is not None
    location = first.shared.location
    first.close()
    write(root, "pyapp/brand_new.py", "def brand_new():\n    return 1\n")
    (root / "pyapp" / "blob.py").write_bytes(b"\0binary")
    jobs = [ParseJob(path, "python", None) for path in ("pyapp/models.py", "pyapp/brand_new.py", "pyapp/blob.py")]
    result = parse_batch(str(root), jobs, 1 << 20, location)
    assert [(hit[0], hit[4], hit[5]) for hit in result.hits] == [
        ("pyapp/models.py", expected.digest, expected.definition_count)
    ]
    outcomes = {outcome.path: outcome for outcome in result.outcomes}
    assert outcomes["pyapp/brand_new.py"].parsed  # content no checkout had: parsed
    assert outcomes["pyapp/blob.py"].skip_reason == REASON_BINARY
    assert result.file_count == 3


def test_rows_written_beside_the_map_are_stored_before_a_later_write_and_at_close(
    copy_repo: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = store_module.write_rows

    def slow_beside(connection: sqlite3.Connection, ordered: list[StoredRow], deleted: list[tuple[str]]) -> None:
        if threading.current_thread() is not threading.main_thread():
            time.sleep(0.3)  # still writing when the build returns, and when the next write comes
        original(connection, ordered, deleted)

    monkeypatch.setattr(store_module, "write_rows", slow_beside)
    root = copy_repo("pyapp")
    first = WorkspaceIndex(root)
    first.build()
    first.close()
    copy = WorkspaceIndex(copy_beside(root, "pyapp-beside"), store_beside=True)
    copy.build()
    files = set(copy.snapshot().files)
    assert copy.store is not None
    row = StoredFile("pyapp/models.py", "python", 1, 2, bytes(16), "binary")
    copy.store.write([row])  # after the rows written beside, not before: it stays
    copy.close()
    stored = IndexStore(copy.root).load_identities()
    assert set(stored) == files | {"pyapp/models.py"}
    assert stored["pyapp/models.py"].skip_reason == "binary"
    warm = WorkspaceIndex(copy.root)
    warm.build()
    assert warm.parse_count == 0 and set(warm.snapshot().files) == files  # the row above no longer fits the file
    warm.close()


WORKERS_QUERIES = """
import sys
from concurrent.futures import ProcessPoolExecutor

from lsp_hub.index.extract import get_query
from lsp_hub.index.parse_pool import _process_context


def compiled(_worker: int) -> int:
    return get_query.cache_info().currsize


if __name__ == "__main__":
    context = _process_context(sys.argv[1:])
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        print(sorted(pool.map(compiled, range(2))), "imported" if "lsp_hub.index.query_preload" in sys.modules else "")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="no forkserver on Windows: each spawned worker compiles its own")
def test_the_forkserver_compiles_the_queries_of_the_languages_found_once_for_all_its_workers(tmp_path: Path) -> None:
    """TypeScript's query took each worker 150 ms to compile, C++'s 300 ms: compiled in the forkserver before it
    forks, each worker starts with it; a language the forkserver was not told of is compiled where it is met."""
    import subprocess

    script = tmp_path / "workers_queries.py"
    script.write_text(WORKERS_QUERIES, encoding="utf-8")
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}

    def run(*languages: str) -> str:
        done = subprocess.run([sys.executable, str(script), *languages], capture_output=True, text=True, timeout=60,
                              env=environment, check=True)
        return done.stdout.strip()

    assert run("python", "typescript") == "[2, 2]"  # in each worker, before it parsed anything
    assert run() == "[0, 0]"
    assert run("no_such_language", "not.a.name") == "[0, 0]"  # left to the workers, the forkserver still serves


def test_the_languages_told_to_the_forkserver_are_those_found_so_far_and_typescript_with_a_tsconfig() -> None:
    from lsp_hub.index.parse_pool import _languages_ahead
    from lsp_hub.index.walk import WalkedFile

    walking = WalkResult(files=[WalkedFile("index.js", "javascript", 10, 0), WalkedFile("lib/a.py", "python", 5, 0),
                                WalkedFile("later.go", "go", 5, 0)])
    assert _languages_ahead(walking, 2) == {"javascript", "python"}
    walking.marker_files.append("packages/web/tsconfig.json")
    assert _languages_ahead(walking, 1) == {"javascript", "typescript"}


def test_the_forkserver_is_not_told_languages_whose_files_a_new_worktree_finds_in_the_shared_records(
    tmp_path: Path,
) -> None:
    """A new worktree's workers look its files up rather than parse them: compiling their queries first would only
    delay the forkserver's first worker. Three files of each language are sampled."""
    from lsp_hub.index.parse_pool import _indexed_before
    from lsp_hub.index.walk import walk_workspace

    root = tmp_path / "tree"
    for number in range(6):
        write(root, f"pkg/module_{number}.py", f"def function_{number}():\n    return {number}\n")
        write(root, f"web/part_{number}.ts", f"export const part{number} = {number};\n")
    cache = tmp_path / "cache"
    WorkspaceIndex(root, cache_dir=cache).build()
    copy = copy_beside(root, "copy")
    write(copy, "web/part_0.ts", "export const changed = 1;\n")  # one sampled TypeScript file is new
    index = WorkspaceIndex(copy, cache_dir=cache)
    assert index.shared is not None
    files = walk_workspace(copy, 1_000_000, lambda: False).files
    assert _indexed_before(copy, index.shared, files, 1_000_000) == {"python"}
    fresh = WorkspaceIndex(copy, cache_dir=tmp_path / "other-cache")
    assert fresh.shared is not None and _indexed_before(copy, fresh.shared, files, 1_000_000) == set()


def test_a_new_worktree_whose_sampled_files_are_all_indexed_tells_the_forkserver_no_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not even TypeScript for its tsconfig.json: its TypeScript files, found later, were indexed with the rest."""
    from lsp_hub.index import parse_pool
    from lsp_hub.index.walk import walk_workspace

    root = tmp_path / "tree"
    write(root, "tsconfig.json", "{}\n")
    for number in range(4):
        write(root, f"a/part_{number}.js", f"export const part{number} = {number};\n")
        write(root, f"z/late_{number}.ts", f"export const late{number} = {number};\n")
    cache = tmp_path / "cache"
    WorkspaceIndex(root, cache_dir=cache).build()
    told: list[set[str]] = []

    class NoForkserver:
        def get_start_method(self) -> str:
            return "spawn"

    def process_context(languages: Iterable[str] = ()) -> NoForkserver:
        told.append(set(languages))
        return NoForkserver()

    monkeypatch.setattr(parse_pool, "_process_context", process_context)
    walking = walk_workspace(root, 1_000_000, lambda: False)
    walking.files = [walked for walked in walking.files if walked.path.startswith("a/")]  # the walk's first files
    copy = copy_beside(root, "copy")
    for shared, expected in ((WorkspaceIndex(copy, cache_dir=cache).shared, set()),
                             (WorkspaceIndex(copy, cache_dir=tmp_path / "empty").shared, {"javascript", "typescript"})):
        prestart = parse_pool.WorkerPrestart(2, copy, 1_000_000, shared)
        prestart.files_found(len(walking.files), walking)
        prestart.close()
        assert told.pop() == expected


def test_the_building_process_parses_here_only_what_it_has_the_queries_for() -> None:
    from lsp_hub.index.extract import get_query, query_compiled
    from lsp_hub.index.parse_pool import _compiled_here

    get_query("python")
    assert query_compiled("python") and not query_compiled("no_such_language")
    assert _compiled_here([ParseJob("a.py", "python", None)])
    assert not _compiled_here([ParseJob("a.py", "python", None), ParseJob("b.x", "no_such_language", None)])


def test_workers_are_prestarted_during_the_walk_of_a_tree_nothing_is_known_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lsp_hub.index import parse_pool

    started: list[int] = []
    original = parse_pool.WorkerPrestart.files_found

    def files_found(self: parse_pool.WorkerPrestart, count: int, walking: WalkResult | None = None) -> None:
        was_started = self.started
        original(self, count, walking)
        if self.started and not was_started:
            started.append(count)

    monkeypatch.setattr(parse_pool.WorkerPrestart, "files_found", files_found)
    root = tmp_path / "tree"
    for number in range(30):
        write(root, f"pkg{number % 6}/module_{number}.py", f"def function_{number}():\n    return {number}\n")
    index = WorkspaceIndex(root, in_process_limit=10, max_workers=2)
    index.build()
    assert index.parse_count == 30
    assert parse_pool._open_pools == 0  # the forkserver goes with the last pool
    assert len(started) == 1 and 10 <= started[0] < 30  # once, during the walk
    write(root, "pkg0/module_0.py", "def changed():\n    return 0\n")
    index.build()  # records known: no prestart
    assert len(started) == 1 and index.parse_count == 31
    index.close()


def test_a_first_build_publishes_what_it_has_with_the_rest_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lsp_hub.index import builder

    monkeypatch.setattr(builder, "PARTIAL_PUBLISH_SECONDS", -1.0)  # after every batch taken
    root = tmp_path / "tree"
    for number in range(100):
        write(root, f"pkg{number % 4}/module_{number}.py", f"def function_{number}():\n    return {number}\n")
    index = WorkspaceIndex(root, in_process_limit=1000)  # in this process, 32 files at a time
    published: list[tuple[set[str], frozenset[str]]] = []
    original = index._publish

    def publish(disk, pending, *rest):  # type: ignore[no-untyped-def]
        published.append((set(disk), pending))
        original(disk, pending, *rest)

    index._publish = publish  # type: ignore[method-assign]
    index.build()
    everything = set(index.snapshot().files)
    assert len(everything) == 100
    partial = published[:-1]
    assert [len(files) for files, _pending in partial] == [32, 64, 96, 100]
    for files, pending in partial:
        assert not files & pending and files | pending == everything
    assert published[-1] == (everything, frozenset())
    index.close()


def _rows_written(root: Path, rows: list[StoredRow]) -> list[tuple[object, ...]]:
    """The files table, each value with its SQLite type, after writing `rows` then replacing the first."""
    store = IndexStore(root)
    assert store.write([], (), rows)
    first = rows[0]
    assert store.write([], (), [(first[0], "go", 7, 8, bytes(range(16)), None, None, 3)])
    connection = sqlite3.connect(store.path)
    table = connection.execute(
        "SELECT path, language, typeof(size), size, typeof(mtime_ns), mtime_ns, typeof(digest), digest,"
        " typeof(skip_reason), skip_reason, typeof(data), data, typeof(definitions), definitions"
        " FROM files ORDER BY path"
    ).fetchall()
    connection.close()
    store.close()
    return table


def test_rows_without_results_written_in_one_statement_equal_rows_bound_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new worktree's rows (no results: in the shared records) go in as one JSON text: the same rows, of the same
    types, as one insert per row, beside rows that hold results or another size of digest."""
    rows: list[StoredRow] = [
        ("a/models.py", "python", 120, 1_700_000_000_123_456_789, content_digest(b"a"), None, None, 4),
        ('b/quote "and" back\\slash ünï €.ts', "typescript", 0, -1, content_digest(b"b"), "binary", None, None),
        ("c/results.go", "go", 3, 4, content_digest(b"c"), None, b"(" + bytes(10), 2),
        ("d/long_digest.py", "python", 5, 6, bytes(32), None, None, 0),
        *(
            (f"e/m{number:04d}.py", "python", number, number * 7, content_digest(b"%d" % number), None, None, number)
            for number in range(300)
        ),
    ]
    by_json = _rows_written(tmp_path / "json", rows)
    monkeypatch.setattr(store_rows, "JSON_ROWS", False)
    one_by_one = _rows_written(tmp_path / "bound", rows)
    assert by_json == one_by_one
    assert len(by_json) == len(rows) and by_json[0][:8] == (
        "a/models.py",
        "go",
        "integer",
        7,
        "integer",
        8,
        "blob",
        bytes(range(16)),
    )
    # A SQLite without its JSON functions: the same rows, one by one.
    monkeypatch.setattr(store_rows, "JSON_ROWS", True)
    monkeypatch.setattr(store_rows, "INSERT_BARE_ROWS", "INSERT INTO files SELECT * FROM no_json_each(?1, ?2)")
    assert _rows_written(tmp_path / "fallback", rows) == one_by_one


def test_a_path_that_is_not_unicode_is_never_written_as_one_statement(tmp_path: Path) -> None:
    """An undecodable file name (a lone surrogate in Python) would reach SQLite's JSON as an escape, decoded into
    another path: such rows are left to be bound one by one."""
    connection = sqlite3.connect(tmp_path / "rows.sqlite3", isolation_level=None)
    connection.execute(
        "CREATE TABLE files (path TEXT PRIMARY KEY, language TEXT NOT NULL, size INTEGER NOT NULL,"
        " mtime_ns INTEGER NOT NULL, digest BLOB NOT NULL, skip_reason TEXT, data BLOB, definitions INTEGER)"
    )
    row: StoredRow = ("odd\udcff.py", "python", 1, 2, content_digest(b"odd"), None, None, 0)
    assert not store_rows.insert_bare_rows(connection, [row])
    assert connection.execute("SELECT count(*) FROM files").fetchone() == (0,)
    connection.close()


@pytest.mark.skipif(sys.platform != "linux", reason="macOS and Windows file systems refuse names that are not Unicode")
def test_a_file_name_that_is_not_unicode_leaves_only_its_own_row_out(tmp_path: Path) -> None:
    """Such a name (a lone surrogate in Python) cannot be a TEXT key: the other rows are written, the write does
    not fail, and the file is indexed again by the next process."""
    root = tmp_path / "tree"
    write(root, "good.py", "def ok():\n    return 1\n")
    odd = os.fsdecode(b"caf\xe9.py")
    write(root, odd, "def odd():\n    return ok()\n")
    for store_beside in (False, True, False):
        index = WorkspaceIndex(root, cache_dir=tmp_path / "cache", store_beside=store_beside)
        index.build()
        assert set(index.snapshot().files) == {"good.py", odd}
        assert index.snapshot().files[odd].definitions[0][0] == "odd"
        index.close()
        connection = sqlite3.connect(database_path(root.resolve(), tmp_path / "cache"))
        assert connection.execute("SELECT path FROM files").fetchall() == [("good.py",)]
        connection.close()
