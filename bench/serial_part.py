"""The serial part of a cold map (issue 25), each sample in a fresh process, alternated with another checkout.

A sample builds the tree cold into an empty cache with its workers (the cyclic collector off, as `lsp-hub repomap`
runs), then times what that program does after the build on one thread, up to where it ends: the graphs and the map
(1,024 tokens), and the hand-over of their save to a child that outlives the process (Linux; elsewhere, and in an
older checkout, the graphs stored in a thread beside the map and the ranking after it, joined). A fresh process per
sample, as the program runs: `index_speed.py`'s scaling part measures it after a one-worker build in the same
process, which moves it by a third.

    python bench/serial_part.py [--against OTHER_CHECKOUT] [--pairs 10] [--workers 2] [--root DIR] [--by-part]

With `--against`, each round runs this checkout and the other in turns (first one, then the other, swapping the
order each round): this machine's speed moves by a third from one minute to the next, and only alternated samples
compare. Prints each sample, then the median and fastest of each, and the median of the per-round ratios. With
`--by-part`, each part the map derives first (graph inputs, links, rows, ranks) is derived and timed alone before
the map, in the order the map asks for them, and compared the same way: a change to one part shows there when the
whole is lost in the machine's noise.

Against the checkout a target was set with (issue 25's: 8aef776, before its first commit), the other's parse
figures tell how fast this machine runs that code now, beside what the issue measured then.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent


def _derive_in_parts(index: object) -> dict[str, float]:
    """With `--by-part`: what the map would derive first, derived one part at a time in the order it asks for them,
    each part's thread CPU timed (the same work, so the total stays comparable): the machine's speed moves more
    between processes than a change to one part, and a part compared alone shows it."""
    from lsp_hub.index.graph_inputs import graph_inputs
    from lsp_hub.index.links import file_links
    from lsp_hub.index.ranking import reference_graph

    snapshot = index.snapshot()  # type: ignore[attr-defined]
    parts: dict[str, float] = {}
    for name, derive in (
        ("graph inputs", graph_inputs),
        ("links", file_links),
        ("rows", reference_graph),
        ("ranks", lambda snapshot: reference_graph(snapshot).base_vector),
    ):
        started = time.thread_time()
        derive(snapshot)
        parts[name] = time.thread_time() - started
    return parts


def sample(root: Path, workers: int, by_part: bool = False) -> dict[str, float]:
    """One cold build and its serial part, in this process (run as the child): what `lsp-hub repomap` does after
    its build, up to where the program ends (`background.map_then_store`). Where the saves go to a child that
    outlives the process (Linux), that is the graphs, the map and the hand-over; the save is waited for afterwards,
    untimed, and its length printed beside. A checkout without `map_then_store` runs what its program ran: the
    graphs serialized and stored in a thread beside the map, the ranking stored, the thread joined; one from
    before issue 25 the map, then the graphs stored."""
    gc.disable()
    from lsp_hub.index import api
    from lsp_hub.index.workspace import WorkspaceIndex

    try:
        from lsp_hub.index import background
    except ImportError:  # a checkout from before issue 25 (as the issue measured): its program's own steps below
        background = None  # type: ignore[assignment]

    with tempfile.TemporaryDirectory(prefix="lsp-hub-serial-") as cache:
        index = WorkspaceIndex(root, cache_dir=Path(cache), max_workers=workers)
        started = time.perf_counter()
        index.build()
        parse = time.perf_counter() - started
        started, cpu = time.perf_counter(), time.thread_time()
        parts = _derive_in_parts(index) if by_part else {}
        map_started = time.thread_time()
        if background is None:
            api.repo_map(index, {"tokenBudget": 1024})
            api.keep_graphs(index)
        elif hasattr(background, "map_then_store"):
            from lsp_hub.platform import detached

            after_exit = detached.run_after_exit if detached.available() else None
            background.map_then_store(index, {"tokenBudget": 1024}, lambda _map: None, after_exit)
        else:
            saving = background.keep_graphs_beside(index)
            api.repo_map(index, {"tokenBudget": 1024})
            background.keep_ranking(index)
            if saving is not None:
                saving.join()
        serial, serial_cpu = time.perf_counter() - started, time.thread_time() - cpu
        if by_part:
            parts["map and hand-over"] = time.thread_time() - map_started
        handed_on = (Path(cache) / "graph-save.pid").exists()
        waited = 0.0
        if handed_on:
            from lsp_hub.index import pending_save

            waited = pending_save.wait_for_saves(Path(cache))  # before the directory goes
        index.close()
    return {
        **{f"part:{name}": seconds for name, seconds in parts.items()},
        "parse": parse,
        "serial": serial,
        "serial_cpu": serial_cpu,
        "handed_on": float(handed_on),
        "save_after": waited,
    }


def run_sample(checkout: Path, root: Path, workers: int, by_part: bool = False) -> dict[str, float]:
    environment = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--root", str(root), "--workers", str(workers)]
    if by_part:
        command.append("--by-part")
    done = subprocess.run(command, env=environment, cwd=tempfile.gettempdir(), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"a sample of {checkout} failed ({done.returncode}): {done.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--root", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--against", type=Path, help="another checkout of lsp-hub, run in turns with this one")
    parser.add_argument(
        "--by-part", action="store_true", help="also time each part (graph inputs, links, rows, ranks, map) alone"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(sample(options.root, options.workers, options.by_part)))
        return
    checkouts = {"this": REPOSITORY}
    if options.against is not None:
        checkouts["other"] = options.against.resolve()
    print(f"serial part of a cold map of {options.root}, {options.workers} workers, fresh processes")
    for label, checkout in checkouts.items():
        print(f"  {label}: {checkout}")
        # A checkout without bytecode (a new worktree, with PYTHONDONTWRITEBYTECODE set as scripts/env.sh sets it)
        # compiles every module it imports at every run, and that is then timed as its code.
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "lsp_hub")], check=False)
    serial: dict[str, list[float]] = {label: [] for label in checkouts}
    by_part: dict[str, dict[str, list[float]]] = {label: {} for label in checkouts}
    labels = list(checkouts)
    for round_number in range(options.pairs):
        order = labels if round_number % 2 == 0 else labels[::-1]
        for label in order:
            figures = run_sample(checkouts[label], options.root, options.workers, options.by_part)
            serial[label].append(figures["serial"])
            parts = {key.removeprefix("part:"): value for key, value in figures.items() if key.startswith("part:")}
            for name, seconds in parts.items():
                by_part[label].setdefault(name, []).append(seconds)
            print(
                f"  {label:<6} parse {figures['parse']:6.2f} s  serial {figures['serial']:.3f} s"
                f" (this thread's CPU {figures['serial_cpu']:.3f} s)"
                + (f"; saves handed on, done {figures['save_after']:.3f} s later" if figures.get("handed_on") else ""),
                flush=True,
            )
            if parts:
                print("           " + ", ".join(f"{name} {seconds:.3f}" for name, seconds in parts.items()), flush=True)
    for label, values in serial.items():
        print(f"{label:<6} serial part: median {statistics.median(values):.3f} s, fastest {min(values):.3f} s")
    if len(labels) == 2:
        ratios = [this / other for this, other in zip(serial["this"], serial["other"], strict=True)]
        print(f"this / other, per round: median {statistics.median(ratios):.2f}")
    for name in by_part["this"]:
        line: list[str] = []
        for label in labels:
            part_values = by_part[label].get(name)
            if part_values:
                line.append(f"{label} median {statistics.median(part_values):.3f} s (fastest {min(part_values):.3f})")
        if len(labels) == 2 and by_part["other"].get(name):
            pairs = zip(by_part["this"][name], by_part["other"][name], strict=True)
            line.append(f"per-round ratio {statistics.median([this / other for this, other in pairs]):.2f}")
        print(f"  {name}: " + ", ".join(line))
    print("target: 0.5 s (issue 25)")


if __name__ == "__main__":
    main()
