"""Content-Length framing for the hub's standard-library clients: `lsp-hub query` (and `lsp-hub mcp`'s session,
through it) and the `lsp-hub daemon` CLI.

One place frames a JSON-RPC message as LSP does (`Content-Length: N\\r\\n\\r\\n` + a UTF-8 JSON body) and takes
whole messages back out of the bytes read so far (`FrameBuffer`), so that every client reads the hub the same way.
The hub's own side (`jsonrpc.py`) frames with its own reader, which also recovers from broken frames; a client
only ever talks to a hub, so a broken frame here ends the conversation with one clear line (`FramingError`).
Standard library only: the clients that import it must start fast.
"""

from __future__ import annotations

import json
from typing import Any


class FramingError(Exception):
    """The peer sent bytes that are not an LSP frame holding one JSON object."""


def encode_message(message: dict[str, Any]) -> bytes:
    """One frame: the header, then the message as UTF-8 JSON."""
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class FrameBuffer:
    """Bytes read from the peer, and the whole messages among them (in order)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk

    def next_message(self) -> dict[str, Any] | None:
        """The next whole message, or None until more bytes arrive. A body that is JSON but not an object is
        returned as an empty message (it answers nothing a client waits for)."""
        header_end = self._buffer.find(b"\r\n\r\n")
        if header_end < 0:
            return None
        length = None
        for line in bytes(self._buffer[:header_end]).split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise FramingError(f"a Content-Length that is not a number: {value.strip()!r}") from None
        if length is None:
            raise FramingError("a message without Content-Length")
        start = header_end + 4
        if len(self._buffer) < start + length:
            return None
        body = bytes(self._buffer[start:start + length])
        del self._buffer[:start + length]
        try:
            message = json.loads(body)
        except ValueError as error:
            raise FramingError(f"a message that is not JSON ({error})") from None
        return message if isinstance(message, dict) else {}
