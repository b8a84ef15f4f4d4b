"""Graphs updated after a change equal graphs built from scratch, on a real corpus (part of the standard library).

Each step edits the workspace the way an editor or an agent does (an open document's text, a file added or deleted
on disk), then compares the graphs the index updated from the previous snapshot with those of a snapshot of the
same files built from nothing: name tables, resolved imports, every file's links, the weighted edges, the ranks,
the definition scores and the repo maps, all exactly equal.
"""

from __future__ import annotations

import gc
import shutil
import sysconfig
import weakref
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_hub.index.graph_cache import STATE_FORMAT, STATE_KEY, stored
from lsp_hub.index.graph_inputs import COMMON_NAMES, graph_inputs, import_graph, name_tables
from lsp_hub.index.graph_store import save_graphs, save_ranking, stored_graphs
from lsp_hub.index.links import file_links
from lsp_hub.index.ranking import ReferenceGraph, reference_graph
from lsp_hub.index.repomap import repo_map
from lsp_hub.index.rows import COMMON_REFERENCER_SHARE
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("email", "json", "http", "logging", "concurrent", "asyncio", "importlib", "xml/dom")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stdlib")
    for package in PACKAGES:
        shutil.copytree(STDLIB / package, root / package, ignore=shutil.ignore_patterns("__pycache__", "test*"))
    for module in ("typing.py", "functools.py", "collections/__init__.py", "os.py"):
        (root / module).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(STDLIB / module, root / module)
    return root


def _graph_state(snapshot: Snapshot) -> dict[str, object]:
    graph: ReferenceGraph = reference_graph(snapshot)
    inputs = graph_inputs(snapshot)
    tables = name_tables(snapshot)
    focus = sorted(snapshot.files)[3:5]
    return {
        "definers": dict(tables.definers),
        "referencers": dict(tables.referencers),
        "member_definers": dict(tables.member_definers),
        "dependents": dict(inputs.dependents),
        "resolved": dict(inputs.resolved),
        "bindings": dict(inputs.bindings),
        "renames": dict(inputs.renames),
        "links": dict(file_links(snapshot)),
        "rows": dict(graph.rows),
        "incoming": dict(graph.incoming),
        "edges": list(graph.edges()),
        "ranks": graph.base_ranks,
        "edge arrays": graph.edge_arrays(),  # an update's are patched from its anchor's: the same, in the same order
        "scores": {path: graph.definition_scores(path) for path in graph.nodes},
        "personalized": graph.pagerank(dict.fromkeys(focus, 1.0)),
        "map": repo_map(snapshot, token_budget=2048)["text"],
        "focused map": repo_map(snapshot, focus, ["formataddr", "JSONDecoder"], 1024)["text"],
    }


def _assert_equal_to_build(snapshot: Snapshot, step: str, expect_update: bool = True) -> None:
    updated = _graph_state(snapshot)
    assert (graph_inputs(snapshot).changes is not None) == expect_update
    fresh = Snapshot(snapshot.root, dict(snapshot.files), markers=snapshot.markers)
    built = _graph_state(fresh)
    assert graph_inputs(fresh).changes is None
    for key, value in built.items():
        assert updated[key] == value, f"{key} differs after an update: {step}"


Edit = Callable[[WorkspaceIndex, Path], None]
_open_documents: dict[Path, str] = {}  # the text each edited document has now


def _document(path: str, change: Callable[[str], str]) -> Edit:
    def edit(index: WorkspaceIndex, root: Path) -> None:
        assert path in index.snapshot().files, path
        opened = _open_documents.get(root / path) or (root / path).read_text(encoding="utf-8")
        new_text = change(opened)
        assert new_text != opened, f"the edit of {path} changed nothing"
        _open_documents[root / path] = new_text
        assert index.update_file(root / path, new_text)

    return edit


def _rename(old: str, new: str) -> Callable[[str], str]:
    return lambda text: text.replace(old, new)


def _append(addition: str) -> Callable[[str], str]:
    return lambda text: text + addition


def test_updates_equal_builds_through_a_series_of_edits(corpus: Path) -> None:
    index = WorkspaceIndex(corpus, use_cache=False)
    index.build()
    _assert_equal_to_build(index.snapshot(), "build", expect_update=False)

    steps: list[tuple[str, Edit]] = [
        # a body changes, names stay
        ("change a body", _document("json/encoder.py", _rename("return ''.join(chunks)", "return '' .join(chunks)"))),
        # a new definition, used from another file
        (
            "add a definition",
            _document("email/utils.py", _append("\n\ndef formataddr_plain(pair):\n    return formataddr(pair)\n")),
        ),
        (
            "use it elsewhere",
            _document(
                "email/message.py",
                _append("\n\nfrom email.utils import formataddr_plain\nformataddr_plain(('a', 'b'))\n"),
            ),
        ),
        # a definition other files use is renamed
        ("rename a definition", _document("email/utils.py", _rename("def parseaddr(", "def parse_address("))),
        # a class member appears
        (
            "add a method",
            _document(
                "json/decoder.py",
                _rename(
                    "    def raw_decode(self, s, idx=0):",
                    "    def decode_all(self, s):\n        return self.decode(s)\n\n"
                    "    def raw_decode(self, s, idx=0):",
                ),
            ),
        ),
        # an alias import and a re-export change
        (
            "alias import",
            _document(
                "http/client.py",
                _append("\nfrom json.decoder import JSONDecoder as Decoder\nDecoder().decode_all('1')\n"),
            ),
        ),
        ("drop a star re-export", _document("asyncio/__init__.py", _rename("from .tasks import *\n", ""))),
        ("add it back", _document("asyncio/__init__.py", _append("from .tasks import *\n"))),
        # a file uses a name through a package's re-export, which then goes away: only the import chain links them
        (
            "import through a package",
            _document(
                "logging/config.py", _append("\nfrom json import JSONDecodeError\nJSONDecodeError('x', 'y', 0)\n")
            ),
        ),
        (
            "drop the re-export",
            _document(
                "json/__init__.py",
                _rename("from .decoder import JSONDecoder, JSONDecodeError", "from .decoder import JSONDecoder"),
            ),
        ),
        # a package re-exports a name under another, a file calls it by that name: the link is to the definer of
        # the first, which nothing in the calling file names, and it moves when that definition does
        ("re-export renamed", _document("json/__init__.py", _append("\nfrom .decoder import JSONDecoder as Parser\n"))),
        ("use it", _document("logging/config.py", _append("\nfrom json import Parser\nParser().decode('1')\n"))),
        ("its origin renamed", _document("json/decoder.py", _rename("class JSONDecoder(", "class JSONParser("))),
        ("and back", _document("json/decoder.py", _rename("class JSONParser(", "class JSONDecoder("))),
        ("re-exported under a third name", _document("json/__init__.py", _rename("as Parser\n", "as Reader\n"))),
        ("used by it", _document("logging/config.py", _rename("import Parser\nParser()", "import Reader\nReader()"))),
    ]
    for label, edit in steps:
        edit(index, corpus)
        _assert_equal_to_build(index.snapshot(), label)
    assert ("JSONDecoder", 1, ("json/decoder.py",)) in file_links(index.snapshot())["logging/config.py"]

    # One more file referencing a name makes it common (referenced by more than 5% of the files): its weight drops
    # in every file that uses it, changed or not.
    snapshot = index.snapshot()
    tables = name_tables(snapshot)
    common_from = max(10, int(COMMON_REFERENCER_SHARE * len(snapshot.files)) + 1)  # referencers making a name common
    links = file_links(snapshot)
    candidates = sorted(
        (len(files), name)
        for name, files in tables.referencers.items()
        if len(files) < common_from
        and 1 <= len(tables.definers.get(name, ())) <= 5
        and name.isidentifier()
        and not name.startswith("_")
        and name not in COMMON_NAMES
        and any(link[0] == name for path in files for link in links[path])
    )
    count, name = candidates[-1]
    imported = import_graph(snapshot)
    outsiders = [
        path
        for path in sorted(snapshot.files)  # files nothing imports: their edit moves no other link
        if path not in tables.referencers[name] and not imported.in_degree(path)
    ]
    for outsider in outsiders[: common_from - count]:
        _document(outsider, _append(f"\n{name}()\n"))(index, corpus)
    _assert_equal_to_build(index.snapshot(), "a name becomes common")

    # Several edits without a query in between: the next update starts from the last snapshot ranked.
    _document("json/scanner.py", _append("\ndef make_scanner_again(context):\n    return make_scanner(context)\n"))(
        index, corpus
    )
    _document("json/__init__.py", _append("\nfrom .scanner import make_scanner_again\n"))(index, corpus)
    _assert_equal_to_build(index.snapshot(), "two edits")

    # Files added and deleted on disk.
    (corpus / "email/addresses.py").write_text(
        "from email.utils import formataddr as fa, parse_address\n\n"
        "class Address:\n    def render(self):\n        return fa(parse_address(self.text))\n",
        encoding="utf-8",
    )
    assert index.update_file(corpus / "email/addresses.py")
    _assert_equal_to_build(index.snapshot(), "a file added")
    (corpus / "email/quoprimime.py").unlink()
    assert index.remove_file(corpus / "email/quoprimime.py")
    _assert_equal_to_build(index.snapshot(), "a file deleted")
    # A document closed: back to the disk text.
    del _open_documents[corpus / "email/utils.py"]
    assert index.update_file(corpus / "email/utils.py", None)
    _assert_equal_to_build(index.snapshot(), "a document closed")


def test_snapshots_behind_the_last_graphs_are_freed(corpus: Path) -> None:
    # A daemon asked for links (dependents, callers) after every edit, and for a ranking now and then, must not hold
    # a chain of every earlier snapshot: each is a copy of the file table with its graphs.
    index = WorkspaceIndex(corpus, use_cache=False)
    index.build()
    reference_graph(index.snapshot())
    seen: list[weakref.ref[Snapshot]] = []
    for number in range(12):
        _document("json/tool.py", _append(f"\nx{number} = 1\n"))(index, corpus)
        snapshot = index.snapshot()
        file_links(snapshot)
        if number == 5:
            reference_graph(snapshot)
        seen.append(weakref.ref(snapshot))
        del snapshot
    gc.collect()
    assert sum(reference() is not None for reference in seen) <= 2
    _assert_equal_to_build(index.snapshot(), "after links alone")


def test_pagerank_is_networkx_pagerank(corpus: Path) -> None:
    import networkx as nx

    index = WorkspaceIndex(corpus, use_cache=False)
    index.build()
    graph = reference_graph(index.snapshot())
    focus = dict.fromkeys(sorted(graph.nodes)[10:13], 1.0)
    for personalization in (None, focus):
        expected = nx.pagerank(graph.graph, alpha=0.85, personalization=personalization, weight="weight", tol=1.0e-6)
        ours = graph.pagerank(personalization)
        assert ours.keys() == expected.keys()
        assert max(abs(ours[node] - expected[node]) for node in ours) < 1.0e-9


def test_a_later_process_answers_from_the_stored_ranking(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = WorkspaceIndex(corpus, cache_dir=cache)
    first.build()
    expected = repo_map(first.snapshot(), token_budget=256)
    save_ranking(first.snapshot())
    first.close()

    second = WorkspaceIndex(corpus, cache_dir=cache)
    second.build()
    snapshot = second.snapshot()
    assert repo_map(snapshot, token_budget=256) == expected
    assert not snapshot.is_derived("reference_graph")  # answered without building the graph...
    decoded = sum(record.encoded is None for record in snapshot.files.values())
    assert decoded < len(snapshot.files) / 2  # ...or reading most files' results
    # A larger map needs definition scores nobody stored: the graph is built, and gives the same as a build.
    fresh = Snapshot(snapshot.root, dict(snapshot.files), markers=snapshot.markers)
    assert repo_map(snapshot, token_budget=8192) == repo_map(fresh, token_budget=8192)
    second.close()

    # A file changed on disk since: another fingerprint, nothing stored for it, so the graph is built.
    changed = WorkspaceIndex(corpus, cache_dir=cache)
    (corpus / "json/tool.py").write_text("def main():\n    pass\n", encoding="utf-8")
    changed.build()
    snapshot = changed.snapshot()
    repo_map(snapshot, token_budget=1024)
    assert snapshot.is_derived("reference_graph")
    changed.close()


def _index_over_cached_graphs(corpus: Path, cache: Path) -> WorkspaceIndex:
    """A second process's index of `corpus`, built after a first one saved its graphs to `cache`."""
    first = WorkspaceIndex(corpus, cache_dir=cache)
    first.build()
    reference_graph(first.snapshot())
    save_graphs(first.snapshot())
    first.close()
    second = WorkspaceIndex(corpus, cache_dir=cache)
    second.build()
    return second


def test_graphs_kept_in_the_cache_equal_built_ones_and_update_alike(corpus: Path, tmp_path: Path) -> None:
    second = _index_over_cached_graphs(corpus, tmp_path / "cache")
    snapshot = second.snapshot()
    assert stored_graphs(snapshot) is not None
    _assert_equal_to_build(snapshot, "graphs from the cache", expect_update=False)
    assert stored_graphs(snapshot) is not None and reference_graph(snapshot) is stored_graphs(snapshot).graph
    _document("email/utils.py", _append("\n\ndef formataddr_again(pair):\n    return formataddr(pair)\n"))(
        second, corpus
    )
    _assert_equal_to_build(second.snapshot(), "an edit over graphs from the cache")
    second.close()


def test_graphs_loaded_from_the_cache_are_not_saved_again(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    second = _index_over_cached_graphs(corpus, tmp_path / "cache")
    assert second.store is not None
    saved: list[str] = []
    monkeypatch.setattr(second.store, "save_graph", lambda key, *_rest: saved.append(key))
    snapshot = second.snapshot()
    reference_graph(snapshot)
    assert stored_graphs(snapshot) is not None
    save_graphs(snapshot)
    assert saved == []  # the cache holds these graphs already
    edited = corpus / "email/utils.py"
    original = edited.read_text(encoding="utf-8")
    edited.write_text(original + "\n\ndef saved_again():\n    pass\n", encoding="utf-8")
    try:
        second.update_file(edited)
        reference_graph(second.snapshot())
        save_graphs(second.snapshot())
        assert saved == [STATE_KEY]  # other files: saved
    finally:
        edited.write_text(original, encoding="utf-8")  # the corpus is the module's
        second.close()


def test_graphs_are_stored_with_each_path_and_group_of_paths_once(corpus: Path, tmp_path: Path) -> None:
    first = WorkspaceIndex(corpus, cache_dir=tmp_path / "cache")
    first.build()
    reference_graph(first.snapshot())
    save_graphs(first.snapshot())
    state = stored(first.snapshot(), STATE_KEY, STATE_FORMAT)
    first.close()
    assert state is not None
    node_of = {node: node for node in state["nodes"]}
    definers, referencers, _members = state["tables"]
    for table in (definers, referencers, state["incoming"]):
        for files in table.values():
            assert all(node_of[path] is path for path in files)  # the same path object as the node
    alone: dict[tuple[str, ...], tuple[str, ...]] = {}
    for files in definers.values():
        if len(files) == 1:
            assert alone.setdefault(files, files) is files  # a path's names share its one-path tuple
    assert len(alone) < len(definers)
    groups = dict(alone)
    imported = [
        files
        for entries in state["resolved"].values()
        for entry in entries
        for files in (entry[1], *(files for _name, files in entry[2]))
    ]
    imported += [files for bound in state["bindings"].values() for files in bound.values()]
    for files in imported:
        assert groups.setdefault(files, files) is files  # an equal group is the same object
        assert all(node_of[path] is path for path in files)
    assert len(groups) < len(alone) + len(imported)


def test_graphs_prepared_over_a_stored_ranking_replace_it(corpus: Path, tmp_path: Path) -> None:
    from lsp_hub.index.background import prepare_graphs
    from lsp_hub.index.graph_store import StoredRanking, ranking

    cache = tmp_path / "cache"
    first = WorkspaceIndex(corpus, cache_dir=cache)
    first.build()
    repo_map(first.snapshot(), token_budget=1024)
    save_ranking(first.snapshot())
    save_graphs(first.snapshot())
    first.close()

    second = WorkspaceIndex(corpus, cache_dir=cache)
    second.build()
    snapshot = second.snapshot()
    answered = repo_map(snapshot, token_budget=1024)
    assert isinstance(ranking(snapshot), StoredRanking)
    prepare_graphs(second)
    assert ranking(snapshot) is reference_graph(snapshot)  # the stored ranking is let go
    assert repo_map(snapshot, token_budget=1024) == answered
    second.close()


def test_a_map_from_a_stored_ranking_is_the_map_of_the_graph(corpus: Path, tmp_path: Path) -> None:
    """A stored ranking lists its best nodes in order, and a map takes its files from them; the maps are those of
    the graph, whether the list covers what the map wants or is too short (the map sorts the ranks then)."""
    from lsp_hub.index.graph_store import STORED_BEST_NODES, StoredRanking, ranking
    from lsp_hub.index.pagerank import best_positions

    cache = tmp_path / "cache"
    first = WorkspaceIndex(corpus, cache_dir=cache)
    first.build()
    focus = sorted(first.snapshot().files)[:2]
    asked = [{"token_budget": 256}, {"token_budget": 4096}, {"token_budget": 1024, "focus_files": focus}]
    built = [repo_map(first.snapshot(), **arguments) for arguments in asked]  # type: ignore[arg-type]
    graph = reference_graph(first.snapshot())
    save_ranking(first.snapshot())
    first.close()

    second = WorkspaceIndex(corpus, cache_dir=cache)
    second.build()
    snapshot = second.snapshot()
    stored_ranking = ranking(snapshot)
    assert isinstance(stored_ranking, StoredRanking)
    assert stored_ranking.best_first == best_positions(graph.nodes, graph.base_vector, STORED_BEST_NODES)
    best_first = stored_ranking.best_first
    for kept in (best_first, best_first[:40], None):  # the whole list; too short for a map; none (stored before)
        stored_ranking.best_first = kept
        assert [repo_map(snapshot, **arguments) for arguments in asked] == built  # type: ignore[arg-type]
    assert not snapshot.is_derived("reference_graph")
    second.close()


def test_rankings_stored_by_other_graph_code_are_not_used(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lsp_hub.index import store

    cache = tmp_path / "cache"
    first = WorkspaceIndex(corpus, cache_dir=cache)
    first.build()
    repo_map(first.snapshot(), token_budget=256)
    save_ranking(first.snapshot())
    first.close()
    monkeypatch.setattr(store, "_graph_code", "another version")
    second = WorkspaceIndex(corpus, cache_dir=cache)
    second.build()
    assert second.parse_count == 0  # the files' rows are still good...
    repo_map(second.snapshot(), token_budget=256)
    assert second.snapshot().is_derived("reference_graph")  # ...the ranking is not: it was built again
    second.close()
