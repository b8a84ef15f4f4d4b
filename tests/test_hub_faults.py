"""Faults: servers that crash, hang, never initialize, write garbage or are missing; no orphans after the hub."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import pytest

from tests.conftest import descendant_pids
from tests.hub_fixtures import StartHub, pids_alive, start_events
from tests.hubclient import ResponseFailure

pytestmark = pytest.mark.asyncio

POS = {"line": 0, "character": 0}
ONLY_A = {"beta": {"extensions": ["beta"], "servers": ["fakeA"]},
          "alpha": {"extensions": ["alpha"], "servers": ["fakeA", "fakeB"]}}


def hover(uri: str) -> dict:
    return {"textDocument": {"uri": uri}, "position": POS}


async def _running_pid(hub, name: str) -> int:  # type: ignore[no-untyped-def]
    async def pid() -> int | None:
        for server in (await hub.client.status())["servers"]:
            if server["name"] == name and server["state"] == "running":
                return server["pid"]
        return None

    for _ in range(100):
        if (found := await pid()) is not None:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} never ran")


async def test_killed_server_fails_its_request_then_restarts_and_reopens_documents(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"responses": {"textDocument/hover": {"delay": 30, "echo": True},
                                                   "textDocument/definition": {"echo": True}}},
                           "fakeB": {}}, languages=ONLY_A)
    uri = hub.client.open(hub.file("k.beta", "print(1)\n"), "beta")
    pid = await _running_pid(hub, "fakeA")
    _, pending = hub.client.send_request("textDocument/hover", hover(uri))
    await hub.client.wait_for(lambda: hub.received("fakeA", "textDocument/hover"), what="hover in flight")
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(ResponseFailure) as failed:
        await asyncio.wait_for(pending, 10)
    assert "exited" in failed.value.message
    answer = await hub.client.request("textDocument/definition", hover(uri))
    assert answer["server"] == "fakeA"
    assert len(start_events(hub.records, "fakeA")) == 2
    opened = [p["textDocument"]["uri"] for p in hub.received("fakeA", "textDocument/didOpen")]
    assert opened == [uri, uri]  # re-opened with its text in the new process
    status = {s["name"]: s for s in (await hub.client.status())["servers"]}
    assert status["fakeA"]["restarts"] == 1 and status["fakeA"]["pid"] != pid


async def test_hanging_server_times_out_and_others_still_answer(start_hub: StartHub) -> None:
    hub = await start_hub(
        {"fakeA": {"responses": {"textDocument/hover": {"hang": True}}},
         "fakeB": {"responses": {"textDocument/hover": {"result": {"contents": "from B"}}}}},
        languages=ONLY_A, hub={"request_timeout_seconds": 1.0},
    )
    uri = hub.client.open(hub.file("h.alpha", "a\n"), "alpha")
    result = await hub.client.request("textDocument/hover", hover(uri), timeout=15)
    assert result == {"contents": "from B"}  # fan-out returns what arrived in time
    assert "did not answer textDocument/hover" in hub.log()
    only_a = hub.client.open(hub.file("h.beta", "a\n"), "beta")
    with pytest.raises(ResponseFailure) as timed_out:
        await hub.client.request("textDocument/hover", hover(only_a), timeout=15)
    assert "within 1 s" in timed_out.value.message


async def test_server_that_never_initializes_is_marked_failed(start_hub: StartHub) -> None:
    hub = await start_hub(
        {"fakeA": {"never_initialize": True},
         "fakeB": {"responses": {"textDocument/hover": {"result": {"contents": "B works"}}}}},
        # Long enough for a healthy fake (a Python start-up) on a loaded machine, short enough for the test.
        hub={"initialize_timeout_seconds": 4.0},
    )
    uri = hub.client.open(hub.file("n.alpha", "a\n"), "alpha")
    assert await hub.client.request("textDocument/hover", hover(uri), timeout=15) == {"contents": "B works"}

    async def state() -> str:
        return {s["name"]: s["state"] for s in (await hub.client.status())["servers"]}["fakeA"]

    for _ in range(100):
        if await state() == "failed":
            break
        await asyncio.sleep(0.1)
    assert await state() == "failed"
    messages = [p["message"] for m, p in hub.client.notifications if m == "window/showMessage"]
    assert any("fakeA did not answer initialize" in m for m in messages)


async def test_garbage_before_the_first_frame_is_skipped(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"garbage_before_first_frame": "Starting server v1.0...\nloading\n",
                                     "responses": {"textDocument/hover": {"echo": True}}},
                           "fakeB": {}}, languages=ONLY_A)
    uri = hub.client.open(hub.file("g.beta", "a\n"), "beta")
    assert (await hub.client.request("textDocument/hover", hover(uri)))["server"] == "fakeA"


async def test_stderr_is_drained_so_a_chatty_server_does_not_block(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"stderr_spam_bytes": 4_000_000,
                                     "responses": {"textDocument/hover": {"echo": True}}},
                           "fakeB": {}}, languages=ONLY_A)
    uri = hub.client.open(hub.file("s.beta", "a\n"), "beta")
    assert (await hub.client.request("textDocument/hover", hover(uri)))["server"] == "fakeA"


async def test_missing_binary_is_reported_once_and_the_others_keep_working(start_hub: StartHub) -> None:
    hub = await start_hub({
        "fakeA": {"_config": {"command": "/nonexistent/definitely-not-a-server"}},
        "fakeB": {"responses": {"textDocument/hover": {"result": {"contents": "B"}}}},
    })
    for index in range(3):
        uri = hub.client.open(hub.file(f"m{index}.alpha", "a\n"), "alpha")
        assert await hub.client.request("textDocument/hover", hover(uri)) == {"contents": "B"}
    warnings = [p["message"] for m, p in hub.client.notifications
                if m == "window/showMessage" and "fakeA" in p["message"]]
    assert len(warnings) == 1
    assert "not installed" in warnings[0] and "definitely-not-a-server" in warnings[0]
    states = {s["name"]: s["state"] for s in (await hub.client.status())["servers"]}
    assert states["fakeA"] == "missing"


async def test_gives_up_after_repeated_crashes(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"crash_after_initialize_seconds": 0.05}, "fakeB": {}},
                          languages=ONLY_A, hub={"max_restarts": 3})
    hub.client.open(hub.file("c.beta", "a\n"), "beta")

    async def state() -> str:
        servers = (await hub.client.status())["servers"]
        return next(s["state"] for s in servers if s["name"] == "fakeA")

    for _ in range(150):
        if await state() == "failed":
            break
        await asyncio.sleep(0.1)
    assert await state() == "failed"
    assert len(start_events(hub.records, "fakeA")) == 3
    messages = [p["message"] for m, p in hub.client.notifications if m == "window/showMessage"]
    assert any("crashed 3 times" in m for m in messages)


async def test_idle_server_is_stopped_and_restarted_lazily(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"responses": {"textDocument/hover": {"echo": True}}}, "fakeB": {}},
                          languages=ONLY_A, hub={"idle_shutdown_seconds": 0.5})
    path = hub.file("i.beta", "a\n")
    uri = hub.client.open(path, "beta")
    pid = await _running_pid(hub, "fakeA")
    hub.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    await hub.client.wait_for(lambda: hub.received("fakeA", "shutdown"), what="idle shutdown")
    for _ in range(50):
        if not pids_alive([pid]):
            break
        await asyncio.sleep(0.1)
    assert not pids_alive([pid])
    uri = hub.client.open(path, "beta")
    assert (await hub.client.request("textDocument/hover", hover(uri)))["server"] == "fakeA"
    assert len(start_events(hub.records, "fakeA")) == 2


@pytest.mark.parametrize("how", ["sigterm", "stdin-closed", "exit"])
async def test_no_server_outlives_the_hub(start_hub: StartHub, how: str) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}})
    hub.client.open(hub.file("o.alpha", "a\n"), "alpha")
    pids = [await _running_pid(hub, "fakeA"), await _running_pid(hub, "fakeB")]
    assert len(pids_alive(pids)) == 2
    if how == "sigterm":
        hub.client.process.send_signal(signal.SIGTERM)
    elif how == "stdin-closed":
        assert hub.client.process.stdin is not None
        hub.client.process.stdin.close()
    else:
        hub.client.notify("exit", None)
    await asyncio.wait_for(hub.client.process.wait(), 15)
    for _ in range(50):
        if not pids_alive(pids):
            break
        await asyncio.sleep(0.1)
    assert pids_alive(pids) == []


async def test_restart_server_command_brings_a_given_up_server_back(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {"responses": {"textDocument/hover": {"echo": True}}}, "fakeB": {}},
                          languages=ONLY_A)
    uri = hub.client.open(hub.file("r.beta", "a\n"), "beta")
    pid = await _running_pid(hub, "fakeA")
    result = await hub.client.request("workspace/executeCommand",
                                      {"command": "lspHub.restartServer", "arguments": [{"name": "fakeA"}]})
    assert result["restarted"][0]["name"] == "fakeA"
    assert await _running_pid(hub, "fakeA") != pid
    assert (await hub.client.request("textDocument/hover", hover(uri)))["server"] == "fakeA"
    with pytest.raises(ResponseFailure):
        await hub.client.request("workspace/executeCommand",
                                 {"command": "lspHub.restartServer", "arguments": [{"name": "nobody"}]})


def _pipes(pid: int) -> set[str]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("pipe:"):
                found.add(target)
    return found


async def test_no_child_holds_the_clients_pipes(start_hub: StartHub) -> None:
    """Index workers and servers must not inherit the LSP stream: the editor must see EOF when the hub ends."""
    hub = await start_hub({"fakeA": {}, "fakeB": {}}, initialize=False)
    for number in range(80):  # enough files for the index to parse in worker processes
        hub.file(f"pkg/module_{number}.py", "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(200)))
    await hub.client.initialize(hub.workspace)
    hub.client.open(hub.file("a.alpha", "x\n"), "alpha")
    await _running_pid(hub, "fakeA")
    stdin_pipe = os.readlink(f"/proc/self/fd/{hub.client.process.stdin.get_extra_info('pipe').fileno()}")
    assert hub.client.stdout_pipe is not None
    stdout_pipe = os.readlink(f"/proc/self/fd/{hub.client.stdout_pipe.fileno()}")
    children = descendant_pids(hub.client.process.pid)
    assert children
    for child in children:
        with contextlib.suppress(OSError):
            assert not {stdin_pipe, stdout_pipe} & _pipes(child), child
