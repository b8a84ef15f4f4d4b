"""Diagnostics: merged per URI from pushing and pulled servers, cleared when a document closes or a server stops."""

from __future__ import annotations

import asyncio

import pytest

from tests.hub_fixtures import StartHub

pytestmark = pytest.mark.asyncio

RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}}


def diag(message: str, **extra: object) -> dict:
    return {"range": RANGE, "message": message, **extra}


async def test_pushed_diagnostics_of_two_servers_are_merged_with_sources(start_hub: StartHub) -> None:
    hub = await start_hub({
        "fakeA": {"diagnostics_on_open_and_change": [diag("type error v{version}")]},
        "fakeB": {"diagnostics_on_open_and_change": [diag("lint warning", source="linty")]},
    })
    uri = hub.client.open(hub.file("m.alpha", "abc\n"), "alpha")
    merged = await hub.client.wait_diagnostics(uri, lambda d: len(d) == 2)
    assert sorted((d["source"], d["message"]) for d in merged) == [("fakeA", "type error v1"),
                                                                   ("linty", "lint warning")]
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": "abcd\n"}]})
    merged = await hub.client.wait_diagnostics(uri, lambda d: any("v2" in x["message"] for x in d))
    assert len(merged) == 2  # one part changed; the other server's part is still there


async def test_closing_a_document_clears_its_diagnostics(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"diagnostics_on_open_and_change": [diag("a")], "keep_on_close": True},
                           "fakeB": {"diagnostics_on_open_and_change": [diag("b")]}})
    uri = hub.client.open(hub.file("c.alpha", "abc\n"), "alpha")
    await hub.client.wait_diagnostics(uri, lambda d: len(d) == 2)
    hub.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    await hub.client.wait_diagnostics(uri, lambda d: d == [])


async def test_pull_diagnostics_are_pulled_and_merged_with_pushed_ones(start_hub: StartHub) -> None:
    hub = await start_hub(
        {
            "fakeA": {"capabilities": {"textDocumentSync": 2,
                                       "diagnosticProvider": {"interFileDependencies": False,
                                                              "workspaceDiagnostics": False}},
                      "pull_diagnostics": [diag("pulled from {name}")]},
            "fakeB": {"diagnostics_on_open_and_change": [diag("pushed by {name}")]},
        },
        hub={"diagnostics_debounce_seconds": 0.05},
    )
    uri = hub.client.open(hub.file("p.alpha", "abc\n"), "alpha")
    merged = await hub.client.wait_diagnostics(uri, lambda d: len(d) == 2)
    assert sorted(d["message"] for d in merged) == ["pulled from fakeA", "pushed by fakeB"]
    # A client that pulls gets the same merged list.
    report = await hub.client.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
    assert report["kind"] == "full"
    assert sorted(d["message"] for d in report["items"]) == ["pulled from fakeA", "pushed by fakeB"]
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": "x\n"}]})
    await hub.client.wait_for(lambda: len(hub.received("fakeA", "textDocument/diagnostic")) >= 2,
                              what="a second pull after the change")


async def test_only_features_without_diagnostics_drops_that_servers_diagnostics(start_hub: StartHub) -> None:
    hub = await start_hub({
        "fakeA": {"diagnostics_on_open_and_change": [diag("from a")],
                  "_config": {"except_features": ["diagnostics"]}},
        "fakeB": {"diagnostics_on_open_and_change": [diag("from b")]},
    })
    uri = hub.client.open(hub.file("o.alpha", "abc\n"), "alpha")
    merged = await hub.client.wait_diagnostics(uri, lambda d: len(d) >= 1)
    await hub.client.wait_for(lambda: hub.received("fakeA", "textDocument/didOpen"), what="fakeA open")
    assert [d["message"] for d in hub.client.diagnostics[uri]] == ["from b"]
    assert merged


PULL_CLIENT = {
    "workspace": {"configuration": True, "workspaceFolders": True, "diagnostics": {"refreshSupport": True}},
    "textDocument": {"synchronization": {"didSave": True}, "publishDiagnostics": {"versionSupport": True},
                     "diagnostic": {"dynamicRegistration": False, "relatedDocumentSupport": False}},
}


async def test_a_client_that_pulls_is_asked_to_pull_and_never_pushed_to(start_hub: StartHub) -> None:
    hub = await start_hub(
        {
            "fakeA": {"capabilities": {"textDocumentSync": 2,
                                       "diagnosticProvider": {"interFileDependencies": False,
                                                              "workspaceDiagnostics": False}},
                      "pull_diagnostics": [diag("pulled from {name} v{version}")]},
            "fakeB": {"diagnostics_on_open_and_change": [diag("pushed by {name} v{version}")]},
        },
        hub={"diagnostics_debounce_seconds": 0.05}, capabilities=PULL_CLIENT,
    )
    assert hub.extra["initialize"]["capabilities"]["diagnosticProvider"] == {
        "interFileDependencies": True, "workspaceDiagnostics": True}
    client = hub.client

    def refreshes() -> int:
        return sum(1 for method, _ in client.server_requests if method == "workspace/diagnostic/refresh")

    uri = client.open(hub.file("p.alpha", "abc\n"), "alpha")

    async def pulled_until(predicate, previous: str | None = None) -> dict:  # type: ignore[no-untyped-def]
        """Pull as an editor does: once, then again after each refresh request, until the report satisfies."""
        answered = -1
        while True:
            last = answered
            await client.wait_for(lambda last=last: refreshes() != last, what="a refresh request")
            answered = refreshes()
            params: dict = {"textDocument": {"uri": uri}}
            if previous is not None:
                params["previousResultId"] = previous
            report = await client.request("textDocument/diagnostic", params)
            if predicate(report):
                return report

    def messages(report: dict) -> list[str]:
        return sorted(d["message"] for d in report.get("items", []))

    report = await pulled_until(lambda r: len(r.get("items", [])) == 2)
    assert messages(report) == ["pulled from fakeA v1", "pushed by fakeB v1"]
    again = await client.request("textDocument/diagnostic",
                                 {"textDocument": {"uri": uri}, "previousResultId": report["resultId"]})
    assert again == {"kind": "unchanged", "resultId": report["resultId"]}

    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": "abcd\n"}]})
    report = await pulled_until(lambda r: r["kind"] == "full" and messages(r) == ["pulled from fakeA v2",
                                                                                  "pushed by fakeB v2"],
                                previous=report["resultId"])
    workspace = await client.request("workspace/diagnostic", {"previousResultIds": []})
    assert [(item["uri"], item["kind"], item["version"]) for item in workspace["items"]] == [(uri, "full", 2)]
    unchanged = await client.request("workspace/diagnostic", {
        "previousResultIds": [{"uri": uri, "value": workspace["items"][0]["resultId"]}]})
    assert unchanged["items"][0]["kind"] == "unchanged"
    assert not [method for method, _ in client.notifications if method == "textDocument/publishDiagnostics"]


async def test_a_client_that_does_not_pull_is_pushed_to_and_offered_no_pull(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"diagnostics_on_open_and_change": [diag("a")]}, "fakeB": {}})
    assert "diagnosticProvider" not in hub.extra["initialize"]["capabilities"]
    uri = hub.client.open(hub.file("c.alpha", "abc\n"), "alpha")
    await hub.client.wait_diagnostics(uri, lambda d: len(d) == 1)
    assert not [m for m, _ in hub.client.server_requests if m == "workspace/diagnostic/refresh"]


@pytest.mark.parametrize("dedupe", [True, False])
async def test_dedupe_shows_a_finding_once_and_keeps_each_servers_fixes(start_hub: StartHub, dedupe: bool) -> None:
    other_range = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 1}}
    languages = {"alpha": {"extensions": ["alpha"], "language_ids": ["alpha"], "servers": ["fakeA", "fakeB"],
                           "dedupe_diagnostics": dedupe}}
    actions = {"textDocument/codeAction": {"result": [{"title": "fix from {name}", "kind": "quickfix"}]}}
    hub = await start_hub({
        "fakeA": {"diagnostics_on_open_and_change": [diag("unused import", code="reportUnusedImport", source="A"),
                                                     {"range": other_range, "message": "no twin", "code": "F401"}],
                  "capabilities": {"textDocumentSync": 2, "codeActionProvider": True}, "responses": actions},
        "fakeB": {"diagnostics_on_open_and_change": [diag("`os` imported but unused", code="F401", source="B"),
                                                     diag("same code family, other server", code="E501")],
                  "capabilities": {"textDocumentSync": 2, "codeActionProvider": True}, "responses": actions},
    }, languages=languages)
    uri = hub.client.open(hub.file("d.alpha", "import os\nx\n"), "alpha")
    expected = 3 if dedupe else 4
    merged = await hub.client.wait_diagnostics(uri, lambda d: len(d) == expected)
    await asyncio.sleep(0.3)  # nothing more arrives
    merged = hub.client.diagnostics[uri]
    shown = sorted((d["source"], d.get("code")) for d in merged)
    if dedupe:  # fakeA comes first in precedence: its finding stays, fakeB's twin goes; the rest stays
        assert shown == [("A", "reportUnusedImport"), ("fakeA", "F401"), ("fakeB", "E501")]
    else:
        assert len(shown) == 4
    twin = next(d for d in merged if d.get("code") == "reportUnusedImport")
    titles = await hub.client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": RANGE, "context": {"diagnostics": [twin]}})
    assert sorted(action["title"] for action in titles) == ["fix from fakeA", "fix from fakeB"]
    got_b = hub.received("fakeB", "textDocument/codeAction")[-1]["context"]["diagnostics"]
    # fakeB's own diagnostic reaches it when the client asks about the one shown in its place
    assert [d.get("code") for d in got_b] == (["F401"] if dedupe else [])


async def test_a_pulled_report_too_large_to_parse_on_the_way_is_still_read(start_hub: StartHub) -> None:
    """A backend's large answer reaches the hub as text (RawResult); the hub's own reader of pull reports must
    parse it, not drop it as a report that is not an object."""
    long_message = "x" * 70_000  # the report is over the 64 KB beyond which an answer stays text on the way
    hub = await start_hub({
        "fakeA": {"capabilities": {"textDocumentSync": 2,
                                   "diagnosticProvider": {"interFileDependencies": False,
                                                          "workspaceDiagnostics": False}},
                  "pull_diagnostics": [diag(long_message)]},
    }, hub={"diagnostics_debounce_seconds": 0.05})
    uri = hub.client.open(hub.file("big.alpha", "abc\n"), "alpha")
    merged = await hub.client.wait_diagnostics(uri, lambda d: len(d) == 1)
    assert merged[0]["message"] == long_message


async def test_a_pull_answered_after_its_document_closed_does_not_make_the_next_pull_unchanged(
    start_hub: StartHub,
) -> None:
    """A pull in flight when its document closes answers with a resultId of a document that is gone. Kept, the
    reopened document's next pull sent it as previousResultId and was answered "unchanged" against diagnostics the
    close had cleared: a clean verdict from a server that never checked it (basedpyright on click: `query
    diagnostics` said complete with no issue in core.py, whose ten issues came on the next call)."""
    pull = {"capabilities": {"textDocumentSync": 2,
                             "diagnosticProvider": {"interFileDependencies": True, "workspaceDiagnostics": False}},
            "pull_diagnostics": [diag("old issue")], "pull_report_unchanged": True,
            # the first pull answers late, after a close and a reopen; the second (the reopened one's) never
            "responses": {"textDocument/diagnostic": [{"delay": 0.5}, {"hang": True}, {}]},
            "_config": {"request_timeout_seconds": 0.8}}
    hub = await start_hub({"fakeA": pull, "fakeB": {"diagnostics_on_open_and_change": []}},
                          hub={"diagnostics_debounce_seconds": 0.05})
    path, other = hub.file("p.alpha", "abc\n"), hub.file("q.alpha", "x\n")
    pulls = lambda: len(hub.received("fakeA", "textDocument/diagnostic"))  # noqa: E731
    uri = hub.client.open(path, "alpha")
    await hub.client.wait_for(lambda: pulls() >= 1, what="the first pull")
    hub.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    uri = hub.client.open(path, "alpha")
    await hub.client.wait_for(lambda: pulls() >= 2, what="the reopened document's pull")
    await asyncio.sleep(1.0)  # the first pull's answer has come; the second has timed out
    other_uri = hub.client.open(other, "alpha")
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": other_uri, "version": 2},
                                                 "contentChanges": [{"text": "y\n"}]})
    answer = await hub.client.request("workspace/executeCommand", {
        "command": "lspHub.diagnostics", "arguments": [{"uri": uri, "timeoutMs": 5000}]})
    assert [d["message"] for d in answer["diagnostics"]] == ["old issue"], answer
    assert answer["sourcesOf"] == {"fakeA": ["fakeA"]}  # who said what: a verified write's dependents ask
