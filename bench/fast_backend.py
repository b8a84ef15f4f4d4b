"""A minimal, fast language server for benchmarks: answers hover and completion from prepared results.

Built on the hub's own endpoint (`jsonrpc.RawProtocol`: its framing, no type conversion) so the backend costs as
little as it can and the measured difference is the hub's.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_hub.transport.jsonrpc import MsgId, RawProtocol, serve_stdio

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


class StdlibJsonProtocol(RawProtocol):
    """Writes its answers with the standard library's json, as every RawProtocol did before issue #10. The hub's
    own serialisation (orjson) must not make the reference server faster: 'direct' stays the same server from one
    version of the hub to the next, so ratios stay comparable (orjson would take the 5,000-item completion from
    about 17 to 8 ms direct)."""

    def encode(self, message: Any) -> bytes:
        return json.dumps(message, separators=(",", ":")).encode("utf-8")


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
    await serve_stdio(Backend, StdlibJsonProtocol)


if __name__ == "__main__":
    asyncio.run(main())
