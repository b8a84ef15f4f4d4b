"""A client whose text of a document differs from the servers' (another client leads it, see workspace.py) is
answered through a line map: its positions are mapped into the servers' text before the runner sees the request,
and the answer's positions of that document back into its text (`text_mapping.py` does the mapping). Runners never
know. A position with no counterpart gets nothing, and the client is told why in a log message
(`NOT_MAPPED_NOTICE`), which editors keep out of the user's way; `lsp-hub query` and the MCP tools turn it into
`complete: false`.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.documents import Document, SharedDocument, uri_to_path
from lsp_hub.proxy.methods import MethodSpec, Positions
from lsp_hub.proxy.runners import RUNNERS, RequestContext
from lsp_hub.proxy.semantic_tokens import DELTA, FULL
from lsp_hub.proxy.text_mapping import LineMap, PositionMapper, Unmappable, map_semantic_tokens
from lsp_hub.proxy.workspace import client_name
from lsp_hub.transport.jsonrpc import materialize

if TYPE_CHECKING:
    from lsp_hub.proxy.workspace import Workspace

# What starts the window/logMessage that says a request was answered with nothing (or with items left out) because
# its position is on a line this client's text does not share with the servers' (another client's unsaved text).
# `lsp-hub query` (query.py, which cannot import this module) matches the same words.
NOT_MAPPED_NOTICE = "lsp-hub: not answered here: "


class LineMaps:
    """One client's text of each document mapped to the servers' text, kept per (its version, theirs)."""

    def __init__(self) -> None:
        # Per URI: this client's text mapped to the servers' (None: the same text), and the key it was made for.
        self._maps: dict[str, tuple[tuple[int, ...], LineMap | None]] = {}

    def get(self, uri: str, document: Document | None, shared: SharedDocument | None) -> LineMap | None:
        """None when the texts are the same (or the document is not open here)."""
        if document is None or shared is None or shared.source is document:
            return None
        key = (id(document), document.version, id(shared.source), shared.version)
        cached = self._maps.get(uri)
        if cached is not None and cached[0] == key:
            return cached[1]
        ours, theirs = document.text, shared.text
        line_map = None if ours == theirs else LineMap.between(ours, theirs)
        self._maps[uri] = (key, line_map)
        return line_map

    def forget(self, uri: str) -> None:
        self._maps.pop(uri, None)


def not_mapped_message(workspace: Workspace, method: str, uri: str, what: str) -> dict[str, Any]:
    """The window/logMessage params that say why a request was answered with nothing or with less."""
    leader = workspace.leader(uri)
    if leader is not None and workspace.has_unsaved_edits(leader, uri):
        why = f"this line has unsaved changes in another client ({client_name(leader)})"
    else:
        why = "this client's text differs there from the text the servers have " \
              f"({client_name(leader) if leader is not None else 'another client'}'s)"
    path = uri_to_path(uri) or uri
    return {"type": 3, "message": f"{NOT_MAPPED_NOTICE}{method} on {os.path.basename(path)}: {what}: {why}"}


def run_mapped(context: RequestContext, spec: MethodSpec, method: str, params: Any, uri: str,
               line_map: LineMap) -> Any:
    document = context.documents.get(uri)
    assert document is not None  # a line map exists only for a document open here
    try:
        asked = PositionMapper(uri, line_map, lenient=False).map(params)
    except Unmappable as unmappable:
        context.tell_not_mapped(method, uri, f"line {unmappable.line + 1} is not in the text the servers have "
                                             "and was not answered")
        return None
    tokens = spec.positions is Positions.TOKENS
    if tokens and method == DELTA:  # the client's previous tokens are in its text, the server's in its own
        method, asked = FULL, {k: v for k, v in asked.items() if k != "previousResultId"}
    back = line_map.reversed()

    def to_client(result: Any) -> Any:
        result = materialize(result)
        if tokens:
            if not isinstance(result, dict) or not isinstance(result.get("data"), list):
                return result
            # Without a resultId: a later delta would be computed on the servers' text, not this one.
            return {"data": map_semantic_tokens(result["data"], back)}
        mapper = PositionMapper(uri, back, lenient=True, version=document.version)
        try:
            mapped = mapper.map(result)
        except Unmappable:
            context.tell_not_mapped(method, uri, "its answer is about lines not in this client's text")
            return None
        if mapper.left_out:
            context.tell_not_mapped(method, uri, f"{len(mapper.left_out)} item(s) of the answer were left out, "
                                                 "being on lines not in this client's text")
        return mapped

    answer = RUNNERS[spec.strategy](context, spec, method, asked)
    if asyncio.isfuture(answer) or asyncio.iscoroutine(answer):
        async def mapped_answer() -> Any:
            return to_client(await answer)

        return mapped_answer()
    return to_client(answer)
