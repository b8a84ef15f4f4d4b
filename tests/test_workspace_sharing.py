"""One workspace, many client sessions: the clients of a daemon whose folders lie under one root (under one
configuration) share the servers of that root, each keeping its own documents."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hub_fixtures import StartHub, pids_alive, start_daemon
from tests.hubclient import HubClient
from tests.test_daemon import Daemon, _bridge, _open_and_hover, daemon  # noqa: F401 (the fixture)

pytestmark = pytest.mark.asyncio

RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
DIAGNOSING = {"fakeA": {"diagnostics_on_open_and_change": [{"range": RANGE, "message": "a v{version}"}]},
              "fakeB": {}}


async def _client(port: int, root: Path, init_options: dict[str, Any] | None = None, *,
                  flag: str = "--tcp") -> HubClient:
    client = HubClient()
    await (client.connect_tcp if flag == "--tcp" else client.connect_ws)("127.0.0.1", port)
    root.mkdir(parents=True, exist_ok=True)
    await client.initialize(root, init_options=init_options)
    return client


def _pids(status: dict[str, Any]) -> list[int]:
    return sorted(server["pid"] for server in status["servers"] if server["pid"] is not None)


async def _backend_text(client: HubClient, uri: str) -> dict[str, Any]:
    """What fakeA has of the document (its own copy, built from what the hub sent it)."""
    return await client.request("fake/getDocument", {"textDocument": {"uri": uri}})


async def _wait_running(client: HubClient, count: int = 2) -> dict[str, Any]:
    for _ in range(100):
        status = await client.status()
        if len([s for s in status["servers"] if s["state"] == "running"]) >= count:
            return status
        await asyncio.sleep(0.1)
    raise AssertionError(f"servers did not start: {status}")


async def _stop(process: asyncio.subprocess.Process, *clients: HubClient) -> None:
    for client in clients:
        await client.disconnect()
    process.terminate()
    await asyncio.wait_for(process.wait(), 15)


@pytest.mark.parametrize("flag", ["--tcp", "--ws"])
async def test_two_clients_of_one_root_share_servers_and_each_gets_diagnostics(tmp_path: Path, flag: str) -> None:
    process, port = await start_daemon(tmp_path, flag, servers=DIAGNOSING)
    root = tmp_path / "ws"
    first, second = await _client(port, root, flag=flag), await _client(port, root, flag=flag)
    try:
        path = root / "a.alpha"
        path.write_text("x = 1\n")
        uri = first.open(path, "alpha")
        second.open(path, "alpha")
        await first.wait_diagnostics(uri, lambda d: len(d) == 1)
        await second.wait_diagnostics(uri, lambda d: len(d) == 1)
        first_status, second_status = await _wait_running(first), await _wait_running(second)
        assert _pids(first_status) == _pids(second_status) and len(_pids(first_status)) == 2
        assert first_status["documents"] == second_status["documents"] == 1

        # The first closes it: nothing changes for the second, whose servers still have it open.
        first.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        await first.wait_diagnostics(uri, lambda d: d == [])
        assert (await _backend_text(second, uri))["text"] == "x = 1\n"
        assert (await first.status())["documents"] == 0
        second.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"range": {
                                                     "start": {"line": 0, "character": 0},
                                                     "end": {"line": 0, "character": 1}}, "text": "y"}]})
        await second.wait_diagnostics(uri, lambda d: [x["message"] for x in d] == ["a v2"])
        assert first.diagnostics[uri] == []
        assert (await _backend_text(second, uri))["text"] == "y = 1\n"
        state = await second.request("fake/getState", None)
        assert state["protocol_errors"] == []
    finally:
        await _stop(process, first, second)


async def test_the_backend_has_the_latest_writers_exact_text(tmp_path: Path) -> None:
    """Incremental edits from two sessions on one URI: each applies to its own copy; the servers get the latest
    writer's text (as a change computed from what they had), never one session's edit applied to the other's."""
    process, port = await start_daemon(tmp_path, "--tcp")
    root = tmp_path / "ws"
    first, second = await _client(port, root), await _client(port, root)
    try:
        path = root / "a.alpha"
        path.write_text("one\ntwo\nthree\n")
        uri = first.open(path, "alpha")
        second.open(path, "alpha")
        await _wait_running(first)

        def edit(client: HubClient, version: int, line: int, start: int, end: int, text: str) -> None:
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                     "contentChanges": [{"range": {
                                                         "start": {"line": line, "character": start},
                                                         "end": {"line": line, "character": end}}, "text": text}]})

        edit(first, 2, 0, 0, 3, "ONE")
        assert (await _backend_text(first, uri))["text"] == "ONE\ntwo\nthree\n"
        edit(second, 2, 1, 0, 0, "2: ")  # on its own copy, which still says "one"
        assert (await _backend_text(second, uri))["text"] == "one\n2: two\nthree\n"
        edit(second, 3, 2, 5, 5, "!")
        assert (await _backend_text(second, uri))["text"] == "one\n2: two\nthree!\n"
        edit(first, 3, 2, 0, 0, "3: ")
        assert (await _backend_text(first, uri))["text"] == "ONE\ntwo\n3: three\n"
        edit(first, 4, 0, 3, 3, "!")
        seen = await _backend_text(second, uri)
        assert seen["text"] == "ONE!\ntwo\n3: three\n"
        assert seen["version"] >= 4
        state = await first.request("fake/getState", None)
        assert state["protocol_errors"] == []
    finally:
        await _stop(process, first, second)


async def test_a_client_that_joins_running_servers_hears_their_registrations_and_messages(tmp_path: Path) -> None:
    watch = [{"request": "client/registerCapability", "params": {"registrations": [
        {"id": "watch", "method": "workspace/didChangeWatchedFiles",
         "registerOptions": {"watchers": [{"globPattern": "**/*.a"}]}}]}}]
    process, port = await start_daemon(tmp_path, "--tcp", servers={"fakeA": {"on_initialized": watch}, "fakeB": {}})
    root = tmp_path / "ws"
    first = await _client(port, root)
    second: HubClient | None = None
    try:
        path = root / "a.alpha"
        path.write_text("x\n")
        first.open(path, "alpha")
        await _wait_running(first)

        def watchers(client: HubClient) -> list[str]:
            return [r["id"] for m, p in client.server_requests if m == "client/registerCapability"
                    for r in p["registrations"] if r["method"] == "workspace/didChangeWatchedFiles"
                    and r["id"] != "lsp-hub/index-watcher"]

        await first.wait_for(lambda: watchers(first), what="the first client's watcher")
        second = await _client(port, root)
        await second.wait_for(lambda: watchers(second), what="the watcher, for the client that joined later")
        assert watchers(first) == watchers(second)
    finally:
        await _stop(process, first, *([second] if second else []))


async def test_a_client_with_another_configuration_gets_its_own_servers(tmp_path: Path) -> None:
    process, port = await start_daemon(tmp_path, "--tcp")
    root = tmp_path / "ws"
    first = await _client(port, root)
    second = await _client(port, root, init_options={"server": {"fakeA": {"request_timeout_seconds": 7}}})
    try:
        path = root / "a.alpha"
        path.write_text("x\n")
        first.open(path, "alpha")
        second.open(path, "alpha")
        first_pids, second_pids = _pids(await _wait_running(first)), _pids(await _wait_running(second))
        assert len(first_pids) == len(second_pids) == 2
        assert not set(first_pids) & set(second_pids)
    finally:
        await _stop(process, first, second)


async def test_after_the_last_client_leaves_the_next_finds_warm_servers(tmp_path: Path) -> None:
    process, port = await start_daemon(tmp_path, "--tcp")
    root = tmp_path / "ws"
    try:
        first = await _client(port, root)
        path = root / "a.alpha"
        path.write_text("x\n")
        first.open(path, "alpha")
        pids = _pids(await _wait_running(first))
        await first.request("shutdown", None)
        first.notify("exit", None)
        await first.disconnect()
        await asyncio.sleep(0.3)
        assert pids_alive(pids) == pids
        second = await _client(port, root)
        second.open(path, "alpha")
        status = await _wait_running(second)
        assert _pids(status) == pids
        assert all(server["restarts"] == 0 for server in status["servers"])
        await second.disconnect()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)
    assert pids_alive(pids) == [] or await _gone(pids)


async def _gone(pids: list[int]) -> bool:
    for _ in range(100):
        if not pids_alive(pids):
            return True
        await asyncio.sleep(0.1)
    return False


async def test_stdio_exit_still_stops_every_server(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}})
    hub.client.open(hub.file("a.alpha", "x\n"), "alpha")
    pids = _pids(await _wait_running(hub.client))
    assert len(pids) == 2
    assert await hub.client.stop() == 0
    assert await _gone(pids)


async def test_an_editor_and_a_query_see_the_same_servers(daemon: Daemon) -> None:  # noqa: F811
    client = await _bridge(daemon)
    workspace = daemon.tmp_path / "ws"
    await _open_and_hover(client, workspace)
    editor_pids = _pids(await _wait_running(client))
    assert len(editor_pids) == 2
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "lsp_hub", "query", "status", "--json", "--root", str(workspace)],
        env=daemon.env, capture_output=True, text=True, timeout=60, cwd=str(workspace))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    status = answer.get("result", answer)
    assert _pids(status) == editor_pids
    assert await client.stop() == 0
