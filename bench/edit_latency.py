"""What an edit costs in a large document: didChange at its end plus a request round trip, direct and through
`lsp-hub`, in one run.

The hub keeps its own copy of every open document and applies each edit to it (issue 13: edits used to cost
O(document): 0.8 s at the end of a 1.4M-line document, 1.4-1.8 s on a 10 MB line with one non-ASCII character).
The backend (bench/fast_backend.py) keeps no text, so "direct" is the floor: the transport and the round trip.

    python bench/edit_latency.py [--edits 30] [--sizes 5,50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_hub.transport.rawclient import HubClient

BACKEND = Path(__file__).resolve().parent / "fast_backend.py"
LINE = "value_{:08d} = compute(alpha, beta, gamma)  # a comment\n"  # 57 bytes, like source code


def documents(sizes_mb: list[int]) -> list[tuple[str, str, int, int]]:
    """(label, text, line of the edit, UTF-16 column of the edit): edits go at the end of the document."""
    cases = []
    for size in sizes_mb:
        count = size * 1_000_000 // len(LINE.format(0))
        text = "".join(LINE.format(i) for i in range(count))
        cases.append((f"{size} MB, {count:,} lines, edit at end", text, count, 0))
    # One long line with one non-ASCII character at its start; the edit goes at its end.
    long_line = "é" + "x" * 10_000_000
    cases.append(("10 MB single line, non-ASCII", long_line, 0, len(long_line)))
    return cases


async def measure(client: HubClient, uri: str, line: int, column: int, edits: int) -> list[float]:
    """ms from sending a didChange at (line, column) to the answer of the hover that follows it."""
    at = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
    await client.request("textDocument/hover", at, timeout=300)  # the document is open everywhere
    figures = []
    for version in range(2, edits + 2):
        started = time.perf_counter()
        position = {"line": line, "character": column + version - 2}
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": position, "end": position}, "text": "x"}]})
        await client.request("textDocument/hover", at, timeout=300)
        figures.append((time.perf_counter() - started) * 1000)
    return figures


async def run(client: HubClient, workspace: Path, cases: list[tuple[str, str, int, int]],
              edits: int) -> list[list[float]]:
    await client.initialize(workspace)
    results = []
    for number, (_, text, line, column) in enumerate(cases):
        path = workspace / f"doc{number}.bench"
        uri = client.open(path, "bench", text=text)
        results.append(await measure(client, uri, line, column, edits))
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--sizes", default="5,50", help="document sizes in MB, comma-separated")
    args = parser.parse_args()
    cases = documents([int(size) for size in args.sizes.split(",")])
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
        direct_figures = await run(direct, workspace, cases, args.edits)
        await direct.stop()
        hub = HubClient()
        await hub.start("--config", str(config), "--log-file", str(workspace / "hub.log"), cwd=str(workspace),
                        env={"XDG_CONFIG_HOME": str(workspace / "cfg")})
        hub_figures = await run(hub, workspace, cases, args.edits)
        await hub.stop()

    print(f"lsp-hub edit latency: didChange at the end + hover round trip, {args.edits} edits per document")
    print(f"{'':40}{'direct':>12}{'through hub':>14}{'added':>11}")
    for (label, *_), direct_ms, hub_ms in zip(cases, direct_figures, hub_figures, strict=True):
        for name, pick in (("median", statistics.median), ("max", max)):
            d, h = pick(direct_ms), pick(hub_ms)
            print(f"{label + ' ' + name:40}{d:>10.2f}ms{h:>12.2f}ms{h - d:>9.2f}ms")



if __name__ == "__main__":
    asyncio.run(main())
