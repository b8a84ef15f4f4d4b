"""LSP frames (`Content-Length` headers) read strictly from a byte stream, through its public `read(n)` only.

A reader keeps what has arrived in its own buffer, so every frame already there is taken without awaiting, and
one `read` brings in as many frames as the peer wrote. A broken header is logged with what was seen and reading
resumes at the next `Content-Length:` header; input that ends first ends the connection. Each body is parsed here,
so a body that is not JSON becomes one log line and an `UnreadableBody` for the endpoint to answer.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Protocol

from lsp_hub.transport.jsonrpc.codec import RAW_THRESHOLD, parse_body, split_raw_response

logger = logging.getLogger("lsp_hub.transport.jsonrpc")

END = object()  # FrameReader.read_message: the input has ended
MAX_CONTENT_LENGTH = 512 * 1024 * 1024  # a longer frame is a broken header, not a message
MAX_HEADER_BYTES = 64 * 1024  # this much without a header end is not a header: skipped
SMALL_BODY = 64 * 1024  # copied off the buffer through a slice; a larger one through a view (one copy less)
READ_SIZE = 256 * 1024  # asyncio's pipe transports hand over at most this much at a time
_HEADER_END = b"\r\n\r\n"
_HEADER_LINE = re.compile(rb"([A-Za-z0-9-]+): (.*)")
_PLAIN_HEADER = re.compile(rb"Content-Length: ([1-9][0-9]{0,9})")  # what nearly every peer sends, alone
_CONTENT_LENGTH = b"Content-Length:"


class ByteStream(Protocol):
    """Where a FrameReader reads from: asyncio.StreamReader, or anything with its `read`."""

    async def read(self, n: int = -1) -> bytes:
        """Up to `n` bytes, at least one; b"" once the input has ended."""


def header_problem(block: bytes) -> tuple[int, str | None]:
    """(Content-Length, None) for a well-formed header block (without its final blank line), else (0, why)."""
    plain = _PLAIN_HEADER.fullmatch(block)
    if plain is not None and int(plain.group(1)) <= MAX_CONTENT_LENGTH:
        return int(plain.group(1)), None
    length: int | None = None
    for line in block.split(b"\r\n"):
        match = _HEADER_LINE.fullmatch(line)
        if match is None:
            return 0, f"malformed header line {line[:80]!r}"
        if match.group(1).lower() != b"content-length":
            continue  # Content-Type: only utf-8 exists in practice
        value = match.group(2)
        if not value.isdigit():
            return 0, f"Content-Length is not a non-negative integer: {value[:40]!r}"
        length = int(value)
        if length == 0:
            return 0, "Content-Length 0 (an empty body)"
        if length > MAX_CONTENT_LENGTH:
            return 0, f"Content-Length {length} is over the {MAX_CONTENT_LENGTH} bytes limit"
    if length is None:
        return 0, "no Content-Length header"
    return length, None


class FrameReader:
    """Reads LSP frames strictly from a ByteStream and parses their bodies (`read_message`)."""

    def __init__(self, stream: ByteStream, peer_name: str = "client") -> None:
        self._stream = stream
        self.peer_name = peer_name
        self._buffer = bytearray()
        self._body_length: int | None = None  # of the frame whose header has been read, until its body is taken
        self._skipped = 0  # bytes dropped while looking for a header, since the last good one

    async def read_message(self) -> Any:
        """The next frame's message, parsed (an UnreadableBody if it is not JSON); END once the input ends."""
        while True:
            body = self._take_frame()
            if body is not None:
                return self.decode(body)
            chunk = await self._stream.read(READ_SIZE)
            if not chunk:
                self._log_end()
                return END
            self._buffer += chunk

    def buffered(self) -> bool:
        """Whether a whole frame is already waiting (reading on need not wait for the peer). Its header is taken
        off the buffer now (once: read_message goes on from there)."""
        if self._body_length is None:
            self._body_length = self._take_header(self._buffer)
        return self._body_length is not None and len(self._buffer) >= self._body_length

    def decode(self, body: bytes) -> Any:
        return parse_body(body)

    def _take_frame(self) -> bytes | None:
        """The next body if it has arrived whole, taken off the buffer; else None."""
        buffer = self._buffer
        length = self._body_length
        if length is None:
            length = self._body_length = self._take_header(buffer)
            if length is None:
                return None
        if len(buffer) < length:
            return None
        self._body_length = None
        if length < SMALL_BODY:
            body = bytes(buffer[:length])
        else:
            with memoryview(buffer) as view:
                body = view[:length].tobytes()  # one copy of a large body (a bytearray slice would be a second)
        del buffer[:length]
        return body

    def _take_header(self, buffer: bytearray) -> int | None:
        while True:
            end = buffer.find(_HEADER_END)
            if end < 0:
                if len(buffer) > MAX_HEADER_BYTES:
                    # Nothing here is a header: drop it (but a tail that may start one) and look on.
                    dropped = len(buffer) - 1024
                    if not self._skipped:
                        logger.warning("%s: %d bytes without a frame header end; skipping to the next "
                                       "Content-Length header", self.peer_name, dropped)
                    self._skipped += dropped
                    del buffer[:dropped]
                return None
            plain = _PLAIN_HEADER.fullmatch(buffer, 0, end)
            length = int(plain.group(1)) if plain is not None else 0
            if plain is not None and not self._skipped and length <= MAX_CONTENT_LENGTH:
                del buffer[:end + len(_HEADER_END)]  # (after reading the match: it reads the buffer as it is now)
                return length
            block = bytes(buffer[:end + len(_HEADER_END)])
            del buffer[:end + len(_HEADER_END)]
            header = block[: -len(_HEADER_END)]
            length, problem = header_problem(header)
            if problem is None and not self._skipped:
                return length
            if problem is not None:
                if not self._skipped:
                    logger.warning("%s: bad frame header: %s (saw %r); skipping to the next Content-Length header",
                                   self.peer_name, problem, block[:120])
                # Something before a header (the rest of a frame we lost step with, or a header line with LF-only
                # ends): a well-formed header may still close the block.
                at = header.rfind(_CONTENT_LENGTH)
                length = header_problem(header[at:])[0] if at > 0 else 0
                if not length:
                    self._skipped += len(block)
                    continue
                self._skipped += at
            logger.info("%s: resynchronized at a Content-Length header after skipping %d bytes",
                        self.peer_name, self._skipped)
            self._skipped = 0
            return length

    def _log_end(self) -> None:
        if self._body_length is not None:
            logger.error("%s: input ended %d bytes into a %d-byte body", self.peer_name, len(self._buffer),
                         self._body_length)
        elif self._buffer.strip() or self._skipped:
            logger.error("%s: input ended while looking for a frame header (%d bytes skipped, last %r)",
                         self.peer_name, self._skipped + len(self._buffer), bytes(self._buffer[-60:]))


class RawResponseReader(FrameReader):
    """Reads a backend's stream. A large response is not parsed: its result stays bytes (`RawResult`).

    Parsing a 5,000-item completion, then serialising it again towards the client, would double the cost of the
    hop. The result is checked to be one well-formed JSON value in UTF-8 first (`is_one_json_value`), so the
    client never gets an unparseable frame.
    """

    def __init__(self, stream: ByteStream, threshold: int = RAW_THRESHOLD, peer_name: str = "server") -> None:
        super().__init__(stream, peer_name)
        self._threshold = threshold

    def decode(self, body: bytes) -> Any:
        raw = split_raw_response(body, self._threshold)
        if raw is None:
            return parse_body(body)
        return {"jsonrpc": "2.0", "id": raw[0], "result": raw[1]}
