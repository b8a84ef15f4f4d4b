"""An untrusted repository runs none of its own code, with the real typescript-language-server.

Each case plants code in the workspace that writes a marker file when it runs, opens a TypeScript file through the
hub, and checks that the marker stays absent while TypeScript is still served, by the hub's own TypeScript.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from lsp_hub.rawclient import HubClient, position_of

pytestmark = [pytest.mark.asyncio, pytest.mark.real_server]

SLOW = 60.0  # a cold tsserver on a loaded 2-core machine
SOURCE = "export const answer: number = 42;\nexport const doubled = answer * 2;\n"
StartHub = Callable[..., Awaitable[HubClient]]


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "package.json").write_text('{"name": "cloned", "version": "1.0.0"}\n')
    (root / "main.ts").write_text(SOURCE)
    return root


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "workspace-code-ran"


@pytest_asyncio.fixture
async def start_hub(tmp_path: Path, require_binary: Callable[[str], str]) -> AsyncIterator[StartHub]:
    require_binary("typescript-language-server")
    clients: list[HubClient] = []
    hub_env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache")}

    async def start(root: Path, *, path: str | None = None) -> HubClient:
        client = HubClient()
        env = {**hub_env, **({"PATH": path} if path is not None else {})}
        await client.start("--log-file", str(tmp_path / "hub.log"), "-v", env=env, cwd=str(root))
        clients.append(client)
        await client.initialize(root)
        return client

    yield start
    for client in clients:
        await client.stop()


def trust(root: Path, tmp_path: Path) -> None:
    """`lsp-hub trust ROOT` with the hub's configuration directory, as a user would run it."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    subprocess.run([sys.executable, "-m", "lsp_hub", "trust", str(root)], check=True, env=env,
                   capture_output=True, cwd=str(root.parent))


async def hover_text(client: HubClient, root: Path) -> str:
    """A hover answer for `answer` in main.ts: proof that TypeScript is served. Asked again while tsserver loads."""
    uri = client.open(root / "main.ts", "typescript")
    position = position_of(SOURCE, "answer * 2")
    for _ in range(int(SLOW * 2)):
        hover = await client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position},
                                     timeout=SLOW)
        if hover:
            return json.dumps(hover["contents"])
        await asyncio.sleep(0.5)
    raise AssertionError("no hover answer from typescript-language-server")


def shown_messages(client: HubClient) -> list[str]:
    return [params["message"] for method, params in client.notifications if method == "window/showMessage"]


# ============================================================================================ relative PATH entries
async def test_relative_path_entry_does_not_pick_the_workspace_binary(
        workspace: Path, marker: Path, start_hub: StartHub) -> None:
    """PATH=node_modules/.bin:$PATH, the hub started in the workspace: neither the workspace's
    typescript-language-server nor (through the server's `#!/usr/bin/env node`) its `node` may run."""
    bin_dir = workspace / "node_modules" / ".bin"
    _script(bin_dir / "typescript-language-server", f"#!/bin/sh\necho server >> '{marker}'\nexit 1\n")
    real_node = shutil.which("node")
    _script(bin_dir / "node", f"#!/bin/sh\necho node >> '{marker}'\nexec '{real_node}' \"$@\"\n")
    client = await start_hub(workspace, path=f"node_modules/.bin{os.pathsep}{os.environ['PATH']}")
    assert "answer" in await hover_text(client, workspace)
    assert not marker.exists(), marker.read_text()
    passed_over = [m for m in shown_messages(client) if "passed over" in m]
    assert passed_over and str(bin_dir / "typescript-language-server") in passed_over[0]
    status = await client.status()
    running = [s for s in status["servers"] if s["name"] == "typescript-language-server"]
    assert [s["state"] for s in running] == ["running"]
