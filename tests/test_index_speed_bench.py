"""bench/index_speed.py's edit rounds, on a copy of examples/sample: the hub part (a real hub over stdio, in-memory
edits, lspHub.repoMap after each) and the same rounds in one process, so the benchmark does not rot."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import EXAMPLES_DIR, REPO_ROOT


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("index_speed_bench", REPO_ROOT / "bench" / "index_speed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.asyncio
async def test_the_edit_rounds_run_through_the_hub_and_in_one_process(tmp_path: Path) -> None:
    bench = _bench()
    root = tmp_path / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", root, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    models = root / "app" / "models.py"
    before = models.read_text()
    work = tmp_path / "work"
    work.mkdir()
    hub = await bench.hub_after_edit(root, "app/models.py", "Inventory", 3, tmp_path / "cache", work,
                                     ready_timeout=60.0)
    assert [entry.edit for entry in hub.rounds] == [
        "rename Inventory -> InventoryRenamed", "remove def added_0()", "add def added_3()"]
    assert hub.files > 0 and hub.rss > 0 and len(hub.steady) == 3
    for entry in hub.rounds:
        assert 0 < entry.map_alone <= entry.change_to_map and entry.applied <= entry.change_to_map
    assert models.read_text() == before  # the edits were the editor's, in memory
    library = bench.library_after_edit(root, "app/models.py", "Inventory", 3, tmp_path / "cache")
    assert len(library) == 3 and all(entry.update > 0 and entry.map > 0 for entry in library)


def test_the_edit_script_keeps_its_text_and_changes_in_step() -> None:
    bench = _bench()
    text = "class Base:\n    pass\n\n\ndef café():\n    return 'é'\n"
    script = bench.EditScript(text, "café")
    edits = [script.next(number) for number in range(6)]
    assert [edit.kind for edit in edits] == ["add", "rename", "remove", "add", "rename", "remove"]
    current = text
    for edit in edits:  # applying each LSP change to the previous text gives the script's text
        lines = current.split("\n")
        start, end = edit.change["range"]["start"], edit.change["range"]["end"]

        def offset(position: dict[str, int], lines: list[str] = lines) -> int:
            before = sum(len(line) + 1 for line in lines[: position["line"]])
            line = lines[position["line"]].encode("utf-16-le")
            return before + len(line[: 2 * position["character"]].decode("utf-16-le"))

        current = current[: offset(start)] + edit.change["text"] + current[offset(end):]
        assert current == edit.text
    assert "def caféRenamed" not in current and current == text
