"""JSON-RPC error codes and the error answer as an exception: what every other room of the package raises."""

from __future__ import annotations

from typing import Any

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


class ResponseFailure(Exception):
    """An error answer: from a peer (kept verbatim for forwarding) or made by the hub."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

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


def error_to_dict(error: Any) -> dict[str, Any]:
    """Any error value a handler or a peer produced, as a JSON-RPC error object."""
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


def parse_error_response(exc: BaseException) -> dict[str, Any]:
    """The answer to a body that is not JSON (the id is unknown, so it is null)."""
    return {"code": PARSE_ERROR, "message": f"Parse error: {exc}"}
