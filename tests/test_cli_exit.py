"""`lsp-hub` after a one-shot index verb ends at once (no teardown of the index object by object), yet as an
ordinary exit would: its output whole, its exit code, the threads still running waited for."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.index.index_helpers import write

REPOSITORY = Path(__file__).resolve().parent.parent

# Run as the `lsp-hub` script runs: with a thread still writing when the verb returns, and an atexit handler that
# an exit taking the index apart would run (and an immediate one does not).
PROGRAM = """
import atexit, sys, threading, time
from pathlib import Path

import pytest
atexit.register(lambda: print("ordinary exit", file=sys.stderr))
marker = Path(sys.argv[1])
threading.Thread(target=lambda: (time.sleep(0.3), marker.write_text("written"))).start()
sys.argv = ["lsp-hub", *sys.argv[2:]]
from lsp_hub.cli import script
raise SystemExit(script())
"""


def run(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(REPOSITORY)}
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path / "marker"), *arguments],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


def test_an_index_verb_ends_at_once_with_its_output_and_threads_done(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for number in range(300):
        write(root, f"pkg/module_{number:03d}.py", f"def function_{number}(value):\n    return value + {number}\n")
    done = run(tmp_path, "repomap", str(root), "--budget", "100000")
    assert done.returncode == 0, done.stderr
    assert all(f"pkg/module_{number:03d}.py" in done.stdout for number in range(300))  # all of it, flushed
    assert (tmp_path / "marker").read_text() == "written"  # the thread was waited for
    assert "ordinary exit" not in done.stderr  # ended at once


def test_an_index_verb_failing_keeps_its_exit_code_and_message(tmp_path: Path) -> None:
    done = run(tmp_path, "repomap", str(tmp_path / "missing"))
    assert done.returncode == 2
    assert "is not a directory" in done.stderr
    assert "Traceback" not in done.stderr


def test_other_verbs_exit_the_ordinary_way(tmp_path: Path) -> None:
    done = run(tmp_path, "daemon", "status", "--json")
    assert "ordinary exit" in done.stderr


def test_only_a_one_shot_verb_runs_without_the_cyclic_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    from lsp_hub import cli

    collector_on: dict[str, bool] = {}
    ends_after: dict[str, bool] = {}

    def main(argv: list[str], process_ends: bool = False) -> int:
        collector_on[argv[0]] = gc.isenabled()
        ends_after[argv[0]] = process_ends
        return 0

    monkeypatch.setattr(cli, "main", main)
    monkeypatch.setattr(cli, "_end_now", lambda code: None)
    try:
        for verb in ("repomap", "daemon"):
            gc.enable()
            monkeypatch.setattr(sys, "argv", ["lsp-hub", verb, "."])
            cli.script()
    finally:
        gc.enable()
    assert collector_on == {"repomap": False, "daemon": True}
    assert ends_after == {"repomap": True, "daemon": False}  # only a one-shot verb may leave a save to a child
