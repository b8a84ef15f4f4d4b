"""bench/monorepo.py on a small repository, so the benchmark does not rot: the generator is deterministic and mixes
languages with imports between files, and the daemon part runs (watched, no walk before the query)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO_ROOT


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("monorepo_bench", REPO_ROOT / "bench" / "monorepo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _digest(root: Path) -> str:
    hasher = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            hasher.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return hasher.hexdigest()


def test_the_generated_repository_is_the_same_each_time_and_mixes_languages(tmp_path: Path) -> None:
    bench = _bench()
    bench.generate(tmp_path / "one", 400)
    bench.generate(tmp_path / "two", 400)
    assert _digest(tmp_path / "one") == _digest(tmp_path / "two")
    suffixes = {path.suffix for path in (tmp_path / "one").rglob("m*.*")}
    assert suffixes == {".py", ".ts", ".go"}
    texts = [path.read_text() for path in (tmp_path / "one").rglob("*.py")]
    assert sum("from libs." in text or "from services." in text for text in texts) > len(texts) / 2


def test_the_daemon_part_runs_watched(tmp_path: Path) -> None:
    bench = _bench()
    root = tmp_path / "mono"
    bench.generate(root, 1200)
    figures = bench.daemon(root, tmp_path / "cache")
    assert figures["watching"] == 1.0
    assert figures["query_walked"] == 0.0 and figures["query_answered"] == 1.0
    assert figures["query_walked_watcher_updates"] == 0.0 and figures["query_answered_watcher_updates"] == 1.0
    assert figures["rss_after"] > 0 and figures["changes_applied"] > 0
