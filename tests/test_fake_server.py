"""The fake language server (tests/fake_server.py) does what its spec says, seen from a pygls client over stdio."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import cattrs
import pytest
import pytest_asyncio
from pygls.client import JsonRPCClient
from pygls.protocol import JsonRPCProtocol

from tests.fake_server import (
    DEFAULT_CAPABILITIES,
    STANDARD_METHODS,
    JsonRpcDispatch,
    JsonRpcException,
    RawMessageHandler,
    fake_server_command,
    read_record,
    template,
)

TIMEOUT = 5.0
URI = "file:///ws/a.alpha"


class RawJsonRpcProtocol(JsonRpcDispatch, JsonRPCProtocol):  # type: ignore[misc]
    """pygls' protocol dispatching plain dicts as the fake does: pygls reads and writes the frames."""

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        JsonRPCProtocol.__init__(self, server, converter)
        self._dispatch_init()


class _ProcessClient(JsonRPCClient):
    def __init__(self) -> None:
        super().__init__(protocol_cls=RawJsonRpcProtocol, converter_factory=cattrs.Converter)
        self.errors: list[str] = []

    def report_server_error(self, error: Exception, source: Any) -> None:
        self.errors.append(f"{type(error).__name__}: {error}")

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        protocol = self.protocol
        assert isinstance(protocol, RawJsonRpcProtocol)
        protocol.fail_pending(f"server exited with code {server.returncode}")


class FakeClient(RawMessageHandler):
    """A raw-dict LSP client driving one fake server process; answers its requests from `answers`."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.client = _ProcessClient()
        protocol = self.client.protocol
        assert isinstance(protocol, RawJsonRpcProtocol)
        protocol.handler = self
        self.protocol = protocol
        self.answers: dict[str, Any] = answers or {}
        self.notifications: list[tuple[str, Any]] = []
        self.server_requests: list[tuple[str, Any]] = []
        self.stderr = bytearray()
        self._drain: asyncio.Task[None] | None = None

    async def start(self, spec: dict[str, Any], record: Path | None = None, name: str | None = None,
                    env: dict[str, str] | None = None, command: list[str] | None = None) -> None:
        argv = command or fake_server_command(spec, name=name, record=record)
        await self.client.start_io(argv[0], *argv[1:], env=env)
        assert self.process.stderr is not None
        self._drain = asyncio.create_task(self._drain_stderr(self.process.stderr))

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.stderr += chunk

    @property
    def process(self) -> asyncio.subprocess.Process:
        process = self.client._server
        assert process is not None
        return process

    # Messages from the server.
    def on_request(self, msg_id: Any, method: str, params: Any) -> Any:
        self.server_requests.append((method, params))
        answer = self.answers.get(method)
        if isinstance(answer, JsonRpcException):
            raise answer
        return answer(params) if callable(answer) else answer

    def on_notification(self, method: str, params: Any) -> None:
        self.notifications.append((method, params))

    # Messages to the server.
    async def request(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
        return await asyncio.wait_for(self.protocol.send_request_async(method, params), timeout)

    def send(self, method: str, params: Any = None) -> asyncio.Future[Any]:
        """Send a request now and return its future (to cancel it, or to await it later)."""
        return asyncio.wrap_future(self.protocol.send_request(method, params))

    def notify(self, method: str, params: Any = None) -> None:
        self.protocol.notify(method, params)

    async def initialize(self, **params: Any) -> Any:
        result = await self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}, **params})
        self.notify("initialized", {})
        return result

    def open(self, uri: str = URI, text: str = "", version: int = 1) -> None:
        self.notify("textDocument/didOpen",
                    {"textDocument": {"uri": uri, "languageId": "alpha", "version": version, "text": text}})

    async def wait_for(self, method: str, predicate: Callable[[Any], bool] = lambda _: True,
                       timeout: float = TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for seen, params in self.notifications:
                if seen == method and predicate(params):
                    return params
            await asyncio.sleep(0.01)
        raise AssertionError(f"no {method} notification within {timeout} s; got {self.notifications}")

    async def wait_exit(self, timeout: float = TIMEOUT) -> int:
        return await asyncio.wait_for(self.process.wait(), timeout)

    async def close(self) -> None:
        if self.client._server is not None:
            if self.process.returncode is None and self.process.stdin is not None:
                self.process.stdin.close()
            try:
                await self.wait_exit()
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
            await self.client.stop()
        if self._drain is not None:
            await self._drain


StartFake = Callable[..., Awaitable[FakeClient]]


@pytest_asyncio.fixture
async def start_fake() -> AsyncIterator[StartFake]:
    """start_fake(spec, record=None, answers=None, initialize=True) -> a client talking to a running fake."""
    clients: list[FakeClient] = []

    async def start(spec: dict[str, Any], *, record: Path | None = None, answers: dict[str, Any] | None = None,
                    initialize: bool = True, **kwargs: Any) -> FakeClient:
        client = FakeClient(answers)
        clients.append(client)
        await client.start(spec, record=record, **kwargs)
        if initialize:
            await client.initialize()
        return client

    yield start
    for client in clients:
        await client.close()


def hover_params(uri: str = URI, line: int = 3, character: int = 7) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


# ------------------------------------------------------------------------------------------------ answers
async def test_initialize_returns_the_capabilities_verbatim_with_the_name(start_fake: StartFake) -> None:
    capabilities = {
        "positionEncoding": "utf-8",
        "textDocumentSync": 1,
        "completionProvider": {"resolveProvider": False, "triggerCharacters": [":", ">"]},
        "executeCommandProvider": {"commands": ["{name}.run"]},
        "diagnosticProvider": {"interFileDependencies": False, "workspaceDiagnostics": False},
        "experimental": {"anything": [1, {"b": None}]},
    }
    client = await start_fake({"capabilities": capabilities}, initialize=False, name="alpha")
    result = await client.initialize()
    expected = {**capabilities, "executeCommandProvider": {"commands": ["alpha.run"]}}
    assert result == {"capabilities": expected, "serverInfo": {"name": "alpha", "version": "0.0-fake"}}


async def test_default_capabilities_when_none_are_given(start_fake: StartFake) -> None:
    client = await start_fake({}, initialize=False)
    assert (await client.initialize())["capabilities"] == DEFAULT_CAPABILITIES


async def test_results_are_templated_from_the_request(start_fake: StartFake) -> None:
    spec = {"name": "fakeA", "responses": {
        "textDocument/hover": {"result": {"contents": "{name} saw {uri} at {line}:{character} ({method})"}},
        "textDocument/definition": {"result": [{"uri": "{uri}", "range": {
            "start": {"line": "{line}", "character": "{character}"},
            "end": {"line": "{line}", "character": 99}}}]},
    }}
    client = await start_fake(spec)
    hover = await client.request("textDocument/hover", hover_params())
    assert hover == {"contents": f"fakeA saw {URI} at 3:7 (textDocument/hover)"}
    definition = await client.request("textDocument/definition", hover_params(line=5, character=2))
    assert definition == [{"uri": URI, "range": {"start": {"line": 5, "character": 2},
                                                 "end": {"line": 5, "character": 99}}}]


def test_template_keeps_unknown_placeholders_and_raw_whole_values() -> None:
    names = {"name": "n", "line": 4}
    assert template({"a": ["{name}-{other}", "{line}", "x{line}"], "b": 3}, names) == {
        "a": ["n-{other}", 4, "x4"], "b": 3}


async def test_echo_returns_method_and_params_and_error_is_answered(start_fake: StartFake) -> None:
    spec = {"name": "fakeB", "responses": {
        "fake/custom": {"echo": True},
        "textDocument/hover": {"error": {"code": -32099, "message": "{name} is sad", "data": {"why": 1}}},
    }}
    client = await start_fake(spec)
    params = {"odd key": [1, 2], "class": {"$b": None}}
    assert await client.request("fake/custom", params) == {"server": "fakeB", "method": "fake/custom",
                                                            "params": params}
    with pytest.raises(JsonRpcException) as failure:
        await client.request("textDocument/hover", hover_params())
    assert (failure.value.code, failure.value.message, failure.value.data) == (-32099, "{name} is sad", {"why": 1})


async def test_unconfigured_methods_answer_like_a_real_server(start_fake: StartFake) -> None:
    client = await start_fake({"name": "fakeA"})
    with pytest.raises(JsonRpcException) as failure:
        await client.request("fake/unknown", {})
    assert failure.value.code == -32601
    assert await client.request("textDocument/hover", hover_params()) is None
    item = {"label": "x", "data": {"k": 1}}
    assert await client.request("completionItem/resolve", item) == item
    assert await client.request("workspace/executeCommand", {"command": "c", "arguments": [1]}) == {
        "server": "fakeA", "command": "c", "arguments": [1]}


async def test_wildcard_and_sequences_of_behaviours(start_fake: StartFake) -> None:
    spec = {"responses": {
        "*": {"result": "fallback {method}"},
        "textDocument/hover": [{"error": {"code": -32801, "message": "content modified"}}, {"result": "second"}],
    }}
    client = await start_fake(spec)
    assert await client.request("fake/anything") == "fallback fake/anything"
    with pytest.raises(JsonRpcException):
        await client.request("textDocument/hover", hover_params())
    assert await client.request("textDocument/hover", hover_params()) == "second"
    assert await client.request("textDocument/hover", hover_params()) == "second"


async def test_wildcard_with_only_a_delay_answers_null_late(start_fake: StartFake, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    client = await start_fake({"responses": {"*": {"delay": 0.2}}}, record=record)
    started = time.monotonic()
    assert await client.request("fake/anything") is None
    assert time.monotonic() - started >= 0.2


async def test_failures_inside_the_fake_are_answered_and_recorded(start_fake: StartFake, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    client = await start_fake({"pull_diagnostics": [], "pull_report_unchanged": True}, record=record)
    with pytest.raises(JsonRpcException) as failure:
        await client.request("textDocument/diagnostic", None)  # no params: the fake cannot read previousResultId
    assert failure.value.code == -32603
    client.notify("textDocument/didOpen", {})
    await client.request("fake/getState")
    failed = [e["method"] for e in read_record(record) if e.get("event") == "handler_error"]
    assert failed == ["textDocument/diagnostic", "textDocument/didOpen"]


async def test_delay_answers_late_while_other_requests_go_on(start_fake: StartFake) -> None:
    client = await start_fake({"responses": {"textDocument/hover": {"delay": 0.6, "result": "slow"},
                                             "fake/quick": {"result": "quick"}}})
    started = time.monotonic()
    slow = client.send("textDocument/hover", hover_params())
    assert await client.request("fake/quick") == "quick"
    assert not slow.done()
    assert await asyncio.wait_for(slow, TIMEOUT) == "slow"
    assert time.monotonic() - started >= 0.6


async def test_hanging_request_is_answered_cancelled_after_cancel_request(start_fake: StartFake,
                                                                          tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    client = await start_fake({"responses": {"textDocument/hover": {"hang": True}, "fake/quick": {"result": 1}}},
                              record=record)
    msg_id = client.protocol._next_outgoing_id
    hanging = client.send("textDocument/hover", hover_params())
    assert await client.request("fake/quick") == 1
    await asyncio.sleep(0.1)
    assert not hanging.done()
    client.notify("$/cancelRequest", {"id": msg_id})
    with pytest.raises(JsonRpcException) as failure:
        await asyncio.wait_for(hanging, TIMEOUT)
    assert failure.value.code == -32800
    entries = read_record(record)
    assert {"method": "$/cancelRequest", "params": {"id": msg_id}} in entries
    assert {"event": "cancelled", "id": msg_id} in entries


async def test_crash_exits_the_process_and_fails_the_pending_request(start_fake: StartFake, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    client = await start_fake({"responses": {"textDocument/hover": {"crash": True}}}, record=record)
    with pytest.raises(ConnectionError):
        await client.request("textDocument/hover", hover_params())
    assert await client.wait_exit() == 1
    entries = read_record(record)
    assert entries[-2]["method"] == "textDocument/hover"
    assert entries[-1] == {"event": "exit", "code": 1, "reason": "crash on textDocument/hover"}


async def test_once_file_crashes_only_the_first_process(start_fake: StartFake, tmp_path: Path) -> None:
    spec = {"responses": {"textDocument/hover": {"crash": 3, "once_file": str(tmp_path / "crashed")}}}
    first = await start_fake(spec)
    with pytest.raises(ConnectionError):
        await first.request("textDocument/hover", hover_params())
    assert await first.wait_exit() == 3
    second = await start_fake(spec)
    assert await second.request("textDocument/hover", hover_params()) is None


async def test_generate_items_is_a_large_fast_completion_list(start_fake: StartFake) -> None:
    client = await start_fake({"name": "big", "responses": {"textDocument/completion": {"generate_items": 5000}}})
    started = time.monotonic()
    result = await client.request("textDocument/completion", hover_params())
    assert time.monotonic() - started < 2.0
    assert result["isIncomplete"] is False
    items = result["items"]
    assert len(items) == 5000
    assert items[0]["label"] == "big-item-0"
    assert items[4999] == {"label": "big-item-4999", "kind": 6, "sortText": "004999",
                           "data": {"server": "big", "index": 4999}}


async def test_custom_notification_works_and_can_be_echoed(start_fake: StartFake) -> None:
    client = await start_fake({"name": "n", "responses": {"fake/note": {"echo": True}}})
    client.notify("fake/note", {"x": 1})
    assert await client.wait_for("fake/echo") == {"server": "n", "method": "fake/note", "params": {"x": 1}}


# ------------------------------------------------------------------------------------------------ documents
async def test_incremental_changes_are_applied_in_utf16(start_fake: StartFake) -> None:
    client = await start_fake({})
    client.open(text="a😀b\nsecond line\r\nthird")
    client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        # After the emoji (two UTF-16 units): insert "X".
        {"range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 3}}, "text": "X"},
        # Replace "line\r\nthi" across the CRLF.
        {"range": {"start": {"line": 1, "character": 7}, "end": {"line": 2, "character": 3}}, "text": "L\n"},
    ]})
    assert await client.request("fake/getDocument", {"uri": URI}) == {
        "text": "a😀Xb\nsecond L\nrd", "version": 2}
    state = await client.request("fake/getState")
    assert state["protocol_errors"] == []
    assert state["documents"][URI]["languageId"] == "alpha"


async def test_positions_use_the_advertised_utf8_encoding(start_fake: StartFake) -> None:
    client = await start_fake({"capabilities": {"positionEncoding": "utf-8", "textDocumentSync": 2}})
    client.open(text="é=1\n")
    client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 3}}, "text": "=="}]})
    assert (await client.request("fake/getDocument", {"textDocument": {"uri": URI}}))["text"] == "é==1\n"
    # Character 1 falls inside the two bytes of "é": a client that counted wrongly.
    client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 3}, "contentChanges": [
        {"range": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 1}}, "text": ""}]})
    errors = (await client.request("fake/getState"))["protocol_errors"]
    assert [error["kind"] for error in errors] == ["position_inside_character"] * 2  # start and end


async def test_full_sync_replaces_text_and_wrong_kinds_are_recorded(start_fake: StartFake, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    full = await start_fake({"capabilities": {"textDocumentSync": 1}}, record=record)
    full.open(text="old")
    full.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2},
                                           "contentChanges": [{"text": "new text"}]})
    assert (await full.request("fake/getDocument", {"uri": URI}))["text"] == "new text"
    ranged = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}}, "text": "N"}
    full.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 3}, "contentChanges": [ranged]})
    assert (await full.request("fake/getDocument", {"uri": URI}))["text"] == "N text"
    sync_errors = [e for e in read_record(record) if e.get("event") == "sync_error"]
    assert [e["expected"] for e in sync_errors] == ["full"]

    incremental = await start_fake({"capabilities": {"textDocumentSync": {"openClose": True, "change": 2}}})
    incremental.open(text="old")
    incremental.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 1},
                                                  "contentChanges": [{"text": "whole"}]})
    errors = (await incremental.request("fake/getState"))["protocol_errors"]
    assert [e.get("expected", e.get("kind")) for e in errors] == ["incremental", "version_not_increasing"]


# ------------------------------------------------------------------------------------------------ diagnostics
async def test_push_diagnostics_on_open_change_and_close(start_fake: StartFake) -> None:
    diagnostic = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                  "message": "{name} v{version}", "severity": 2}
    spec = {"name": "fakeA", "diagnostics_on_open_and_change": [
        diagnostic, {**diagnostic, "message": "has TODO", "source": None, "when_text_contains": "TODO"}]}
    client = await start_fake(spec)
    client.open(text="x")
    opened = await client.wait_for("textDocument/publishDiagnostics", lambda p: p["version"] == 1)
    assert opened == {"uri": URI, "version": 1, "diagnostics": [{**diagnostic, "message": "fakeA v1",
                                                                 "source": "fakeA"}]}
    client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 1}}, "text": " TODO"}]})
    changed = await client.wait_for("textDocument/publishDiagnostics", lambda p: p["version"] == 2)
    assert [d["message"] for d in changed["diagnostics"]] == ["fakeA v2", "has TODO"]
    assert "source" not in changed["diagnostics"][1]
    client.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    assert await client.wait_for("textDocument/publishDiagnostics", lambda p: not p["diagnostics"]) == {
        "uri": URI, "diagnostics": []}


async def test_keep_on_close_publishes_nothing(start_fake: StartFake) -> None:
    client = await start_fake({"diagnostics_on_open_and_change": [], "clear_on_close": False})
    client.open(text="x")
    await client.wait_for("textDocument/publishDiagnostics")
    client.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    await client.request("fake/getState")  # handled after didClose: anything published is already here
    assert len(client.notifications) == 1


async def test_pull_diagnostics_report(start_fake: StartFake) -> None:
    item = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 2}},
            "message": "pulled by {name}"}
    client = await start_fake({"name": "puller", "pull_diagnostics": [item], "pull_report_unchanged": True})
    client.open(text="hi", version=4)
    report = await client.request("textDocument/diagnostic", {"textDocument": {"uri": URI}})
    assert report == {"kind": "full", "resultId": "puller:4",
                      "items": [{**item, "message": "pulled by puller", "source": "puller"}]}
    unchanged = await client.request("textDocument/diagnostic",
                                     {"textDocument": {"uri": URI}, "previousResultId": "puller:4"})
    assert unchanged == {"kind": "unchanged", "resultId": "puller:4"}


# ------------------------------------------------------------------------------------------------ server to client
async def test_execute_command_triggers_server_requests_whose_answers_come_back(start_fake: StartFake,
                                                                                tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    actions = [
        {"request": "workspace/configuration", "params": {"items": [{"section": "{name}"}]}},
        {"request": "window/workDoneProgress/create", "params": {"token": "t1"}},
        {"notify": "$/progress", "params": {"token": "t1", "value": {"kind": "begin", "title": "work"}}},
        {"request": "workspace/applyEdit", "params": {"edit": {"changes": {}}}},
        {"notify": "window/logMessage", "params": {"type": 3, "message": "{name} did it"}},
    ]
    answers = {
        "workspace/configuration": lambda params: [{"asked": params["items"][0]["section"]}],
        "window/workDoneProgress/create": None,
        "workspace/applyEdit": JsonRpcException(code=-32603, message="refused"),
    }
    client = await start_fake({"name": "fakeA", "on_request": {"fake.trigger": actions}}, record=record,
                              answers=answers)
    result = await client.request("workspace/executeCommand", {"command": "fake.trigger", "arguments": []})
    assert result == [[{"asked": "fakeA"}], None, None, {"error": {"code": -32603, "message": "refused"}}, None]
    assert [method for method, _ in client.server_requests] == [
        "workspace/configuration", "window/workDoneProgress/create", "workspace/applyEdit"]
    assert ("window/logMessage", {"type": 3, "message": "fakeA did it"}) in client.notifications
    assert ("$/progress", actions[2]["params"]) in client.notifications
    responses = [e for e in read_record(record) if "response" in e]
    assert [(e["response"], e["response_to"]) for e in responses] == [
        (0, "workspace/configuration"), (1, "window/workDoneProgress/create"), (2, "workspace/applyEdit")]
    assert responses[0]["result"] == [{"asked": "fakeA"}]
    assert responses[2]["error"]["message"] == "refused"


async def test_on_initialized_and_notification_triggers(start_fake: StartFake) -> None:
    registration = {"registrations": [{"id": "r1", "method": "workspace/didChangeWatchedFiles"}]}
    spec = {"on_initialized": [{"request": "client/registerCapability", "params": registration}],
            "on_request": {"fake/poke": [{"notify": "window/showMessage", "params": {"type": 1, "message": "ouch"}}]}}
    client = await start_fake(spec, answers={"client/registerCapability": None})
    for _ in range(100):
        if client.server_requests:
            break
        await asyncio.sleep(0.02)
    assert client.server_requests == [("client/registerCapability", registration)]
    client.notify("fake/poke", {})
    assert await client.wait_for("window/showMessage") == {"type": 1, "message": "ouch"}


# ------------------------------------------------------------------------------------------------ recording
async def test_record_holds_start_and_every_received_message(start_fake: StartFake, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    client = FakeClient()
    try:
        await client.start({"name": "spec-name"}, record=record, name="fakeR",
                           env={"FAKE_ROLE": "primary", "PATH": "/usr/bin:/bin"})
        init_params = {"rootUri": "file:///ws", "workspaceFolders": [{"uri": "file:///ws", "name": "ws"}],
                       "initializationOptions": {"k": [1]},
                       "capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}}}
        await client.initialize(**init_params)
        client.notify("workspace/didChangeConfiguration", {"settings": {"fakeR": {"level": 2}}})
        assert (await client.request("fake/getState"))["settings"] == {"fakeR": {"level": 2}}
        client.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "alpha", "version": 1,
                                                                "text": "x"}})
        await client.request("shutdown")
        client.notify("exit")
        assert await client.wait_exit() == 0
    finally:
        await client.close()
    entries = read_record(record)
    start = entries[0]
    assert start["event"] == "start" and start["name"] == "fakeR"
    assert start["pid"] == client.process.pid
    assert start["env"] == {"FAKE_ROLE": "primary"}
    assert start["argv"][-2:] == ["--record", str(record)]
    assert Path(start["cwd"]) == Path.cwd()
    messages = [(e.get("method"), e.get("id")) for e in entries[1:] if "method" in e]
    assert messages == [("initialize", 0), ("initialized", None), ("workspace/didChangeConfiguration", None),
                        ("fake/getState", 1), ("textDocument/didOpen", None), ("shutdown", 2), ("exit", None)]
    assert entries[1]["params"] == {"processId": None, **init_params}
    assert entries[-1] == {"event": "exit", "code": 0, "reason": "exit notification"}


async def test_spec_file_and_requests_after_shutdown(start_fake: StartFake, tmp_path: Path) -> None:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps({"name": "fromfile", "responses": {"fake/who": {"result": "{name}"}}}))
    client = FakeClient()
    try:
        command = fake_server_command({})
        await client.start({}, command=[*command[:2], "--spec-file", str(spec_file)])
        await client.initialize()
        assert await client.request("fake/who") == "fromfile"
        await client.request("shutdown")
        with pytest.raises(JsonRpcException) as failure:
            await client.request("fake/who")
        assert failure.value.code == -32600
        client.notify("exit")
        assert await client.wait_exit() == 0
    finally:
        await client.close()


# ------------------------------------------------------------------------------------------------ faults
async def test_banner_before_first_frame_does_not_stop_a_client(start_fake: StartFake) -> None:
    client = await start_fake({"garbage_before_first_frame": "Fake server 1.0 starting...\n", "name": "g"},
                              initialize=False)
    assert (await client.initialize())["serverInfo"]["name"] == "g"


async def test_garbage_after_message_is_a_broken_frame_the_client_skips(start_fake: StartFake) -> None:
    client = await start_fake({"garbage_after_message": {"textDocument/hover": True},
                               "responses": {"textDocument/hover": {"result": "h"}, "fake/x": {"result": "x"}}})
    assert await client.request("textDocument/hover", hover_params()) == "h"
    assert await client.request("fake/x") == "x"
    assert [error.split(":")[0] for error in client.client.errors] == ["JSONDecodeError"]


async def test_never_initialize_and_stderr_spam(start_fake: StartFake) -> None:
    client = await start_fake({"never_initialize": True, "stderr_spam_bytes": 300_000}, initialize=False)
    pending = client.send("initialize", {"capabilities": {}})
    for _ in range(250):
        if len(client.stderr) >= 300_000:
            break
        await asyncio.sleep(0.02)
    assert len(client.stderr) >= 300_000
    # The spam came before the first frame and the fake is serving, yet initialize stays unanswered.
    assert await client.request("fake/getState", timeout=TIMEOUT) is not None
    await asyncio.sleep(0.2)
    assert not pending.done()


async def test_crash_after_initialize_and_exit_on_shutdown(start_fake: StartFake) -> None:
    crashing = await start_fake({"crash_after_initialize_seconds": 0.2})
    assert await crashing.wait_exit() == 1
    quitting = await start_fake({"exit_on_shutdown_delay": 0})
    assert await quitting.request("shutdown") is None
    assert await quitting.wait_exit() == 0


async def test_exit_without_shutdown_is_code_1_and_stdin_close_ends_it(start_fake: StartFake) -> None:
    rude = await start_fake({})
    rude.notify("exit")
    assert await rude.wait_exit() == 1
    orphan = await start_fake({"responses": {"textDocument/hover": {"hang": True}}})
    orphan.send("textDocument/hover", hover_params())
    assert orphan.process.stdin is not None
    orphan.process.stdin.close()
    assert await orphan.wait_exit() == 0


async def test_crash_with_delay_dies_mid_request(start_fake: StartFake) -> None:
    client = await start_fake({"responses": {"textDocument/hover": {"crash": True, "delay": 0.8},
                                             "fake/x": {"result": "x"}}})
    pending = client.send("textDocument/hover", hover_params())
    assert await client.request("fake/x") == "x"
    assert client.process.returncode is None
    with pytest.raises(ConnectionError):
        await asyncio.wait_for(pending, TIMEOUT)
    assert await client.wait_exit() == 1


async def test_stubborn_server_outlives_exit_stdin_close_and_sigterm(start_fake: StartFake, tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    client = await start_fake({"ignore_exit": True, "ignore_stdin_close": True, "ignore_sigterm": True},
                              record=record)
    await client.request("shutdown")
    client.notify("exit")
    assert client.process.stdin is not None
    client.process.stdin.close()
    for _ in range(250):
        if any(e.get("event") == "stdin_closed_ignored" for e in read_record(record)):
            break
        await asyncio.sleep(0.02)
    client.process.terminate()
    with pytest.raises(TimeoutError):
        await client.wait_exit(timeout=0.3)
    client.process.kill()
    assert await client.wait_exit() == -9
    assert [e["event"] for e in read_record(record) if "event" in e] == ["start", "exit_ignored",
                                                                       "stdin_closed_ignored"]


async def test_exit_delay_lingers_after_exit(start_fake: StartFake) -> None:
    client = await start_fake({"exit_delay": 0.4})
    await client.request("shutdown")
    client.notify("exit")
    started = time.monotonic()
    assert await client.wait_exit() == 0
    assert time.monotonic() - started >= 0.35


async def test_initialize_trigger_runs_before_the_answer(start_fake: StartFake) -> None:
    log = {"type": 4, "message": "{name} starting"}
    client = await start_fake({"name": "slowpoke", "on_request": {"initialize": [{"notify": "window/logMessage",
                                                                                   "params": log}]}},
                              initialize=False)
    result = await client.initialize()
    assert result["serverInfo"]["name"] == "slowpoke"
    # Notifications and the answer come in order on one stream: the log arrived first.
    assert client.notifications == [("window/logMessage", {"type": 4, "message": "slowpoke starting"})]


def test_the_standard_methods_are_those_of_the_lsp_specification() -> None:
    """The fake writes the list out (importing lsprotocol cost every start half a second): it must stay lsprotocol's."""
    from lsprotocol.types import METHOD_TO_TYPES

    assert frozenset(METHOD_TO_TYPES) == STANDARD_METHODS
