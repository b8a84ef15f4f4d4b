"""Hardening (issue 13): cancels that follow their request at once, late and broken large answers, broken framing."""

from __future__ import annotations

import asyncio

import pytest

from tests.hub_fixtures import StartHub
from tests.hubclient import ResponseFailure

pytestmark = pytest.mark.asyncio

POS = {"line": 0, "character": 0}
HANG = {"responses": {"textDocument/hover": {"hang": True}}}


def hover(uri: str) -> dict:
    return {"textDocument": {"uri": uri}, "position": POS}


async def test_a_cancel_right_after_its_request_reaches_every_backend_it_was_sent_to(start_hub: StartHub) -> None:
    # A short deadline: a request whose cancel was lost would time out (and leave an unretrieved future) in time.
    hub = await start_hub({"fakeA": HANG, "fakeB": HANG}, hub={"request_timeout_seconds": 1.5})
    uri = hub.client.open(hub.file("c.alpha", "a\n"), "alpha")
    for name in ("fakeA", "fakeB"):
        await hub.client.wait_for(lambda name=name: hub.received(name, "textDocument/didOpen"), what="both running")
    answers = []
    for _ in range(50):  # request and cancel in the same read: the hub sees the cancel before any await
        msg_id, answer = hub.client.send_request("textDocument/hover", hover(uri))
        hub.client.notify("$/cancelRequest", {"id": msg_id})
        answers.append(answer)
    for answer in answers:
        with pytest.raises(ResponseFailure) as cancelled:
            await asyncio.wait_for(answer, 10)
        assert cancelled.value.code == -32800
    for name in ("fakeA", "fakeB"):
        # Within the deadline: a request that times out is cancelled too, but late.
        await hub.client.wait_for(lambda name=name: len(hub.received(name, "$/cancelRequest")) >= 50,
                                  timeout=1.0, what=f"50 cancels at {name}")
        sent = {m["id"] for m in hub.recorded(name) if m.get("method") == "textDocument/hover"}
        assert {p["id"] for p in hub.received(name, "$/cancelRequest")} == sent
    await asyncio.sleep(2)  # past the deadline the lost ones would have had
    await hub.client.status()
    assert "never retrieved" not in hub.log()
    assert "did not answer" not in hub.log()
