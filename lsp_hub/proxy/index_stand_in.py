"""What the index answers for a request no running server answered (a language with no server installed, say):
`STAND_INS`, named by the method table (`MethodSpec.stand_in`), each `function(index, params) -> LSP result`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lsp_hub.index.workspace import WorkspaceIndex


def _prepare_call_hierarchy(index: WorkspaceIndex, params: dict[str, Any]) -> Any:
    from lsp_hub.index import api

    uri = params["textDocument"]["uri"]
    found = api.callers(index, {"uri": uri, "position": params["position"]})
    return [
        {"name": found["symbol"] or "?", "kind": 12, "uri": location["uri"], "range": location["range"],
         "selectionRange": location["range"]}
        for location in found["definitions"][:1]
    ] or None


def _incoming_calls(index: WorkspaceIndex, params: dict[str, Any]) -> Any:
    from lsp_hub.index import api

    item = params["item"]
    found = api.callers(index, {"uri": item["uri"], "position": item["selectionRange"]["start"]})
    calls: dict[tuple[str, str], dict[str, Any]] = {}
    for caller in found["callers"]:
        location = caller["location"]
        key = (location["uri"], caller["caller"] or "")
        entry = calls.setdefault(key, {"from": {
            "name": caller["caller"] or "(module level)", "kind": 12, "uri": location["uri"],
            "range": location["range"], "selectionRange": location["range"]}, "fromRanges": []})
        entry["fromRanges"].append(location["range"])
    return list(calls.values())


def _api(function: str) -> Callable[[WorkspaceIndex, dict[str, Any]], Any]:
    def call(index: WorkspaceIndex, params: dict[str, Any]) -> Any:
        from lsp_hub.index import api

        return getattr(api, function)(index, params)

    return call


# Named by the method table (`MethodSpec.stand_in`).
STAND_INS: dict[str, Callable[[WorkspaceIndex, dict[str, Any]], Any]] = {
    "document_symbol": _api("document_symbol"),
    "workspace_symbol": _api("workspace_symbol"),
    "definition": _api("definition"),
    "prepare_call_hierarchy": _prepare_call_hierarchy,
    "incoming_calls": _incoming_calls,
}
