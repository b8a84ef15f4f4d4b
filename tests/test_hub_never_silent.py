"""lspHub.diagnostics never answers a silent clean: it names who checked (`checkedBy`) and who could not, and why
(`notChecked`); after a change to one file, another file's diagnostics wait for a report from the servers whose
diagnostics cross files, made after that change."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.hub_fixtures import HubUnderTest, StartHub

pytestmark = pytest.mark.asyncio

RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
ALPHA_ONLY = {"alpha": {"extensions": ["alpha"], "servers": ["fakeA"]}}


def push(message: str, **spec: Any) -> dict[str, Any]:
    return {"diagnostics_on_open_and_change": [{"range": RANGE, "message": message}], **spec}


async def diagnostics(hub: HubUnderTest, **args: Any) -> dict[str, Any]:
    return await hub.client.request("workspace/executeCommand", {"command": "lspHub.diagnostics",
                                                                 "arguments": [args]}, timeout=30)


def messages(answer: dict[str, Any]) -> list[str]:
    return sorted(d["message"] for d in answer["diagnostics"])


def reasons(answer: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(entry["server"], entry["reason"]) for entry in answer["notChecked"]]


# ============================================================================================ who could not check
async def test_a_missing_server_is_named_and_the_answer_is_not_complete(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"_config": {"command": "/nonexistent/ghost-language-server"}}, "fakeB": {}},
                          languages=ALPHA_ONLY)
    answer = await diagnostics(hub, uri=hub.file("broken.alpha", "bad\n").as_uri(), timeoutMs=2000)
    assert answer["complete"] is False and answer["diagnostics"] == [] and answer["checkedBy"] == []
    assert reasons(answer) == [("fakeA", "missing")]
    assert "ghost-language-server" in answer["notChecked"][0]["detail"]
    assert answer["language"] == "alpha"


async def test_a_disabled_server_is_named(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": push("found"), "fakeB": {"_config": {"disabled": True}}})
    answer = await diagnostics(hub, uri=hub.file("d.alpha", "x\n").as_uri(), timeoutMs=5000)
    assert answer["checkedBy"] == ["fakeA"] and reasons(answer) == [("fakeB", "disabled")]
    assert answer["complete"] is True and messages(answer) == ["found"]  # the running server was not missed


async def test_a_file_no_server_serves_is_no_server(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}},
                          languages={**ALPHA_ONLY, "gamma": {"extensions": ["gamma"], "servers": []}})
    for name in ("notes.zeta", "plain.gamma"):  # no language matches it; its language has no server
        answer = await diagnostics(hub, uri=hub.file(name, "x\n").as_uri(), timeoutMs=2000)
        assert answer["complete"] is False and answer["checkedBy"] == [], answer
        assert reasons(answer) == [(None, "no_server")], answer


async def test_a_server_that_never_reports_is_a_timeout(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": push("here"), "fakeB": {}})  # fakeB publishes nothing, ever
    warm = hub.client.open(hub.file("warm.alpha", "x\n"), "alpha")
    await hub.client.wait_diagnostics(warm, lambda d: bool(d))
    answer = await diagnostics(hub, uri=hub.file("t.alpha", "x\n").as_uri(), timeoutMs=600)
    assert answer["complete"] is False and answer["checkedBy"] == ["fakeA"] and answer["pending"] == ["fakeB"]
    assert reasons(answer) == [("fakeB", "timeout")]
    # Nobody reports: nothing is checked, and it says so.
    only_silent = await diagnostics(hub, uri=hub.file("u.beta", "x\n").as_uri(), timeoutMs=600)
    assert only_silent["complete"] is False and only_silent["checkedBy"] == []
    assert reasons(only_silent) == [("fakeB", "timeout")]


async def test_each_report_of_several_documents_names_who_checked(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": push("a"), "fakeB": {"_config": {"command": "/nonexistent/ghost"}}})
    answer = await diagnostics(hub, uris=[hub.file("one.alpha", "x\n").as_uri(),
                                          hub.file("two.beta", "x\n").as_uri()], timeoutMs=3000)
    one, two = answer["reports"]
    assert one["checkedBy"] == ["fakeA"] and reasons(one) == [("fakeB", "missing")] and one["complete"]
    assert two["checkedBy"] == [] and reasons(two) == [("fakeB", "missing")] and not two["complete"]
    assert answer["complete"] is False


# ============================================================================================ after a change elsewhere
async def _warm(hub: HubUnderTest, *paths: Path) -> list[str]:
    uris = [hub.client.open(path, "alpha") for path in paths]
    for uri in uris:
        answer = await diagnostics(hub, uri=uri, timeoutMs=10000)
        assert answer["complete"], answer
    return uris


async def test_a_cross_file_push_server_is_waited_for_after_another_file_changes(
        start_hub: StartHub, tmp_path: Path) -> None:
    """fakeA (cross-file, like clangd) publishes b.alpha again 0.6 s after a.alpha changes; fakeB (per file, like
    ruff) never publishes b.alpha again and must not be waited for."""
    b_uri = (tmp_path / "ws" / "b.alpha").as_uri()
    republish = {"notify": "textDocument/publishDiagnostics", "delay": 0.6,
                 "params": {"uri": b_uri, "version": 1, "diagnostics": [{"range": RANGE, "message": "b after a changed",
                                                           "source": "fakeA"}]}}
    fake_a = {**push("{uri} v{version}"), "on_request": {"textDocument/didChange": [republish]},
              "_config": {"cross_file_diagnostics": True}}
    hub = await start_hub({"fakeA": fake_a, "fakeB": push("lint")})
    a_uri, _ = await _warm(hub, hub.file("a.alpha", "one\n"), hub.file("b.alpha", "one\n"))
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": a_uri, "version": 2},
                                                  "contentChanges": [{"text": "two\n"}]})
    started = time.monotonic()
    answer = await diagnostics(hub, uri=b_uri, timeoutMs=10000)
    assert time.monotonic() - started >= 0.4  # waited for fakeA's report made after the change
    assert answer["complete"] and messages(answer) == ["b after a changed", "lint"], answer
    assert sorted(answer["checkedBy"]) == ["fakeA", "fakeB"]


async def test_a_cross_file_pull_server_is_pulled_again_after_another_file_changes(start_hub: StartHub) -> None:
    """Like basedpyright: pulled, interFileDependencies. A change to a.alpha makes b.alpha's last pull stale."""
    fake_a = {"capabilities": {"textDocumentSync": 2, "diagnosticProvider": {"interFileDependencies": True,
                                                                            "workspaceDiagnostics": False}},
              "pull_diagnostics": [{"range": RANGE, "message": "pulled"}],
              "responses": {"textDocument/diagnostic": {"delay": 0.5}}}
    hub = await start_hub({"fakeA": fake_a, "fakeB": {}}, languages=ALPHA_ONLY,
                          hub={"diagnostics_debounce_seconds": 3.0})  # only the wait's own pull is in time
    a_uri, b_uri = await _warm(hub, hub.file("a.alpha", "one\n"), hub.file("b.alpha", "one\n"))
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": a_uri, "version": 2},
                                                  "contentChanges": [{"text": "two\n"}]})
    await hub.client.wait_for(lambda: len(hub.received("fakeA", "textDocument/didChange")) == 1,
                              what="fakeA to see the change")
    answer = await diagnostics(hub, uri=b_uri, timeoutMs=10000)
    record = hub.recorded("fakeA")
    changed_at = next(i for i, m in enumerate(record) if m.get("method") == "textDocument/didChange")
    assert any(m.get("method") == "textDocument/diagnostic" and m["params"]["textDocument"]["uri"] == b_uri
               for m in record[changed_at:]), "b.alpha was not pulled after a.alpha changed"
    assert answer["complete"] and answer["checkedBy"] == ["fakeA"]


async def test_a_server_asked_through_tsserver_is_asked_again_after_another_file_changes(
        start_hub: StartHub) -> None:
    def answer_with(*texts: str) -> dict[str, Any]:
        return {"result": {"success": True, "body": [
            {"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 2}, "text": text, "category": "error"}
            for text in texts]}}

    # Per ask: syntactic, semantic, suggestion. b's first verdict is clean; after a changes, it has an error.
    rounds = [answer_with(), answer_with(), answer_with(), answer_with(), answer_with(), answer_with(),
              answer_with(), answer_with("a changed its signature"), answer_with()]
    fake = {"capabilities": {"textDocumentSync": 2,
                             "executeCommandProvider": {"commands": ["typescript.tsserverRequest"]}},
            "responses": {"workspace/executeCommand": rounds},
            "_config": {"diagnostics_via_tsserver": True, "cross_file_diagnostics": True}}
    hub = await start_hub({"fakeA": fake, "fakeB": {}}, languages=ALPHA_ONLY)
    a_uri, b_uri = await _warm(hub, hub.file("a.alpha", "one\n"), hub.file("b.alpha", "one\n"))
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": a_uri, "version": 2},
                                                  "contentChanges": [{"text": "two\n"}]})
    answer = await diagnostics(hub, uri=b_uri, timeoutMs=10000)
    assert answer["complete"] and messages(answer) == ["a changed its signature"], answer


async def test_a_save_or_a_file_changed_on_disk_counts_as_a_change(start_hub: StartHub, tmp_path: Path) -> None:
    b_uri = (tmp_path / "ws" / "b.alpha").as_uri()
    republish = {"notify": "textDocument/publishDiagnostics", "delay": 0.3,
                 "params": {"uri": b_uri, "version": 1,
                            "diagnostics": [{"range": RANGE, "message": "fresh", "source": "fakeA"}]}}
    fake_a = {**push("old"), "_config": {"cross_file_diagnostics": True},
              "on_request": {"workspace/didChangeWatchedFiles": [republish]}}
    hub = await start_hub({"fakeA": fake_a, "fakeB": {}}, languages=ALPHA_ONLY)
    await _warm(hub, hub.file("b.alpha", "one\n"))
    hub.file("c.alpha", "written by another program\n")
    hub.client.notify("workspace/didChangeWatchedFiles", {"changes": [
        {"uri": (tmp_path / "ws" / "c.alpha").as_uri(), "type": 1}]})
    await asyncio.sleep(0.05)
    answer = await diagnostics(hub, uri=b_uri, timeoutMs=10000)
    assert answer["complete"] and messages(answer) == ["fresh"], answer


async def test_a_cross_file_push_server_that_does_not_publish_again_is_named_late(start_hub: StartHub) -> None:
    """Its verdict on b predates the change to a: not counted, and the answer says why it is missing."""
    hub = await start_hub({"fakeA": {**push("old"), "_config": {"cross_file_diagnostics": True}}, "fakeB": {}},
                          languages=ALPHA_ONLY)
    a_uri, b_uri = await _warm(hub, hub.file("a.alpha", "one\n"), hub.file("b.alpha", "one\n"))
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": a_uri, "version": 2},
                                                  "contentChanges": [{"text": "two\n"}]})
    answer = await diagnostics(hub, uri=b_uri, timeoutMs=800)
    assert answer["complete"] is False and answer["checkedBy"] == [] and reasons(answer) == [("fakeA", "timeout")]
    assert answer["notChecked"][0]["detail"].startswith("no report since another file changed")
    # a itself: its own change does not make its own report stale.
    assert (await diagnostics(hub, uri=a_uri, timeoutMs=5000))["complete"] is True
