"""JSON text in and out: orjson first, the standard library for what orjson refuses; a large answer's result kept as
the text it arrived as (`RawResult`) once it is checked to be one JSON value."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

RAW_THRESHOLD = 64 * 1024  # a response body this long keeps its result as text (RawResponseReader)
MsgId = int | str
BytesLike = Any  # bytes, or a view of them (msgspec.Raw) with the buffer protocol (collections.abc.Buffer in 3.12)

# The members JSON-RPC libraries write before the result, in the two orders seen (vscode-jsonrpc, pygls, gopls,
# rust-analyzer write jsonrpc first; clangd sorts keys). A response has no member after "result".
RESPONSE_PREFIX = re.compile(
    rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+)'
    rb'|"id"\s*:\s*(-?\d+)\s*,\s*"jsonrpc"\s*:\s*"2\.0")\s*,\s*"result"\s*:'
)


class RawResult:
    """A response's result kept as the JSON text the server sent (bytes, or a view of the body it came in):
    forwarded as is, parsed only if needed."""

    __slots__ = ("_value", "raw")

    _UNPARSED = object()

    def __init__(self, raw: BytesLike) -> None:
        self.raw = raw
        self._value: Any = RawResult._UNPARSED

    @property
    def value(self) -> Any:
        if self._value is RawResult._UNPARSED:
            self._value = parse_body(bytes(self.raw))  # checked to be one JSON value when it was read
        return self._value


def materialize(result: Any) -> Any:
    """The parsed value of a result that may still be raw text."""
    return result.value if isinstance(result, RawResult) else result


def dumps(value: Any) -> bytes:
    """JSON text of a message (orjson; the standard library for what orjson refuses: keys that are not strings,
    integers beyond 64 bits, lone surrogates, tuple subclasses). A RawResult inside is parsed after all (merges are
    the rare, small case). Raises TypeError or ValueError for what is not JSON at all."""
    try:
        return orjson.dumps(value, default=_raw_default)
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(value, separators=(",", ":"), default=_raw_default).encode("utf-8")


def _raw_default(value: Any) -> Any:
    """A raw result nested in a merged answer is parsed after all (merges are the rare, small case)."""
    if isinstance(value, RawResult):
        return value.value
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class UnreadableBody:
    """A frame whose body is not JSON (or not UTF-8): what was wrong, and the response id if one can be seen."""

    __slots__ = ("error", "response_id", "size", "start")

    def __init__(self, body: bytes, error: Exception) -> None:
        self.error = error
        self.size = len(body)
        self.start = body[:60]
        match = RESPONSE_PREFIX.match(body, 0, 256)
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


_response_decoder: Any = None


def _response_shape() -> Any:
    """msgspec's decoder of a response's envelope: the result's text is taken as it is (`msgspec.Raw`, no copy),
    and its syntax checked on the way without building the value."""
    global _response_decoder
    if _response_decoder is None:
        import msgspec  # here: only hubs that see a large answer need it

        text = msgspec.UnsetType | msgspec.Raw
        response = msgspec.defstruct("Response", [
            ("jsonrpc", str, ""), ("id", int | str | None, None), ("method", text, msgspec.UNSET),
            ("result", text, msgspec.UNSET), ("error", text, msgspec.UNSET)])
        _response_decoder = (msgspec.json.Decoder(type=response), msgspec.DecodeError, msgspec.UNSET)
    return _response_decoder


def split_raw_response(body: bytes, threshold: int = RAW_THRESHOLD) -> tuple[MsgId, RawResult] | None:
    """(id, result as text) of a plain response at least `threshold` long whose body is one JSON object in UTF-8;
    None for anything else (parsed whole, as usual). The result stays a view of `body`: no copy is made."""
    if len(body) < threshold or RESPONSE_PREFIX.match(body, 0, 256) is None:
        return None
    decoder, decode_error, unset = _response_shape()
    try:
        response = decoder.decode(body)
    except decode_error:
        return None  # not JSON, or not a response's shape: parsed whole (and answered what that finds)
    if response.jsonrpc != "2.0" or response.id is None or response.result is unset or \
            response.method is not unset or response.error is not unset:
        return None
    if not body.isascii():
        try:
            body.decode("utf-8")  # msgspec leaves the bytes inside strings it skips unchecked
        except UnicodeDecodeError:
            return None
    return response.id, RawResult(response.result)


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
