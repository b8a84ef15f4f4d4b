"""JSON-RPC and lifecycle rules of the hub: initialize, malformed input, requests out of order."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.hub_fixtures import StartHub
from tests.hubclient import ResponseFailure

pytestmark = pytest.mark.asyncio

SERVERS = {"fakeA": {}, "fakeB": {}}


async def test_initialize_answers_without_starting_any_server(start_hub: StartHub) -> None:
    hub = await start_hub(SERVERS)
    result = hub.extra["initialize"]
    assert result["serverInfo"]["name"] == "lsp-hub"
    capabilities = result["capabilities"]
    assert capabilities["positionEncoding"] == "utf-16"
    assert "lspHub.status" in capabilities["executeCommandProvider"]["commands"]
    status = await hub.client.status()
    assert status["servers"] == []  # lazily started: nothing runs before a document needs it
    assert hub.recorded("fakeA") == []


async def test_requests_before_initialize_are_refused(start_hub: StartHub) -> None:
    hub = await start_hub(SERVERS, initialize=False)
    with pytest.raises(ResponseFailure) as refused:
        await hub.client.request("textDocument/hover", {"textDocument": {"uri": "file:///x.alpha"},
                                                        "position": {"line": 0, "character": 0}})
    assert refused.value.code == -32002
    await hub.client.initialize(hub.workspace)
    assert (await hub.client.status())["documents"] == 0


async def test_malformed_input_gets_errors_and_the_hub_keeps_serving(start_hub: StartHub) -> None:
    hub = await start_hub(SERVERS)
    client = hub.client
    answers: list[dict] = []
    original = client.protocol._complete_outgoing

    def capture(msg_id, *, result=None, error=None):  # type: ignore[no-untyped-def]
        if msg_id is None:
            answers.append(error)
        return original(msg_id, result=result, error=error)

    client.protocol._complete_outgoing = capture  # type: ignore[method-assign]
    body = b"{not json"
    client.send_bytes(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    body = json.dumps({"jsonrpc": "2.0", "id": 99}).encode()  # neither method nor result: an invalid message
    client.send_bytes(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    body = b"\xff\xfe not utf-8"
    client.send_bytes(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    client.send_bytes(b"this is not a header\r\n\r\n")  # bad framing: skipped
    await client.wait_for(lambda: len(answers) >= 2, what="parse errors")
    assert answers[0]["code"] == -32700
    assert {a["code"] for a in answers} <= {-32700, -32600}
    with pytest.raises(ResponseFailure) as unknown:
        await client.request("no/suchMethod", {})
    assert unknown.value.code == -32601
    with pytest.raises(ResponseFailure) as bad_params:
        await client.request("textDocument/hover", "a string")
    assert bad_params.value.code == -32602
    with pytest.raises(ResponseFailure) as missing_uri:
        await client.request("textDocument/definition", {"position": {"line": 0, "character": 0}})
    assert missing_uri.value.code == -32602
    assert (await client.status())["hub"]["pid"] == client.process.pid


async def test_shutdown_then_exit_ends_with_code_zero_and_requests_after_shutdown_fail(start_hub: StartHub) -> None:
    hub = await start_hub(SERVERS)
    await hub.client.request("shutdown", None)
    with pytest.raises(ResponseFailure) as late:
        await hub.client.request("workspace/symbol", {"query": ""})
    assert late.value.code == -32600
    hub.client.notify("exit", None)
    assert await asyncio.wait_for(hub.client.process.wait(), 10) == 0


async def test_exit_without_shutdown_ends_with_code_one(start_hub: StartHub) -> None:
    hub = await start_hub(SERVERS)
    hub.client.notify("exit", None)
    assert await asyncio.wait_for(hub.client.process.wait(), 10) == 1
