"""bench/serial_part.py on a copy of examples/sample, alternated with this checkout itself, so the benchmark does
not rot: each sample a fresh process, both checkouts sampled, the summary printed."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLES_DIR, REPO_ROOT


def test_the_serial_part_is_sampled_in_turns_with_another_checkout(tmp_path: Path) -> None:
    root = tmp_path / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", root, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    done = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "serial_part.py"),
            "--root",
            str(root),
            "--pairs",
            "2",
            "--against",
            str(REPO_ROOT),
            "--by-part",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    samples = re.findall(r"^  (this|other) +parse +[\d.]+ s  serial ([\d.]+) s", done.stdout, re.MULTILINE)
    assert [label for label, _seconds in samples] == ["this", "other", "other", "this"]  # in turns, order swapped
    assert all(float(seconds) > 0 for _label, seconds in samples)
    assert "this / other, per round: median" in done.stdout
    # Each part timed alone in every sample, and compared per round.
    parts = re.findall(r"^ {11}graph inputs [\d.]+, links [\d.]+, rows [\d.]+, ranks [\d.]+, map", done.stdout, re.M)
    assert len(parts) == 4, done.stdout
    for part in ("graph inputs", "links", "rows", "ranks", "map and hand-over"):
        assert re.search(rf"^  {part}: this median [\d.]+ s .*per-round ratio [\d.]+$", done.stdout, re.M), part
