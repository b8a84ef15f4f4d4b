"""What the hub costs: the same requests sent straight to a backend and through `lsp-hub`, in one run.

Measures median and p99 latency of a small request (hover) and of a large completion list (5,000 items), the
rate of forwarded didChange notifications, and how fast the hub answers initialize. Prints hub/direct ratios.
Targets (issue 2): added median hover latency <= 0.3 ms; large completion <= 1.3x direct.

    python bench/proxy_overhead.py [--hovers 1000] [--completions 40] [--changes 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_hub.rawclient import HubClient

BACKEND = Path(__file__).resolve().parent / "fast_backend.py"


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
    hovers = []
    for _ in range(args.hovers):
        started = time.perf_counter()
        await client.request("textDocument/hover", at)
        hovers.append((time.perf_counter() - started) * 1000)
    for _ in range(3):
        await client.request("textDocument/completion", at)
    completions = []
    for _ in range(args.completions):
        started = time.perf_counter()
        result = await client.request("textDocument/completion", at)
        completions.append((time.perf_counter() - started) * 1000)
    assert len(result["items"]) == 5000
    before = await client.request("bench/changes", {"textDocument": {"uri": uri}})
    started = time.perf_counter()
    for version in range(2, args.changes + 2):
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "a"}]})
    after = await client.request("bench/changes", {"textDocument": {"uri": uri}}, timeout=120)
    elapsed = time.perf_counter() - started
    assert after - before == args.changes, (before, after)
    return {
        "hover_median": statistics.median(hovers), "hover_p99": percentile(hovers, 0.99),
        "completion_median": statistics.median(completions), "completion_p99": percentile(completions, 0.99),
        "changes_per_second": args.changes / elapsed,
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


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hovers", type=int, default=1000)
    parser.add_argument("--completions", type=int, default=40)
    parser.add_argument("--changes", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        config = workspace / "bench.toml"
        config.write_text(
            "[server.fast]\n"
            f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(BACKEND))}]\n"
            'root_markers = [".git"]\n'
            '[language.bench]\nextensions = ["bench"]\nservers = ["fast"]\n'
        )
        direct = HubClient()
        await direct.start(command=[sys.executable, str(BACKEND)])
        direct_figures = await run_session(direct, workspace, args)
        await direct.stop()
        hub = HubClient()
        await hub.start("--config", str(config), "--log-file", str(workspace / "hub.log"), cwd=str(workspace),
                        env={"XDG_CONFIG_HOME": str(workspace / "cfg")})
        hub_figures = await run_session(hub, workspace, args)
        await hub.stop()
        startup, initialize = await initialize_latency(config, workspace)

    print(f"lsp-hub proxy overhead ({args.hovers} hovers, {args.completions} completions of 5,000 items, "
          f"{args.changes} didChange)")
    print(f"{'':28}{'direct':>12}{'through hub':>14}{'ratio':>9}")
    for key, label, unit in (
        ("hover_median", "hover median", "ms"), ("hover_p99", "hover p99", "ms"),
        ("completion_median", "completion median", "ms"), ("completion_p99", "completion p99", "ms"),
        ("changes_per_second", "didChange throughput", "/s"),
    ):
        d, h = direct_figures[key], hub_figures[key]
        print(f"{label:28}{d:>10.3f}{unit:>2}{h:>12.3f}{unit:>2}{h / d:>9.2f}")
    added = hub_figures["hover_median"] - direct_figures["hover_median"]
    ratio = hub_figures["completion_median"] / direct_figures["completion_median"]
    print(f"added median hover latency: {added:.3f} ms (target <= 0.3 ms): {'OK' if added <= 0.3 else 'MISSED'}")
    print(f"large completion hub/direct: {ratio:.2f}x (target <= 1.3x): {'OK' if ratio <= 1.3 else 'MISSED'}")
    print(f"initialize: answered {initialize:.1f} ms after the hub is up (target < 100 ms); "
          f"process start to first answer {startup:.0f} ms (Python + pygls/lsprotocol import)")


if __name__ == "__main__":
    asyncio.run(main())
