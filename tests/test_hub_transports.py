"""TCP and WebSocket: a long-running daemon, several clients at once, each its own session."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from tests.hub_fixtures import FAKE_LANGUAGES, pids_alive
from tests.hubclient import REPO_ROOT, HubClient, fake_server_config

pytestmark = pytest.mark.asyncio


async def _start_daemon(tmp_path: Path, flag: str) -> tuple[asyncio.subprocess.Process, int]:
    config = tmp_path / "hub.toml"
    config.write_text(fake_server_config(
        {"fakeA": {"responses": {"textDocument/hover": {"echo": True}}}, "fakeB": {}}, FAKE_LANGUAGES))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lsp_hub", flag, "0", "--config", str(config), "--log-file", str(tmp_path / "log"),
        env=env, stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL)
    assert process.stderr is not None
    line = await asyncio.wait_for(process.stderr.readline(), 20)
    match = re.search(rb"listening on \w+://127\.0\.0\.1:(\d+)", line)
    assert match, line
    return process, int(match.group(1))


async def _session(client: HubClient, workspace: Path, name: str) -> str:
    workspace.mkdir(parents=True, exist_ok=True)
    await client.initialize(workspace)
    path = workspace / f"{name}.alpha"
    path.write_text("x\n")
    return client.open(path, "alpha")


@pytest.mark.parametrize("flag", ["--tcp", "--ws"])
async def test_daemon_serves_several_clients_and_outlives_each(tmp_path: Path, flag: str) -> None:
    process, port = await _start_daemon(tmp_path, flag)
    connect = "connect_tcp" if flag == "--tcp" else "connect_ws"
    try:
        first, second = HubClient(), HubClient()
        await getattr(first, connect)("127.0.0.1", port)
        await getattr(second, connect)("127.0.0.1", port)
        uri_one = await _session(first, tmp_path / "one", "one")
        uri_two = await _session(second, tmp_path / "two", "two")
        hover = {"position": {"line": 0, "character": 0}}
        answers = await asyncio.gather(
            first.request("textDocument/hover", {"textDocument": {"uri": uri_one}, **hover}),
            second.request("textDocument/hover", {"textDocument": {"uri": uri_two}, **hover}),
        )
        assert [a["params"]["textDocument"]["uri"] for a in answers] == [uri_one, uri_two]
        first_status, second_status = await first.status(), await second.status()
        assert first_status["documents"] == second_status["documents"] == 1
        assert first_status["workspaceFolders"] == [str(tmp_path / "one")]
        first_pids = [s["pid"] for s in first_status["servers"]]
        await first.request("shutdown", None)
        first.notify("exit", None)
        await first.disconnect()
        for _ in range(50):
            if not pids_alive(first_pids):
                break
            await asyncio.sleep(0.1)
        assert pids_alive(first_pids) == []  # the first session's servers are gone ...
        assert process.returncode is None  # ... the daemon is not
        assert (await second.status())["documents"] == 1
        third = HubClient()
        await getattr(third, connect)("127.0.0.1", port)
        await _session(third, tmp_path / "three", "three")
        assert (await third.status())["documents"] == 1
        await second.disconnect()
        await third.disconnect()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)
