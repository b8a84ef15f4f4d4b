"""An agent's first definition in a TypeScript project, with `[hub] prestart = "agents"` (the default) and with
"never", side by side in one run (issue #25, point 4).

Each run is a new world (its own daemon, cache and configuration, and a copy of the project): the agent's first call
is `lsp-hub query outline FILE` (it starts the daemon, which indexes the project and, under "agents", starts the
project's servers and shows each its most defining file); after `--pause` seconds (a model's turn) comes the
agent's first `lsp-hub query definition FILE:LINE:COL`, whose whole-process time is what is measured. Runs
alternate between the two policies so that both see the same machine.

    python bench/prestart.py [--project examples/sample] [--file web/src/main.ts] [--position 9:33]
                             [--runs 5] [--pause 0,3,15]

Target: the first definition <= 0.5 s after the agent's first call (with prestart).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_latency import World

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ("agents", "never")
TARGET_SECONDS = 0.5


def one_run(project: Path, file: str, position: str, policy: str, pause: float) -> tuple[float, float, str]:
    """(first call's seconds, first definition's seconds, the definition's answer or failure)."""
    world = World(deadline=time.monotonic() + 600)
    try:
        copy = world.directory / "project"
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns("node_modules", "__pycache__", ".git"))
        (copy / ".git").mkdir(exist_ok=True)
        config = world.directory / "config" / "lsp-hub"
        config.mkdir(parents=True, exist_ok=True)
        (config / "config.toml").write_text(f'[hub]\nprestart = "{policy}"\n')
        first, done = world.timed_query("outline", file, "--root", str(copy), cwd=copy)
        if done.returncode != 0:
            return first, float("nan"), f"outline failed: {done.stderr.strip()[-200:]}"
        time.sleep(pause)
        seconds, done = world.timed_query("definition", f"{file}:{position}", "--root", str(copy), cwd=copy)
        answer = done.stdout.strip().splitlines()[0] if done.stdout.strip() else done.stderr.strip()[-200:]
        return first, seconds, answer if done.returncode == 0 else f"exit {done.returncode}: {answer}"
    finally:
        world.daemon_stop()
        world.remove()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=ROOT / "examples" / "sample")
    parser.add_argument("--file", default="web/src/main.ts")
    parser.add_argument("--position", default="9:33", help="LINE:COL (1-based) of a use whose definition is asked")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pause", default="0,3,15", help="comma-separated seconds between the two calls")
    options = parser.parse_args()
    pauses = [float(value) for value in options.pause.split(",")]
    results: dict[tuple[float, str], list[float]] = {(pause, policy): [] for pause in pauses for policy in POLICIES}
    for run in range(options.runs):
        for pause in pauses:
            for policy in POLICIES if run % 2 == 0 else reversed(POLICIES):
                first, seconds, answer = one_run(options.project, options.file, options.position, policy, pause)
                print(
                    f"run {run + 1} pause {pause:g} s prestart={policy}: first call {first:.2f} s, "
                    f"definition {seconds:.2f} s: {answer[:90]}",
                    file=sys.stderr,
                )
                if answer.startswith(("exit", "outline failed")):
                    continue
                results[(pause, policy)].append(seconds)
    print(
        f"first `query definition` in {options.project.name}/{options.file} (whole process, median of "
        f"{options.runs}; target <= {TARGET_SECONDS} s with prestart)"
    )
    print(f"{'pause after first call':>24}  {'prestart=agents':>16}  {'prestart=never':>15}")
    for pause in pauses:
        cells = []
        for policy in POLICIES:
            values = results[(pause, policy)]
            cells.append(f"{statistics.median(values):.2f} s" if values else "failed")
        print(f"{pause:>22g} s  {cells[0]:>16}  {cells[1]:>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
