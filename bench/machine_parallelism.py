"""How much of N cores this machine gives: the same parse work run in one process alone, then in N processes at once.

Issue 25's row "cold map on N cores <= parse time on one core / N + 0.5 s" assumes that N processes each run as fast
as one alone. On a virtual machine whose virtual CPUs share physical cores (hyperthreads of one core, a busy host),
each of N processes at once runs slower than one alone, and no program reaches parse / N. This measures by how much,
with the index's own parse (tree-sitter and the extractor, every file read, hashed and parsed as a worker does) and
with a loop of pure Python arithmetic that touches almost no memory, each sample in fresh processes, alone and
together taking turns (this machine's speed moves from one minute to the next).

    python bench/machine_parallelism.py [--processes 2] [--rounds 6] [--files 1000] [--root DIR]

Prints, per round and as medians: each process's wall and CPU time alone and together, and the ratio together /
alone. N / ratio is how many cores' worth of work N processes do here; a ratio of 1.2 on 2 cores means the best a
cold build can do is parse time x 1.2 / 2.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
LOOP_STEPS = 40_000_000


def _python_files(root: Path, count: int) -> list[str]:
    found = sorted(str(path.relative_to(root)) for path in root.rglob("*.py") if "site-packages" not in path.parts)
    step = max(1, len(found) // count)
    return found[::step][:count]  # spread over the tree: small and large modules, tests and library


def _parse_work(root: Path, files: list[str]) -> None:
    from lsp_hub.index.parse_worker import ParseJob, parse_batch

    jobs = [ParseJob(path, "python", None) for path in files]
    for start in range(0, len(jobs), 64):
        parse_batch(str(root), jobs[start : start + 64], 2_000_000)


def _loop_work() -> None:
    total = 0
    for step in range(LOOP_STEPS):
        total += step * step % 7
    if total < 0:  # never: keeps the loop's result alive
        print(total)


def child(kind: str, root: Path, count: int, start_at: float) -> dict[str, float]:
    """One process's sample: wait for the common start, then the work, timed in wall and CPU seconds."""
    files = _python_files(root, count) if kind == "parse" else []
    if kind == "parse":
        _parse_work(root, files[:8])  # the extractor and its queries loaded before the clock starts
    while time.time() < start_at:
        time.sleep(0.001)
    wall, cpu = time.perf_counter(), time.process_time()
    if kind == "parse":
        _parse_work(root, files)
    else:
        _loop_work()
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}


def sample(kind: str, processes: int, root: Path, count: int) -> list[dict[str, float]]:
    """`processes` fresh processes doing the same work, started together; each one's figures."""
    start_at = time.time() + 1.5  # after every process has imported and loaded what it needs
    command = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--root", str(root)]
    command += ["--files", str(count), "--start-at", repr(start_at)]
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    running = [subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    figures = []
    for process in running:
        out, _ = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a {kind} sample failed ({process.returncode})")
        figures.append(json.loads(out.strip().splitlines()[-1]))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--files", type=int, default=1000, help="standard-library modules each process parses")
    parser.add_argument("--root", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--child", choices=("parse", "loop"))
    parser.add_argument("--start-at", type=float, default=0.0)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(options.child, options.root, options.files, options.start_at)))
        return
    count = options.processes
    print(f"{count} processes at once against one alone, the same work each, {options.rounds} rounds taking turns")
    print(f"[{os.cpu_count()} CPUs; load average {' '.join(f'{value:.2f}' for value in os.getloadavg())}]")
    for kind, what in (
        ("parse", f"the index's parse of {options.files} standard-library modules"),
        ("loop", "a loop of Python arithmetic"),
    ):
        ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
        alone_walls, together_walls = [], []
        print(f"\n{what}")
        print("   round   alone wall   alone CPU   together wall (each)   together CPU (each)   ratio wall   ratio CPU")
        for round_number in range(1, options.rounds + 1):
            order = ("alone", "together") if round_number % 2 else ("together", "alone")
            taken: dict[str, list[dict[str, float]]] = {}
            for mode in order:
                taken[mode] = sample(kind, 1 if mode == "alone" else count, options.root, options.files)
            alone = taken["alone"][0]
            together = taken["together"]
            together_wall = statistics.mean(figure["wall"] for figure in together)
            together_cpu = statistics.mean(figure["cpu"] for figure in together)
            ratio_wall, ratio_cpu = together_wall / alone["wall"], together_cpu / alone["cpu"]
            ratios["wall"].append(ratio_wall)
            ratios["cpu"].append(ratio_cpu)
            alone_walls.append(alone["wall"])
            together_walls.append(together_wall)
            eaches_wall = " ".join(f"{figure['wall']:.2f}" for figure in together)
            eaches_cpu = " ".join(f"{figure['cpu']:.2f}" for figure in together)
            print(
                f"   {round_number:5d}   {alone['wall']:9.2f}s  {alone['cpu']:9.2f}s   {eaches_wall:>20s}s "
                f"  {eaches_cpu:>18s}s   {ratio_wall:10.2f}   {ratio_cpu:9.2f}"
            )
        median_wall = statistics.median(ratios["wall"])
        print(
            f"  median ratio together / alone: wall {median_wall:.2f}, CPU {statistics.median(ratios['cpu']):.2f}: "
            f"{count} processes do {count / median_wall:.2f} processes' worth of this work here"
        )
        print(
            f"  so a parse of P seconds alone takes at least P x {median_wall:.2f} / {count} on {count} cores "
            f"(alone median {statistics.median(alone_walls):.2f} s, together {statistics.median(together_walls):.2f} s)"
        )


if __name__ == "__main__":
    main()
