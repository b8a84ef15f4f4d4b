"""What a change costs a query in a long-lived process: the work kept off its path (records decoded when the
watcher applies changes, the ranking stored at most every so often, the test files kept with the graphs) must
leave the answers as they were."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from index_helpers import write

from lsp_hub.index import api, records, rows
from lsp_hub.index.background import keep_graphs, prepare_graphs
from lsp_hub.index.graph_store import RANKING_KEY
from lsp_hub.index.ranking import reference_graph
from lsp_hub.index.workspace import WorkspaceIndex


def _three_files(root: Path) -> None:
    write(root, "app/models.py", "class Order:\n    pass\n")
    write(root, "app/pricing.py", "from app.models import Order\n\ndef price(order: Order) -> int:\n    return 1\n")
    write(root, "tests/test_pricing.py", "from app.pricing import price\n\ndef test_price():\n    price(None)\n")


def test_changed_records_are_decoded_when_applied_once_graphs_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    _three_files(root)
    first = WorkspaceIndex(root)
    first.build()
    api.repo_map(first, {})
    keep_graphs(first)  # as a hub keeps them: the next process assembles its graphs without decoding records
    first.close()

    daemon = WorkspaceIndex(root)
    daemon.build()
    prepare_graphs(daemon)
    old = daemon.snapshot().files["app/pricing.py"]
    assert not old.holds_head
    write(root, "app/pricing.py", "from app.models import Refund\n\ndef refund(r: Refund) -> int:\n    return 2\n")
    assert daemon.refresh_files(["app/pricing.py"]) == 1
    new = daemon.snapshot().files["app/pricing.py"]
    assert old.holds_head and new.holds_head  # what the graphs' update reads, decoded before a query asks
    asked: list[str] = []
    member_names = records.member_names
    monkeypatch.setattr(records, "member_names", lambda record: asked.append(record.path) or member_names(record))
    answer = api.repo_map(daemon, {})
    assert "app/pricing.py" not in asked  # the names the update moves were found when the change was applied
    assert "refund" in answer["text"] and "def price" not in answer["text"]
    daemon.close()

    without_graphs = WorkspaceIndex(root)
    without_graphs.build()
    old = without_graphs.snapshot().files["app/models.py"]
    write(root, "app/models.py", "class Order:\n    pass\n\nclass Refund:\n    pass\n")
    assert without_graphs.refresh_files(["app/models.py"]) == 1
    assert not old.holds_head  # no graphs: nothing will read it, so nothing is decoded
    without_graphs.close()


def test_a_long_lived_process_stores_its_ranking_in_idle_time_at_most_every_interval(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _three_files(root)
    index = WorkspaceIndex(root)
    index.build()
    store = index.store
    assert store is not None
    api.repo_map(index, {})
    assert store.graph_saved(RANKING_KEY) is None  # not on the query's path...
    prepare_graphs(index)
    first = store.graph_saved(RANKING_KEY)
    assert first == index.snapshot().fingerprint()  # ...but in the idle time after it
    write(root, "app/models.py", "class Order:\n    total = 2\n")
    index.refresh_files(["app/models.py"])
    answer = api.repo_map(index, {})
    assert "app/models.py" in answer["text"]
    prepare_graphs(index)
    assert store.graph_saved(RANKING_KEY) == first  # within the interval: not stored again
    index.close()

    later = WorkspaceIndex(root)  # a later process: the stored ranking is of other files, so it builds...
    later.build()
    assert api.repo_map(later, {})["text"] == answer["text"]  # ...and answers the same
    prepare_graphs(later)
    assert later.store is not None and later.store.graph_saved(RANKING_KEY) == later.snapshot().fingerprint()
    later.close()


def test_the_test_files_are_kept_with_the_stored_graphs(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    write(root, "tests/test_models.py", "from pyapp.models import User\n\ndef test_user():\n    User()\n")
    first = WorkspaceIndex(root)
    first.build()
    built = reference_graph(first.snapshot())
    assert "tests/test_models.py" in built.tests
    keep_graphs(first)
    first.close()

    second = WorkspaceIndex(root)
    second.build()
    prepare_graphs(second)  # assembled from what the first kept
    stored = reference_graph(second.snapshot())
    assert stored._tests is not None  # taken from the store, not judged again path by path
    assert stored.tests == built.tests == rows.test_files(stored.nodes)
    second.close()


def test_bringing_up_to_date_without_statistics_builds_the_same_index(copy_repo: Callable[[str], Path]) -> None:
    root = copy_repo("pyapp")
    built = WorkspaceIndex(root, use_cache=False)
    expected = built.build()
    quiet = WorkspaceIndex(root, use_cache=False)
    assert quiet.bring_up_to_date() is None and quiet.state == "ready" and quiet.wait_ready(0)
    assert quiet.statistics() | {"lastBuildSeconds": None} == expected | {"lastBuildSeconds": None}
    assert {path: record.digest for path, record in quiet.snapshot().files.items()} == {
        path: record.digest for path, record in built.snapshot().files.items()
    }


def test_the_files_changes_name_are_every_file_that_differs_from_the_anchor(tmp_path: Path) -> None:
    """A snapshot knows which files may differ from its anchor from the changes that made it (comparing every
    file's record cost 0.1 s at 100,000 files): through edits, disk changes, removals, skips and batches, with and
    without graphs asked for between them, and through walks, what it names holds every file that differs."""
    from lsp_hub.index.graph_inputs import changed_files, changed_since_anchor
    from lsp_hub.index.links import file_links

    root = tmp_path / "repo"
    _three_files(root)
    write(root, "app/extra.py", "def extra():\n    return 1\n")
    index = WorkspaceIndex(root, max_file_size=200)
    index.build()
    file_links(index.snapshot())  # graphs: the next snapshots update from this one

    def step(*changes: Callable[[], object], graphs_after: bool = False) -> None:
        version = index.snapshot().version
        for change in changes:
            change()
        snapshot = index.snapshot()
        anchor = snapshot.anchor
        assert snapshot.version > version  # the step changed the index: else it proves nothing
        assert anchor is not None and snapshot.changed_from_anchor is not None
        assert changed_since_anchor(anchor, snapshot) == changed_files(anchor.files, snapshot.files)
        if graphs_after:
            file_links(snapshot)

    step(lambda: index.update_file(root / "app/models.py", "class Order:\n    total = 1\n"))
    step(
        lambda: write(root, "app/extra.py", "def extra():\n    return 2\n"),
        lambda: index.update_file(root / "app/extra.py"),
    )
    step(lambda: index.update_file(root / "app/models.py"), graphs_after=True)  # the document closed: disk again
    step((root / "app/extra.py").unlink, lambda: index.remove_file(root / "app/extra.py"))
    write(root, "app/new.py", "def new():\n    return 3\n")
    write(root, "app/pricing.py", "x = 1\n" * 100)  # over max_file_size: skipped from now on
    step(lambda: index.refresh_files(["app/new.py", "app/pricing.py", "tests/test_pricing.py"]), graphs_after=True)
    step(lambda: index.update_file(root / "app/new.py", "def renamed():\n    return 3\n"))
    snapshot = index.snapshot()
    assert snapshot.anchor is not None
    assert changed_since_anchor(snapshot.anchor, snapshot) == {"app/new.py"}
    # Walks name what they found changed, with graphs asked for between them and without.
    step(lambda: write(root, "app/walked.py", "def walked():\n    return 4\n"), index.build)
    step(lambda: write(root, "app/walked.py", "def walked_again():\n    return 4\n"), index.build, graphs_after=True)
    step((root / "app/walked.py").unlink, index.build)
    step(lambda: write(root, "app/later.py", "def later():\n    return 5\n"), index.build)
    snapshot = index.snapshot()
    assert snapshot.anchor is not None
    assert changed_since_anchor(snapshot.anchor, snapshot) == {"app/walked.py", "app/later.py"}
    index.close()


def test_a_process_keeping_indexes_collects_its_youngest_generation_less_often() -> None:
    import gc

    from lsp_hub.index.background import YOUNG_COLLECTION_THRESHOLD, collect_less_often

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 11, 12)
        collect_less_often()
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 11, 12)  # the older generations as they were
        gc.set_threshold(YOUNG_COLLECTION_THRESHOLD * 2, 11, 12)
        collect_less_often()
        assert gc.get_threshold()[0] == YOUNG_COLLECTION_THRESHOLD * 2  # never lowered
    finally:
        gc.set_threshold(*before)
