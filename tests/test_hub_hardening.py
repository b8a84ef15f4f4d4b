"""Hardening (issue 13): cancels that follow their request at once, late and broken large answers, broken framing."""

from __future__ import annotations

import asyncio
import contextlib
import sys

import pytest

from tests.hub_fixtures import StartHub
from tests.hubclient import REPO_ROOT, ResponseFailure

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


# ------------------------------------------------------------------------------------------ large answers
# A backend that answers completion with a large result: invalid JSON at line 0, valid but after the hub's
# deadline at line 1, valid at once at line 2.
LARGE_BACKEND = r'''
import asyncio, sys
sys.path.insert(0, REPO)
from lsp_hub.transport.jsonrpc import RawResult, serve_stdio

ITEMS = b'{"isIncomplete":false,"items":[' + b",".join(
    b'{"label":"item%d","kind":6,"data":{"index":%d}}' % (i, i) for i in range(ITEMS_COUNT)) + b"]}"
BROKEN = b'{"isIncomplete":false,"items":[' + b'{"label":"x"},' * 8000 + b"}"  # an unclosed array


class Server:
    def __init__(self, protocol, stop):
        self.protocol, self.stop = protocol, stop

    def on_request(self, msg_id, method, params):
        if method == "initialize":
            return {"capabilities": {"textDocumentSync": 1, "completionProvider": {"triggerCharacters": ["."]}}}
        if method != "textDocument/completion":
            return None
        line = params["position"]["line"]
        if line == 0:
            self.protocol.send_raw(b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (msg_id, BROKEN))
            return asyncio.Event().wait()  # answered above, by hand
        if line == 1:  # late, and deaf to the hub's $/cancelRequest at its deadline
            answer = b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (msg_id, ITEMS)
            asyncio.get_running_loop().call_later(LATE_SECONDS, self.protocol.send_raw, answer)
            return asyncio.Event().wait()
        return RawResult(ITEMS)

    def on_notification(self, method, params):
        if method == "exit":
            self.stop.set()


asyncio.run(serve_stdio(Server))
'''


async def _start_large_backend_hub(start_hub: StartHub, tmp_path, *, items: int, late_seconds: float,
                                   timeout: float):  # type: ignore[no-untyped-def]
    script = tmp_path / "large_backend.py"
    script.write_text(LARGE_BACKEND.replace("REPO", repr(str(REPO_ROOT))).replace("ITEMS_COUNT", str(items))
                      .replace("LATE_SECONDS", str(late_seconds)))
    hub = await start_hub({"large": {"_config": {"command": sys.executable, "args": [str(script)]}}},
                          languages={"alpha": {"extensions": ["alpha"], "servers": ["large"]}},
                          hub={"request_timeout_seconds": timeout})
    uri = hub.client.open(hub.file("l.alpha", "a\nb\nc\n"), "alpha")
    return hub, uri


def completion(uri: str, line: int) -> dict:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": 0}}


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def test_an_invalid_large_answer_becomes_an_error_and_a_valid_one_passes(start_hub: StartHub, tmp_path) -> None:  # type: ignore[no-untyped-def]
    hub, uri = await _start_large_backend_hub(start_hub, tmp_path, items=3000, late_seconds=0, timeout=10)
    with pytest.raises(ResponseFailure) as broken:
        await hub.client.request("textDocument/completion", completion(uri, 0), timeout=5)
    assert broken.value.code == -32803 and "not valid JSON" in broken.value.message
    answer = await hub.client.request("textDocument/completion", completion(uri, 2), timeout=5)
    assert len(answer["items"]) == 3000 and answer["items"][-1]["data"] == {"index": 2999}
    assert hub.log().count("large sent a body that is not JSON") == 1


async def test_late_large_answers_leave_nothing_behind(start_hub: StartHub, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # 25 answers of about 1.6 MB each, all after the hub's 0.5 s deadline: the hub's memory stays flat.
    hub, uri = await _start_large_backend_hub(start_hub, tmp_path, items=30_000, late_seconds=0.8, timeout=0.5)

    async def answered_in_time() -> None:
        """An answer read after the late ones: they have all been read by then. (Under load it may be late too,
        which only adds a late answer.)"""
        for _ in range(20):
            with contextlib.suppress(ResponseFailure):
                await hub.client.request("textDocument/completion", completion(uri, 2), timeout=10)
                return
        raise AssertionError("no answer in time")

    async def late_round() -> None:
        requests = [hub.client.request("textDocument/completion", completion(uri, 1), timeout=10)
                    for _ in range(25)]
        for outcome in await asyncio.gather(*requests, return_exceptions=True):
            assert isinstance(outcome, ResponseFailure) and "did not answer" in outcome.message
        await asyncio.sleep(0.8)  # the answers arrive
        await answered_in_time()

    await answered_in_time()  # started, warmed up

    await late_round()
    before = rss_bytes(hub.client.process.pid)
    await late_round()
    await late_round()
    grown = rss_bytes(hub.client.process.pid) - before
    assert grown < 15_000_000, f"the hub grew by {grown / 1e6:.1f} MB over 50 late answers"


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
