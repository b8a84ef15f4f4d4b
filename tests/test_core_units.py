"""Unit tests of the proxy's pure parts: merges, document edits, the diagnostic store, raw responses, routing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.config.model import Config, LanguageSpec, ServerSpec
from lsp_hub.proxy.diagnostics import DiagnosticStore, Part
from lsp_hub.proxy.documents import Document
from lsp_hub.proxy.methods import strategy_for
from lsp_hub.proxy.routing import Router, find_root
from lsp_hub.proxy.strategies import (
    Strategy,
    is_empty,
    merge_completion,
    merge_hover,
    merge_locations,
    tag_item,
    untag_item,
)
from lsp_hub.transport.jsonrpc import (
    RawProtocol,
    RawResponseReader,
    RawResult,
    ResponseFailure,
    is_one_json_value,
    materialize,
)

R = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}


def test_every_single_answer_method_of_the_issue_has_a_strategy() -> None:
    first = ["rename", "prepareRename", "formatting", "rangeFormatting", "onTypeFormatting", "documentHighlight",
             "documentSymbol", "foldingRange", "selectionRange", "semanticTokens/full", "linkedEditingRange",
             "prepareCallHierarchy", "prepareTypeHierarchy"]
    for name in first:
        # SEMANTIC_TOKENS is FIRST with the answer remapped into the hub's legend.
        assert strategy_for(f"textDocument/{name}") in (Strategy.FIRST, Strategy.SEMANTIC_TOKENS), name
    for name in ["definition", "declaration", "typeDefinition", "implementation"]:
        assert strategy_for(f"textDocument/{name}") is Strategy.FIRST_NON_EMPTY
    assert strategy_for("rust-analyzer/expandMacro") is Strategy.FORWARD


def test_origin_tags_round_trip_and_keep_the_servers_data() -> None:
    for data in (None, 5, {"x": [1]}):
        item: dict[str, Any] = {"label": "a"} if data is None else {"label": "a", "data": data}
        original = json.loads(json.dumps(item))
        uid, restored = untag_item(tag_item(item, 7))
        assert uid == 7 and restored == original
    assert untag_item({"label": "plain"}) == (None, {"label": "plain"})


def test_hover_merge_labels_only_when_several_answer() -> None:
    assert merge_hover([("a", None), ("b", {"contents": "x"})]) == {"contents": "x"}
    merged = merge_hover([("a", {"contents": {"kind": "plaintext", "value": "one"}}),
                          ("b", {"contents": [{"language": "python", "value": "def f()"}, "doc"]})])
    value = merged["contents"]["value"]
    assert value.startswith("**a**\n\none") and "```python\ndef f()\n```" in value and "---" in value
    assert merge_hover([("a", {"contents": ""}), ("b", None)]) is None


def test_completion_merge_applies_item_defaults_and_ors_incomplete() -> None:
    edit_range = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 2}}
    merged = merge_completion([
        (1, {"isIncomplete": False, "itemDefaults": {"editRange": edit_range, "data": {"d": 1}},
             "items": [{"label": "alpha"}]}),
        (2, [{"label": "beta", "data": 3}]),
        (3, None),
    ])
    assert merged["isIncomplete"] is False
    first, second = merged["items"]
    assert first["textEdit"] == {"newText": "alpha", "range": edit_range}
    assert untag_item(first) == (1, {"label": "alpha", "textEdit": first["textEdit"], "data": {"d": 1}})
    assert untag_item(second)[0] == 2
    single = {"isIncomplete": True, "items": [{"label": "x"}]}
    assert merge_completion([(1, single), (2, None)]) is single  # one answer passes through untouched


def test_locations_union_drops_duplicates_keeps_order() -> None:
    a = {"uri": "file:///a", "range": R}
    b = {"uri": "file:///b", "range": R}
    same_place = {"targetUri": "file:///a", "targetRange": R, "targetSelectionRange": R}
    elsewhere = {"targetUri": "file:///c", "targetRange": R, "targetSelectionRange": R}
    # A LocationLink to the place a Location already names is the same answer from another server.
    assert merge_locations([[a, b], [b], None, [same_place, elsewhere]]) == [a, b, elsewhere]
    assert merge_locations([None, None]) is None


def test_is_empty() -> None:
    assert is_empty(None) and is_empty([]) and is_empty({"contents": []}) and is_empty({"signatures": []})
    assert not is_empty([{"uri": "x"}]) and not is_empty(RawResult(b"[1]"))


def test_document_applies_utf16_incremental_edits() -> None:
    document = Document("file:///x", "python", 1, "a😀b\r\nsecond\nthird")
    document.apply_changes([
        {"range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 4}}, "text": "B"},
        {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}}, "text": ""},
        {"range": {"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 0}}, "text": "!"},
    ], 2)
    assert document.text == "a😀B\r\nthird!" and document.version == 2
    document.apply_changes([{"text": "new"}], 3)
    assert document.text == "new"


def test_diagnostic_store_unions_parts_and_clears_them() -> None:
    published: list[tuple[str, list[dict[str, Any]]]] = []
    store = DiagnosticStore(lambda uri, diagnostics, version: published.append((uri, diagnostics)))
    store.put("u", Part(1, "push", "one"), [{"range": R, "message": "m1"}])
    store.put("u", Part(2, "pull", "two"), [{"range": R, "message": "m2", "source": "custom"}])
    assert [(d["source"], d["message"]) for d in published[-1][1]] == [("one", "m1"), ("custom", "m2")]
    assert store.origins("u", published[-1][1]) == {1: [published[-1][1][0]], 2: [published[-1][1][1]]}
    store.clear_owner(1)
    assert [d["message"] for d in published[-1][1]] == ["m2"]
    store.clear_uri("u")
    assert published[-1] == ("u", [])


@pytest.mark.asyncio
async def test_raw_response_reader_keeps_large_results_as_text() -> None:
    result = {"items": [{"label": f"item{i}", "data": {"i": i}} for i in range(3000)]}

    async def read(body: bytes) -> Any:
        stream = asyncio.StreamReader()
        stream.feed_data(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        return await RawResponseReader(stream, threshold=1000).read_message()

    for prefix in ('{"jsonrpc":"2.0","id":42,"result":', '{"id": 42, "jsonrpc": "2.0", "result": '):
        message = await read((prefix + json.dumps(result) + "}\n").encode())
        assert message["id"] == 42 and isinstance(message["result"], RawResult)
        assert materialize(message["result"]) == result
    # A result that is not one JSON value in UTF-8 is never passed on as text: the body is parsed whole instead.
    for broken in (b'{"items": [1, 2,, 3]}', b'{"items": "\xff\xfe"}', b'{"items": [1]} {"more": 2}'):
        message = await read(b'{"jsonrpc":"2.0","id":7,"result":' + broken + b" " * 1200 + b"}")
        assert not isinstance(message, dict) or not isinstance(message.get("result"), RawResult), broken
    assert is_one_json_value('{"a": ["é", 1e999, null]}'.encode()) and not is_one_json_value(b"[1] [2]")
    request = await read(b'{"jsonrpc":"2.0","id":1,"method":"x","params":' + json.dumps(result).encode() + b"}")
    assert request["method"] == "x" and request["params"] == result  # not a response: parsed as a whole


def test_roots_come_from_the_nearest_marker_within_the_workspace_folder(tmp_path: Path) -> None:
    (tmp_path / "a" / "pkg").mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text("")
    (tmp_path / "pyproject.toml").write_text("")
    folder = str(tmp_path / "a")
    assert find_root(str(tmp_path / "a" / "pkg" / "m.py"), ["pyproject.toml"], [folder]) == folder
    (tmp_path / "b").mkdir()
    # No marker inside the folder: the folder itself, never a marker above it.
    assert find_root(str(tmp_path / "b" / "m.py"), ["setup.cfg"], [str(tmp_path / "b")]) == str(tmp_path / "b")
    config = Config(
        servers={"s1": ServerSpec("s1", "x"), "s2": ServerSpec("s2", "y", disabled=True), "s3": ServerSpec("s3", "z")},
        languages={"py": LanguageSpec("py", ("py",), ("python",), (), ("s3", "s2", "s1", "unknown"))},
    )
    router = Router(config, [folder])
    routes = router.routes(str(tmp_path / "a" / "pkg" / "m.py"), router.language(language_id=None, path="m.py"))
    assert [(r.key.server, r.precedence) for r in routes] == [("s3", 0), ("s1", 2)]  # disabled, unknown: gone


def test_feature_filters_filter_features_only() -> None:
    formatting_only = ServerSpec("ruff", only_features=("textDocument/formatting", "diagnostics"))
    assert formatting_only.allows("textDocument/formatting")
    assert not formatting_only.allows("textDocument/hover")
    for method in ("textDocument/didOpen", "textDocument/didChange", "textDocument/didClose", "$/cancelRequest",
                   "workspace/didChangeConfiguration", "workspace/didChangeWatchedFiles"):
        assert formatting_only.allows(method), method
    # "diagnostics" names the hub's pulls too
    assert formatting_only.allows("textDocument/diagnostic")
    no_diagnostics = ServerSpec("x", except_features=("diagnostics", "textDocument/didOpen"))
    assert not no_diagnostics.allows("textDocument/diagnostic") and not no_diagnostics.allows("diagnostics")
    assert no_diagnostics.allows("textDocument/didOpen")
    assert not ServerSpec("y", except_features=("textDocument/diagnostic",)).allows("textDocument/diagnostic")


@pytest.mark.asyncio
async def test_large_answers_nobody_awaits_are_not_kept() -> None:
    protocol = RawProtocol("server")
    msg_id, future = protocol.request("x", None)
    assert protocol.awaiting_answers == 1
    future.set_exception(ResponseFailure(-32803, "past its deadline"))
    await asyncio.sleep(0)  # its done callbacks run
    assert protocol.awaiting_answers == 0  # forgotten once resolved: the server may never answer
    result = json.dumps({"items": [{"label": f"item{i}"} for i in range(300)]}).encode()
    stream = asyncio.StreamReader()
    reader = RawResponseReader(stream, threshold=1000)
    for answered in (msg_id, 999):  # late, and never asked: dropped, nothing kept
        body = b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (answered, result)
        stream.feed_data(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        message = await reader.read_message()
        assert isinstance(message["result"], RawResult)
        protocol.handle_message(message)
        assert protocol.awaiting_answers == 0
    future.exception()


def test_ended_progress_leaves_no_record_in_the_forwarder() -> None:
    """A daemon lives for days: basedpyright creates a progress token per check (33,289 in 20 minutes)."""
    from types import SimpleNamespace

    from lsp_hub.proxy.forwarding import Forwarder

    noted: list[tuple[Any, Any, Any]] = []
    workspace = SimpleNamespace(sessions=[], active=None)
    backend = SimpleNamespace(uid=7, name="fake", note_progress=lambda *args: noted.append(args))
    forwarder = Forwarder(workspace)  # type: ignore[arg-type]
    for index in range(1000):
        forwarder.server_request(backend, "window/workDoneProgress/create", {"token": index})  # type: ignore[arg-type]
        for kind in ("begin", "report", "end"):
            forwarder.server_notification(backend, "$/progress",  # type: ignore[arg-type]
                                          {"token": index, "value": {"kind": kind, "title": "check"}})
    assert forwarder.progress_tracked == 0
    forwarder.server_request(backend, "window/workDoneProgress/create", {"token": "open"})  # type: ignore[arg-type]
    assert forwarder.progress_tracked == 1
    assert noted[0] == (0, "begin", "check")
