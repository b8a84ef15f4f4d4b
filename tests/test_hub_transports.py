"""TCP and WebSocket: a long-running daemon, several clients at once, each its own session (clients of one root
share its workspace: tests/test_workspace_sharing.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.hub_fixtures import pids_alive, start_daemon
from tests.hubclient import HubClient

pytestmark = pytest.mark.asyncio


async def _session(client: HubClient, workspace: Path, name: str) -> str:
    workspace.mkdir(parents=True, exist_ok=True)
    await client.initialize(workspace)
    path = workspace / f"{name}.alpha"
    path.write_text("x\n")
    return client.open(path, "alpha")


@pytest.mark.parametrize("flag", ["--tcp", "--ws"])
async def test_daemon_serves_several_clients_and_outlives_each(tmp_path: Path, flag: str) -> None:
    # Servers a session leaves behind are kept warm for the next client of its root, until their idle timer.
    process, port = await start_daemon(tmp_path, flag, hub={"idle_shutdown_seconds": 0.5})
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
        assert pids_alive(first_pids) == []  # the first session's servers are gone (idle) ...
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


async def test_a_tcp_client_with_a_broken_header_is_answered_after_it(tmp_path: Path) -> None:
    """TCP reads frames as strictly as stdio: a broken header is logged and the next message still answered."""
    process, port = await start_daemon(tmp_path, "--tcp")
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"capabilities":{}}}'
        writer.write(b"Content-Length: fifty\r\n\r\n{}" + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
        answer = await reader.readexactly(int(header.split(b":")[1].split(b"\r\n")[0]))
        assert b'"id":7' in answer and b'"capabilities"' in answer
        assert "bad frame header" in (tmp_path / "log").read_text()
        writer.close()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)


async def test_a_stdin_that_is_a_regular_file_is_read_to_its_end(tmp_path: Path) -> None:
    """stdin that asyncio cannot watch (a file, a terminal) is read by a thread: every message in it is read and
    answered, in order, and its end ends the hub."""
    import json
    import os
    import subprocess
    import sys

    def frame(message: dict) -> bytes:
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    messages = tmp_path / "messages"  # requests before initialize: each answered at once, with an error
    messages.write_bytes(b"".join(frame({"jsonrpc": "2.0", "id": n, "method": "textDocument/hover", "params": {}})
                                  for n in range(1, 6)))
    with messages.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "lsp_hub"], stdin=stdin, capture_output=True, cwd=tmp_path,
                              timeout=60, env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
                                               "XDG_CACHE_HOME": str(tmp_path / "cache")})
    answers = [json.loads(part[part.index(b"{"):]) for part in done.stdout.split(b"Content-Length: ")[1:]]
    assert [(answer["id"], answer["error"]["code"]) for answer in answers] == [(n, -32002) for n in range(1, 6)]
    assert done.returncode == 1  # the input ended without exit
