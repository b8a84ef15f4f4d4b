"""Every use of a definition (index/references.py): calls, imports, names read but not called, never a string, a
comment, a keyword argument or another definition of the name; and the merge with a server's references."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsp_hub.index.callers import resolve_targets_by_name
from lsp_hub.index.references import agreed_targets, cover_server_locations, find_references
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

CORE = "def load(path):\n    return open(path).read()\n"
OTHER = "def load(path):\n    return path\n"
USER = '''import pkg.core
from pkg.core import load
from pkg import core as engine


def run(reader=load):
    """load is documented here"""  # load
    handlers = {"load": load, 'x': pkg.core.load}
    engine.load("a")
    call(load=1)
    return load("b"), reader
'''
# Uses its own `load`: none of its uses is core's.
ELSEWHERE = "from pkg.other import load\n\nHANDLERS = [load]\n"


def snapshot_of(root: Path) -> Snapshot:
    for name, text in (("pkg/__init__.py", ""), ("pkg/core.py", CORE), ("pkg/other.py", OTHER),
                       ("app/user.py", USER), ("app/elsewhere.py", ELSEWHERE)):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    index = WorkspaceIndex(root, use_cache=False)
    index.build()
    return index.snapshot()


def sites(result: dict[str, Any]) -> list[tuple[str, int, int, str]]:
    return [(entry["location"]["uri"].rsplit("/", 1)[-1], entry["location"]["range"]["start"]["line"],
             entry["location"]["range"]["start"]["character"], entry["kind"]) for entry in result["references"]]


def test_the_uses_of_a_function_in_code_only(tmp_path: Path) -> None:
    snapshot = snapshot_of(tmp_path)
    targets = resolve_targets_by_name(snapshot, "core.load")
    found = find_references(snapshot, targets, True, lambda path: (tmp_path / path).read_text())
    assert sorted(sites(found)) == [
        ("core.py", 0, 4, "definition"),
        ("user.py", 1, 21, "import"),  # from pkg.core import load
        ("user.py", 5, 15, "use"),  # def run(reader=load)
        ("user.py", 7, 24, "use"),  # {"load": load, ...}: not the string key, the docstring or the comment
        ("user.py", 7, 44, "use"),  # pkg.core.load
        ("user.py", 8, 11, "call"),  # engine.load("a"); not call(load=1)
        ("user.py", 10, 11, "call"),  # return load("b")
    ]
    # elsewhere.py imports the other `load`: none of its uses is core's, and they are the other's.
    other = find_references(snapshot, resolve_targets_by_name(snapshot, "other.load"), False,
                            lambda path: (tmp_path / path).read_text())
    assert sorted(sites(other)) == [("elsewhere.py", 0, 22, "import"), ("elsewhere.py", 2, 12, "use")]


def test_a_server_answer_picks_the_definition_and_keeps_its_files(tmp_path: Path) -> None:
    snapshot = snapshot_of(tmp_path)
    both = resolve_targets_by_name(snapshot, "load")
    assert len(both) == 2
    core_uri = (tmp_path / "pkg/core.py").as_uri()
    user_uri = (tmp_path / "app/user.py").as_uri()
    definition = {"uri": core_uri, "range": {"start": {"line": 0, "character": 4},
                                             "end": {"line": 0, "character": 8}}}
    assert [path for path, _ in agreed_targets(snapshot, both, [definition], True)] == ["pkg/core.py"]
    assert agreed_targets(snapshot, both, [definition], False) == []  # nothing to compare: two are not trusted

    index_sites = find_references(snapshot, agreed_targets(snapshot, both, [definition], True), True,
                                  lambda path: (tmp_path / path).read_text())["references"]
    merged = cover_server_locations(index_sites, [definition])
    assert merged["uncovered"] == [user_uri]
    assert [entry["origin"] for entry in merged["locations"] if entry["uri"] == core_uri] == ["both"]
    assert {entry["origin"] for entry in merged["locations"] if entry["uri"] == user_uri} == {"index"}
    # A file the server listed anything in keeps the server's answer alone.
    call = {"uri": user_uri, "range": {"start": {"line": 10, "character": 11},
                                       "end": {"line": 10, "character": 15}}}
    merged = cover_server_locations(index_sites, [definition, call])
    assert merged["uncovered"] == []
    assert sorted((entry["uri"], entry["origin"]) for entry in merged["locations"]) == [(user_uri, "both"),
                                                                                         (core_uri, "both")]
