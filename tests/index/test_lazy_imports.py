"""networkx, scipy and tree-sitter are imported only by the commands that need them (each check in a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
HEAVY = ("networkx", "scipy", "numpy", "tree_sitter", "tree_sitter_language_pack")


def _loaded_after(code: str, tmp_path: Path) -> list[str]:
    """Run `code` in a fresh interpreter; the heavy modules it left in sys.modules."""
    script = textwrap.dedent(code) + textwrap.dedent(f"""
        import json, sys
        print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))
        """)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPOSITORY),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }
    (tmp_path / "run").mkdir(exist_ok=True)
    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(completed.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("argv", [["--version"], ["daemon", "status"], ["query", "--help"]])
def test_light_verbs_import_no_index_dependency(tmp_path: Path, argv: list[str]) -> None:
    loaded = _loaded_after(
        f"""
        import contextlib, io
        from lsp_hub.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                main({argv!r})
            except SystemExit:
                pass
        """,
        tmp_path,
    )
    assert loaded == []


def test_hub_and_index_modules_import_nothing_heavy(tmp_path: Path) -> None:
    loaded = _loaded_after(
        """
        import lsp_hub.server, lsp_hub.proxy.extensions, lsp_hub.proxy.index_extension
        import lsp_hub.index.api, lsp_hub.index.cli, lsp_hub.index.workspace, lsp_hub.index.syntax_checkers
        """,
        tmp_path,
    )
    assert loaded == []


def _project(tmp_path: Path, a_text: str) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.py").write_text(a_text)
    (root / "b.py").write_text("from a import f\n\nf()\n")
    return root


def _cli(verb: str, root: Path) -> str:
    """A script running one index verb of the command line on `root`, its output discarded."""
    return f"""
        from lsp_hub.index.cli import main
        import contextlib, io
        with contextlib.redirect_stdout(io.StringIO()):
            assert main([{verb!r}, {str(root)!r}]) == 0
        """


def test_warm_build_and_index_verb_need_no_parser(tmp_path: Path) -> None:
    build = _cli("index", _project(tmp_path, "def f():\n    return g()\n"))
    assert "tree_sitter" in _loaded_after(build, tmp_path)  # cold: parses
    assert _loaded_after(build, tmp_path) == []  # warm: everything from the cache


def test_a_warm_repo_map_imports_nothing_heavy(tmp_path: Path) -> None:
    repomap = _cli("repomap", _project(tmp_path, "def f():\n    return g()\n\n\ndef g():\n    return 1\n"))
    assert {"tree_sitter", "numpy"} <= set(_loaded_after(repomap, tmp_path))  # cold: parses and ranks
    assert _loaded_after(repomap, tmp_path) == []  # warm: the ranking the first run stored


def test_the_cache_key_reads_the_grammars_version_without_importlib_metadata(tmp_path: Path) -> None:
    from importlib.metadata import version

    from lsp_hub.index.store import GRAMMARS_DISTRIBUTION, _grammars_version

    assert _grammars_version() == version(GRAMMARS_DISTRIBUTION)  # the same key as before
    script = "import sys, lsp_hub.index.cli\nprint(json.dumps(['importlib.metadata' in sys.modules]))\n"
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    completed = subprocess.run(
        [sys.executable, "-c", "import json\n" + script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(completed.stdout.strip().splitlines()[-1]) == [False]


def _modules_after(tmp_path: Path, imports: str, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` a fresh interpreter holds after `import {imports}`."""
    script = f"import sys, json, {imports}\nprint(json.dumps([m for m in {modules!r} if m in sys.modules]))"
    loaded = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found: list[str] = json.loads(loaded.stdout.strip().splitlines()[-1])
    return found


def test_the_repomap_verb_imports_no_pool_history_or_syntax_checker_before_it_needs_them(tmp_path: Path) -> None:
    modules = (
        "multiprocessing",
        "concurrent.futures.process",
        "lsp_hub.index.history",
        "lsp_hub.index.syntax_checkers",
    )
    assert _modules_after(tmp_path, "lsp_hub.cli, lsp_hub.index.cli, lsp_hub.index.api", modules) == []


def test_the_workers_forkserver_imports_neither_the_walk_nor_the_graphs(tmp_path: Path) -> None:
    """What the forkserver preloads (`parse_pool._process_context`) is on the way to every worker's first file, with
    cores idle meanwhile: the walk's pathspec alone cost it 10-15 ms."""
    modules = ("pathspec", "lsp_hub.index.walk", "networkx", "numpy", "lsp_hub.index.graph", "multiprocessing.pool")
    assert _modules_after(tmp_path, "lsp_hub.index.parse_worker, lsp_hub.index.extract", modules) == []
