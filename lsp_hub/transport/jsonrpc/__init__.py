"""JSON-RPC for the hub, owned outright: no library's private members, no typed message classes.

- `errors`: the error codes and `ResponseFailure` (an error answer as an exception).
- `codec`: JSON text in and out (orjson, the standard library for what it refuses); `RawResult`, a large answer's
  result kept as the text it arrived as.
- `framing`: `FrameReader`, strict Content-Length frames read through a stream's public `read(n)` into a buffer of
  its own; `RawResponseReader` for backends.
- `writing`: `CoalescingWriter` (a burst's writes leave as one) and `widen_pipe`, the one OS-specific call.
- `endpoint`: `RawProtocol`, the endpoint (dispatch to one `MessageHandler`, our request ids and futures, answers
  to malformed input), and `read_loop`.
- `stdio`: stdin, stdout and child processes as byte streams; `serve_stdio` for small servers.
- `websocket`: a WebSocket connection's messages and writer.

Invariant: nothing here knows LSP, and nothing here imports pygls or reaches into asyncio's private members.
"""

from lsp_hub.transport.jsonrpc.codec import (
    RAW_THRESHOLD,
    RawResult,
    UnreadableBody,
    describe,
    dumps,
    is_one_json_value,
    materialize,
    parse_body,
    split_raw_response,
)
from lsp_hub.transport.jsonrpc.endpoint import MessageHandler, MessageSource, MsgId, RawProtocol, read_loop
from lsp_hub.transport.jsonrpc.errors import (
    CONTENT_MODIFIED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    REQUEST_FAILED,
    SERVER_CANCELLED,
    SERVER_NOT_INITIALIZED,
    ResponseFailure,
    error_to_dict,
    parse_error_response,
)
from lsp_hub.transport.jsonrpc.framing import END, MAX_CONTENT_LENGTH, FrameReader, RawResponseReader
from lsp_hub.transport.jsonrpc.stdio import FileWriter, Peer, serve_stdio, spawn_peer, stdin_stream
from lsp_hub.transport.jsonrpc.websocket import WebSocketMessages, WebSocketWriter
from lsp_hub.transport.jsonrpc.writing import (
    COALESCE_BYTES,
    PIPE_SIZE,
    CoalescingWriter,
    hold_writes,
    release_writes,
    widen_pipe,
    writes_held,
)

__all__ = [
    "COALESCE_BYTES", "CONTENT_MODIFIED", "END", "INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST",
    "MAX_CONTENT_LENGTH", "METHOD_NOT_FOUND", "PARSE_ERROR", "PIPE_SIZE", "RAW_THRESHOLD", "REQUEST_CANCELLED",
    "REQUEST_FAILED", "SERVER_CANCELLED", "SERVER_NOT_INITIALIZED", "CoalescingWriter", "FileWriter", "FrameReader",
    "MessageHandler", "MessageSource", "MsgId", "Peer", "RawProtocol", "RawResponseReader", "RawResult",
    "ResponseFailure", "UnreadableBody", "WebSocketMessages", "WebSocketWriter", "describe", "dumps", "error_to_dict",
    "hold_writes", "is_one_json_value", "materialize", "parse_body", "parse_error_response", "read_loop",
    "release_writes", "serve_stdio", "spawn_peer", "split_raw_response", "stdin_stream", "widen_pipe", "writes_held",
]
