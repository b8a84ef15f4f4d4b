"""How fast `FrameReader` takes frames off a stream, this tree's against another tree's (`--old-tree DIR`, a
directory holding another `lsp_hub` package), alternated in one process: many small frames arriving together
(a burst of didChange), one frame per arrival (a request at a time), and a 5,000-item completion answer read by
`RawResponseReader` in 256 KB chunks.

    python bench/frame_reading.py [--old-tree DIR] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
CHANGE = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
    "textDocument": {"uri": "file:///w/a.py", "version": 7}, "contentChanges": [
        {"range": {"start": {"line": 3, "character": 1}, "end": {"line": 3, "character": 1}}, "text": "a"}]}}).encode()
COMPLETION = json.dumps({"jsonrpc": "2.0", "id": 5, "result": {"isIncomplete": False, "items": [
    {"label": f"symbol_{i}", "kind": 3, "detail": f"def symbol_{i}(x: int) -> str", "sortText": f"{i:05d}",
     "data": {"id": i}} for i in range(5000)]}}, separators=(",", ":")).encode()


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def load(tree: Path) -> Any:
    """The `lsp_hub.transport.jsonrpc` of `tree` (each tree's modules imported afresh)."""
    for name in [name for name in sys.modules if name == "lsp_hub" or name.startswith("lsp_hub.")]:
        del sys.modules[name]
    sys.path.insert(0, str(tree))
    try:
        return importlib.import_module("lsp_hub.transport.jsonrpc")
    finally:
        sys.path.remove(str(tree))


async def burst(jsonrpc: Any, frames: int = 20000) -> float:
    """µs per frame: `frames` small frames already in the stream."""
    stream = asyncio.StreamReader(limit=1 << 26)
    stream.feed_data(frame(CHANGE) * frames)
    stream.feed_eof()
    reader = jsonrpc.FrameReader(stream)
    started = time.perf_counter()
    for _ in range(frames):
        await reader.read_message()
    return (time.perf_counter() - started) / frames * 1e6


async def one_at_a_time(jsonrpc: Any, frames: int = 5000) -> float:
    """µs per frame: each frame fed while the reader waits for it."""
    stream = asyncio.StreamReader(limit=1 << 26)
    reader = jsonrpc.FrameReader(stream)
    data = frame(CHANGE)
    started = time.perf_counter()
    for _ in range(frames):
        pending = asyncio.ensure_future(reader.read_message())
        await asyncio.sleep(0)
        stream.feed_data(data)
        await pending
    return (time.perf_counter() - started) / frames * 1e6


async def large_answer(jsonrpc: Any, answers: int = 30) -> float:
    """ms per 5,000-item completion answer, arriving in 256 KB chunks."""
    data = frame(COMPLETION)
    chunks = [data[at:at + 262144] for at in range(0, len(data), 262144)]
    stream = asyncio.StreamReader(limit=1 << 26)
    reader = jsonrpc.RawResponseReader(stream)
    read = getattr(reader, "read_message")  # noqa: B009  (the same name in both trees)
    started = time.perf_counter()
    for _ in range(answers):
        pending = asyncio.ensure_future(read())
        for chunk in chunks:
            await asyncio.sleep(0)
            stream.feed_data(chunk)
        message = await pending
        assert message["id"] == 5
    return (time.perf_counter() - started) / answers * 1e3


CASES: list[tuple[str, str, Callable[[Any], Any]]] = [
    ("burst of small frames", "µs/frame", burst), ("one frame per arrival", "µs/frame", one_at_a_time),
    ("5,000-item answer", "ms/answer", large_answer),
]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old-tree", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    trees = {"new": HERE, **({"old": args.old_tree.resolve()} if args.old_tree else {})}
    figures: dict[str, dict[str, list[float]]] = {which: {name: [] for name, _, _ in CASES} for which in trees}
    for number in range(args.rounds):
        for which in (list(trees) if number % 2 == 0 else list(reversed(trees))):
            jsonrpc = load(trees[which])
            for name, _, case in CASES:
                figures[which][name].append(await case(jsonrpc))
    print(f"FrameReader, best of {args.rounds} alternated rounds (the least disturbed on a shared machine): "
          + ", ".join(f"{which} = {tree}" for which, tree in trees.items()))
    for name, unit, _ in CASES:
        print(f"  {name:24}" + "".join(f"{which} {min(figures[which][name]):8.2f} {unit}   "
                                         for which in trees))


if __name__ == "__main__":
    asyncio.run(main())
