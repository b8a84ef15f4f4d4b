"""Diagnostics: merged per URI from pushing and pulled servers, cleared when a document closes or a server stops."""

from __future__ import annotations

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
