"""The hub's message path (issue #10): reading frames, serialising, coalescing writes, the debug trace."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from typing import Any

import pytest

from lsp_hub.transport import jsonrpc
from lsp_hub.transport.jsonrpc import (
    END,
    CoalescingWriter,
    FrameReader,
    RawProtocol,
    RawResponseReader,
    RawResult,
    UnreadableBody,
    dumps,
    read_loop,
    release_writes,
    widen_pipe,
    writes_held,
)
from lsp_hub.transport.jsonrpc import endpoint as endpoint_module
from tests.hub_fixtures import StartHub

POS = {"line": 0, "character": 0}


def frame(message: Any) -> bytes:
    body = json.dumps(message).encode() if not isinstance(message, bytes) else message
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class Recorder:
    """A stream writer that keeps each write apart."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.writes.append(b"<closed>")


class Echo:
    """Answers every request with its params and notes each notification, writing to `out` (another peer)."""

    def __init__(self, out: RawProtocol) -> None:
        self.out = out
        self.seen: list[str] = []

    def on_request(self, msg_id: Any, method: str, params: Any) -> Any:
        self.seen.append(method)
        return params

    def on_notification(self, method: str, params: Any) -> None:
        self.seen.append(method)
        self.out.notify(method, params)  # forwarded, as the hub forwards didChange


def endpoint(writer: Recorder, name: str) -> RawProtocol:
    protocol = RawProtocol(name)
    protocol.set_writer(writer)
    return protocol


def bodies(writes: list[bytes]) -> list[dict[str, Any]]:
    """The messages in what was written, in order."""
    out = []
    data = b"".join(writes)
    while data:
        header, _, rest = data.partition(b"\r\n\r\n")
        length = int(header.split(b": ")[1])
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


@pytest.mark.asyncio
async def test_a_burst_leaves_in_one_write_in_order_and_a_lone_message_at_once() -> None:
    client_out, server_out = Recorder(), Recorder()
    client, server = endpoint(client_out, "client"), endpoint(server_out, "server")
    handler = Echo(server)
    client.handler = handler
    stream = asyncio.StreamReader()
    reading = asyncio.ensure_future(read_loop(FrameReader(stream), client, threading.Event()))
    # A burst: five notifications and a request that arrive together.
    stream.feed_data(b"".join(frame({"jsonrpc": "2.0", "method": f"n/{i}", "params": {"i": i}}) for i in range(5))
                     + frame({"jsonrpc": "2.0", "id": 1, "method": "r", "params": [1]}))
    await asyncio.sleep(0)
    assert handler.seen == ["n/0", "n/1", "n/2", "n/3", "n/4", "r"]
    assert len(server_out.writes) == 1  # the five forwarded notifications: one write
    assert [m["params"]["i"] for m in bodies(server_out.writes)] == [0, 1, 2, 3, 4]
    assert bodies(client_out.writes) == [{"jsonrpc": "2.0", "id": 1, "result": [1]}]
    # A lone message is written before the loop waits for more input: nothing waits for a later event.
    stream.feed_data(frame({"jsonrpc": "2.0", "method": "alone", "params": {}}))
    await asyncio.sleep(0)
    assert len(server_out.writes) == 2 and bodies(server_out.writes[1:])[0]["method"] == "alone"
    # Half a frame: what the whole ones before it caused still leaves at the next step of the event loop.
    stream.feed_data(frame({"jsonrpc": "2.0", "method": "before", "params": {}}) + frame(b'{"jsonrpc":"2.0"')[:25])
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert bodies(server_out.writes[2:])[0]["method"] == "before"
    stream.feed_eof()
    await reading
    assert not writes_held()


@pytest.mark.asyncio
async def test_a_held_write_keeps_its_place_before_direct_ones_and_close() -> None:
    out = Recorder()
    protocol = endpoint(out, "peer")
    assert isinstance(protocol.writer, CoalescingWriter)
    jsonrpc.hold_writes()
    protocol.notify("first", None)
    protocol.notify("second", None)
    assert out.writes == []
    protocol.writer.write(b"raw")  # written to the writer directly (the tests' fake server does): behind them
    assert out.writes == []
    release_writes()
    assert out.writes[0].endswith(b"raw") and b'"first"' in out.writes[0] and b'"second"' in out.writes[0]
    jsonrpc.hold_writes()
    protocol.notify("third", None)
    protocol.writer.close()  # closing writes what is held first
    release_writes()
    assert b'"third"' in out.writes[1] and out.writes[2] == b"<closed>"
    protocol.notify("after", None)  # not held: at once
    assert b'"after"' in out.writes[3]


@pytest.mark.asyncio
async def test_a_long_burst_leaves_in_pieces_in_order() -> None:
    out = Recorder()
    protocol = endpoint(out, "peer")
    jsonrpc.hold_writes()
    for i in range(400):
        protocol.notify("n", {"i": i, "pad": "x" * 400})  # about 200 KB in all
    release_writes()
    assert 3 <= len(out.writes) <= 5  # one write per 64 KB held, not one per message nor one in all
    assert [m["params"]["i"] for m in bodies(out.writes)] == list(range(400))


@pytest.mark.asyncio
async def test_held_writes_leave_at_the_next_loop_step_even_without_the_read_loop() -> None:
    out = Recorder()
    protocol = endpoint(out, "peer")
    jsonrpc.hold_writes()
    protocol.notify("x", None)
    assert out.writes == []
    await asyncio.sleep(0)
    assert len(out.writes) == 1 and not writes_held()


def test_websocket_writers_are_not_wrapped() -> None:
    out = Recorder()
    protocol = endpoint(out, "peer")
    protocol.set_writer(out, include_headers=False)  # a WebSocket carries one message per frame
    assert protocol.writer is out


@pytest.mark.asyncio
async def test_frames_are_read_from_the_buffer_and_odd_headers_the_long_way() -> None:
    stream = asyncio.StreamReader()
    reader = FrameReader(stream)
    body = b'{"jsonrpc":"2.0","method":"a"}'
    stream.feed_data(frame(body) + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
                     + frame(b'{"jsonrpc":"2.0","method":"b"}') + frame(b"{not json") + frame(body)[:10])
    assert (await reader.read_message())["method"] == "a"
    assert (await reader.read_message())["method"] == "b"  # two header lines: not the buffered fast path
    assert isinstance(await reader.read_message(), UnreadableBody)
    pending = asyncio.ensure_future(reader.read_message())
    await asyncio.sleep(0)
    assert not pending.done()  # half a frame: waits for the rest
    stream.feed_data(frame(body)[10:])
    assert (await pending)["method"] == "a"
    stream.feed_eof()
    assert await reader.read_message() is END


@pytest.mark.asyncio
async def test_large_answers_reach_the_protocol_unparsed() -> None:
    result = {"items": [{"label": f"item{i}"} for i in range(300)]}
    body = b'{"jsonrpc":"2.0","id":7,"result":%s}' % json.dumps(result).encode()
    stream = asyncio.StreamReader()
    stream.feed_data(frame(body))
    message = await RawResponseReader(stream, threshold=1000).read_message()
    assert message["id"] == 7 and isinstance(message["result"], RawResult)
    assert message["result"].value == result


def test_dumps_writes_what_orjson_refuses_as_the_standard_library_does() -> None:
    assert json.loads(dumps({"a": [1, "é"], 2: None})) == {"a": [1, "é"], "2": None}
    for value in ({"big": 2**70}, {"text": "lone \ud800 surrogate"}):
        assert dumps(value) == json.dumps(value, separators=(",", ":")).encode()
    assert json.loads(dumps({"raw": RawResult(b'{"x":[1,2]}')})) == {"raw": {"x": [1, 2]}}
    with pytest.raises(TypeError):
        dumps({"no": object()})


def test_pipes_are_widened_and_other_files_left_alone(tmp_path: Any) -> None:
    read_end, write_end = os.pipe()
    try:
        widen_pipe(write_end)
        import fcntl

        size = fcntl.fcntl(read_end, getattr(fcntl, "F_GETPIPE_SZ", 1032))
        assert size >= 64 * 1024  # 1 MB where the system allows it (pipe-max-size, the user's pipe budget)
    finally:
        os.close(read_end)
        os.close(write_end)
    with open(tmp_path / "file", "wb") as regular:
        widen_pipe(regular)  # not a pipe: nothing happens, nothing raised


@pytest.mark.asyncio
async def test_the_debug_trace_is_formatted_only_when_shown(monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    described: list[Any] = []
    real_describe = jsonrpc.describe

    def describe(message: Any) -> str:
        described.append(message)
        return real_describe(message)

    monkeypatch.setattr(endpoint_module.codec, "describe", describe)
    out = Recorder()
    protocol = endpoint(out, "client")
    protocol.handler = Echo(endpoint(Recorder(), "server"))
    for level, expect_trace in ((logging.INFO, False), (logging.DEBUG, True)):
        caplog.clear()
        caplog.set_level(level, logger="lsp_hub.transport.jsonrpc")
        stream = asyncio.StreamReader()
        stream.feed_data(frame({"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {}}))
        stream.feed_eof()
        await read_loop(FrameReader(stream), protocol, threading.Event())
        trace = [r.getMessage() for r in caplog.records if r.name == "lsp_hub.transport.jsonrpc"]
        assert bool(described) == expect_trace
        if expect_trace:
            assert "from client: request 3 textDocument/hover" in trace
            assert any(line.startswith("to client: ") and '"id":3' in line for line in trace)
        else:
            assert trace == []


@pytest.mark.asyncio
async def test_the_hubs_debug_log_shows_each_message(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"capabilities": {"textDocumentSync": 2, "hoverProvider": True}}})
    uri = hub.client.open(hub.file("t.alpha", "a\n"), "alpha")
    await hub.client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": POS})
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": POS, "end": POS}, "text": "b"}]})
    await hub.client.wait_for(lambda: hub.received("fakeA", "textDocument/didChange"), what="the change")
    log = hub.log()  # the hub runs with -vv
    assert "from client: request" in log and "textDocument/hover" in log
    assert "from client: notification textDocument/didChange" in log
    assert "to fakeA: " in log and "from fakeA: answer to" in log


@pytest.mark.asyncio
async def test_index_updates_are_debounced_on_one_timer() -> None:
    from lsp_hub.proxy.index_feed import Debouncer

    loop = asyncio.get_running_loop()
    updated: list[tuple[str, float]] = []

    async def update(uri: str) -> None:
        updated.append((uri, loop.time()))

    updates = Debouncer(asyncio.ensure_future, update)
    started = loop.time()
    updates.schedule("u", delay=0.2)
    timer = updates.timers["u"]
    for _ in range(5):  # typing: the due time moves, the timer stays (until it fires early and re-arms)
        await asyncio.sleep(0.02)
        updates.schedule("u", delay=0.2)
        assert updates.timers["u"] is timer
    last = loop.time()
    await asyncio.sleep(0.1)
    assert updated == []  # the first due time has passed, the last has not
    await asyncio.sleep(0.2)
    assert [uri for uri, _ in updated] == ["u"] and updated[0][1] >= last + 0.19 > started + 0.29
    assert updates.timers == {} and updates.due == {}
    updates.schedule("v", delay=10.0)
    updates.schedule("v", delay=0.0)  # sooner than the timer: a new, earlier one
    await asyncio.sleep(0.02)
    assert [uri for uri, _ in updated] == ["u", "v"] and updates.timers == {}
    updates.close()
    updates.schedule("w", delay=0.0)
    await asyncio.sleep(0.02)
    assert [uri for uri, _ in updated] == ["u", "v"]


def test_routes_are_kept_per_path_until_roots_are_forgotten(tmp_path: Any) -> None:
    from lsp_hub.config.model import Config, LanguageSpec, ServerSpec
    from lsp_hub.proxy.routing import Router

    (tmp_path / "pkg").mkdir()
    config = Config(servers={"s": ServerSpec("s", "x", root_markers=("marker",))},
                    languages={"py": LanguageSpec("py", ("py",), ("python",), (), ("s",))})
    router = Router(config, [str(tmp_path)])
    path = str(tmp_path / "pkg" / "m.py")
    language = router.language(language_id="python", path=path)
    assert language is not None and router.language(language_id="python", path=path) is language
    assert [r.key.root for r in router.routes(path, language)] == [str(tmp_path)]
    (tmp_path / "pkg" / "marker").write_text("")
    assert [r.key.root for r in router.routes(path, language)] == [str(tmp_path)]  # kept
    router.forget_roots()  # what the session does when watched files change
    assert [r.key.root for r in router.routes(path, language)] == [str(tmp_path / "pkg")]


@pytest.mark.asyncio
async def test_awaited_answers_leave_in_the_step_that_finishes_them_and_cancels_are_answered_once() -> None:
    out = Recorder()
    protocol = endpoint(out, "client")
    gate = asyncio.get_running_loop().create_future()

    class Handler:
        def on_request(self, msg_id: Any, method: str, params: Any) -> Any:
            async def answer() -> Any:
                if method == "fails":
                    raise jsonrpc.ResponseFailure(-32803, "no")
                if method == "waits":
                    await gate
                else:
                    await asyncio.Event().wait()
                return {"ok": method}
            return answer()

        def on_notification(self, method: str, params: Any) -> None:
            pass

    protocol.handler = Handler()
    for msg_id, method in ((1, "waits"), (2, "fails"), (3, "cancelled early"), (4, "cancelled while waiting")):
        protocol.handle_message({"jsonrpc": "2.0", "id": msg_id, "method": method})
    protocol._incoming[3].cancel()  # before its first step: its coroutine never runs
    await asyncio.sleep(0)
    protocol._incoming[4].cancel()
    await asyncio.sleep(0)
    gate.set_result(None)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    answers = {m["id"]: m for m in bodies(out.writes)}
    assert answers[1]["result"] == {"ok": "waits"}
    assert answers[2]["error"]["code"] == -32803
    assert answers[3]["error"]["code"] == answers[4]["error"]["code"] == -32800
    assert len(bodies(out.writes)) == 4 and protocol._incoming == {}
