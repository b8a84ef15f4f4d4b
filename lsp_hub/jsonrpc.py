"""JSON-RPC with payloads kept as plain dicts, on top of pygls' framing and request bookkeeping.

pygls reads and frames messages (`pygls.io_`), keeps the futures of outgoing requests and cancels handler tasks.
What it does not do for a proxy, this module does: it never converts a message to lsprotocol classes (that loses
unknown fields and costs time), it dispatches every method (known or not) to one `MessageHandler`, it keeps the
ids of incoming and outgoing requests apart, and it answers malformed input with the JSON-RPC error it deserves.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import logging
import re
import sys
import threading
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import cattrs
import orjson
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol

from lsp_hub.platform.processes import widen_pipe_buffer

if TYPE_CHECKING:
    from pygls.server import JsonRPCServer

logger = logging.getLogger(__name__)

MsgId = int | str

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_FAILED = -32803
SERVER_CANCELLED = -32802
REQUEST_CANCELLED = -32800
CONTENT_MODIFIED = -32801


class ResponseFailure(JsonRpcException):
    """An error answer: from a peer (kept verbatim for forwarding) or made by the hub."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message=message, code=code, data=data)

    @classmethod
    def from_dict(cls, error: Any) -> ResponseFailure:
        if isinstance(error, dict):
            return cls(int(error.get("code", INTERNAL_ERROR)), str(error.get("message", "")), error.get("data"))
        return cls(INTERNAL_ERROR, f"malformed error object: {error!r}")

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class RawResult:
    """A response's result kept as the JSON text the server sent: forwarded as is, parsed only if needed."""

    __slots__ = ("_value", "raw")

    _UNPARSED = object()

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._value: Any = RawResult._UNPARSED

    @property
    def value(self) -> Any:
        if self._value is RawResult._UNPARSED:
            self._value = parse_body(self.raw)  # checked to be one JSON value when it was read
        return self._value


def materialize(result: Any) -> Any:
    """The parsed value of a result that may still be raw text."""
    return result.value if isinstance(result, RawResult) else result


# The members JSON-RPC libraries write before the result, in the two orders seen (vscode-jsonrpc, pygls, gopls,
# rust-analyzer write jsonrpc first; clangd sorts keys). A response has no member after "result".
_RESPONSE_PREFIX = re.compile(
    rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+)'
    rb'|"id"\s*:\s*(-?\d+)\s*,\s*"jsonrpc"\s*:\s*"2\.0")\s*,\s*"result"\s*:'
)
RAW_THRESHOLD = 64 * 1024
RAW_MARKER = "$lspHubRaw"
FRAME_MARKER = "$lspHubFrame"
MAX_CONTENT_LENGTH = 512 * 1024 * 1024  # a longer frame is a broken header, not a message
_HEADER_END = b"\r\n\r\n"
_HEADER_LINE = re.compile(rb"([A-Za-z0-9-]+): (.*)")
_PLAIN_HEADER = re.compile(rb"Content-Length: ([1-9][0-9]{0,9})")  # what nearly every peer sends, alone
_CONTENT_LENGTH = b"Content-Length:"

# Messages FrameReader parsed, waiting for RawProtocol.handle_message: pygls' read loop parses the stand-in the
# reader returns and calls handle_message without awaiting in between, so an entry lives for one synchronous
# stretch and the map holds at most one entry per connection.
_HANDED_OFF: dict[int, Any] = {}
_handoff_keys = itertools.count(1)

END = object()  # FrameReader.read_message: the input has ended
DEBUG_PREVIEW = 200  # bytes of each message written that the debug log shows


def dumps(value: Any) -> bytes:
    """JSON text of a message (orjson; the standard library for what orjson refuses: keys that are not strings,
    integers beyond 64 bits, lone surrogates, tuple subclasses). A RawResult inside is parsed after all (merges are
    the rare, small case). Raises TypeError or ValueError for what is not JSON at all."""
    try:
        return orjson.dumps(value, default=_raw_default)
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(value, separators=(",", ":"), default=_raw_default).encode("utf-8")


class UnreadableBody:
    """A frame whose body is not JSON (or not UTF-8): what was wrong, and the response id if one can be seen."""

    __slots__ = ("error", "response_id", "size", "start")

    def __init__(self, body: bytes, error: Exception) -> None:
        self.error = error
        self.size = len(body)
        self.start = body[:60]
        match = _RESPONSE_PREFIX.match(body, 0, 256)
        self.response_id = int(match.group(1) or match.group(2)) if match else None


def parse_body(body: bytes) -> Any:
    """A frame's body as Python values (orjson, which is faster; the standard library for what orjson refuses and
    JSON-RPC peers still send: lone surrogates in strings, integers beyond 64 bits); UnreadableBody if neither
    can read it."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        try:
            return json.loads(body)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            return UnreadableBody(body, exc)


def _header_problem(block: bytes) -> tuple[int, str | None]:
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
    """Reads LSP frames strictly and parses their bodies, for pygls' read loop (`pygls.io_.run_async`).

    pygls' loop ignores any header line it does not expect, so one broken header (a negative, huge or non-numeric
    Content-Length, LF-only line ends, no space after the colon) desynchronised the stream for good, silently; and
    it logs a traceback per unparseable body. Here a broken header is logged with what was seen and reading
    resumes at the next "Content-Length:" header; input that ends while looking for one ends the loop (the
    connection, and on stdio the hub). Each body is parsed here, and pygls gets a tiny stand-in naming it, so a
    body that is not JSON becomes one log line and an UnreadableBody for RawProtocol to answer.
    """

    def __init__(self, stream: asyncio.StreamReader, peer_name: str = "client") -> None:
        self._stream = stream
        self.peer_name = peer_name
        self._blank_line_due = False
        # asyncio.StreamReader keeps what has arrived in `_buffer` (CPython 3.4 to 3.13): a frame that is there
        # whole is taken without the two awaits (and their coroutines) of readuntil and readexactly.
        self._buffer: bytearray | None = getattr(stream, "_buffer", None)
        if not isinstance(self._buffer, bytearray) or not hasattr(stream, "_maybe_resume_transport"):
            self._buffer = None

    async def readline(self) -> bytes:
        # pygls reads header lines until a blank one, then the body: give it one clean header and the blank line.
        if self._blank_line_due:
            self._blank_line_due = False
            return b"\r\n"
        length = await self._next_frame_length()
        if length is None:
            return b""  # ends pygls' loop
        self._blank_line_due = True
        return b"Content-Length: %d\r\n" % length

    async def _next_frame_length(self) -> int | None:
        skipped = 0
        while True:
            try:
                block = await self._stream.readuntil(_HEADER_END)
            except asyncio.IncompleteReadError as exc:
                if exc.partial.strip() or skipped:
                    logger.error("%s: input ended while looking for a frame header (%d bytes skipped, last %r)",
                                 self.peer_name, skipped + len(exc.partial), exc.partial[-60:])
                return None
            except asyncio.LimitOverrunError as exc:
                # No header end within the stream's limit: nothing there is a frame; drop it and look on.
                dropped = await self._stream.readexactly(exc.consumed)
                if not skipped:
                    logger.warning("%s: %d bytes without a frame header end; skipping to the next Content-Length "
                                   "header", self.peer_name, len(dropped))
                skipped += len(dropped)
                continue
            header = block[: -len(_HEADER_END)]
            length, problem = _header_problem(header)
            if problem is None and not skipped:
                return length
            if problem is not None:
                if not skipped:
                    logger.warning("%s: bad frame header: %s (saw %r); skipping to the next Content-Length header",
                                   self.peer_name, problem, block[:120])
                # Something before a header (the rest of a frame we lost step with, or a header line with LF-only
                # ends): a well-formed header may still close the block.
                at = header.rfind(_CONTENT_LENGTH)
                length = _header_problem(header[at:])[0] if at > 0 else 0
                if not length:
                    skipped += len(block)
                    continue
                skipped += at
            logger.info("%s: resynchronized at a Content-Length header after skipping %d bytes",
                        self.peer_name, skipped)
            return length

    async def readexactly(self, n: int) -> bytes:
        body = await self._read_body(n)
        return b"" if body is None else self.hand_off(body)  # b"" ends pygls' loop

    async def _read_body(self, n: int) -> bytes | None:
        try:
            return await self._stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            logger.error("%s: input ended %d bytes into a %d-byte body", self.peer_name, len(exc.partial), n)
            return None

    def hand_off(self, body: bytes) -> bytes:
        message = parse_body(body)
        key = next(_handoff_keys)
        _HANDED_OFF[key] = message
        return b'{"%s":%d}' % (FRAME_MARKER.encode(), key)

    # ------------------------------------------------------------------------------------ the hub's own loop
    async def read_message(self) -> Any:
        """The next frame's message, parsed (an UnreadableBody if it is not JSON); END once the input ends.

        What `read_loop` uses: no stand-in, no second parse, no header lines handed to and re-read by pygls."""
        if self._buffer is not None and (body := self._buffered_frame(self._buffer)) is not None:
            return self.decode(body)
        length = await self._next_frame_length()
        if length is None:
            return END
        body = await self._read_body(length)
        return END if body is None else self.decode(body)

    def _buffered_frame(self, buffer: bytearray) -> bytes | None:
        """The body of the next frame if it has arrived whole behind a plain header, taken off the stream; else
        None (and nothing taken: the awaiting path reads it, and judges any other header)."""
        end = buffer.find(_HEADER_END)
        if end < 0:
            return None
        plain = _PLAIN_HEADER.fullmatch(buffer, 0, end)
        if plain is None:
            return None
        start = end + len(_HEADER_END)
        stop = start + int(plain.group(1))
        if stop > len(buffer) or stop - start > MAX_CONTENT_LENGTH or self._stream.exception() is not None:
            return None
        body = bytes(buffer[start:stop])
        del buffer[:stop]
        self._stream._maybe_resume_transport()  # type: ignore[attr-defined]  # what readexactly does after
        return body

    def decode(self, body: bytes) -> Any:
        return parse_body(body)

    def buffered(self) -> bool:
        """Whether input is already waiting (reading on may not have to wait for the peer)."""
        return bool(getattr(self._stream, "_buffer", True))


_raw_decoder: Any = None


def is_one_json_value(text: bytes) -> bool:
    """Whether `text` is exactly one JSON value in UTF-8. msgspec checks the syntax without building the value (a
    tenth of orjson's time on a 5,000-item completion, which is most of what the hub adds to one); it leaves the
    bytes inside strings alone, so UTF-8 is checked apart (ASCII, the common case, in one pass)."""
    global _raw_decoder
    if _raw_decoder is None:
        import msgspec  # here: only hubs that see a large answer need it

        _raw_decoder = (msgspec.json.Decoder(type=msgspec.Raw), msgspec.DecodeError)
    decoder, decode_error = _raw_decoder
    try:
        decoder.decode(text)
        if not text.isascii():
            text.decode("utf-8")
    except (decode_error, UnicodeDecodeError):
        return False
    return True


class RawResponseReader(FrameReader):
    """Reads a backend's stream. A large response is not parsed: its result stays bytes.

    Parsing a 5,000-item completion, then serialising it again towards the client, would double the cost of the
    hop. Bodies that look like a plain response (see _RESPONSE_PREFIX) are swapped for a tiny stand-in
    `{"jsonrpc":"2.0","id":N,"result":{"$lspHubRaw":K}}`; the protocol then picks the stashed bytes up by K,
    whether or not anyone still waits for them. The result is checked to be one well-formed JSON value in UTF-8
    first (`is_one_json_value`), so the client never gets an unparseable frame.
    """

    def __init__(self, stream: asyncio.StreamReader, threshold: int = RAW_THRESHOLD,
                 peer_name: str = "server") -> None:
        super().__init__(stream, peer_name)
        self._threshold = threshold
        self._stash: dict[int, bytes] = {}
        self._keys = itertools.count(1)

    def _split_raw(self, body: bytes) -> tuple[bytes, bytes] | None:
        """(the id's digits, the result's JSON text) of a large plain response whose result is one JSON value."""
        if len(body) < self._threshold:
            return None
        match = _RESPONSE_PREFIX.match(body, 0, 256)
        end = body.rstrip().rfind(b"}")
        if match is None or end <= match.end():
            return None
        result = body[match.end():end]
        if not is_one_json_value(result):
            # Members after "result", or no JSON at all: parse it whole (and answer what that finds).
            return None
        return match.group(1) or match.group(2), result

    def decode(self, body: bytes) -> Any:
        raw = self._split_raw(body)
        if raw is None:
            return parse_body(body)
        return {"jsonrpc": "2.0", "id": int(raw[0]), "result": RawResult(raw[1])}

    def hand_off(self, body: bytes) -> bytes:
        raw = self._split_raw(body)
        if raw is None:
            return super().hand_off(body)
        msg_id, result = raw
        key = next(self._keys)
        self._stash[key] = result
        return b'{"jsonrpc":"2.0","id":%s,"result":{"%s":%d}}' % (msg_id, RAW_MARKER.encode(), key)

    def take(self, key: int) -> bytes | None:
        return self._stash.pop(key, None)

    @property
    def stashed(self) -> int:
        """How many large results wait to be picked up (none, between messages)."""
        return len(self._stash)


class _WriteHold:
    """While a read loop handles frames that had already arrived together, writes are held and leave afterwards
    in one write per stream (see CoalescingWriter). Module-wide, because a message read from one peer is written
    to another (client to server, server to client). The loop lets go as soon as it would wait for input; failing
    that, the first held write has the event loop let go at its next step, so nothing stays held longer."""

    active = False
    writers: list[CoalescingWriter] = []
    release_due_on: asyncio.AbstractEventLoop | None = None  # the loop a release is scheduled on

    @classmethod
    def hold(cls) -> None:
        cls.active = True

    @classmethod
    def release(cls) -> None:
        cls.active = False
        cls.release_due_on = None
        writers, cls.writers = cls.writers, []
        for writer in writers:
            writer.flush()

    @classmethod
    def held_by(cls, writer: CoalescingWriter) -> bool:
        """Whether a write to `writer` must wait for the release; registers it to be flushed then."""
        if not cls.active:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not the event loop's thread: write now
            return False
        if cls.release_due_on is not loop:  # (a release scheduled on a loop since closed never comes)
            loop.call_soon(cls.release)
            cls.release_due_on = loop
        cls.writers.append(writer)
        return True


COALESCE_BYTES = 64 * 1024  # a burst's writes to one stream leave at least this often (one pipe buffer's worth)
hold_writes = _WriteHold.hold
release_writes = _WriteHold.release


class CoalescingWriter:
    """A stream writer (pipe, socket, stdout) whose writes during a burst of input leave as one write.

    Forwarding each of 5,000 didChange notifications with its own write cost a system call and a wake-up of the
    server each. Frames keep their order (held ones go out before any later write), and a lone message is not
    delayed: outside a burst, and at its end, writes go straight to the stream. Everything else (close,
    wait_closed, get_extra_info...) is the wrapped writer's."""

    def __init__(self, inner: Any, peer: RawProtocol) -> None:
        self.inner = inner
        self._peer = peer
        self._held: list[bytes] = []
        self._held_bytes = 0

    def write(self, data: bytes) -> Any:
        if self._held:
            self._held.append(data)  # behind frames still held: registered already
            self._held_bytes += len(data)
            if self._held_bytes >= COALESCE_BYTES:
                self.flush()  # a long burst goes out in pieces: the peer starts on it sooner
            return None
        if _WriteHold.held_by(self):
            self._held.append(data)
            self._held_bytes = len(data)
            return None
        return self.inner.write(data)

    def flush(self) -> None:
        if not self._held:
            return
        held, self._held = self._held, []
        self._held_bytes = 0
        try:
            self.inner.write(held[0] if len(held) == 1 else b"".join(held))
        except (BrokenPipeError, ConnectionResetError, RuntimeError, ValueError) as exc:
            logger.warning("cannot write to %s: %s", self._peer.peer_name, exc)

    def close(self) -> Any:
        self.flush()
        return self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def describe(message: Any) -> str:
    """A message in a few words, for the debug log: its kind, id and method, not its payload."""
    if isinstance(message, UnreadableBody):
        return f"a body that is not JSON ({message.size} bytes)"
    if not isinstance(message, dict):
        return f"a JSON {type(message).__name__}, not an object"
    method, msg_id = message.get("method"), message.get("id")
    if method is not None:
        return f"request {msg_id!r} {method}" if "id" in message else f"notification {method}"
    if "error" in message:
        return f"error answer to {msg_id!r}"
    result = message.get("result")
    if isinstance(result, RawResult):
        return f"answer to {msg_id!r} ({len(result.raw)} bytes, forwarded unparsed)"
    return f"answer to {msg_id!r}"


async def read_loop(
    reader: FrameReader,
    protocol: RawProtocol,
    stop_event: threading.Event,
    error_handler: Callable[[Exception, type[JsonRpcException]], Any] | None = None,
) -> None:
    """pygls' `run_async` for a FrameReader: reads messages and hands them to the protocol until the input ends
    or `stop_event` is set. Writes caused by messages that arrived together are held and leave together."""
    try:
        while not stop_event.is_set():
            if not reader.buffered():
                release_writes()  # about to wait for the peer: what the last messages caused goes out now
            message = await reader.read_message()
            if message is END:
                break
            if logger.isEnabledFor(logging.DEBUG):  # nothing is formatted unless the log shows it
                logger.debug("from %s: %s", protocol.peer_name, describe(message))
            hold_writes()
            try:
                protocol.handle_message(message)
            except Exception as exc:
                logger.exception("unable to handle a message from %s", protocol.peer_name)
                if error_handler is not None:
                    error_handler(exc, JsonRpcException)
    finally:
        release_writes()


class MessageHandler(Protocol):
    """What a RawProtocol delivers incoming requests and notifications to."""

    def on_request(self, msg_id: MsgId, method: str, params: Any) -> Awaitable[Any] | Any:
        """Handle a request. Runs synchronously, in arrival order; may return an awaitable for the result.

        Work that must keep message order (routing, sending downstream) happens before returning.
        Raise ResponseFailure to answer with an error.
        """

    def on_notification(self, method: str, params: Any) -> None:
        """Handle a notification synchronously, in arrival order."""


def raw_converter() -> cattrs.Converter:
    """pygls wants a converter; nothing in the hub's message path uses it."""
    return cattrs.Converter()


def error_to_dict(error: Any) -> dict[str, Any]:
    """Any error value pygls or a peer produced, as a JSON-RPC error object."""
    if isinstance(error, ResponseFailure):
        return error.to_dict()
    if isinstance(error, dict):
        return error
    code = getattr(error, "code", INTERNAL_ERROR)
    out: dict[str, Any] = {"code": code, "message": str(getattr(error, "message", error))}
    data = getattr(error, "data", None)
    if data is not None:
        out["data"] = data
    return out


class RawProtocol(JsonRPCProtocol):
    """A JSON-RPC endpoint whose messages stay dicts, for both sides of the hub.

    pygls calls `json.loads(body, object_hook=protocol.structure_message)`; with no hook the C decoder builds the
    dicts and no Python code runs per nested object, which is most of the saving on a 5,000-item completion.
    """

    structure_message = None  # type: ignore[assignment]

    def __init__(self, server: JsonRPCServer, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self.handler: MessageHandler | None = None
        self.peer_name = "peer"
        # Tasks answering the peer's requests, by the peer's id. Outgoing requests live in pygls'
        # `_request_futures`, keyed by our own ids: the two id spaces must not collide.
        self._incoming: dict[MsgId, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self.raw_reader: RawResponseReader | None = None
        # JSON-RPC answers a body that is not JSON with a parse error (id null); a backend gets none (servers log
        # an answer to no request of theirs as an error of their own).
        self.answers_parse_errors = True
        self._writes: set[asyncio.Future[Any]] = set()

    # ----------------------------------------------------------------------------------------------- incoming
    def handle_message(self, message: Any) -> None:
        if isinstance(message, dict) and len(message) == 1 and FRAME_MARKER in message:
            message = _HANDED_OFF.pop(message[FRAME_MARKER], None)  # through pygls' read loop
        if not isinstance(message, dict):
            if isinstance(message, UnreadableBody):
                self._unreadable(message)
                return
            self._reply_invalid(None, f"a message must be a JSON object, got {type(message).__name__}")
            return
        msg_id = message.get("id")
        if message.get("jsonrpc") != "2.0":
            self._reply_invalid(msg_id, 'missing or wrong "jsonrpc": "2.0"')
            return
        method = message.get("method")
        if method is None:
            if "id" not in message:
                self._reply_invalid(None, "a message needs a method or an id")
            elif "error" in message:
                self._complete_outgoing(msg_id, error=message["error"])
            else:
                self._complete_outgoing(msg_id, result=message.get("result"))
            return
        if not isinstance(method, str):
            self._reply_invalid(msg_id, '"method" must be a string')
            return
        params = message.get("params")
        if "id" in message:
            if not isinstance(msg_id, int | str) or isinstance(msg_id, bool):
                self._reply_invalid(None, '"id" must be an integer or a string')
                return
            self._handle_raw_request(msg_id, method, params)
        else:
            self._handle_raw_notification(method, params)

    def _unreadable(self, body: UnreadableBody) -> None:
        """One log line (the traceback only at debug level) and the answer the body deserves."""
        logger.warning("%s sent a body that is not JSON (%s; %d bytes, starting %r)", self.peer_name, body.error,
                       body.size, body.start)
        logger.debug("parse failure", exc_info=body.error)
        if body.response_id is not None and body.response_id in self._request_futures:
            # A broken answer to one of our requests: that request fails now, not at its deadline.
            self._complete_outgoing(body.response_id, error={
                "code": REQUEST_FAILED, "message": f"{self.peer_name} sent an answer that is not valid JSON"})
        elif self.answers_parse_errors:
            self.send_response(None, error=parse_error_response(body.error))

    def _reply_invalid(self, msg_id: Any, why: str) -> None:
        logger.warning("invalid message from %s: %s", self.peer_name, why)
        self.send_response(msg_id, error={"code": INVALID_REQUEST, "message": f"Invalid request: {why}"})

    def _handle_raw_request(self, msg_id: MsgId, method: str, params: Any) -> None:
        if self.handler is None:
            self.send_response(msg_id, error={"code": METHOD_NOT_FOUND, "message": f"no handler for {method}"})
            return
        try:
            outcome = self.handler.on_request(msg_id, method, params)
        except Exception as exc:
            self._answer_with_exception(msg_id, method, exc)
            return
        if not inspect.isawaitable(outcome):
            self.send_response(msg_id, result=outcome)
            return
        answered: list[bool] = []
        task = asyncio.ensure_future(self._answer_when_done(msg_id, method, outcome, answered))
        self._incoming[msg_id] = task
        task.add_done_callback(lambda done: self._finish_incoming(msg_id, outcome, answered, done))

    async def _answer_when_done(self, msg_id: MsgId, method: str, outcome: Awaitable[Any],
                                answered: list[bool]) -> None:
        """Await a handler's result and answer in the same step of the event loop (a done callback would answer
        one step later)."""
        try:
            result = await outcome
        except asyncio.CancelledError:
            answered.append(True)
            self._answer_cancelled(msg_id)
            raise
        except Exception as exc:
            answered.append(True)
            self._answer_with_exception(msg_id, method, exc)
            return
        answered.append(True)
        self.send_response(msg_id, result=result)

    def _finish_incoming(self, msg_id: MsgId, outcome: Awaitable[Any], answered: list[bool],
                         task: asyncio.Future[Any]) -> None:
        if self._incoming.get(msg_id) is task:
            del self._incoming[msg_id]
        if not answered:  # cancelled before its first step: the handler's awaitable was never awaited
            if inspect.iscoroutine(outcome):
                outcome.close()
            elif isinstance(outcome, asyncio.Future):
                outcome.cancel()
            self._answer_cancelled(msg_id)

    def _answer_cancelled(self, msg_id: MsgId) -> None:
        self.send_response(msg_id, error={"code": REQUEST_CANCELLED, "message": f"request {msg_id} was cancelled"})

    def _answer_with_exception(self, msg_id: MsgId, method: str, exc: BaseException) -> None:
        if isinstance(exc, JsonRpcException):
            self.send_response(msg_id, error=error_to_dict(exc))
            return
        logger.error(
            "error handling %s (id %s):\n%s",
            method,
            msg_id,
            "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        )
        self.send_response(
            msg_id, error={"code": INTERNAL_ERROR, "message": f"lsp-hub internal error in {method}: {exc}"}
        )

    def _handle_raw_notification(self, method: str, params: Any) -> None:
        if method == "$/cancelRequest":
            target = params.get("id") if isinstance(params, dict) else None
            task = self._incoming.get(target) if isinstance(target, int | str) else None
            if task is not None:
                # Not at once: a cancel read right after its request would stop the task before its first step,
                # so it would never enter the try/finally that cancels its downstream requests. The task's first
                # step was scheduled when it was created, so it runs before this.
                asyncio.get_running_loop().call_soon(task.cancel)
            # The handler may want to know too (the hub passes cancellations downstream).
        if self.handler is None:
            return
        try:
            self.handler.on_notification(method, params)
        except Exception:
            logger.exception("error handling notification %s from %s", method, self.peer_name)

    def _complete_outgoing(self, msg_id: Any, *, result: Any = None, error: Any = None) -> None:
        if self.raw_reader is not None and isinstance(result, dict) and RAW_MARKER in result:
            # Taken first, whatever follows: a late answer's text must not stay stashed.
            raw = self.raw_reader.take(result[RAW_MARKER])
            if raw is not None:
                result = RawResult(raw)
        future = self._request_futures.pop(msg_id, None) if isinstance(msg_id, int | str) else None
        if future is None or future.done():
            # Answers after their deadline or their cancel are normal; nothing waits for them.
            logger.debug("%s answered request %r, which nothing awaits (late, cancelled or unknown): dropped",
                         self.peer_name, msg_id)
            return
        if error is not None:
            future.set_exception(ResponseFailure.from_dict(error))
            return
        future.set_result(result)

    # ----------------------------------------------------------------------------------------------- outgoing
    def send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if error is None and isinstance(result, RawResult):
            # Spliced, not re-serialised: the server's JSON text goes out as it came in.
            self._write(b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (dumps(msg_id), result.raw))
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        if error is not None:
            message["error"] = error_to_dict(error)
        else:
            message["result"] = result
        self._send_data(message)

    # pygls' own code paths (its error handling) call these names.
    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        self.send_response(msg_id, result, error)

    def notify(self, method: str, params: Any | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send_data(message)

    def request(
        self, method: str, params: Any | None = None, future: asyncio.Future[Any] | None = None
    ) -> tuple[int, asyncio.Future[Any]]:
        """Send a request; returns our id for it (needed to cancel it) and the future of its answer (`future`
        if given, so a caller's own future resolves without an extra hop)."""
        msg_id = next(self._ids)
        if future is None:
            future = asyncio.get_running_loop().create_future()
        self._request_futures[msg_id] = future  # type: ignore[assignment]
        # Resolved by a deadline or a cancel, it is forgotten at once: a server may never answer it.
        future.add_done_callback(lambda _: self._request_futures.pop(msg_id, None))
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send_data(message)
        return msg_id, future

    def fail_outgoing(self, reason: ResponseFailure) -> None:
        """Resolve every request still waiting for this peer with an error (the peer died or left)."""
        pending = list(self._request_futures.items())
        self._request_futures.clear()
        for _, future in pending:
            if not future.done():
                future.set_exception(reason)

    def cancel_all_incoming(self) -> None:
        for task in list(self._incoming.values()):
            task.cancel()

    def _send_data(self, data: Any) -> None:
        try:
            body = dumps(data)
        except (TypeError, ValueError):
            logger.exception("cannot serialise a message for %s", self.peer_name)
            return
        self._write(body)

    def set_writer(self, writer: Any, include_headers: bool = True) -> None:
        """Stream writers coalesce the frames of a burst (CoalescingWriter); WebSocket messages (no headers) are
        one frame each."""
        if include_headers and not isinstance(writer, CoalescingWriter):
            writer = CoalescingWriter(writer, self)
        super().set_writer(writer, include_headers)

    def flush(self) -> None:
        """Write what is held for this peer now (before closing its stream or leaving the process)."""
        if isinstance(self.writer, CoalescingWriter):
            self.writer.flush()

    def _write(self, body: bytes) -> None:
        if self.writer is None:
            logger.error("cannot send to %s: no transport", self.peer_name)
            return
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("to %s: %d bytes: %r", self.peer_name, len(body), body[:DEBUG_PREVIEW])
        if self._include_headers:
            body = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        try:
            written = self.writer.write(body)
            # WebSocket: sending is a coroutine; keep it alive until done
            if written is not None and inspect.isawaitable(written):
                task = asyncio.ensure_future(written)
                self._writes.add(task)
                task.add_done_callback(self._writes.discard)
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            logger.warning("cannot write to %s: %s", self.peer_name, exc)


def _raw_default(value: Any) -> Any:
    """A raw result nested in a merged answer is parsed after all (merges are the rare, small case)."""
    if isinstance(value, RawResult):
        return value.value
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def parse_error_response(exc: BaseException) -> dict[str, Any]:
    """The answer to a body that is not JSON (the id is unknown, so it is null)."""
    return {"code": PARSE_ERROR, "message": f"Parse error: {exc}"}


PIPE_SIZE = 1 << 20


def widen_pipe(pipe: Any) -> None:
    """Ask for a 1 MB pipe buffer (Linux; 64 KB by default, at most /proc/sys/fs/pipe-max-size): a large answer
    then crosses a pipe in one write and one or a few reads, not a wake-up of each side per 64 KB. Anything that is
    not a pipe (a socket, a file, a terminal), or a system that refuses, keeps what it has."""
    if pipe is None:
        return
    try:
        widen_pipe_buffer(pipe if isinstance(pipe, int) else pipe.fileno(), PIPE_SIZE)
    except (OSError, ValueError, AttributeError) as exc:
        logger.debug("pipe buffer left as it is: %s", exc)


async def stdin_stream(source: Any = None, limit: int = 64 * 1024 * 1024) -> FrameReader | None:
    """stdin (or `source`) as a FrameReader on an asyncio stream when it is a pipe or a socket (no thread hand-off
    per line, which costs about 0.1 ms a message), else None (a regular file or a terminal: read it in a thread,
    with pygls' own framing)."""
    reader = asyncio.StreamReader(limit=limit)
    try:
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), source or sys.stdin.buffer)
    except (ValueError, OSError) as exc:
        logger.info("stdin is not a pipe (%s): reading it in a thread", exc)
        return None
    return FrameReader(reader)


async def serve_stdio(
    make_handler: Callable[[RawProtocol, asyncio.Event], MessageHandler],
    protocol_cls: type[RawProtocol] = RawProtocol,
) -> None:
    """Serve raw JSON-RPC on stdin/stdout until the input ends or the handler sets the stop event.

    For small servers built on RawProtocol (the benchmark's backend, the tests' fake server)."""
    from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
    from pygls.server import JsonRPCServer

    server = JsonRPCServer(protocol_cls=protocol_cls, converter_factory=raw_converter)
    protocol = server.protocol
    assert isinstance(protocol, RawProtocol)
    reader: Any = await stdin_stream() or StdinAsyncReader(sys.stdin.buffer, server.thread_pool)
    protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    stop = asyncio.Event()
    protocol.handler = make_handler(protocol, stop)
    reading = asyncio.ensure_future(run_async(threading.Event(), reader, protocol, logger))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([reading, stopping], return_when=asyncio.FIRST_COMPLETED)
    for task in (reading, stopping):
        task.cancel()

