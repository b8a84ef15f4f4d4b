"""A minimal, fast language server for benchmarks: answers hover and completion from prepared results.

Built on the hub's own raw protocol (pygls framing, no type conversion) so the backend costs as little as it can
and the measured difference is the hub's.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pygls.io_ import run_async  # noqa: E402
from pygls.server import JsonRPCServer  # noqa: E402

from lsp_hub.jsonrpc import MsgId, RawProtocol, raw_converter  # noqa: E402

ITEMS = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
COMPLETION = {
    "isIncomplete": False,
    "items": [
        {"label": f"symbol_{i}", "kind": 3, "detail": f"def symbol_{i}(x: int) -> str", "sortText": f"{i:05d}",
         "data": {"id": i}}
        for i in range(ITEMS)
    ],
}
HOVER = {"contents": {"kind": "markdown", "value": "```python\ndef f(x: int) -> str\n```"}}
CAPABILITIES = {"textDocumentSync": 2, "hoverProvider": True, "completionProvider": {"resolveProvider": False}}


class Backend:
    def __init__(self, protocol: RawProtocol, stop: asyncio.Event) -> None:
        self.protocol = protocol
        self.stop = stop
        self.changes = 0

    def on_request(self, msg_id: MsgId, method: str, params: Any) -> Any:
        if method == "initialize":
            return {"capabilities": CAPABILITIES}
        if method == "textDocument/hover":
            return HOVER
        if method == "textDocument/completion":
            return COMPLETION
        if method == "bench/changes":
            return self.changes
        return None

    def on_notification(self, method: str, params: Any) -> None:
        if method == "textDocument/didChange":
            self.changes += 1
        elif method == "exit":
            self.stop.set()


async def main() -> None:
    server = JsonRPCServer(protocol_cls=RawProtocol, converter_factory=raw_converter)
    protocol = server.protocol
    assert isinstance(protocol, RawProtocol)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)

    class Out:
        def write(self, data: bytes) -> None:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()

        def close(self) -> None:
            pass

    protocol.set_writer(Out())
    stop = asyncio.Event()
    protocol.handler = Backend(protocol, stop)
    import threading

    reading = asyncio.ensure_future(run_async(threading.Event(), reader, protocol))
    await asyncio.wait([reading, asyncio.ensure_future(stop.wait())], return_when=asyncio.FIRST_COMPLETED)


if __name__ == "__main__":
    asyncio.run(main())
