"""A cold build gathers the name tables while its workers parse, from the heads the workers made (table_parts.py):
the graphs built from them equal graphs built from the same files at the end, and parts that do not match the
snapshot's records are never used."""

from __future__ import annotations

from pathlib import Path

from lsp_hub.index.graph_inputs import graph_inputs
from lsp_hub.index.records import FileRecord, head_of
from lsp_hub.index.table_parts import TableParts
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex
from tests.index.test_graph_updates import _graph_state, corpus  # noqa: F401 (corpus is a fixture)


def test_a_cold_build_in_workers_gathers_tables_equal_to_built_ones(corpus: Path, tmp_path: Path) -> None:  # noqa: F811
    index = WorkspaceIndex(corpus, cache_dir=tmp_path / "cache", max_workers=2, in_process_limit=10)
    try:
        index.build()
        snapshot = index.snapshot()
        parts = snapshot.table_parts
        assert parts is not None
        records = list(snapshot.files.values())
        assert all(record.holds_head for record in records)  # from the workers: nothing left to decode
        gathered = _graph_state(snapshot)
        assert snapshot.table_parts is None  # taken by the graphs
        assert parts.tables_for(snapshot.files) is None  # and spent
        fresh = Snapshot(snapshot.root, dict(snapshot.files), markers=snapshot.markers)
        assert fresh.table_parts is None
        built = _graph_state(fresh)
        for key, value in built.items():
            assert gathered[key] == value, f"{key} differs between gathered and built tables"
        for record in records[:50]:  # the head a worker made is the one the record would decode
            assert head_of(record.packed) == (record._head, record._reference_uses)
    finally:
        index.close()


def _record(path: str, source: str) -> FileRecord:
    from lsp_hub.index.extract import extract_packed
    from lsp_hub.index.records import content_digest

    data = source.encode()
    return FileRecord.of_packed(path, len(data), 1, content_digest(data), extract_packed(data, "python"))


def test_parts_give_tables_only_for_the_records_they_took() -> None:
    a, b, c = _record("a.py", "def f():\n    g()\n"), _record("b.py", "def g():\n    f()\n"), _record("c.py", "x = 1\n")
    parts = TableParts()
    parts.add(b)
    parts.add(a)
    tables = parts.tables_for({"a.py": a, "b.py": b, "c.py": c})  # c is added at the end
    assert tables is not None
    definers, referencers, _members, _dependents = tables
    assert definers == {"f": ("a.py",), "g": ("b.py",), "x": ("c.py",)}
    assert referencers == {"g": ("a.py",), "f": ("b.py",)}
    assert parts.tables_for({"a.py": a, "b.py": b, "c.py": c}) is None  # handed out once

    replaced = TableParts()
    replaced.add(a)
    assert replaced.tables_for({"a.py": _record("a.py", "def f():\n    g()\n")}) is None  # another record
    gone = TableParts()
    gone.add(a)
    gone.add(b)
    assert gone.tables_for({"a.py": a}) is None  # b left the files
    twice = TableParts()
    twice.add(a)
    twice.add(_record("a.py", "def h():\n    pass\n"))
    assert twice.tables_for({"a.py": a}) is None


def test_a_snapshot_whose_parts_do_not_match_builds_its_tables(tmp_path: Path) -> None:
    a, b = _record("a.py", "def f():\n    g()\n"), _record("b.py", "def g():\n    f()\n")
    parts = TableParts()
    parts.add(_record("a.py", "def other():\n    pass\n"))
    snapshot = Snapshot(tmp_path, {"a.py": a, "b.py": b})
    snapshot.table_parts = parts
    tables = graph_inputs(snapshot).tables
    assert dict(tables.definers) == {"f": ("a.py",), "g": ("b.py",)}
