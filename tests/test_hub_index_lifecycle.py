"""The index's processes and threads end with the hub: killed, told to exit, or left in the middle of a build."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import descendant_pids
from tests.hub_fixtures import HubUnderTest, StartHub, pids_alive

pytestmark = pytest.mark.asyncio


def write_tree(root: Path, functions: int, files: int) -> None:
    """A source tree large enough that a cold build runs in worker processes."""
    body = "".join(f"def function_{i}(value):\n    return helper(value) + {i}\n\n\n" for i in range(functions))
    for number in range(files):
        directory = root / f"package_{number // 100}"
        if number % 100 == 0:
            directory.mkdir(parents=True, exist_ok=True)
        (directory / f"module_{number}.py").write_text(f"from package_0 import helper\n\n{body}")


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


async def workers_parsing(hub: HubUnderTest) -> list[int]:
    """Wait until the cold build runs in worker processes (forkserver children); all the hub's descendants then."""
    pid = hub.client.process.pid
    for _ in range(300):
        below = descendant_pids(pid)
        forkservers = [p for p in below if "forkserver" in command_line(p)]
        if forkservers and any(descendant_pids(server) for server in forkservers):
            return descendant_pids(pid)  # again: a worker may have started since `below` was read
        await asyncio.sleep(0.02)
    raise AssertionError(f"no index workers appeared; hub log:\n{hub.log()[-3000:]}")


async def survivors(pids: list[int], seconds: float) -> list[str]:
    """The command lines of `pids` still alive after `seconds`; those are then killed, so that a failing test does
    not leave them holding the hub's stderr (the fixture would wait on it)."""
    deadline = time.monotonic() + seconds
    while pids_alive(pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    left = pids_alive(pids)
    lines = [command_line(pid)[:120] for pid in left]
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return lines


async def start_cold_build(start_hub: StartHub, functions: int, files: int) -> tuple[HubUnderTest, list[int]]:
    hub = await start_hub({"fakeA": {}, "fakeB": {}}, initialize=False)
    write_tree(hub.workspace, functions, files)
    await hub.client.initialize(hub.workspace)
    return hub, await workers_parsing(hub)


async def test_no_index_process_outlives_a_killed_hub(start_hub: StartHub) -> None:
    hub, processes = await start_cold_build(start_hub, functions=4, files=6000)
    assert len(processes) >= 3  # resource tracker, forkserver, workers
    hub.client.process.send_signal(signal.SIGKILL)
    # Not process.wait() first: asyncio's also waits for the hub's pipes to close, which leftovers prevent.
    assert await survivors([hub.client.process.pid, *processes], 5.0) == []
    await asyncio.wait_for(hub.client.process.wait(), 5)  # as an editor would: its stderr pipe saw EOF


@pytest.mark.parametrize("how", ["exit", "sigterm", "stdin-closed"])
async def test_exit_during_a_cold_build_cancels_it(start_hub: StartHub, how: str) -> None:
    hub, processes = await start_cold_build(start_hub, functions=240, files=1000)  # a build of 3-5 s on 2 cores
    started = time.monotonic()
    if how == "exit":
        await hub.client.request("shutdown", None, timeout=5)
        hub.client.notify("exit", None)
    elif how == "sigterm":
        hub.client.process.send_signal(signal.SIGTERM)
    else:
        assert hub.client.process.stdin is not None
        hub.client.process.stdin.close()
    await asyncio.wait_for(hub.client.process.wait(), 10)
    took = time.monotonic() - started
    left = await survivors(processes, 3.0)
    assert took < 1.5, f"the hub took {took:.2f} s to exit during a build"
    assert left == []
