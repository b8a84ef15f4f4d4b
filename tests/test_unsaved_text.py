"""Each client's own text, one server: an editor's unsaved lines stay in the servers while an agent that reads the
file from disk is answered through position mapping (issue #22, item 1)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.proxy.session import NOT_MAPPED_NOTICE
from lsp_hub.proxy.text_mapping import LineMap, PositionMapper, Unmappable, map_semantic_tokens
from tests.hub_fixtures import start_daemon
from tests.hubclient import HubClient

DISK = "import os\n\ndef alpha():\n    return 1\ndef beta():\n    return 2\n"
# The editor's unsaved text: three lines inserted at the top, and the first line of the disk's changed.
EDITOR = "UNSAVED 1\nUNSAVED 2\nUNSAVED 3\nimport sys\n\ndef alpha():\n    return 1\ndef beta():\n    return 2\n"


def _range(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


SERVERS = {
    "fakeA": {
        "responses": {"textDocument/hover": {"result": {"contents": "fakeA saw {line}:{character}",
                                                        "range": {"start": {"line": "{line}", "character": 0},
                                                                  "end": {"line": "{line}", "character": 3}}}}},
        # Published while the servers have the editor's text: one on an unsaved line, one on `def beta`.
        "diagnostics_on_open_and_change": [
            {"range": _range(0, 0, 7), "message": "unsaved line", "when_text_contains": "UNSAVED"},
            {"range": _range(7, 4, 8), "message": "on beta", "when_text_contains": "UNSAVED"},
        ],
    },
    "fakeB": {},
}


# ================================================================================================ the line map
def test_a_line_map_maps_equal_lines_and_refuses_changed_ones() -> None:
    agent_to_server = LineMap.between(DISK, EDITOR)
    assert agent_to_server.line(4) == 7  # def beta
    assert agent_to_server.line(1) == 4  # the blank line
    assert agent_to_server.line(0) is None  # "import os": the editor changed it
    with pytest.raises(Unmappable):
        agent_to_server.position({"line": 0, "character": 2})
    server_to_agent = agent_to_server.reversed()
    assert server_to_agent.line(7) == 4 and server_to_agent.line(1) is None
    # A range ending at the start of a changed line ends after the equal line before it.
    changed_middle = LineMap.between("a\nb\nc\n", "a\nX\nY\nc\n")
    assert changed_middle.position({"line": 1, "character": 0}, range_end=True) == {"line": 1, "character": 0}
    with pytest.raises(Unmappable):
        changed_middle.position({"line": 1, "character": 0})  # a start there would be another line's


def test_answers_are_mapped_generically_and_unmappable_items_left_out() -> None:
    uri, other = "file:///ws/mod.alpha", "file:///ws/other.alpha"
    back = LineMap.between(DISK, EDITOR).reversed()  # server text -> agent text
    mapper = PositionMapper(uri, back, lenient=True, version=9)
    answer = [
        {"uri": uri, "range": _range(7, 4, 8)},  # def beta: mapped to line 4
        {"uri": uri, "range": _range(1, 0, 3)},  # an unsaved line: left out
        {"uri": other, "range": _range(7, 0, 1)},  # another document: as it is
        {"targetUri": uri, "targetRange": _range(8, 0, 5), "targetSelectionRange": _range(8, 0, 5),
         "originSelectionRange": _range(7, 0, 3)},
        {"textDocument": {"uri": uri, "version": 3}, "edits": [{"range": _range(5, 0, 3), "newText": "x"}]},
        {"changes": {uri: [{"range": _range(6, 0, 1), "newText": "y"}], other: [{"range": _range(6, 0, 1)}]}},
        {"name": "beta", "range": _range(7, 0, 10), "selectionRange": _range(7, 4, 8), "data": _range(7, 0, 1)},
        {"startLine": 5, "endLine": 8},
    ]
    mapped = mapper.map(answer)
    assert mapped[0]["range"] == _range(4, 4, 8)
    assert mapped[1]["uri"] == other and mapped[1]["range"] == _range(7, 0, 1)
    assert mapped[2]["targetRange"] == _range(5, 0, 5) and mapped[2]["originSelectionRange"] == _range(4, 0, 3)
    assert mapped[3] == {"textDocument": {"uri": uri, "version": 9}, "edits": [{"range": _range(2, 0, 3),
                                                                                 "newText": "x"}]}
    assert mapped[4]["changes"][uri][0]["range"] == _range(3, 0, 1)
    assert mapped[4]["changes"][other][0]["range"] == _range(6, 0, 1)
    assert mapped[5]["range"] == _range(4, 0, 10) and mapped[5]["data"] == _range(7, 0, 1)  # data stays the server's
    assert mapped[6] == {"startLine": 2, "endLine": 5}
    assert mapper.left_out == [answer[1]]
    # Semantic tokens: absolute lines mapped, the unsaved line's token left out.
    assert map_semantic_tokens([1, 0, 3, 0, 0, 6, 4, 4, 1, 0], back) == [4, 4, 4, 1, 0]


# ================================================================================================ through the hub
async def _client(port: int, root: Path, name: str) -> HubClient:
    client = HubClient()
    await client.connect_tcp("127.0.0.1", port)
    params: dict[str, Any] = {"processId": None, "rootUri": root.as_uri(), "capabilities": {},
                              "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                              "clientInfo": {"name": name}}
    await client.request("initialize", params)
    client.notify("initialized", {})
    return client


async def _running(client: HubClient) -> None:
    for _ in range(200):
        status = await client.status()
        if any(server["name"] == "fakeA" and server["state"] == "running" for server in status["servers"]):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(status)


def _hover(client: HubClient, uri: str, line: int, character: int) -> Any:
    return client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": line, "character": character}})


def _not_answered(client: HubClient) -> list[str]:
    return [params["message"] for method, params in client.notifications
            if method == "window/logMessage" and str(params.get("message", "")).startswith(NOT_MAPPED_NOTICE)]


def _published(client: HubClient, uri: str) -> list[list[dict[str, Any]]]:
    return [params["diagnostics"] for method, params in client.notifications
            if method == "textDocument/publishDiagnostics" and params.get("uri") == uri]


@pytest.mark.asyncio
async def test_an_agent_is_answered_about_the_disk_text_while_an_editor_has_unsaved_lines(tmp_path: Path) -> None:
    process, port = await start_daemon(tmp_path, "--tcp", servers=SERVERS)
    root = tmp_path / "ws"
    root.mkdir()
    path = root / "mod.alpha"
    path.write_text(DISK)
    uri = path.as_uri()
    editor = await _client(port, root, "editor")
    agent = await _client(port, root, "agent")
    try:
        editor.open(path, "alpha")
        await _running(editor)
        editor.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": _range(0, 0, 9), "text": "UNSAVED 1\nUNSAVED 2\nUNSAVED 3\nimport sys"}]})
        assert (await editor.request("fake/getDocument", {"uri": uri}))["text"] == EDITOR

        # The agent opens the file from disk: the servers keep the editor's text.
        agent.open(path, "alpha", text=DISK)
        assert (await agent.request("fake/getDocument", {"uri": uri}))["text"] == EDITOR

        # The agent's hover on `def beta` (its line 4) reaches the server at line 7; the range comes back at 4.
        hover = await _hover(agent, uri, 4, 4)
        assert hover == {"contents": "fakeA saw 7:4", "range": _range(4, 0, 3)}
        # The editor sees its own text: its line 7 is the same server position, with nothing mapped.
        assert await _hover(editor, uri, 7, 4) == {"contents": "fakeA saw 7:4", "range": _range(7, 0, 3)}
        assert _not_answered(editor) == []

        # A line the editor changed (the agent's "import os") is not answered, and the agent is told why.
        assert await _hover(agent, uri, 0, 2) is None
        notices = await agent.wait_for(lambda: _not_answered(agent), what="the not-answered log message")
        assert "unsaved changes in another client (editor)" in notices[0]

        # Diagnostics: the agent's are mapped into its text, those on the editor's lines left out (and named).
        report = await agent.request("workspace/executeCommand", {"command": "lspHub.diagnostics",
                                                                  "arguments": [{"uri": uri, "timeoutMs": 5000}]})
        assert [(d["message"], d["range"]) for d in report["diagnostics"]] == [("on beta", _range(4, 4, 8))]
        assert [entry["message"] for entry in report["leftOut"]] == ["unsaved line"]
        assert "unsaved changes in another client (editor)" in report["leftOut"][0]["reason"]
        # Pushed ones too: the editor types on an unsaved line, the server publishes again.
        editor.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
            {"range": _range(0, 9, 9), "text": "!"}]})
        pushed = await agent.wait_for(lambda: [d for d in _published(agent, uri) if d], what="a push to the agent")
        assert [(d["message"], d["range"]) for d in pushed[-1]] == [("on beta", _range(4, 4, 8))]
        await editor.wait_for(lambda: any(len(d) == 2 for d in _published(editor, uri)), what="the editor's push")
        assert sorted(d["range"]["start"]["line"] for d in _published(editor, uri)[-1]) == [0, 7]

        # Which files have unsaved changes elsewhere: the editor's, for the agent; none for the editor itself.
        unsaved = await agent.request("workspace/executeCommand", {"command": "lspHub.unsavedElsewhere",
                                                                   "arguments": [{"uris": [uri]}]})
        assert unsaved == [{"uri": uri, "client": "editor"}]
        assert await editor.request("workspace/executeCommand", {"command": "lspHub.unsavedElsewhere",
                                                                 "arguments": [{"uris": [uri]}]}) == []

        # The agent brings its text up to date with the disk again (a change to the same text): still the editor's.
        agent.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                "contentChanges": [{"text": DISK}]})
        assert (await agent.request("fake/getDocument", {"uri": uri}))["text"].startswith("UNSAVED 1!\n")

        # Once the editor saves and closes, the agent's text (the disk's) is the servers' again: no mapping.
        saved = EDITOR.replace("UNSAVED 1", "UNSAVED 1!")
        path.write_text(saved)
        editor.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        editor.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        assert (await agent.request("fake/getDocument", {"uri": uri}))["text"] == DISK
        assert await _hover(agent, uri, 4, 4) == {"contents": "fakeA saw 4:4", "range": _range(4, 0, 3)}
    finally:
        for client in (editor, agent):
            await client.disconnect()
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)


@pytest.mark.asyncio
async def test_a_client_with_its_own_unsaved_text_takes_the_lead(tmp_path: Path) -> None:
    """Two editors: the one that typed last leads; a save keeps the lead where it is."""
    process, port = await start_daemon(tmp_path, "--tcp", servers=SERVERS)
    root = tmp_path / "ws"
    root.mkdir()
    path = root / "mod.alpha"
    path.write_text(DISK)
    uri = path.as_uri()
    first, second = await _client(port, root, "first"), await _client(port, root, "second")
    try:
        first.open(path, "alpha")
        second.open(path, "alpha")
        await _running(first)
        first.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                "contentChanges": [{"range": _range(0, 0, 0), "text": "# first\n"}]})
        assert (await first.request("fake/getDocument", {"uri": uri}))["text"] == "# first\n" + DISK
        second.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"range": _range(5, 0, 0), "text": "# 2\n"}]})
        assert (await second.request("fake/getDocument", {"uri": uri}))["text"] == DISK.replace(
            "    return 2", "# 2\n    return 2")
        # The first's hover on its own `def beta` (line 5) is the second's line 4.
        assert (await _hover(first, uri, 5, 4))["contents"] == "fakeA saw 4:4"
    finally:
        for client in (first, second):
            await client.disconnect()
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)


# ================================================================================================ the agent surfaces
def _tcp_connection(port: int) -> Any:
    import socket

    from lsp_hub.agents.query import HubConnection

    def connect(_root: Path) -> HubConnection:
        return HubConnection.over_socket(socket.create_connection(("127.0.0.1", port)), description="the test's hub")

    return connect


@pytest.mark.asyncio
async def test_the_agent_tools_say_why_a_line_is_not_answered_and_do_not_write_under_unsaved_edits(
        tmp_path: Path) -> None:
    from lsp_hub.agents.agent_tools import AgentTools, ToolFailure

    process, port = await start_daemon(tmp_path, "--tcp", servers=SERVERS)
    root = tmp_path / "ws"
    root.mkdir()
    path = root / "mod.alpha"
    path.write_text(DISK)
    uri = path.as_uri()
    editor = await _client(port, root, "editor")
    tools = AgentTools(root, _tcp_connection(port), timeout=8.0)  # fakeB never reports: a bounded wait
    try:
        editor.open(path, "alpha")
        await _running(editor)
        editor.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": _range(0, 0, 9), "text": "UNSAVED 1\nUNSAVED 2\nUNSAVED 3\nimport sys"}]})
        assert (await editor.request("fake/getDocument", {"uri": uri}))["text"] == EDITOR

        # mod.alpha:5:5 is `def beta` on disk: answered from the server's line 7.
        hover = await asyncio.to_thread(tools.lsp, "hover", file="mod.alpha", line=5, column=5)
        assert hover.data["text"] == "fakeA saw 7:4" and hover.data["complete"] is True
        # mod.alpha:1:3 is a line the editor changed: not answered, and said why.
        refused = await asyncio.to_thread(tools.lsp, "hover", file="mod.alpha", line=1, column=3)
        assert refused.data["complete"] is False and refused.data["empty_reason"] == "unsaved_elsewhere"
        assert "this line has unsaved changes in another client (editor)" in refused.text

        # A write to the file is refused, naming the client; the file and the servers' text are left alone.
        with pytest.raises(ToolFailure) as failure:
            await asyncio.to_thread(tools.write_file, "mod.alpha", DISK.replace("return 2", "return 3"))
        assert "another client has unsaved changes in mod.alpha (editor)" in str(failure.value)
        assert failure.value.data is not None
        assert failure.value.data["conflicts"] == [{"client": "editor", "path": "mod.alpha", "uri": uri}]
        assert path.read_text() == DISK
        assert (await editor.request("fake/getDocument", {"uri": uri}))["text"] == EDITOR
        # With force it is written, and the answer still says over whose unsaved changes.
        forced = await asyncio.to_thread(tools.write_file, "mod.alpha", DISK.replace("return 2", "return 3"),
                                         force=True)
        assert forced.data["written"] is True and forced.data["conflicts"][0]["client"] == "editor"
        assert "written over unsaved changes in another client: mod.alpha (editor)" in forced.text
        assert path.read_text() == DISK.replace("return 2", "return 3")
    finally:
        await asyncio.to_thread(tools.close)
        await editor.disconnect()
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)


def test_call_hierarchy_ranges_are_mapped_in_the_document_they_are_in() -> None:
    uri, other = "file:///ws/mod.alpha", "file:///ws/other.alpha"
    back = LineMap.between(DISK, EDITOR).reversed()
    mapper = PositionMapper(uri, back, lenient=True)
    incoming = [{"from": {"uri": other, "name": "f", "range": _range(7, 0, 1), "selectionRange": _range(7, 0, 1)},
                 "fromRanges": [_range(7, 0, 1)]},
                {"from": {"uri": uri, "name": "g", "range": _range(7, 0, 1), "selectionRange": _range(7, 0, 1)},
                 "fromRanges": [_range(8, 0, 1)]}]
    mapped = mapper.map(incoming)
    assert mapped[0] == incoming[0]  # all in the other document
    assert mapped[1]["from"]["range"] == _range(4, 0, 1) and mapped[1]["fromRanges"] == [_range(5, 0, 1)]
    outgoing = [{"to": {"uri": other, "name": "h", "range": _range(7, 0, 1), "selectionRange": _range(7, 0, 1)},
                 "fromRanges": [_range(7, 2, 3)]}]  # the calls are in the asked document
    assert mapper.map(outgoing)[0]["fromRanges"] == [_range(4, 2, 3)]
