"""What the hub costs: the same requests sent straight to a backend and through `lsp-hub`, in one run.

Measures median and p99 latency of a small request (hover) and of a large completion list (5,000 items), the
rate of forwarded didChange notifications, the CPU time per message of the process the client talks to, and how
fast the hub answers initialize; straight to the server, through a proxy that only copies bytes
(`copy_proxy.py`: what any Python process in the middle costs here), and through the hub. Prints hub/direct
ratios, and whether each target is met.
Targets (issue #10): added median hover latency <= 0.15 ms; didChange forwarded at >= 0.5x the direct rate;
5,000-item completion <= 1.1x direct. The machine's load average is printed first: on a shared machine the
latencies move with it, the CPU figures much less.

    python bench/proxy_overhead.py [--hovers 1000] [--completions 40] [--changes 5000]
    python bench/proxy_overhead.py --old-tree DIR [--rounds 4]   (this tree's hub and DIR's, alternated)

`--old-tree DIR` compares two versions of the hub in one run: DIR holds another `lsp_hub` package (for instance
`git archive BASE lsp_hub | tar -x -C DIR`); each round runs the backend direct, through the copy proxy, then both
hubs in turns (the order swapped every round), and the medians of the rounds' figures are printed side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_hub.transport.rawclient import HubClient

BACKEND = Path(__file__).resolve().parent / "fast_backend.py"
COPY_PROXY = Path(__file__).resolve().parent / "copy_proxy.py"
HOVER_ADDED_MS = 0.15
CHANGE_RATE = 0.5
COMPLETION_RATIO = 1.1


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux; 0 elsewhere). Less disturbed by other work on a shared
    machine than wall-clock latency: what the process itself spent."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def run_session(client: HubClient, workspace: Path, args: argparse.Namespace) -> dict[str, Any]:
    await client.initialize(workspace)
    path = workspace / "file.bench"
    path.write_text("x = 1\n")
    uri = client.open(path, "bench")
    at = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
    for _ in range(50):  # warm up: the hub starts the backend lazily on the first request
        await client.request("textDocument/hover", at, timeout=60)
    pid = client.process.pid
    cpu = cpu_seconds(pid)
    hovers = []
    for _ in range(args.hovers):
        started = time.perf_counter()
        await client.request("textDocument/hover", at)
        hovers.append((time.perf_counter() - started) * 1000)
    hover_cpu = cpu_seconds(pid) - cpu
    for _ in range(3):
        await client.request("textDocument/completion", at)
    cpu = cpu_seconds(pid)
    completions = []
    for _ in range(args.completions):
        started = time.perf_counter()
        result = await client.request("textDocument/completion", at)
        completions.append((time.perf_counter() - started) * 1000)
    completion_cpu = cpu_seconds(pid) - cpu
    assert len(result["items"]) == 5000
    before = await client.request("bench/changes", {"textDocument": {"uri": uri}})
    cpu = cpu_seconds(pid)
    started = time.perf_counter()
    for version in range(2, args.changes + 2):
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "a"}]})
    after = await client.request("bench/changes", {"textDocument": {"uri": uri}}, timeout=120)
    elapsed = time.perf_counter() - started
    change_cpu = cpu_seconds(pid) - cpu
    assert after - before == args.changes, (before, after)
    return {
        "hover_median": statistics.median(hovers), "hover_p99": percentile(hovers, 0.99),
        "completion_median": statistics.median(completions), "completion_p99": percentile(completions, 0.99),
        "changes_per_second": args.changes / elapsed,
        # CPU of the process the client talks to (the backend direct, the hub through it), per message
        "hover_cpu_us": hover_cpu / args.hovers * 1e6, "change_cpu_us": change_cpu / args.changes * 1e6,
        "completion_cpu_ms": completion_cpu / max(args.completions, 1) * 1e3,
    }


async def initialize_latency(config: Path, workspace: Path) -> tuple[float, float]:
    """(ms from spawn to the first answer, ms for initialize once the hub is up)."""
    client = HubClient()
    started = time.perf_counter()
    await client.start("--config", str(config), cwd=str(workspace))
    with contextlib.suppress(Exception):
        await client.request("textDocument/hover", {})  # refused before initialize: proves the hub is up
    startup = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    await client.initialize(workspace)
    initialize = (time.perf_counter() - started) * 1000
    await client.stop()
    return startup, initialize


def write_config(workspace: Path) -> Path:
    config = workspace / "bench.toml"
    config.write_text(
        "[server.fast]\n"
        f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(BACKEND))}]\n"
        'root_markers = [".git"]\n'
        '[language.bench]\nextensions = ["bench"]\nservers = ["fast"]\n'
    )
    return config


async def hub_session(workspace: Path, args: argparse.Namespace, tree: Path) -> dict[str, Any]:
    """One session through the hub whose `lsp_hub` package is in `tree`."""
    hub = HubClient()
    await hub.start("--config", str(write_config(workspace)), cwd=str(workspace),
                    env={"XDG_CONFIG_HOME": str(workspace / "cfg"), "PYTHONPATH": str(tree)})
    figures = await run_session(hub, workspace, args)
    await hub.stop()
    return figures


async def compare(args: argparse.Namespace) -> None:
    """This tree's hub against the one in --old-tree, alternated round by round."""
    new_tree = Path(__file__).resolve().parent.parent
    old_tree = Path(args.old_tree).resolve()
    rounds: dict[str, list[dict[str, Any]]] = {"direct": [], "copy": [], "new": [], "old": []}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        for number in range(args.rounds):
            direct = HubClient()
            await direct.start(command=[sys.executable, str(BACKEND)])
            rounds["direct"].append(await run_session(direct, workspace, args))
            await direct.stop()
            copier = HubClient()
            await copier.start(command=[sys.executable, str(COPY_PROXY), sys.executable, str(BACKEND)])
            rounds["copy"].append(await run_session(copier, workspace, args))
            await copier.stop()
            for which in (("new", "old") if number % 2 == 0 else ("old", "new")):
                rounds[which].append(await hub_session(workspace, args, new_tree if which == "new" else old_tree))
    print(f"old ({old_tree}) and new ({new_tree}) hubs alternated over {args.rounds} rounds ({args.hovers} hovers, "
          f"{args.completions} completions of 5,000 items, {args.changes} didChange each; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs); medians of the rounds")
    print(f"{'':24}{'direct':>12}{'copy proxy':>12}{'old hub':>12}{'new hub':>12}{'old/direct':>11}"
          f"{'new/direct':>11}")
    middle = {which: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
              for which, runs in rounds.items()}
    for key, label, unit in (
        ("hover_median", "hover median", "ms"), ("hover_p99", "hover p99", "ms"),
        ("completion_median", "completion median", "ms"), ("completion_p99", "completion p99", "ms"),
        ("changes_per_second", "didChange throughput", "/s"),
        ("hover_cpu_us", "CPU per hover", "us"), ("completion_cpu_ms", "CPU per completion", "ms"),
        ("change_cpu_us", "CPU per didChange", "us"),
    ):
        d, c, o, n = middle["direct"][key], middle["copy"][key], middle["old"][key], middle["new"][key]
        print(f"{label:24}{d:>10.3f}{unit:>2}{c:>10.3f}{unit:>2}{o:>10.3f}{unit:>2}{n:>10.3f}{unit:>2}"
              f"{o / d if d else float('nan'):>11.2f}{n / d if d else float('nan'):>11.2f}")
    for which in ("copy", "old", "new"):
        added = middle[which]["hover_median"] - middle["direct"]["hover_median"]
        ratio = middle[which]["completion_median"] / middle["direct"]["completion_median"]
        print(f"{which}: hover +{added:.3f} ms over direct (target <= +0.1 ms), completion {ratio:.2f}x direct "
              f"(target <= {COMPLETION_RATIO}x)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hovers", type=int, default=1000)
    parser.add_argument("--completions", type=int, default=40)
    parser.add_argument("--changes", type=int, default=5000)
    parser.add_argument("--old-tree", help="a directory holding another lsp_hub package to compare with")
    parser.add_argument("--rounds", type=int, default=4, help="with --old-tree: rounds of direct, old, new")
    args = parser.parse_args()
    if args.old_tree:
        await compare(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        config = write_config(workspace)
        direct = HubClient()
        await direct.start(command=[sys.executable, str(BACKEND)])
        direct_figures = await run_session(direct, workspace, args)
        await direct.stop()
        copier = HubClient()
        await copier.start(command=[sys.executable, str(COPY_PROXY), sys.executable, str(BACKEND)])
        copy_figures = await run_session(copier, workspace, args)
        await copier.stop()
        hub = HubClient()
        await hub.start("--config", str(config), "--log-file", str(workspace / "hub.log"), cwd=str(workspace),
                        env={"XDG_CONFIG_HOME": str(workspace / "cfg")})
        hub_figures = await run_session(hub, workspace, args)
        await hub.stop()
        startup, initialize = await initialize_latency(config, workspace)

    print(f"lsp-hub proxy overhead ({args.hovers} hovers, {args.completions} completions of 5,000 items, "
          f"{args.changes} didChange; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)")
    print(f"{'':24}{'direct':>12}{'copy proxy':>12}{'through hub':>14}{'hub/direct':>11}")
    for key, label, unit in (
        ("hover_median", "hover median", "ms"), ("hover_p99", "hover p99", "ms"),
        ("completion_median", "completion median", "ms"), ("completion_p99", "completion p99", "ms"),
        ("changes_per_second", "didChange throughput", "/s"),
        ("hover_cpu_us", "CPU per hover", "us"), ("completion_cpu_ms", "CPU per completion", "ms"),
        ("change_cpu_us", "CPU per didChange", "us"),
    ):
        d, c, h = direct_figures[key], copy_figures[key], hub_figures[key]
        print(f"{label:24}{d:>10.3f}{unit:>2}{c:>10.3f}{unit:>2}{h:>12.3f}{unit:>2}"
              f"{h / d if d else float('nan'):>11.2f}")
    print("(copy proxy: bench/copy_proxy.py, asyncio copying bytes between client and server, the floor of any Python\n"
          " hop on this machine; CPU: of the process the client talks to, the server, the copier or the hub)")
    added = hub_figures["hover_median"] - direct_figures["hover_median"]
    changes = hub_figures["changes_per_second"] / direct_figures["changes_per_second"]
    ratio = hub_figures["completion_median"] / direct_figures["completion_median"]
    completion_added = hub_figures["completion_median"] - direct_figures["completion_median"]
    floor = copy_figures["hover_median"] - direct_figures["hover_median"]
    print(f"the copy proxy adds {floor:.3f} ms to a hover, forwards didChange at "
          f"{copy_figures['changes_per_second'] / direct_figures['changes_per_second']:.2f}x and completion at "
          f"{copy_figures['completion_median'] / direct_figures['completion_median']:.2f}x direct")
    print("targets (issue #10):")
    for what, met in (
        (f"added median hover latency {added:.3f} ms (target <= {HOVER_ADDED_MS} ms)", added <= HOVER_ADDED_MS),
        (f"didChange forwarded at {changes:.2f}x the direct rate (target >= {CHANGE_RATE}x)",
         changes >= CHANGE_RATE),
        (f"5,000-item completion {ratio:.2f}x direct, {completion_added:+.1f} ms (target <= {COMPLETION_RATIO}x)",
         ratio <= COMPLETION_RATIO),
    ):
        print(f"  {what}: {'met' if met else 'MISSED'}")
    print(f"initialize: answered {initialize:.1f} ms after the hub is up (target < 100 ms); "
          f"process start to first answer {startup:.0f} ms (Python and the hub's imports)")


if __name__ == "__main__":
    asyncio.run(main())
