"""A configurable fake language server: the deterministic backend behind the hub's tests.

Run it as::

    python tests/fake_server.py --spec '<json>'     # or --spec-file PATH
                                [--name NAME] [--record PATH] [--verbose]

It frames and dispatches JSON-RPC itself (`StdioEndpoint`, as pygls frames it) and every payload stays a plain dict,
so unknown fields and non-standard methods pass through untouched. It imports neither pygls nor lsprotocol: their
import took 0.45-0.55 s of CPU at every start, and the suite starts a fake hundreds of times.

Spec format (a JSON object; every key is optional)
==================================================

Identity and capabilities
-------------------------
``name`` (str, default "fake"; ``--name`` wins)
    Who answers. Replaces "{name}" in every templated string and is the default ``source`` of diagnostics.
``capabilities`` (object, default DEFAULT_CAPABILITIES)
    The ServerCapabilities returned from ``initialize`` verbatim (only "{name}" is templated, so
    ``"commands": ["{name}.run"]`` gives each fake its own commands). Its ``textDocumentSync`` (a kind or
    ``{"change": kind}``: 0 none, 1 full, 2 incremental) decides how didChange must look, and its
    ``positionEncoding`` ("utf-8", "utf-16" default, "utf-32") is the unit of every incoming position.
``server_info`` (object, default {"name": name, "version": "0.0-fake"})
    The ``serverInfo`` of the initialize answer.

Answers: ``responses``
----------------------
``responses`` maps a method (or "*", the fallback for requests nothing else answers; it answers null unless it
says otherwise) to a behaviour, or to a list of behaviours used one per receipt (the last one repeats). A
behaviour is an object combining:

``"result": <json>``
    Answered after templating: in every string "{name}", "{method}", "{uri}" (params.textDocument.uri or
    params.uri), "{line}" and "{character}" (params.position), "{version}" (the server's version of that
    document) are replaced; a string that is exactly one placeholder becomes the raw value, so
    ``{"line": "{line}"}`` stays a number. Unknown placeholders stay as they are.
``"error": {"code": int, "message": str, "data"?: any}``
    Answered as a JSON-RPC error (code defaults to -32603).
``"delay": seconds``
    Wait before answering; other requests are answered meanwhile. Alone, the normal answer follows the delay.
``"hang": true``
    Never answer (other requests still are); a ``$/cancelRequest`` for it gets RequestCancelled (-32800).
``"crash": true | exit code``
    On receipt (after recording it), exit at once with ``os._exit(1)`` (or the given code); with ``"delay"``,
    that long after receipt, the request still unanswered (a crash mid-request).
``"echo": true``
    Result ``{"server": name, "method": method, "params": params}``. For a notification, the fake sends the
    notification ``fake/echo`` with that payload instead.
``"generate_items": N`` (with optional ``"is_incomplete": bool``)
    A CompletionList of N items ``{"label": "{name}-item-i", "kind": 6, "sortText", "data": {"server", "index"}}``,
    built once per N and cached (benchmarks ask for thousands).
``"once_file": PATH``
    The behaviour applies only while PATH does not exist, and creates PATH when applied. The file survives a
    restart of the process, so ``{"crash": true, "once_file": ...}`` crashes the first process only.

A behaviour without result/error/echo/generate_items/hang/crash (``{"delay": 1}``) delays the normal answer.
Behaviours apply to built-in methods too: ``"initialize": {"delay": 2}`` is a slow start,
``"shutdown": {"hang": true}`` a server that never shuts down, ``"textDocument/didOpen": {"crash": true}`` a
crash on a notification.

Requests nothing configures get, in order: the built-in answers (``initialize``; ``shutdown``: null;
``fake/getDocument`` {"uri"} (or {"textDocument": {"uri"}}) -> {"text", "version"} or null when not open;
``fake/getState`` -> {"name", "pid", "initialized", "shutdown", "initialize_params", "documents" (uri -> {"text",
"version", "languageId"}), "protocol_errors", "received" (method -> count), "settings" (the last
didChangeConfiguration settings)}; ``textDocument/diagnostic`` when ``pull_diagnostics`` is set), then
``responses["*"]``, then soft defaults: ``workspace/executeCommand`` -> {"server", "command", "arguments"};
``*/resolve`` -> the params (the item unchanged); ``textDocument/diagnostic`` -> an empty full report; any other
standard LSP request -> null; a non-standard request -> MethodNotFound (-32601), like a real server. After
``shutdown`` every request but ``exit`` gets InvalidRequest (-32600).

Documents and diagnostics
-------------------------
The fake keeps its own copy of each open document: a change with a ``range`` is applied in the advertised
position encoding, one without replaces the text. A change that does not match the advertised sync kind
(a ranged change under full sync, a whole-text change under incremental sync, any change under none) is
recorded as ``{"event": "sync_error", "expected": "full"|"incremental"|"none", "params"}`` and still applied.
Other slips are recorded as ``{"event": "protocol_error", "kind", ...}`` with kind one of
open_already_open, change_unknown_document, close_unknown_document, version_not_increasing,
line_out_of_range, position_inside_character. Both are listed by ``fake/getState``.

``diagnostics_on_open_and_change`` (list of diagnostic templates)
    Published (``textDocument/publishDiagnostics`` {"uri", "version", "diagnostics"}) after each didOpen and
    didChange. Templated like results ("{name}", "{uri}", "{version}"); ``source`` defaults to the name
    (``"source": null`` publishes it without one); a template with ``"when_text_contains": "x"`` is published
    only while the document text contains "x" (the key is removed).
``publish_version`` (bool, default true)
    false publishes without ``version`` (as some servers do).
``diagnostics_delay`` (seconds)
    Publish that long after the didOpen/didChange (or the clearing didClose), with what held at that moment.
``clear_on_close`` (bool, default true; ``"keep_on_close": true`` is the same as false)
    Publish ``[]`` for a document on didClose (only when diagnostics_on_open_and_change is set).
``pull_diagnostics`` (list of diagnostic templates)
    ``textDocument/diagnostic`` answers ``{"kind": "full", "resultId": "<name>:<version>", "items": [...]}``
    with the same templating and filtering.
``pull_report_unchanged`` (bool, default false)
    Answer ``{"kind": "unchanged", "resultId"}`` when params.previousResultId is the current resultId.

Server-to-client traffic
------------------------
An action is ``{"request": method, "params": ...}`` (waits for the client's answer, up to ``"timeout"``
seconds, default 30), ``{"notify": method, "params": ...}`` or ``{"crash": true | code}``; any action may
carry ``"delay": seconds`` (slept before it). Params are templated like results, from the triggering message.
Request ids are integers counting from 0 in each process, like most real servers.

``on_initialized`` (list of actions)
    Run in the background after the ``initialized`` notification.
``on_request`` (object: key -> list of actions)
    When a message arrives whose method is the key (or a ``workspace/executeCommand`` whose command is the key),
    run the actions in order. A triggering request is answered with the list of outcomes: the client's result
    for each request action (``{"error": {...}}`` when it failed or timed out), null for each notification.
    A triggering notification runs them in the background; a triggering ``initialize`` or ``shutdown`` runs them
    and then gives its normal answer (servers log and report progress while they start). ``on_command``
    {command: actions} is accepted too.

Faults
------
``garbage_before_first_frame`` (str)
    Written raw to stdout before anything else (a banner).
``garbage_after_message`` (object: method -> str | true)
    Raw text written to stdout right after answering that request (or receiving that notification);
    true writes a well-framed body that is not JSON: ``Content-Length: 12\\r\\n\\r\\n{not json!!}``.
``never_initialize`` (bool)
    ``initialize`` is never answered.
``crash_after_initialize_seconds`` (number)
    Exit with code 1 that long after answering ``initialize``.
``exit_on_shutdown_delay`` (number)
    Exit by itself (code 0) that long after answering ``shutdown``, without waiting for ``exit``.
``exit_delay`` (number, default 0)
    Linger that long after ``exit`` before leaving (code 0 after shutdown, else 1, as the spec says).
``ignore_exit`` / ``ignore_stdin_close`` / ``ignore_sigterm`` (bool)
    Stay alive after ``exit`` / after stdin closes / on SIGTERM, so the hub must terminate or kill it.
``stderr_spam_bytes`` (int)
    Written to stderr at start, before the first frame (a hub that does not drain stderr blocks it).

Recording
---------
``--record PATH`` (or ``"record": PATH``) appends one JSON line per event, flushed at once:
``{"event": "start", "name", "pid", "ppid", "argv", "cwd", "env": {FAKE_* variables}, "tmpdir"}`` first; then every
received message: ``{"method", "params", "id"}`` for a request, ``{"method", "params"}`` for a notification,
``{"response": id, "response_to": method, "result" | "error"}`` for the client's answer to one of the fake's
requests; plus ``sync_error`` / ``protocol_error`` events, ``{"event": "cancelled", "id"}`` when a cancel
stopped a request, ``{"event": "handler_error", "method", "traceback"}`` when the fake itself failed, and
``{"event": "exit", "code", "reason"}`` before a deliberate exit. ``read_record(path)`` parses the file.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import re
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

FAKE_SERVER_PATH = Path(__file__).resolve()

DEFAULT_CAPABILITIES: dict[str, Any] = {
    "textDocumentSync": {"openClose": True, "change": 2, "save": {"includeText": False}},
    "hoverProvider": True,
    "completionProvider": {"resolveProvider": True, "triggerCharacters": ["."]},
    "definitionProvider": True,
    "referencesProvider": True,
    "documentSymbolProvider": True,
    "codeActionProvider": True,
    "workspaceSymbolProvider": True,
    "documentFormattingProvider": True,
}

# A frame whose header is right and whose body is not JSON: a reader skips it and stays in step.
DEFAULT_GARBAGE_FRAME = "Content-Length: 12\r\n\r\n{not json!!}"

# Every method of the LSP specification (lsprotocol's METHOD_TO_TYPES, which tests/test_fake_server.py checks this
# against): written out, because importing lsprotocol (as pygls does) costs a fake half a second of CPU at start.
STANDARD_METHODS = frozenset((
    "$/cancelRequest", "$/logTrace", "$/progress", "$/setTrace", "callHierarchy/incomingCalls",
    "callHierarchy/outgoingCalls", "client/registerCapability", "client/unregisterCapability", "codeAction/resolve",
    "codeLens/resolve", "completionItem/resolve", "documentLink/resolve", "exit", "initialize", "initialized",
    "inlayHint/resolve", "notebookDocument/didChange", "notebookDocument/didClose", "notebookDocument/didOpen",
    "notebookDocument/didSave", "shutdown", "telemetry/event", "textDocument/codeAction", "textDocument/codeLens",
    "textDocument/colorPresentation", "textDocument/completion", "textDocument/declaration",
    "textDocument/definition", "textDocument/diagnostic", "textDocument/didChange", "textDocument/didClose",
    "textDocument/didOpen", "textDocument/didSave", "textDocument/documentColor", "textDocument/documentHighlight",
    "textDocument/documentLink", "textDocument/documentSymbol", "textDocument/foldingRange",
    "textDocument/formatting", "textDocument/hover", "textDocument/implementation", "textDocument/inlayHint",
    "textDocument/inlineCompletion", "textDocument/inlineValue", "textDocument/linkedEditingRange",
    "textDocument/moniker", "textDocument/onTypeFormatting", "textDocument/prepareCallHierarchy",
    "textDocument/prepareRename", "textDocument/prepareTypeHierarchy", "textDocument/publishDiagnostics",
    "textDocument/rangeFormatting", "textDocument/rangesFormatting", "textDocument/references",
    "textDocument/rename", "textDocument/selectionRange", "textDocument/semanticTokens/full",
    "textDocument/semanticTokens/full/delta", "textDocument/semanticTokens/range", "textDocument/signatureHelp",
    "textDocument/typeDefinition", "textDocument/willSave", "textDocument/willSaveWaitUntil",
    "typeHierarchy/subtypes", "typeHierarchy/supertypes", "window/logMessage", "window/showDocument",
    "window/showMessage", "window/showMessageRequest", "window/workDoneProgress/cancel",
    "window/workDoneProgress/create", "workspace/applyEdit", "workspace/codeLens/refresh", "workspace/configuration",
    "workspace/diagnostic", "workspace/diagnostic/refresh", "workspace/didChangeConfiguration",
    "workspace/didChangeWatchedFiles", "workspace/didChangeWorkspaceFolders", "workspace/didCreateFiles",
    "workspace/didDeleteFiles", "workspace/didRenameFiles", "workspace/executeCommand",
    "workspace/foldingRange/refresh", "workspace/inlayHint/refresh", "workspace/inlineValue/refresh",
    "workspace/semanticTokens/refresh", "workspace/symbol", "workspace/textDocumentContent",
    "workspace/textDocumentContent/refresh", "workspace/willCreateFiles", "workspace/willDeleteFiles",
    "workspace/willRenameFiles", "workspace/workspaceFolders", "workspaceSymbol/resolve",
))
ANSWER_KEYS = ("result", "error", "echo", "generate_items")
SYNC_KIND_NAMES = {0: "none", 1: "full", 2: "incremental"}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")

logger = logging.getLogger("fake_server")


# ------------------------------------------------------------------------------------------------ JSON-RPC
class JsonRpcException(Exception):
    """An error answer: pygls' exception classes, with their codes and messages, without importing pygls."""

    CODE = -32603
    MESSAGE = ""

    def __init__(self, message: str | None = None, code: int | None = None, data: Any | None = None) -> None:
        message = message or self.MESSAGE
        super().__init__(message)
        self.message: str = message
        self.code: int = code or self.CODE
        self.data = data

    @classmethod
    def of(cls, detail: Any) -> JsonRpcException:
        return cls(message=f"{cls.MESSAGE}: {detail}")

    def as_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class JsonRpcInternalError(JsonRpcException):
    CODE = -32603
    MESSAGE = "Internal Error"

    @classmethod
    def of(cls, detail: Any) -> JsonRpcException:
        """From `sys.exc_info()`: the exception's line, its traceback as data."""
        kind, value, trace = detail
        line = "".join(traceback.format_exception_only(kind, value)).strip()
        return cls(message=line, data={"traceback": traceback.format_tb(trace)})


class JsonRpcInvalidRequest(JsonRpcException):
    CODE = -32600
    MESSAGE = "Invalid Request"


class JsonRpcMethodNotFound(JsonRpcException):
    CODE = -32601
    MESSAGE = "Method Not Found"


class JsonRpcRequestCancelled(JsonRpcException):
    CODE = -32800
    MESSAGE = "Request Cancelled"


class RawMessageHandler:
    """What a JsonRpcDispatch calls; the defaults do nothing and answer every request with MethodNotFound."""

    def on_message(self, message: dict[str, Any], response_to: str | None) -> None:
        """Every well-formed message, before it is dispatched (response_to: the method of our request)."""

    def on_request(self, msg_id: Any, method: str, params: Any) -> Any:
        """Return the result, or an awaitable of it; raise JsonRpcException for an error answer."""
        raise JsonRpcMethodNotFound.of(method)

    def on_notification(self, method: str, params: Any) -> None:
        """A notification other than $/cancelRequest (which the protocol handles after on_message)."""

    def after_answer(self, msg_id: Any, method: str) -> None:
        """Called right after the answer to an incoming request was written."""

    def on_cancelled(self, msg_id: Any) -> None:
        """A $/cancelRequest stopped the handling of request msg_id."""


class JsonRpcDispatch:
    """JSON-RPC over plain dicts with one handler object: the fake's own endpoint (`StdioEndpoint`), and mixed into
    pygls' protocol for the tests' client (tests/test_fake_server.py). Outgoing requests get integer ids and live
    apart from the handler tasks of incoming requests, so the peer's ids and ours never collide.

    Needs `_send_data(message)`, `_request_futures` (incoming id -> its handler task) and
    `_handle_cancel_notification(id)` from the class it is mixed into."""

    VERSION = "2.0"
    _request_futures: dict[Any, Any]
    if TYPE_CHECKING:  # what the class it is mixed into provides

        def _send_data(self, data: Any) -> None: ...

        def _handle_cancel_notification(self, msg_id: Any) -> None: ...

    def _dispatch_init(self) -> None:
        self.handler: RawMessageHandler = RawMessageHandler()
        self._incoming_methods: dict[Any, str] = {}
        self._outgoing: dict[Any, tuple[str, Future[Any]]] = {}
        self._next_outgoing_id = 0
        self._cancel_requested: set[Any] = set()

    # pygls calls this as json.loads' object_hook, for every nested object: keep them all as dicts.
    def structure_message(self, data: dict[str, Any]) -> Any:
        return data

    def handle_message(self, message: Any) -> None:
        if not isinstance(message, dict) or message.get("jsonrpc") != self.VERSION:
            logger.warning("not a JSON-RPC 2.0 message: %r", message)
            return
        method = message.get("method")
        msg_id = message.get("id")
        if method is None:
            pending = self._outgoing.pop(msg_id, None)
            self.handler.on_message(message, pending[0] if pending else None)
            self._complete_outgoing(msg_id, message, pending)
            return
        self.handler.on_message(message, None)
        if not isinstance(method, str):
            if "id" in message:
                self._send_response(msg_id, error=JsonRpcInvalidRequest("method must be a string"))
            return
        params = message.get("params")
        if "id" in message:
            self._handle_request(msg_id, method, params)
        else:
            self._handle_notification(method, params)

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        self._incoming_methods[msg_id] = method_name
        try:
            outcome = self.handler.on_request(msg_id, method_name, params)
        except JsonRpcException as error:
            self._send_response(msg_id, error=error)
            return
        except Exception:
            self._send_response(msg_id, error=JsonRpcInternalError.of(sys.exc_info()))
            return
        if not isinstance(outcome, Awaitable):
            self._send_response(msg_id, result=outcome)
            return
        # In the table of handler tasks, so that a $/cancelRequest can cancel it.
        task = asyncio.ensure_future(outcome)
        self._request_futures[msg_id] = task
        task.add_done_callback(lambda done: self._send_handler_result(done, msg_id=msg_id))

    def _send_handler_result(self, future: asyncio.Future[Any], *, msg_id: Any) -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            if msg_id not in self._cancel_requested:
                return  # cancelled by the event loop shutting down, not by the peer: nobody is listening
            self._cancel_requested.discard(msg_id)
            self.handler.on_cancelled(msg_id)
            self._send_response(msg_id, error=JsonRpcRequestCancelled(f'Request with id "{msg_id}" is canceled'))
            return
        exception = future.exception()
        if exception is None:
            self._send_response(msg_id, result=future.result())
        elif isinstance(exception, JsonRpcException):
            self._send_response(msg_id, error=exception)
        else:
            info = (type(exception), exception, exception.__traceback__)
            self._send_response(msg_id, error=JsonRpcInternalError.of(info))

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if method_name == "$/cancelRequest":
            if isinstance(params, dict) and "id" in params:
                self._cancel_requested.add(params["id"])
                self._handle_cancel_notification(params["id"])
            return
        self.handler.on_notification(method_name, params)

    def _send_response(self, msg_id: Any, result: Any | None = None, error: JsonRpcException | None = None) -> None:
        response: dict[str, Any] = {"jsonrpc": self.VERSION, "id": msg_id}
        if error is not None:
            response["error"] = error.as_error()
        else:
            response["result"] = result
        self._send_data(response)
        method = self._incoming_methods.pop(msg_id, None)
        if method is not None:
            self.handler.after_answer(msg_id, method)

    def notify(self, method: str, params: Any | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": self.VERSION, "method": method}
        if params is not None:
            message["params"] = params
        self._send_data(message)

    def send_request(
        self, method: str, params: Any | None = None, callback: Any | None = None, msg_id: Any | None = None
    ) -> Future[Any]:
        """Send a request; the future gets the result, or a JsonRpcException. (`callback` is not supported.)"""
        if msg_id is None:
            msg_id = self._next_outgoing_id
            self._next_outgoing_id += 1
        message: dict[str, Any] = {"jsonrpc": self.VERSION, "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        future: Future[Any] = Future()
        self._outgoing[msg_id] = (method, future)
        self._send_data(message)
        return future

    def _complete_outgoing(self, msg_id: Any, message: dict[str, Any], pending: tuple[str, Future[Any]] | None) -> None:
        if pending is None:
            logger.warning("response to unknown request id %r", msg_id)
            return
        future = pending[1]
        if future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                JsonRpcException(code=error.get("code"), message=error.get("message"), data=error.get("data"))
            )
        else:
            future.set_result(message.get("result"))

    def fail_pending(self, reason: str) -> None:
        """Fail every request still waiting for an answer (the peer is gone)."""
        pending, self._outgoing = self._outgoing, {}
        for _method, future in pending.values():
            if not future.done():
                future.set_exception(ConnectionError(reason))


class _StdoutWriter:
    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()


class StdioEndpoint(JsonRpcDispatch):
    """The fake's side of stdio, framed as pygls frames it (`Content-Length`, then `Content-Type`), read by a
    thread so that the event loop keeps running (timers, delayed answers) while it waits."""

    CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")

    def __init__(self) -> None:
        self._dispatch_init()
        self._request_futures: dict[Any, Any] = {}
        self.writer: _StdoutWriter | None = None

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        future = self._request_futures.pop(msg_id, None)
        if future is None:
            logger.warning('cancel notification for unknown message id "%s"', msg_id)
            return
        future.cancel()  # only a task not done yet is cancelled

    def _send_data(self, data: Any) -> None:
        if self.writer is None:
            return
        try:
            body = json.dumps(data)  # ASCII: its length in characters is its length in bytes
            header = f"Content-Length: {len(body)}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
            self.writer.write((header + body).encode("utf-8"))
        except Exception as error:  # as pygls: logged, and the fake goes on (a client gone, a result not JSON)
            logger.error("could not send %r: %s", data, error)

    def serve(self, stdin: BinaryIO, stdout: BinaryIO) -> None:
        """Read and dispatch messages until stdin ends (handler tasks still running are cancelled then)."""
        self.writer = _StdoutWriter(stdout)
        with contextlib.suppress(BrokenPipeError, KeyboardInterrupt, SystemExit):
            asyncio.run(self._read_all(stdin))

    async def _read_all(self, stdin: BinaryIO) -> None:
        loop = asyncio.get_running_loop()
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="fake-stdin") as reader:
            content_length = 0
            while True:
                header = await loop.run_in_executor(reader, stdin.readline)
                if not header:
                    return
                if not content_length:
                    match = self.CONTENT_LENGTH.fullmatch(header)
                    if match:
                        content_length = int(match.group(1))
                if content_length and not header.strip():
                    body = await loop.run_in_executor(reader, stdin.read, content_length)
                    if not body:
                        return
                    try:
                        self.handle_message(json.loads(body))
                    except Exception:
                        logger.exception("unable to handle message")
                    finally:
                        content_length = 0


# ------------------------------------------------------------------------------------------------ templating
def template(value: Any, names: dict[str, Any]) -> Any:
    """Replace "{key}" placeholders in every string of value; a string that is one placeholder gets the raw value."""
    if isinstance(value, str):
        if "{" not in value:
            return value
        whole = _PLACEHOLDER.fullmatch(value)
        if whole is not None and whole.group(1) in names:
            return names[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(names[m.group(1)]) if m.group(1) in names else m.group(0), value)
    if isinstance(value, list):
        return [template(item, names) for item in value]
    if isinstance(value, dict):
        return {key: template(item, names) for key, item in value.items()}
    return value


# ------------------------------------------------------------------------------------------------ documents
class FakeDocument:
    def __init__(self, uri: str, language_id: str, version: int, text: str) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self.text = text

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "version": self.version}


def code_units(char: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(char.encode("utf-8"))
    if encoding == "utf-32":
        return 1
    return 2 if ord(char) > 0xFFFF else 1


def offset_of(text: str, position: dict[str, Any], encoding: str, problems: list[dict[str, Any]]) -> int:
    """The string index of an LSP position; slips are appended to problems (a character past the end of a line
    is clamped silently, as the LSP specification allows)."""
    line, character = int(position["line"]), int(position["character"])
    starts = [0, *(match.end() for match in _LINE_BREAK.finditer(text))]
    if line >= len(starts):
        problems.append({"kind": "line_out_of_range", "position": position, "lines": len(starts)})
        return len(text)
    start = starts[line]
    end = len(text) if line + 1 == len(starts) else starts[line + 1]
    line_text = text[start:end].rstrip("\r\n")
    units = 0
    for index, char in enumerate(line_text):
        if units == character:
            return start + index
        units += code_units(char, encoding)
        if units > character:
            problems.append({"kind": "position_inside_character", "position": position, "encoding": encoding})
            return start + index
    return start + len(line_text)


def apply_change(text: str, change: dict[str, Any], encoding: str, problems: list[dict[str, Any]]) -> str:
    if "range" not in change:
        return str(change["text"])
    start = offset_of(text, change["range"]["start"], encoding, problems)
    end = offset_of(text, change["range"]["end"], encoding, problems)
    return text[:start] + str(change["text"]) + text[end:]


# ------------------------------------------------------------------------------------------------ the fake
class FakeLanguageServer(RawMessageHandler):
    def __init__(self, spec: dict[str, Any], protocol: JsonRpcDispatch) -> None:
        self.spec = spec
        self.name = str(spec.get("name", "fake"))
        self.protocol = protocol
        capabilities = spec.get("capabilities", DEFAULT_CAPABILITIES)
        self.capabilities: dict[str, Any] = template(capabilities, {"name": self.name})
        self.responses: dict[str, Any] = spec.get("responses", {})
        self.triggers: dict[str, list[dict[str, Any]]] = {**spec.get("on_command", {}), **spec.get("on_request", {})}
        self.documents: dict[str, FakeDocument] = {}
        self.protocol_errors: list[dict[str, Any]] = []
        self.received: dict[str, int] = {}
        self.receipts: dict[str, int] = {}
        self.initialize_params: Any = None
        self.initialized = False
        self.shut_down = False
        self.settings: Any = None
        self.completion_cache: dict[int, list[dict[str, Any]]] = {}
        self.background: set[asyncio.Future[Any]] = set()
        record_path = spec.get("record")
        self.record_file: TextIO | None = open(record_path, "a", encoding="utf-8") if record_path else None  # noqa: SIM115
        self.record({
            "event": "start", "name": self.name, "pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv,
            "cwd": os.getcwd(), "env": {k: v for k, v in os.environ.items() if k.startswith("FAKE_")},
            "tmpdir": tempfile.gettempdir(),
        })

    # ------------------------------------------------------------------ recording and exits
    def record(self, entry: dict[str, Any]) -> None:
        if self.record_file is not None:
            self.record_file.write(json.dumps(entry) + "\n")
            self.record_file.flush()

    def exit_now(self, code: int, reason: str) -> None:
        self.record({"event": "exit", "code": code, "reason": reason})
        sys.stderr.flush()
        os._exit(code)

    def problem(self, kind: str, **details: Any) -> None:
        entry = {"event": "protocol_error", "kind": kind, **details}
        self.protocol_errors.append(entry)
        self.record(entry)

    def on_message(self, message: dict[str, Any], response_to: str | None) -> None:
        if "method" in message:
            entry: dict[str, Any] = {"method": message["method"], "params": message.get("params")}
            if "id" in message:
                entry["id"] = message["id"]
            self.received[message["method"]] = self.received.get(message["method"], 0) + 1
        else:
            entry = {"response": message.get("id"), "response_to": response_to}
            if "error" in message:
                entry["error"] = message["error"]
            else:
                entry["result"] = message.get("result")
        self.record(entry)

    def on_cancelled(self, msg_id: Any) -> None:
        self.record({"event": "cancelled", "id": msg_id})

    # ------------------------------------------------------------------ behaviours
    def behaviour_for(self, method: str) -> dict[str, Any] | None:
        configured = self.responses.get(method)
        if isinstance(configured, list):
            receipt = self.receipts.get(method, 0)
            self.receipts[method] = receipt + 1
            configured = configured[min(receipt, len(configured) - 1)] if configured else None
        if not isinstance(configured, dict):
            return None
        once_file = configured.get("once_file")
        if once_file:
            if os.path.exists(once_file):
                return None
            Path(once_file).touch()
        return configured

    def names_for(self, method: str, params: Any) -> dict[str, Any]:
        names: dict[str, Any] = {"name": self.name, "method": method}
        if isinstance(params, dict):
            document = params.get("textDocument")
            uri = document.get("uri") if isinstance(document, dict) else params.get("uri")
            if isinstance(uri, str):
                names["uri"] = uri
                if uri in self.documents:
                    names["version"] = self.documents[uri].version
            position = params.get("position")
            if isinstance(position, dict):
                names["line"] = position.get("line")
                names["character"] = position.get("character")
        return names

    def crash_if_asked(self, behaviour: dict[str, Any], method: str) -> None:
        crash = behaviour.get("crash")
        if crash:
            self.exit_now(1 if crash is True else int(crash), f"crash on {method}")

    def behaviour_answer(self, method: str, params: Any, behaviour: dict[str, Any]) -> Any:
        if "error" in behaviour:
            error = behaviour["error"]
            raise JsonRpcException(code=error.get("code", -32603), message=error.get("message", ""),
                                   data=error.get("data"))
        if behaviour.get("echo"):
            return {"server": self.name, "method": method, "params": params}
        if "generate_items" in behaviour:
            return {"isIncomplete": bool(behaviour.get("is_incomplete", False)),
                    "items": self.generated_items(int(behaviour["generate_items"]))}
        return template(behaviour.get("result"), self.names_for(method, params))

    def generated_items(self, count: int) -> list[dict[str, Any]]:
        items = self.completion_cache.get(count)
        if items is None:
            name = self.name
            items = [{"label": f"{name}-item-{i}", "kind": 6, "sortText": f"{i:06d}",
                      "data": {"server": name, "index": i}} for i in range(count)]
            self.completion_cache[count] = items
        return items

    # ------------------------------------------------------------------ requests
    def on_request(self, msg_id: Any, method: str, params: Any) -> Any:
        try:
            return self.answer(method, params)
        except JsonRpcException:
            raise
        except Exception:
            self.record({"event": "handler_error", "method": method, "traceback": traceback.format_exc()})
            raise

    def answer(self, method: str, params: Any) -> Any:
        if self.shut_down:
            raise JsonRpcInvalidRequest(f"{self.name}: request {method} after shutdown")
        behaviour = self.behaviour_for(method)
        if behaviour is not None:
            if behaviour.get("hang") or behaviour.get("delay"):
                return self.answer_later(method, params, behaviour)
            self.crash_if_asked(behaviour, method)
            if any(key in behaviour for key in ANSWER_KEYS):
                return self.behaviour_answer(method, params, behaviour)
        return self.default_answer(method, params)

    async def answer_later(self, method: str, params: Any, behaviour: dict[str, Any]) -> Any:
        await asyncio.sleep(float(behaviour.get("delay", 0)))
        self.crash_if_asked(behaviour, method)
        if behaviour.get("hang"):
            await asyncio.get_running_loop().create_future()  # resolved by nobody; a cancel ends it
        if any(key in behaviour for key in ANSWER_KEYS):
            return self.behaviour_answer(method, params, behaviour)
        answer = self.default_answer(method, params)
        return await answer if isinstance(answer, Awaitable) else answer

    def trigger_for(self, method: str, params: Any) -> list[dict[str, Any]] | None:
        if method == "workspace/executeCommand" and isinstance(params, dict):
            actions = self.triggers.get(str(params.get("command")))
            if actions is not None:
                return actions
        return self.triggers.get(method)

    def default_answer(self, method: str, params: Any) -> Any:
        actions = self.trigger_for(method, params)
        if method in ("initialize", "shutdown"):
            if actions is not None:
                return self.run_actions_then(actions, method, params)
            return self.answer_lifecycle(method, params)
        if actions is not None:
            return self.run_actions(actions, self.names_for(method, params))
        if method == "fake/getDocument":
            document = self.documents.get(self.names_for(method, params).get("uri", ""))
            return document.as_dict() if document else None
        if method == "fake/getState":
            return self.state()
        if method == "textDocument/diagnostic" and "pull_diagnostics" in self.spec:
            return self.pull_report(params)
        if "*" in self.responses:
            behaviour = self.behaviour_for("*")
            if behaviour is not None:
                # The fallback always answers from the behaviour itself (null by default): going on to the
                # defaults below would ask "*" again.
                behaviour = {"result": None, **behaviour}
                if behaviour.get("hang") or behaviour.get("delay"):
                    return self.answer_later(method, params, behaviour)
                self.crash_if_asked(behaviour, method)
                return self.behaviour_answer(method, params, behaviour)
        if method == "workspace/executeCommand" and isinstance(params, dict):
            return {"server": self.name, "command": params.get("command"), "arguments": params.get("arguments")}
        if method.endswith("/resolve"):
            return params
        if method == "textDocument/diagnostic":
            return {"kind": "full", "resultId": self.result_id(params), "items": []}
        if method in STANDARD_METHODS:
            return None
        raise JsonRpcMethodNotFound(f"{self.name}: unknown method {method}")

    async def run_actions_then(self, actions: list[dict[str, Any]], method: str, params: Any) -> Any:
        """A lifecycle request triggers actions before its own answer (servers log and report progress while
        they initialize)."""
        await self.run_actions(actions, self.names_for(method, params))
        answer = self.answer_lifecycle(method, params)
        return await answer if isinstance(answer, Awaitable) else answer

    def answer_lifecycle(self, method: str, params: Any) -> Any:
        if method == "shutdown":
            self.shut_down = True
            return None
        self.initialize_params = params
        if self.spec.get("never_initialize"):
            return asyncio.get_running_loop().create_future()
        server_info = self.spec.get("server_info", {"name": self.name, "version": "0.0-fake"})
        return {"capabilities": self.capabilities, "serverInfo": server_info}

    def after_answer(self, msg_id: Any, method: str) -> None:
        self.write_garbage_after(method)
        loop = asyncio.get_running_loop()
        if method == "initialize" and "crash_after_initialize_seconds" in self.spec:
            loop.call_later(float(self.spec["crash_after_initialize_seconds"]), self.exit_now, 1,
                            "crash_after_initialize_seconds")
        if method == "shutdown" and "exit_on_shutdown_delay" in self.spec:
            loop.call_later(float(self.spec["exit_on_shutdown_delay"]), self.exit_now, 0, "exit_on_shutdown_delay")

    def write_garbage_after(self, method: str) -> None:
        garbage = self.spec.get("garbage_after_message", {}).get(method)
        if garbage and self.protocol.writer is not None:
            text = DEFAULT_GARBAGE_FRAME if garbage is True else str(garbage)
            self.protocol.writer.write(text.encode("utf-8"))

    def state(self) -> dict[str, Any]:
        return {
            "name": self.name, "pid": os.getpid(), "initialized": self.initialized, "shutdown": self.shut_down,
            "initialize_params": self.initialize_params,
            "documents": {uri: {**document.as_dict(), "languageId": document.language_id}
                          for uri, document in self.documents.items()},
            "protocol_errors": self.protocol_errors, "received": self.received, "settings": self.settings,
        }

    # ------------------------------------------------------------------ server-to-client actions
    async def run_actions(self, actions: list[dict[str, Any]], names: dict[str, Any]) -> list[Any]:
        outcomes: list[Any] = []
        for action in actions:
            if action.get("delay"):
                await asyncio.sleep(float(action["delay"]))
            if action.get("crash"):
                self.exit_now(1 if action["crash"] is True else int(action["crash"]), "crash action")
            params = template(action.get("params"), names)
            if "request" in action:
                outcomes.append(await self.client_request(action["request"], params, float(action.get("timeout", 30))))
            elif "notify" in action:
                self.protocol.notify(action["notify"], params)
                outcomes.append(None)
        return outcomes

    async def client_request(self, method: str, params: Any, timeout: float) -> Any:
        future = asyncio.wrap_future(self.protocol.send_request(method, params))
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except JsonRpcException as error:
            failure: dict[str, Any] = {"code": error.code, "message": error.message}
            if error.data is not None:
                failure["data"] = error.data
            return {"error": failure}
        except TimeoutError:
            return {"error": {"code": None, "message": f"no answer to {method} within {timeout} s"}}
        except ConnectionError as error:
            return {"error": {"code": None, "message": str(error)}}

    def in_background(self, awaitable: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(awaitable)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    # ------------------------------------------------------------------ notifications
    def on_notification(self, method: str, params: Any) -> None:
        try:
            self.handle_notification(method, params)
        except Exception:
            self.record({"event": "handler_error", "method": method, "traceback": traceback.format_exc()})
            raise
        finally:
            self.write_garbage_after(method)

    def handle_notification(self, method: str, params: Any) -> None:
        behaviour = self.behaviour_for(method)
        if behaviour is not None:
            if behaviour.get("crash") and behaviour.get("delay"):
                asyncio.get_running_loop().call_later(float(behaviour["delay"]), self.crash_if_asked, behaviour, method)
            else:
                self.crash_if_asked(behaviour, method)
            if behaviour.get("echo"):
                self.protocol.notify("fake/echo", {"server": self.name, "method": method, "params": params})
        if method == "exit":
            self.on_exit()
        elif method == "initialized":
            self.initialized = True
            if self.spec.get("on_initialized"):
                self.in_background(self.run_actions(self.spec["on_initialized"], self.names_for(method, params)))
        elif method == "textDocument/didOpen":
            self.did_open(params["textDocument"])
        elif method == "textDocument/didChange":
            self.did_change(params)
        elif method == "textDocument/didClose":
            self.did_close(params["textDocument"]["uri"])
        elif method == "workspace/didChangeConfiguration" and isinstance(params, dict):
            self.settings = params.get("settings")
        actions = self.triggers.get(method)
        if actions is not None:
            self.in_background(self.run_actions(actions, self.names_for(method, params)))

    def on_exit(self) -> None:
        if self.spec.get("ignore_exit"):
            self.record({"event": "exit_ignored"})
            return
        code = 0 if self.shut_down else 1
        delay = float(self.spec.get("exit_delay", 0))
        if delay > 0:
            asyncio.get_running_loop().call_later(delay, self.exit_now, code, "exit notification")
        else:
            self.exit_now(code, "exit notification")

    def sync_kind(self) -> int:
        sync = self.capabilities.get("textDocumentSync", 0)
        return int(sync) if isinstance(sync, int) else int(sync.get("change", 0) or 0)

    def position_encoding(self) -> str:
        return str(self.capabilities.get("positionEncoding", "utf-16"))

    def did_open(self, item: dict[str, Any]) -> None:
        uri = item["uri"]
        if uri in self.documents:
            self.problem("open_already_open", uri=uri)
        document = FakeDocument(uri, item.get("languageId", ""), int(item.get("version", 0)), item.get("text", ""))
        self.documents[uri] = document
        self.publish(document)

    def did_change(self, params: dict[str, Any]) -> None:
        uri = params["textDocument"]["uri"]
        version = params["textDocument"].get("version")
        changes: list[dict[str, Any]] = params.get("contentChanges", [])
        kind = self.sync_kind()
        ranged = [("range" in change) for change in changes]
        if kind == 0 or (kind == 1 and any(ranged)) or (kind == 2 and not all(ranged)):
            entry = {"event": "sync_error", "expected": SYNC_KIND_NAMES.get(kind, str(kind)), "params": params}
            self.protocol_errors.append(entry)
            self.record(entry)
        document = self.documents.get(uri)
        if document is None:
            self.problem("change_unknown_document", uri=uri)
            return
        if isinstance(version, int):
            if version <= document.version:
                self.problem("version_not_increasing", uri=uri, previous=document.version, version=version)
            document.version = version
        problems: list[dict[str, Any]] = []
        for change in changes:
            document.text = apply_change(document.text, change, self.position_encoding(), problems)
        for slip in problems:
            self.problem(slip.pop("kind"), uri=uri, **slip)
        self.publish(document)

    def did_close(self, uri: str) -> None:
        if self.documents.pop(uri, None) is None:
            self.problem("close_unknown_document", uri=uri)
        clear = self.spec.get("clear_on_close", not self.spec.get("keep_on_close", False))
        if "diagnostics_on_open_and_change" in self.spec and clear:
            self.send_diagnostics({"uri": uri, "diagnostics": []})

    # ------------------------------------------------------------------ diagnostics
    def diagnostics_for(self, templates: list[dict[str, Any]], uri: str) -> list[dict[str, Any]]:
        document = self.documents.get(uri)
        names: dict[str, Any] = {"name": self.name, "uri": uri}
        if document is not None:
            names["version"] = document.version
        diagnostics = []
        for diagnostic_template in templates:
            wanted = diagnostic_template.get("when_text_contains")
            if wanted is not None and (document is None or wanted not in document.text):
                continue
            diagnostic = template({k: v for k, v in diagnostic_template.items() if k != "when_text_contains"}, names)
            if "source" not in diagnostic:
                diagnostic["source"] = self.name
            elif diagnostic["source"] is None:
                del diagnostic["source"]
            diagnostics.append(diagnostic)
        return diagnostics

    def publish(self, document: FakeDocument) -> None:
        templates = self.spec.get("diagnostics_on_open_and_change")
        if templates is None:
            return
        payload: dict[str, Any] = {"uri": document.uri, "diagnostics": self.diagnostics_for(templates, document.uri)}
        if self.spec.get("publish_version", True):
            payload["version"] = document.version
        self.send_diagnostics(payload)

    def send_diagnostics(self, payload: dict[str, Any]) -> None:
        delay = self.spec.get("diagnostics_delay")
        if delay:
            # What the text said when it changed (or closed), published later: a slow checker, whose reports may be
            # stale by the time they arrive.
            asyncio.get_running_loop().call_later(
                delay, self.protocol.notify, "textDocument/publishDiagnostics", payload)
        else:
            self.protocol.notify("textDocument/publishDiagnostics", payload)

    def result_id(self, params: Any) -> str:
        document = self.documents.get(self.names_for("", params).get("uri", ""))
        return f"{self.name}:{document.version if document else 'closed'}"

    def pull_report(self, params: Any) -> dict[str, Any]:
        result_id = self.result_id(params)
        if self.spec.get("pull_report_unchanged") and params.get("previousResultId") == result_id:
            return {"kind": "unchanged", "resultId": result_id}
        uri = self.names_for("", params).get("uri", "")
        items = self.diagnostics_for(self.spec["pull_diagnostics"], uri)
        return {"kind": "full", "resultId": result_id, "items": items}


# ------------------------------------------------------------------------------------------------ helpers for tests
def fake_server_command(spec: dict[str, Any], *, name: str | None = None, record: str | os.PathLike[str] | None = None,
                        python: str = sys.executable) -> list[str]:
    """The argv that starts a fake server with this spec."""
    command = [python, str(FAKE_SERVER_PATH), "--spec", json.dumps(spec)]
    if name is not None:
        command += ["--name", name]
    if record is not None:
        command += ["--record", str(record)]
    return command


def read_record(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The entries a fake server recorded (one dict per line; [] if it never started)."""
    file = Path(path)
    if not file.exists():
        return []
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]


# ------------------------------------------------------------------------------------------------ main
def load_spec(argv: list[str] | None = None) -> tuple[dict[str, Any], bool]:
    parser = argparse.ArgumentParser(description="A configurable fake language server (see the module docstring).")
    parser.add_argument("--spec", default="{}", help="the spec as a JSON object")
    parser.add_argument("--spec-file", help="read the spec from this JSON file instead")
    parser.add_argument("--name", help="the server's name (overrides the spec's)")
    parser.add_argument("--record", help="append every received message to this JSON-lines file")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logging on stderr")
    args = parser.parse_args(argv)
    spec = json.loads(Path(args.spec_file).read_text(encoding="utf-8") if args.spec_file else args.spec)
    if not isinstance(spec, dict):
        parser.error("the spec must be a JSON object")
    if args.name:
        spec["name"] = args.name
    if args.record:
        spec["record"] = args.record
    return spec, bool(args.verbose)


def write_start_faults(spec: dict[str, Any]) -> None:
    spam = int(spec.get("stderr_spam_bytes", 0))
    if spam > 0:
        line = b"fake server noise " * 8 + b"\n"
        for _ in range(spam // len(line)):
            sys.stderr.buffer.write(line)
        sys.stderr.buffer.write(b"x" * (spam % len(line)))
        sys.stderr.buffer.flush()
    if spec.get("garbage_before_first_frame"):
        sys.stdout.buffer.write(str(spec["garbage_before_first_frame"]).encode("utf-8"))
        sys.stdout.buffer.flush()


def main(argv: list[str] | None = None) -> None:
    spec, verbose = load_spec(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if verbose else logging.WARNING)
    if spec.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    write_start_faults(spec)
    endpoint = StdioEndpoint()
    fake = FakeLanguageServer(spec, endpoint)
    endpoint.handler = fake
    endpoint.serve(sys.stdin.buffer, sys.stdout.buffer)
    if spec.get("ignore_stdin_close"):
        fake.record({"event": "stdin_closed_ignored"})
        while True:
            time.sleep(3600)
    fake.exit_now(0, "stdin closed")


if __name__ == "__main__":
    main()
