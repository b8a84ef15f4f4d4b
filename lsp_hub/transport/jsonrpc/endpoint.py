"""Our JSON-RPC endpoint (`RawProtocol`): one peer's requests, answers and notifications as plain dicts, and the
read loop that feeds it.

Every method, known or not, goes to one `MessageHandler`; the ids of incoming and outgoing requests are kept apart;
malformed input gets the JSON-RPC error it deserves. It never converts a message to typed classes (that loses
unknown fields and costs time) and knows nothing of LSP.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import threading
import traceback
from collections.abc import Awaitable
from typing import Any, Protocol

from lsp_hub.transport.jsonrpc import codec
from lsp_hub.transport.jsonrpc.codec import BytesLike, MsgId, RawResult, UnreadableBody, dumps
from lsp_hub.transport.jsonrpc.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    REQUEST_FAILED,
    ResponseFailure,
    error_to_dict,
    parse_error_response,
)
from lsp_hub.transport.jsonrpc.framing import END
from lsp_hub.transport.jsonrpc.writing import CoalescingWriter, hold_writes, release_writes

logger = logging.getLogger("lsp_hub.transport.jsonrpc")

DEBUG_PREVIEW = 200  # bytes of each message written that the debug log shows
# What a write may fail with once the peer has gone: logged, never raised into a handler.
PEER_GONE = (BrokenPipeError, ConnectionResetError, RuntimeError)


class MessageHandler(Protocol):
    """What a RawProtocol delivers incoming requests and notifications to."""

    def on_request(self, msg_id: MsgId, method: str, params: Any) -> Awaitable[Any] | Any:
        """Handle a request. Runs synchronously, in arrival order; may return an awaitable for the result.

        Work that must keep message order (routing, sending downstream) happens before returning.
        Raise ResponseFailure to answer with an error.
        """

    def on_notification(self, method: str, params: Any) -> None:
        """Handle a notification synchronously, in arrival order."""


class MessageSource(Protocol):
    """What the read loop reads: a FrameReader, or a WebSocket's messages."""

    peer_name: str

    async def read_message(self) -> Any:
        """The next message, parsed (an UnreadableBody if it is not JSON); END once the input ends."""

    def buffered(self) -> bool:
        """Whether the next message has arrived already."""


class RawProtocol:
    """A JSON-RPC endpoint whose messages stay dicts, for both sides of the hub."""

    def __init__(self, peer_name: str = "peer") -> None:
        self.handler: MessageHandler | None = None
        self.peer_name = peer_name
        self.writer: Any = None
        self._framed = True  # Content-Length headers (streams); a WebSocket message is one frame by itself
        # Tasks answering the peer's requests, by the peer's id; futures of our requests, by our ids. The two id
        # spaces must not collide.
        self._incoming: dict[MsgId, asyncio.Future[Any]] = {}
        self._outgoing: dict[MsgId, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        # JSON-RPC answers a body that is not JSON with a parse error (id null); a backend gets none (servers log
        # an answer to no request of theirs as an error of their own).
        self.answers_parse_errors = True
        self._writes: set[asyncio.Future[Any]] = set()

    # ----------------------------------------------------------------------------------------------- incoming
    def handle_message(self, message: Any) -> None:
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
            self._handle_request(msg_id, method, params)
        else:
            self._handle_notification(method, params)

    def _unreadable(self, body: UnreadableBody) -> None:
        """One log line (the traceback only at debug level) and the answer the body deserves."""
        logger.warning("%s sent a body that is not JSON (%s; %d bytes, starting %r)", self.peer_name, body.error,
                       body.size, body.start)
        logger.debug("parse failure", exc_info=body.error)
        if body.response_id is not None and body.response_id in self._outgoing:
            # A broken answer to one of our requests: that request fails now, not at its deadline.
            self._complete_outgoing(body.response_id, error={
                "code": REQUEST_FAILED, "message": f"{self.peer_name} sent an answer that is not valid JSON"})
        elif self.answers_parse_errors:
            self.send_response(None, error=parse_error_response(body.error))

    def _reply_invalid(self, msg_id: Any, why: str) -> None:
        logger.warning("invalid message from %s: %s", self.peer_name, why)
        self.send_response(msg_id, error={"code": INVALID_REQUEST, "message": f"Invalid request: {why}"})

    def _handle_request(self, msg_id: MsgId, method: str, params: Any) -> None:
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
        if isinstance(exc, ResponseFailure):
            self.send_response(msg_id, error=exc.to_dict())
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

    def _handle_notification(self, method: str, params: Any) -> None:
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
        future = self._outgoing.pop(msg_id, None) if isinstance(msg_id, int | str) else None
        if future is None or future.done():
            # Answers after their deadline or their cancel are normal; nothing waits for them.
            logger.debug("%s answered request %r, which nothing awaits (late, cancelled or unknown): dropped",
                         self.peer_name, msg_id)
            return
        if error is not None:
            future.set_exception(ResponseFailure.from_dict(error))
            return
        future.set_result(result)

    @property
    def awaiting_answers(self) -> int:
        """How many of our requests to this peer wait for an answer."""
        return len(self._outgoing)

    # ----------------------------------------------------------------------------------------------- outgoing
    def send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if error is None and isinstance(result, RawResult):
            # Spliced, not re-serialised: the server's JSON text goes out as it came in, copied once.
            self._send_parts((b'{"jsonrpc":"2.0","id":%s,"result":' % dumps(msg_id), result.raw, b"}"))
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        if error is not None:
            message["error"] = error_to_dict(error)
        else:
            message["result"] = result
        self._send(message)

    def notify(self, method: str, params: Any | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def request(
        self, method: str, params: Any | None = None, future: asyncio.Future[Any] | None = None
    ) -> tuple[int, asyncio.Future[Any]]:
        """Send a request; returns our id for it (needed to cancel it) and the future of its answer (`future`
        if given, so a caller's own future resolves without an extra hop)."""
        msg_id = next(self._ids)
        if future is None:
            future = asyncio.get_running_loop().create_future()
        self._outgoing[msg_id] = future
        # Resolved by a deadline or a cancel, it is forgotten at once: a server may never answer it.
        future.add_done_callback(lambda _: self._outgoing.pop(msg_id, None))
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        return msg_id, future

    def fail_outgoing(self, reason: ResponseFailure) -> None:
        """Resolve every request still waiting for this peer with an error (the peer died or left)."""
        pending = list(self._outgoing.values())
        self._outgoing.clear()
        for future in pending:
            if not future.done():
                future.set_exception(reason)

    def cancel_all_incoming(self) -> None:
        for task in list(self._incoming.values()):
            task.cancel()

    def encode(self, message: Any) -> bytes:
        """A message's JSON text (a subclass may write it otherwise: the benchmark's backend does)."""
        return dumps(message)

    def _send(self, message: Any) -> None:
        try:
            body = self.encode(message)
        except (TypeError, ValueError):
            logger.exception("cannot serialise a message for %s", self.peer_name)
            return
        self.send_raw(body)

    def set_writer(self, writer: Any, include_headers: bool = True) -> None:
        """Stream writers coalesce the frames of a burst (CoalescingWriter); WebSocket messages (no headers) are
        one frame each."""
        if include_headers and not isinstance(writer, CoalescingWriter):
            writer = CoalescingWriter(writer, self)
        self.writer = writer
        self._framed = include_headers

    def flush(self) -> None:
        """Write what is held for this peer now (before closing its stream or leaving the process)."""
        if isinstance(self.writer, CoalescingWriter):
            self.writer.flush()

    def send_raw(self, body: bytes) -> None:
        """One message's JSON text, framed and written as it is."""
        self._send_parts((body,))

    def _send_parts(self, parts: tuple[BytesLike, ...]) -> None:
        """One message's JSON text in parts, joined with its header in one copy."""
        if self.writer is None:
            logger.error("cannot send to %s: no transport", self.peer_name)
            return
        size = sum(len(part) for part in parts)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("to %s: %d bytes: %r", self.peer_name, size, b"".join(parts)[:DEBUG_PREVIEW])
        frame = b"".join((b"Content-Length: %d\r\n\r\n" % size, *parts)) if self._framed else b"".join(parts)
        try:
            written = self.writer.write(frame)
            # WebSocket: sending is a coroutine; keep it alive until done
            if written is not None and inspect.isawaitable(written):
                task = asyncio.ensure_future(written)
                self._writes.add(task)
                task.add_done_callback(self._writes.discard)
        except PEER_GONE as exc:
            logger.warning("cannot write to %s: %s", self.peer_name, exc)


async def read_loop(reader: MessageSource, protocol: RawProtocol, stop_event: threading.Event | None = None) -> None:
    """Read messages and hand them to the protocol until the input ends or `stop_event` is set. Writes caused by
    messages that arrived together are held and leave together."""
    try:
        while stop_event is None or not stop_event.is_set():
            if not reader.buffered():
                release_writes()  # about to wait for the peer: what the last messages caused goes out now
            message = await reader.read_message()
            if message is END:
                break
            if logger.isEnabledFor(logging.DEBUG):  # nothing is formatted unless the log shows it
                logger.debug("from %s: %s", protocol.peer_name, codec.describe(message))
            hold_writes()
            try:
                protocol.handle_message(message)
            except Exception:
                logger.exception("unable to handle a message from %s", protocol.peer_name)
    finally:
        release_writes()
