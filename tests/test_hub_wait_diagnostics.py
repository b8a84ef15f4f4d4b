"""lspHub.diagnostics: complete diagnostics of one version, waited for report by report, never a fixed sleep."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.hub_fixtures import HubUnderTest, StartHub
from tests.hubclient import ResponseFailure

pytestmark = pytest.mark.asyncio

RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}


def push(message: str, **spec: Any) -> dict[str, Any]:
    return {"diagnostics_on_open_and_change": [{"range": RANGE, "message": message}], **spec}


PULL = {"capabilities": {"textDocumentSync": 2, "diagnosticProvider": {"interFileDependencies": False,
                                                                       "workspaceDiagnostics": False}},
        "pull_diagnostics": [{"range": RANGE, "message": "pulled v{version}"}]}


async def diagnostics(hub: HubUnderTest, **args: Any) -> dict[str, Any]:
    return await hub.client.request("workspace/executeCommand", {"command": "lspHub.diagnostics",
                                                                 "arguments": [args]}, timeout=30)


def messages(answer: dict[str, Any]) -> list[str]:
    return sorted(d["message"] for d in answer["diagnostics"])


async def test_waits_for_every_server_on_the_new_text(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": push("slow v{version}", diagnostics_delay=0.8),
                           "fakeB": {**PULL, **push("unversioned", publish_version=False)}},
                          hub={"diagnostics_debounce_seconds": 0.05})
    path = hub.file("m.alpha", "one\n")
    started = time.monotonic()
    answer = await diagnostics(hub, uri=path.as_uri())  # opened from disk
    assert time.monotonic() - started >= 0.7  # the slow server was waited for
    assert answer["complete"] and answer["pending"] == [] and answer["version"] == 1
    assert messages(answer) == ["pulled v1", "slow v1", "unversioned"]
    assert {d["source"] for d in answer["diagnostics"]} == {"fakeA", "fakeB"}
    # New text: the old reports (v1) do not count; the answer is about v2 only.
    answer = await diagnostics(hub, uri=path.as_uri(), text="two\n")
    assert answer["complete"] and answer["version"] == 2
    assert messages(answer) == ["pulled v2", "slow v2", "unversioned"]


async def test_several_documents_are_waited_for_together(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": push("slow {uri}", diagnostics_delay=0.8), "fakeB": {}},
                          languages={"alpha": {"extensions": ["alpha"], "servers": ["fakeA"]}})
    paths = [hub.file(f"d{index}.alpha", "x\n") for index in range(4)]
    started = time.monotonic()
    answer = await diagnostics(hub, uris=[path.as_uri() for path in paths] + ["/etc/hostname"])
    assert time.monotonic() - started < 3.0  # together: not four times the delay one after the other
    *reports, outside = answer["reports"]
    assert [report["uri"] for report in reports] == [path.as_uri() for path in paths]
    assert all(report["complete"] and messages(report) == [f"slow {report['uri']}"] for report in reports)
    assert outside["complete"] is False and "outside the workspace" in outside["error"]
    assert answer["complete"] is False


async def test_a_stale_report_is_not_taken_for_the_new_text(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": push("v{version}", diagnostics_delay=0.5), "fakeB": {}},
                          languages={"alpha": {"extensions": ["alpha"], "servers": ["fakeA"]}})
    uri = hub.client.open(hub.file("s.alpha", "one\n"), "alpha")
    await hub.client.wait_for(lambda: hub.received("fakeA", "textDocument/didOpen"), what="fakeA to see v1")
    await asyncio.sleep(0.3)
    # v1's report is still on its way when v2 is asked for (it lands 0.3 s before v2's): it must not end the wait.
    answer = await diagnostics(hub, uri=uri, text="two\n")
    assert answer["complete"] and answer["version"] == 2 and messages(answer) == ["v2"]


async def test_a_server_that_never_reports_is_named_in_pending(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": push("here"), "fakeB": {}})  # fakeB publishes nothing, ever
    warm = hub.client.open(hub.file("warm.alpha", "x\n"), "alpha")
    await hub.client.wait_diagnostics(warm, lambda d: bool(d))  # both servers run: the budget is not spent starting
    started = time.monotonic()
    answer = await diagnostics(hub, uri="p.alpha", text="x\n", timeoutMs=600)  # a path in the workspace
    assert 0.5 <= time.monotonic() - started < 5
    assert answer["complete"] is False and answer["pending"] == ["fakeB"]
    assert messages(answer) == ["here"]
    assert answer["uri"] == (hub.workspace / "p.alpha").as_uri()


async def test_bad_arguments_and_outside_files_are_refused(start_hub: StartHub, tmp_path) -> None:  # type: ignore[no-untyped-def]
    hub = await start_hub({"fakeA": {}, "fakeB": {}})
    outside = tmp_path / "outside.alpha"
    outside.write_text("secret\n")
    (hub.workspace / "binary.alpha").write_bytes(b"\xff\xfe\x00")
    for args, expected in (({"uri": 3}, "needs {uri"), ({"uri": "a.alpha", "timeoutMs": "soon"}, "needs {uri"),
                           ({"uri": outside.as_uri()}, "outside the workspace"),
                           ({"uri": "binary.alpha"}, "not UTF-8"), ({"uri": "missing.alpha"}, "cannot read")):
        with pytest.raises(ResponseFailure) as refused:
            await diagnostics(hub, **args)
        assert refused.value.code == -32602 and expected in refused.value.message, (args, refused.value.message)
    # Text sent by the client may come from anywhere.
    answer = await diagnostics(hub, uri=outside.as_uri(), text="x\n", timeoutMs=100)
    assert answer["version"] == 1


async def test_the_clearing_report_of_a_closed_document_does_not_count_for_its_reopening(
        start_hub: StartHub) -> None:
    # Like basedpyright: its reports carry versions, the clearing one on close does not.
    hub = await start_hub({"fakeA": push("here", diagnostics_delay=0.4), "fakeB": {}},
                          languages={"alpha": {"extensions": ["alpha"], "servers": ["fakeA"]}})
    path = hub.file("r.alpha", "one\n")
    assert messages(await diagnostics(hub, uri=path.as_uri())) == ["here"]
    hub.client.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})
    await asyncio.sleep(0.2)
    hub.client.open(path, "alpha", text="two\n")
    # The close's empty report lands 0.2 s after the reopening, the reopened text's report 0.2 s later.
    answer = await diagnostics(hub, uri=path.as_uri())
    assert answer["complete"] and messages(answer) == ["here"]


async def test_a_server_that_does_not_clear_on_close_is_waited_for_after_a_reopening(start_hub: StartHub) -> None:
    """Like typescript-language-server: unversioned reports, none on close; the reopened text's report counts."""
    fake = {"diagnostics_on_open_and_change": [{"range": RANGE, "message": "bad", "when_text_contains": "bad"}],
            "publish_version": False, "keep_on_close": True}
    hub = await start_hub({"fakeA": fake, "fakeB": {}},
                          languages={"alpha": {"extensions": ["alpha"], "servers": ["fakeA"]}})
    path = hub.file("t.alpha", "bad\n")
    assert messages(await diagnostics(hub, uri=path.as_uri())) == ["bad"]
    hub.client.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})
    hub.client.open(path, "alpha", text="good\n")
    # Its report on the reopened text is empty, and is the only one: it must count.
    answer = await diagnostics(hub, uri=path.as_uri(), timeoutMs=3000)
    assert answer["complete"] and answer["diagnostics"] == []


TSSERVER_CAPABILITIES = {"textDocumentSync": 2, "executeCommandProvider": {"commands": ["typescript.tsserverRequest"]}}


def tsserver_answer(*texts: str) -> dict[str, Any]:
    """One answer of tsserver (through typescript.tsserverRequest) holding these diagnostics on line 1."""
    return {"result": {"success": True, "body": [
        {"start": {"line": 1, "offset": 1}, "end": {"line": 1, "offset": 4}, "text": text, "code": 2322,
         "category": "error"} for text in texts]}}


async def test_a_server_asked_through_tsserver_gives_its_verdict_on_the_new_text(start_hub: StartHub) -> None:
    """Like typescript-language-server: pushes in parts and only what changed (here: nothing at all, and one stale
    push); its verdict is asked for (syntactic, semantic, suggestion) and is the only report that counts."""
    rounds = [tsserver_answer(), tsserver_answer("v1 type error"), tsserver_answer(),  # one per kind, in order
              tsserver_answer(), tsserver_answer(), tsserver_answer()]
    fake = {"diagnostics_on_open_and_change": [{"range": RANGE, "message": "stale push"}], "publish_version": False,
            "responses": {"workspace/executeCommand": rounds}, "capabilities": TSSERVER_CAPABILITIES,
            "_config": {"diagnostics_via_tsserver": True}}
    hub = await start_hub({"fakeA": fake, "fakeB": {}}, languages={"alpha": {"extensions": ["alpha"],
                                                                             "servers": ["fakeA"]}})
    path = hub.file("ts.alpha", "one\n")
    answer = await diagnostics(hub, uri=path.as_uri(), timeoutMs=10000)
    assert answer["complete"] and messages(answer) == ["v1 type error"]
    [diagnostic] = answer["diagnostics"]
    assert diagnostic["source"] == "typescript" and diagnostic["code"] == 2322
    assert diagnostic["range"] == {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}}
    started = time.monotonic()
    answer = await diagnostics(hub, uri=path.as_uri(), text="two\n", timeoutMs=10000)
    assert answer["complete"] and answer["diagnostics"] == [] and time.monotonic() - started < 5
    asked = [params["arguments"] for params in hub.received("fakeA", "workspace/executeCommand")]
    assert [arguments[0] for arguments in asked] == ["syntacticDiagnosticsSync", "semanticDiagnosticsSync",
                                                     "suggestionDiagnosticsSync"] * 2
    assert asked[0][1] == {"file": path.as_uri()}


async def test_a_server_that_cannot_be_asked_is_pending_at_once(start_hub: StartHub) -> None:
    fake = {"diagnostics_on_open_and_change": [{"range": RANGE, "message": "push"}], "publish_version": False,
            "responses": {"workspace/executeCommand": {"error": {"code": -32601, "message": "no such command"}}},
            "capabilities": TSSERVER_CAPABILITIES, "_config": {"diagnostics_via_tsserver": True}}
    hub = await start_hub({"fakeA": fake, "fakeB": {}}, languages={"alpha": {"extensions": ["alpha"],
                                                                             "servers": ["fakeA"]}})
    started = time.monotonic()
    answer = await diagnostics(hub, uri=hub.file("x.alpha", "one\n").as_uri(), timeoutMs=20000)
    assert not answer["complete"] and answer["pending"] == ["fakeA"]
    assert time.monotonic() - started < 10  # not the whole timeout
