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


# ------------------------------------------------------------------------------------------ framing
def frame(body: bytes, header: bytes | None = None) -> bytes:
    return (header if header is not None else b"Content-Length: %d\r\n\r\n" % len(body)) + body


NOOP = b'{"jsonrpc":"2.0","method":"$/noop","params":{"lost":true}}'
BROKEN_HEADERS = {
    "negative": b"Content-Length: -5\r\n\r\n",
    "huge": b"Content-Length: 99999999999999\r\n\r\n",
    "non-numeric": b"Content-Length: fifty\r\n\r\n",
    "LF-only": b"Content-Length: %d\n\n" % len(NOOP),
    "missing space": b"Content-Length:%d\r\n\r\n" % len(NOOP),
}


async def test_each_broken_frame_header_is_logged_and_the_next_message_is_answered(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}})
    for number, (kind, header) in enumerate(BROKEN_HEADERS.items(), start=1):
        hub.client.send_bytes(frame(NOOP, header))
        status = await hub.client.request("workspace/executeCommand", {"command": "lspHub.status"}, timeout=5)
        assert status["hub"]["pid"] == hub.client.process.pid, kind
        log = hub.log()
        assert log.count("bad frame header") == number, f"{kind}: {log[-2000:]}"
        assert log.count("resynchronized") == number, kind


async def test_input_that_ends_while_resynchronizing_ends_the_hub_with_a_message(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}})
    hub.client.send_bytes(b"Content-Length: oops\r\n\r\nno header follows")
    hub.client.process.stdin.close()  # type: ignore[union-attr]
    await asyncio.wait_for(hub.client.process.wait(), 10)
    assert "input ended while looking for a frame header" in hub.log()


async def test_bodies_that_are_not_json_get_one_line_each_and_no_traceback_by_default(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.hubclient import HubClient, fake_server_config

    config = tmp_path / "hub.toml"
    config.write_text(fake_server_config({}, {}))
    log_file = tmp_path / "hub.log"
    client = HubClient()
    answers: list[dict] = []
    original = client.protocol._complete_outgoing

    def capture(msg_id, *, result=None, error=None):  # type: ignore[no-untyped-def]
        if msg_id is None:
            answers.append(error)
        return original(msg_id, result=result, error=error)

    client.protocol._complete_outgoing = capture  # type: ignore[method-assign]
    await client.start("--config", str(config), "--log-file", str(log_file), cwd=str(tmp_path),
                       env={"XDG_CONFIG_HOME": str(tmp_path / "xdg-config"), "XDG_CACHE_HOME": str(tmp_path / "c")})
    try:
        await client.initialize(tmp_path)
        for number in range(20):
            client.send_bytes(frame(b"{not json %d" % number if number % 2 else b"\xff\xfe not utf-8"))
        await client.wait_for(lambda: len(answers) == 20, timeout=10, what="20 parse errors")
        assert {answer["code"] for answer in answers} == {-32700}
        assert (await client.status())["hub"]["pid"] == client.process.pid
    finally:
        await client.stop()
    log = log_file.read_text()
    assert log.count("client sent a body that is not JSON") == 20
    assert "Traceback" not in log
