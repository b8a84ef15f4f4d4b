"""A WebSocket connection (the `websockets` library's) as the endpoint's message source and writer: one JSON-RPC
message per WebSocket message, no Content-Length headers."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from lsp_hub.transport.jsonrpc.codec import parse_body
from lsp_hub.transport.jsonrpc.framing import END


class WebSocketMessages:
    """Messages read from a WebSocket until it closes (then END)."""

    def __init__(self, websocket: Any, peer_name: str = "client") -> None:
        self._websocket = websocket
        self.peer_name = peer_name

    async def read_message(self) -> Any:
        from websockets.exceptions import ConnectionClosed

        try:
            data = await self._websocket.recv(decode=False)
        except ConnectionClosed:
            return END
        return parse_body(data)

    def buffered(self) -> bool:
        return False  # each message is awaited: what earlier ones caused leaves first


class WebSocketWriter:
    """Sends each frame as one WebSocket message (a coroutine the endpoint keeps alive until done)."""

    def __init__(self, websocket: Any) -> None:
        self._websocket = websocket

    def write(self, data: bytes) -> Awaitable[None]:
        result: Awaitable[None] = self._websocket.send(data)
        return result

    def close(self) -> Awaitable[None]:
        result: Awaitable[None] = self._websocket.close()
        return result
