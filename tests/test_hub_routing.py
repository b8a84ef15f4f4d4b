"""Routing and merging rules, against fake servers whose answers and capabilities the tests choose."""

from __future__ import annotations

import asyncio

import pytest

from tests.hub_fixtures import HubUnderTest, StartHub
from tests.hubclient import ResponseFailure

pytestmark = pytest.mark.asyncio

POS = {"line": 0, "character": 1}


def at(uri: str, **extra: object) -> dict:
    return {"textDocument": {"uri": uri}, "position": POS, **extra}


async def test_routes_by_extension_and_language_id(start_hub: StartHub) -> None:
    hub = await start_hub({
        "fakeA": {"responses": {"textDocument/definition": {"echo": True}}},
        "fakeB": {"responses": {"textDocument/definition": {"echo": True}}},
    })
    beta = hub.client.open(hub.file("one.beta", "x = 1\n"), "beta")
    result = await hub.client.request("textDocument/definition", at(beta))
    assert result["server"] == "fakeB"
    # languageId wins over the extension
    other = hub.client.open(hub.file("two.txt", "y\n"), "alpha")
    result = await hub.client.request("textDocument/definition", at(other))
    assert result["server"] == "fakeA"
    status = await hub.client.status()
    assert sorted(s["name"] for s in status["servers"]) == ["fakeA", "fakeB"]


async def test_single_answer_goes_to_the_first_capable_server(start_hub: StartHub) -> None:
    hub = await start_hub({
        "fakeA": {"capabilities": {"textDocumentSync": 2, "hoverProvider": True},
                  "responses": {"textDocument/formatting": {"result": [{"newText": "A"}]}}},
        "fakeB": {"capabilities": {"textDocumentSync": 2, "documentFormattingProvider": True},
                  "responses": {"textDocument/formatting": {"result": [
                      {"range": {"start": POS, "end": POS}, "newText": "{name}"}]}}},
    })
    uri = hub.client.open(hub.file("f.alpha", "text\n"), "alpha")
    edits = await hub.client.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": {
        "tabSize": 4, "insertSpaces": True}})
    assert edits[0]["newText"] == "fakeB"
    assert hub.received("fakeA", "textDocument/formatting") == []


async def test_except_features_skips_a_server(start_hub: StartHub) -> None:
    hub = await start_hub({
        "fakeA": {"responses": {"textDocument/definition": {"echo": True}},
                  "_config": {"except_features": ["textDocument/definition"]}},
        "fakeB": {"responses": {"textDocument/definition": {"echo": True}}},
    })
    uri = hub.client.open(hub.file("g.alpha", "a\n"), "alpha")
    assert (await hub.client.request("textDocument/definition", at(uri)))["server"] == "fakeB"


async def test_definition_falls_through_empty_answers_in_precedence_order(start_hub: StartHub) -> None:
    location = {"uri": "file:///b.alpha", "range": {"start": POS, "end": POS}}
    hub = await start_hub({
        "fakeA": {"responses": {"textDocument/definition": {"result": None}}},
        "fakeB": {"responses": {"textDocument/definition": {"result": [location]}}},
    })
    uri = hub.client.open(hub.file("d.alpha", "a\n"), "alpha")
    assert await hub.client.request("textDocument/definition", at(uri)) == [location]


async def test_hover_joins_answers_and_labels_them_only_when_several(start_hub: StartHub) -> None:
    hub = await start_hub({
        "fakeA": {"responses": {"textDocument/hover": {"result": {
            "contents": {"kind": "markdown", "value": "from {name}"}}}}},
        "fakeB": {"responses": {"textDocument/hover": {"result": {
            "contents": {"kind": "markdown", "value": "from {name}"}, "extraField": 7}}}},
    })
    both = hub.client.open(hub.file("h.alpha", "a\n"), "alpha")
    merged = await hub.client.request("textDocument/hover", at(both))
    value = merged["contents"]["value"]
    assert "**fakeA**" in value and "**fakeB**" in value
    assert value.index("from fakeA") < value.index("from fakeB")
    only_b = hub.client.open(hub.file("h.beta", "a\n"), "beta")
    single = await hub.client.request("textDocument/hover", at(only_b))
    # One answer passes through verbatim, unknown fields included.
    assert single == {"contents": {"kind": "markdown", "value": "from fakeB"}, "extraField": 7}


async def test_completion_merges_and_resolve_goes_back_to_the_origin(start_hub: StartHub) -> None:
    completion = {"completionProvider": {"resolveProvider": True}, "textDocumentSync": 2}
    hub = await start_hub({
        "fakeA": {"capabilities": completion, "responses": {
            "textDocument/completion": {"result": {"isIncomplete": False, "items": [
                {"label": "a1", "data": {"mine": "A"}}]}},
            "completionItem/resolve": {"echo": True}}},
        "fakeB": {"capabilities": completion, "responses": {
            "textDocument/completion": {"result": {"isIncomplete": True, "items": [
                {"label": "b1", "data": 5}, {"label": "b2"}]}},
            "completionItem/resolve": {"echo": True}}},
    })
    uri = hub.client.open(hub.file("c.alpha", "a\n"), "alpha")
    result = await hub.client.request("textDocument/completion", at(uri))
    assert result["isIncomplete"] is True
    labels = [item["label"] for item in result["items"]]
    assert labels == ["a1", "b1", "b2"]
    resolved = await hub.client.request("completionItem/resolve", result["items"][1])
    assert resolved["server"] == "fakeB"
    assert resolved["params"] == {"label": "b1", "data": 5}  # the server sees its own item, untouched
    resolved = await hub.client.request("completionItem/resolve", result["items"][0])
    assert resolved["server"] == "fakeA" and resolved["params"]["data"] == {"mine": "A"}


async def test_code_action_gives_each_server_only_its_own_diagnostics(start_hub: StartHub) -> None:
    def diag(message: str) -> dict:
        return {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                "message": message}

    hub = await start_hub({
        "fakeA": {"diagnostics_on_open_and_change": [diag("A says {name}")],
                  "responses": {"textDocument/codeAction": {"result": [{"title": "fix from {name}"}]}}},
        "fakeB": {"diagnostics_on_open_and_change": [diag("B says {name}")],
                  "responses": {"textDocument/codeAction": {"result": [{"title": "fix from {name}"}]}}},
    })
    uri = hub.client.open(hub.file("x.alpha", "abc\n"), "alpha")
    diagnostics = await hub.client.wait_diagnostics(uri, lambda d: len(d) == 2)
    actions = await hub.client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diagnostics[0]["range"],
        "context": {"diagnostics": diagnostics}})
    assert sorted(a["title"] for a in actions) == ["fix from fakeA", "fix from fakeB"]
    seen_by_a = hub.received("fakeA", "textDocument/codeAction")[-1]["context"]["diagnostics"]
    seen_by_b = hub.received("fakeB", "textDocument/codeAction")[-1]["context"]["diagnostics"]
    assert [d["message"] for d in seen_by_a] == ["A says fakeA"]
    assert [d["message"] for d in seen_by_b] == ["B says fakeB"]


async def test_references_are_a_union_without_duplicates(start_hub: StartHub) -> None:
    def loc(line: int) -> dict:
        return {"uri": "file:///r.alpha", "range": {"start": {"line": line, "character": 0},
                                                    "end": {"line": line, "character": 1}}}

    hub = await start_hub({
        "fakeA": {"responses": {"textDocument/references": {"result": [loc(1), loc(2)]}}},
        "fakeB": {"responses": {"textDocument/references": {"result": [loc(2), loc(3)]}}},
    })
    uri = hub.client.open(hub.file("r.alpha", "a\n"), "alpha")
    result = await hub.client.request("textDocument/references", at(uri, context={"includeDeclaration": True}))
    assert [r["range"]["start"]["line"] for r in result] == [1, 2, 3]


async def test_workspace_symbol_unions_running_servers(start_hub: StartHub) -> None:
    def symbol(name: str) -> dict:
        return {"name": name, "kind": 12, "location": {"uri": "file:///s", "range": {
            "start": POS, "end": POS}}}

    hub = await start_hub({
        "fakeA": {"responses": {"workspace/symbol": {"result": [symbol("fromA")]}}},
        "fakeB": {"responses": {"workspace/symbol": {"result": [symbol("fromB")]}}},
    })
    hub.client.open(hub.file("w.alpha", "a\n"), "alpha")  # both servers are still starting: both are asked
    names = sorted(s["name"] for s in await hub.client.request("workspace/symbol", {"query": "from"}))
    assert names == ["fromA", "fromB"]


async def test_execute_command_goes_to_the_server_that_advertised_it(start_hub: StartHub) -> None:
    def commands(name: str) -> dict:
        return {"executeCommandProvider": {"commands": [f"{name}.do"]}, "textDocumentSync": 2}

    hub = await start_hub({
        "fakeA": {"capabilities": commands("a"), "responses": {"workspace/executeCommand": {"echo": True}}},
        "fakeB": {"capabilities": commands("b"), "responses": {"workspace/executeCommand": {"echo": True}}},
    })
    hub.client.open(hub.file("e.alpha", "a\n"), "alpha")
    await hub.client.wait_for(lambda: hub.received("fakeB", "initialized"), what="fakeB running")
    await asyncio.sleep(0.2)
    result = await hub.client.request("workspace/executeCommand", {"command": "b.do", "arguments": [1]})
    assert result["server"] == "fakeB" and result["params"]["arguments"] == [1]
    # The client heard about the servers' commands through dynamic registration.
    registered = [p for m, p in hub.client.server_requests if m == "client/registerCapability"]
    commands_registered = {c for p in registered for r in p["registrations"] for c in
                           r.get("registerOptions", {}).get("commands", [])}
    assert {"a.do", "b.do"} <= commands_registered
    with pytest.raises(ResponseFailure):
        await hub.client.request("workspace/executeCommand", {"command": "nobody.has.this"})


async def test_unknown_methods_and_notifications_are_forwarded_raw(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"responses": {"fake/custom": {"echo": True}}}, "fakeB": {}})
    uri = hub.client.open(hub.file("u.alpha", "a\n"), "alpha")
    params = {"textDocument": {"uri": uri}, "$weird": [1, {"class": None}]}
    result = await hub.client.request("fake/custom", params)
    assert result == {"server": "fakeA", "method": "fake/custom", "params": params}
    hub.client.notify("fake/notice", {"textDocument": {"uri": uri}, "n": 1})
    await hub.client.wait_for(lambda: hub.received("fakeA", "fake/notice"), what="forwarded notification")
    assert hub.received("fakeA", "fake/notice") == [{"textDocument": {"uri": uri}, "n": 1}]


async def test_each_server_gets_the_sync_kind_it_asked_for(start_hub: StartHub) -> None:
    hub = await start_hub(
        {"fakeA": {"capabilities": {"textDocumentSync": 1, "hoverProvider": True}},
         "fakeB": {"capabilities": {"textDocumentSync": 2, "hoverProvider": True}}},
        languages={"alpha": {"extensions": ["alpha"], "servers": ["fakeA"]},
                   "beta": {"extensions": ["beta"], "servers": ["fakeB"]}},
    )
    expected = "héllo 😀 there\nLINE two\n"
    uris = {}
    for server, name in (("fakeA", "s.alpha"), ("fakeB", "s.beta")):
        uri = hub.client.open(hub.file(name, "héllo 😀 world\nline two\n"), "")
        uris[server] = uri
        # Wait until the server runs: a starting server gets the current text at open, not the edits.
        await hub.client.wait_for(lambda s=server: hub.received(s, "textDocument/didOpen"), what="open")
        hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 0, "character": 9}, "end": {"line": 0, "character": 14}}, "text": "there"},
            {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 4}}, "text": "LINE"},
        ]})
        document = await hub.client.request("fake/getDocument", {"textDocument": {"uri": uri}, "uri": uri})
        assert document["text"] == expected, server
        assert document["version"] == 2
    full = hub.received("fakeA", "textDocument/didChange")[-1]["contentChanges"]
    assert full == [{"text": expected}]
    incremental = hub.received("fakeB", "textDocument/didChange")[-1]["contentChanges"]
    assert len(incremental) == 2 and "range" in incremental[0]
    assert not [e for e in hub.recorded("fakeA") + hub.recorded("fakeB") if e.get("event") == "sync_error"]


async def test_a_starting_server_gets_the_current_text_instead_of_the_edits(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}},
                          languages={"alpha": {"extensions": ["alpha"], "servers": ["fakeA"]}})
    uri = hub.client.open(hub.file("e.alpha", "one\n"), "alpha")
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": "two\n"}]})
    document = await hub.client.request("fake/getDocument", {"textDocument": {"uri": uri}, "uri": uri})
    assert (document["text"], document["version"]) == ("two\n", 2)
    opened = hub.received("fakeA", "textDocument/didOpen")
    assert len(opened) == 1 and opened[0]["textDocument"]["text"] == "two\n"


async def test_cancel_reaches_the_server_and_the_client_gets_request_cancelled(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"responses": {"textDocument/hover": {"hang": True}}}, "fakeB": {}},
                          languages={"beta": {"extensions": ["beta"], "servers": ["fakeA"]}})
    uri = hub.client.open(hub.file("k.beta", "a\n"), "beta")
    msg_id, answer = hub.client.send_request("textDocument/hover", at(uri))
    await hub.client.wait_for(lambda: hub.received("fakeA", "textDocument/hover"), what="hover sent")
    hub.client.notify("$/cancelRequest", {"id": msg_id})
    with pytest.raises(ResponseFailure) as cancelled:
        await asyncio.wait_for(answer, 10)
    assert cancelled.value.code == -32800
    await hub.client.wait_for(lambda: hub.received("fakeA", "$/cancelRequest"), what="cancel forwarded")


async def test_monorepo_gets_one_instance_per_root(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"responses": {"textDocument/hover": {"echo": True}}}, "fakeB": {}},
                          languages={"beta": {"extensions": ["beta"], "servers": ["fakeA"]}})
    hub.file("one/fake.root", "")
    hub.file("two/fake.root", "")
    first = hub.client.open(hub.file("one/src/a.beta", "a\n"), "beta")
    second = hub.client.open(hub.file("two/b.beta", "b\n"), "beta")
    await hub.client.request("textDocument/hover", at(first))
    await hub.client.request("textDocument/hover", at(second))
    roots = sorted(s["root"] for s in (await hub.client.status())["servers"])
    assert roots == [str(hub.workspace / "one"), str(hub.workspace / "two")]
    initialized_roots = sorted(p["rootUri"] for p in hub.received("fakeA", "initialize"))
    assert initialized_roots == [(hub.workspace / "one").as_uri(), (hub.workspace / "two").as_uri()]


SYNC_ALL = {"openClose": True, "change": 2, "willSave": True, "save": {"includeText": False}}


@pytest.mark.parametrize("filters", [{"only_features": ["textDocument/formatting"]},
                                     {"except_features": ["textDocument/didOpen", "textDocument/didChange",
                                                          "textDocument/didSave", "textDocument/willSave",
                                                          "textDocument/didClose"]}])
async def test_feature_filters_never_cut_a_server_off_its_documents(start_hub: StartHub, filters: dict) -> None:
    """The README's example (`only_features = ["textDocument/formatting", ...]`) must still let the server see
    the documents it formats; naming sync methods in except_features does not take them away either."""
    formatted = [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                  "newText": "{version}"}]
    hub = await start_hub({
        "fakeA": {"capabilities": {"textDocumentSync": SYNC_ALL, "documentFormattingProvider": True,
                                   "hoverProvider": True},
                  "responses": {"textDocument/formatting": {"result": formatted}},
                  "_config": filters},
        "fakeB": {"capabilities": {"textDocumentSync": SYNC_ALL, "hoverProvider": True}},
    })
    path = hub.file("f.alpha", "text\n")
    uri = hub.client.open(path, "alpha")
    await hub.client.wait_for(lambda: hub.received("fakeA", "textDocument/didOpen"), what="fakeA to see the open")
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": "changed\n"}]})
    edits = await hub.client.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                                 "options": {"tabSize": 4, "insertSpaces": True}})
    assert edits[0]["newText"] == 2  # fakeA formatted the document as the client last changed it
    hub.client.notify("textDocument/willSave", {"textDocument": {"uri": uri}, "reason": 1})
    hub.client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    hub.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    await hub.client.wait_for(lambda: hub.received("fakeA", "textDocument/didClose"), what="fakeA to see the close")
    received = [m.get("method") for m in hub.recorded("fakeA")]
    for method in ("textDocument/didOpen", "textDocument/didChange", "textDocument/willSave",
                   "textDocument/didSave", "textDocument/didClose"):
        assert method in received, method
    if "only_features" in filters:
        assert "textDocument/hover" not in received


async def test_a_request_leaves_before_a_change_the_client_sent_after_it(start_hub: StartHub) -> None:
    """formatting then didChange in one write: the server must format the version the client asked about."""
    formatted = [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                  "newText": "{version}"}]
    hub = await start_hub({
        "fakeA": {"capabilities": {"textDocumentSync": 2, "documentFormattingProvider": True},
                  "responses": {"textDocument/formatting": {"result": formatted}}},
        "fakeB": {},
    })
    uri = hub.client.open(hub.file("f.alpha", "text\n"), "alpha")
    await hub.client.wait_for(lambda: hub.received("fakeA", "initialized"), what="fakeA running")
    class OneWrite:
        """Holds the client's messages so they leave in one write."""

        def __init__(self) -> None:
            self.written: list[bytes] = []

        def write(self, data: bytes) -> None:
            self.written.append(data)

    for version in range(2, 12, 2):
        transport = hub.client.protocol.writer
        held = OneWrite()
        hub.client.protocol.writer = held  # type: ignore[assignment]
        _, answer = hub.client.send_request("textDocument/formatting", {
            "textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": True}})
        hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                     "contentChanges": [{"text": f"v{version}\n"}]})
        hub.client.protocol.writer = transport
        transport.write(b"".join(held.written))
        edits = await asyncio.wait_for(answer, 20)
        assert edits[0]["newText"] == (1 if version == 2 else version - 2), version  # the version before
    await hub.client.wait_for(lambda: len(hub.received("fakeA", "textDocument/didChange")) == 5,
                              what="the last change")
    order = [m.get("method") for m in hub.recorded("fakeA")
             if m.get("method") in ("textDocument/formatting", "textDocument/didChange")]
    assert order == ["textDocument/formatting", "textDocument/didChange"] * 5


# A server that reports loading its project for a second after each didOpen, and answers definitions first from a
# partial view (PARTIAL), then fully (COMPLETE): typescript-language-server's syntax-only server, then tsserver.
PARTIAL = {"uri": "file:///main.alpha", "range": {"start": POS, "end": POS}}
COMPLETE = {"uri": "file:///util.alpha", "range": {"start": POS, "end": POS}}


async def start_loading_server(start_hub: StartHub, wait: bool) -> HubUnderTest:
    load = [{"request": "window/workDoneProgress/create", "params": {"token": "load"}},
            {"notify": "$/progress", "params": {"token": "load", "value": {"kind": "begin", "title": "Loading"}}},
            {"notify": "$/progress", "params": {"token": "load", "value": {"kind": "end"}}, "delay": 1.0}]
    return await start_hub({
        "fakeA": {"on_request": {"textDocument/didOpen": load},
                  "responses": {"textDocument/definition": [{"result": [PARTIAL]}, {"result": [COMPLETE]}]},
                  "_config": {"wait_for_project_load": wait}},
        "fakeB": {},
    })


async def test_a_server_loading_its_project_again_is_waited_for_again(start_hub: StartHub) -> None:
    """typescript-language-server loads a project again when a file of a closed one is reopened (after `prestart`
    showed it the project's file and closed it): the answer it gives meanwhile is asked again too."""
    hub = await start_loading_server(start_hub, wait=True)

    def progress(kind: str) -> int:
        return sum(1 for method, params in hub.client.notifications if method == "$/progress"
                   and str(params["token"]).endswith("/load") and params["value"].get("kind") == kind)

    path = hub.file("main.alpha", "a\n")
    uri = hub.client.open(path, "alpha")
    await hub.client.wait_for(lambda: progress("end") == 1, what="the first load to end")
    hub.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    uri = hub.client.open(path, "alpha")
    await hub.client.wait_for(lambda: progress("begin") == 2, what="the second load to begin")
    assert await hub.client.request("textDocument/definition", at(uri)) == [COMPLETE]
    assert len(hub.received("fakeA", "textDocument/definition")) == 2


async def test_a_server_that_reports_no_load_is_presumed_loading_until_it_publishes_diagnostics(
    start_hub: StartHub,
) -> None:
    """tsserver reports no load for a file outside any tsconfig.json (an inferred project) and answers from its
    syntax-only server meanwhile (a definition lands on the import line): as VS Code's router does, its first
    diagnostics say its semantic server has the file."""
    diagnostics = {"notify": "textDocument/publishDiagnostics", "delay": 1.0,
                   "params": {"uri": "file:///ignored", "diagnostics": []}}
    hub = await start_hub({
        "fakeA": {"on_request": {"textDocument/didOpen": [diagnostics]},
                  "responses": {"textDocument/definition": [{"result": [PARTIAL]}, {"result": [COMPLETE]}]},
                  "_config": {"wait_for_project_load": True}},
        "fakeB": {},
    })
    uri = hub.client.open(hub.file("main.alpha", "a\n"), "alpha")
    assert await hub.client.request("textDocument/definition", at(uri)) == [COMPLETE]
    assert await hub.client.request("textDocument/definition", at(uri)) == [COMPLETE]  # loaded: asked once
    assert len(hub.received("fakeA", "textDocument/definition")) == 3


async def test_an_answer_asked_while_loading_that_comes_after_the_load_is_asked_again(start_hub: StartHub) -> None:
    """typescript-language-server routes a question asked while its project loads to its syntax-only server, which on
    a busy machine can answer after the load has ended (seen: the import line, 150 ms after the load's end): the
    server's state when the question went out decides, not when the answer came."""
    load = [{"request": "window/workDoneProgress/create", "params": {"token": "load"}},
            {"notify": "$/progress", "params": {"token": "load", "value": {"kind": "begin", "title": "Loading"}}},
            {"notify": "$/progress", "params": {"token": "load", "value": {"kind": "end"}}, "delay": 0.5}]
    hub = await start_hub({
        "fakeA": {"on_request": {"textDocument/didOpen": load},
                  "responses": {"textDocument/definition": [{"result": [PARTIAL], "delay": 1.5},
                                                            {"result": [COMPLETE]}]},
                  "_config": {"wait_for_project_load": True}},
        "fakeB": {},
    })
    uri = hub.client.open(hub.file("main.alpha", "a\n"), "alpha")
    assert await hub.client.request("textDocument/definition", at(uri)) == [COMPLETE]
    assert any(method == "$/progress" and params["value"].get("kind") == "end"
               and str(params["token"]).endswith("/load")
               for method, params in hub.client.notifications), "the load ended before the first answer came"
    assert len(hub.received("fakeA", "textDocument/definition")) == 2


@pytest.mark.parametrize("wait", [True, False])
async def test_a_loading_server_is_asked_again_once_its_project_has_loaded(start_hub: StartHub, wait: bool) -> None:
    """typescript-language-server answers from a syntax-only server until its project has loaded."""
    hub = await start_loading_server(start_hub, wait)
    uri = hub.client.open(hub.file("main.alpha", "a\n"), "alpha")
    await hub.client.wait_for(lambda: any(method == "$/progress" and str(params["token"]).endswith("/load")
                                          for method, params in hub.client.notifications), what="the load to begin")
    answer = await hub.client.request("textDocument/definition", at(uri))
    assert answer == ([COMPLETE] if wait else [PARTIAL])
    if wait:  # once loaded, answers are not asked twice
        assert await hub.client.request("textDocument/definition", at(uri)) == [COMPLETE]
        assert len(hub.received("fakeA", "textDocument/definition")) == 3
