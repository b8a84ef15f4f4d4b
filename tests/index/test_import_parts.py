"""A cold build resolves its files' imports while its workers parse (import_parts.py): the graphs then resolve
nothing more, and equal graphs built from the same files at the end; parts that do not match the snapshot (a path
the walk found and the snapshot lacks, other markers, a changed record, C# namespaces) are never used."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.index.graph_inputs import graph_inputs
from lsp_hub.index.import_parts import ImportParts
from lsp_hub.index.resolve import ImportResolver
from lsp_hub.index.walk import WalkedFile
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex
from tests.index.test_graph_updates import _graph_state, corpus  # noqa: F401 (corpus is a fixture)
from tests.index.test_table_parts import _record


def _counting_resolutions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    resolved: list[str] = []
    original = ImportResolver.resolve_file

    def resolve_file(self: ImportResolver, path: str) -> Any:
        resolved.append(path)
        return original(self, path)

    monkeypatch.setattr(ImportResolver, "resolve_file", resolve_file)
    return resolved


def _cold_build_then_fresh(root: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], int]:
    """Build `root` cold in workers; check its graphs against a build from the same files without parts; return
    the files the graphs resolved themselves, and how many files there are."""
    index = WorkspaceIndex(root, cache_dir=cache, max_workers=2, in_process_limit=2)
    try:
        index.build()
        snapshot = index.snapshot()
        assert snapshot.import_parts is not None
        resolved_late = _counting_resolutions(monkeypatch)
        early = _graph_state(snapshot)
        after_build = list(resolved_late)
        assert snapshot.import_parts is None  # taken by the graphs
        fresh = Snapshot(snapshot.root, dict(snapshot.files), markers=snapshot.markers)
        built = _graph_state(fresh)
        for key, value in built.items():
            assert early[key] == value, f"{key} differs between imports resolved early and at the end"
        assert graph_inputs(fresh).resolver.paths == graph_inputs(snapshot).resolver.paths
        return after_build, len(snapshot.files)
    finally:
        index.close()


def test_a_cold_build_in_workers_resolves_its_imports_as_they_come(
    corpus: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    resolved_late, file_count = _cold_build_then_fresh(corpus, tmp_path / "cache", monkeypatch)
    assert file_count > 50
    assert resolved_late == []  # every file's imports were resolved while the workers parsed


def test_a_tree_with_csharp_resolves_after_the_build(
    copy_repo: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C# namespaces come from the records, not the paths: such a tree resolves at the end, as before."""
    resolved_late, file_count = _cold_build_then_fresh(copy_repo("mixed"), tmp_path / "cache", monkeypatch)
    assert len(resolved_late) == file_count


def _walked(path: str) -> WalkedFile:
    return WalkedFile(path, "python", 10, 1)


def test_parts_give_imports_only_for_the_paths_markers_and_records_they_resolved_against() -> None:
    a = _record("pkg/a.py", "from pkg import b\nb.g()\n")
    b = _record("pkg/b.py", "def g():\n    pass\n")
    init = _record("pkg/__init__.py", "")
    files = {"pkg/a.py": a, "pkg/b.py": b, "pkg/__init__.py": init}
    walk = [_walked(path) for path in files]

    parts = ImportParts()
    parts.add(a)  # before the walk ends: kept until it does
    parts.walked(walk, {})
    parts.add(b)
    resolver, resolved, names = parts.taken(files, {})
    assert resolver.paths == frozenset(files) and resolver.files is files
    assert resolved == {path: ImportResolver(files).resolve_file(path) for path in ("pkg/a.py", "pkg/b.py")}
    assert resolved["pkg/a.py"][0].names == (("b", ("pkg/b.py",)),)
    assert names == {"pkg/a.py": ({"b": ("pkg/b.py",)}, {}), "pkg/b.py": ({}, {})}  # the names they bind
    assert parts.taken(files, {})[1] == {}  # handed out once: spent

    for walked, markers, record in (
        ([*walk, _walked("pkg/left_out.py")], {}, a),  # a file the walk found is not in the snapshot
        (walk, {"go.mod": "module x\n"}, a),  # other markers
        (walk, {}, _record("pkg/a.py", "import os\n")),  # the snapshot holds another record of a.py
    ):
        other = ImportParts()
        other.walked(walked, markers)
        other.add(record)
        resolver, resolved, names = other.taken(files, {})
        assert resolved.get("pkg/a.py") is None and names.get("pkg/a.py") is None
        assert resolver.paths == frozenset(files)

    csharp = ImportParts()
    csharp.walked([*walk, WalkedFile("Tools/Clock.cs", "csharp", 10, 1)], {})
    csharp.add(a)
    assert csharp.taken(files, {})[1] == {}
