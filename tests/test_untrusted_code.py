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
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from lsp_hub.transport.rawclient import HubClient, position_of

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
async def start_hub(hub_at: StartHub, require_binary: Callable[[str], str]) -> StartHub:
    require_binary("typescript-language-server")
    return hub_at


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


# ======================================================================================== the workspace's TypeScript
def hub_tsserver(require_binary: Callable[[str], str]) -> Path:
    """The TypeScript installed next to the typescript-language-server on PATH (what the hub pins)."""
    server = Path(os.path.realpath(require_binary("typescript-language-server")))
    for directory in server.parents:  # Node's package lookup, from the server's real location upward
        candidate = directory / "node_modules" / "typescript" / "lib" / "tsserver.js"
        if candidate.is_file():
            return Path(os.path.realpath(candidate))
    raise AssertionError(f"no TypeScript installed beside {server}")


def plant_typescript(root: Path, marker: Path, real_tsserver: Path) -> None:
    """A working node_modules/typescript whose tsserver.js notes that it ran. The modules are real copies (tsserver
    finds its libraries and plugins from its own file's location); the large .d.ts libraries are symlinks."""
    real_lib = real_tsserver.parent
    lib = root / "node_modules" / "typescript" / "lib"
    lib.mkdir(parents=True)
    shutil.copy(real_lib.parent / "package.json", lib.parent / "package.json")
    for entry in real_lib.iterdir():
        if entry.suffix == ".js" and entry.name != "tsserver.js":
            shutil.copy(entry, lib / entry.name)
        elif entry.name != "tsserver.js":
            (lib / entry.name).symlink_to(entry)
    (lib / "tsserver.js").write_text(
        f"require('fs').appendFileSync({json.dumps(str(marker))}, 'workspace tsserver\\n');\n"
        + real_tsserver.read_text())


def typescript_in_use(client: HubClient) -> list[str]:
    """typescript-language-server's own "Using Typescript version ... from path ..." log lines."""
    return [params["message"] for method, params in client.notifications
            if method == "window/logMessage" and "Using Typescript version" in params.get("message", "")]


async def test_workspace_typescript_runs_only_in_a_trusted_workspace(
        workspace: Path, marker: Path, tmp_path: Path, start_hub: StartHub,
        require_binary: Callable[[str], str]) -> None:
    real_tsserver = hub_tsserver(require_binary)
    plant_typescript(workspace, marker, real_tsserver)
    # A tsconfig.json plugin: tsserver looks for it beside itself, so only the workspace's tsserver would find it.
    plant_plugin_package(workspace, marker)
    (workspace / "tsconfig.json").write_text('{"compilerOptions": {"plugins": [{"name": "evil-plugin"}]}}\n')

    untrusted = await start_hub(workspace)
    assert "answer" in await hover_text(untrusted, workspace)
    await asyncio.sleep(1.0)  # the semantic server has loaded the project (and would have loaded plugins) by now
    assert not marker.exists(), marker.read_text()
    assert any(str(real_tsserver) in line for line in typescript_in_use(untrusted)), typescript_in_use(untrusted)
    await untrusted.stop()

    trust(workspace, tmp_path)
    trusted = await start_hub(workspace)
    assert "answer" in await hover_text(trusted, workspace)
    await trusted.wait_for(lambda: marker.exists() and "plugin" in marker.read_text(), timeout=SLOW,
                           what="the trusted workspace's tsserver.js to run and load the tsconfig plugin")
    assert "workspace tsserver" in marker.read_text()


async def test_untrusted_root_without_the_hubs_own_typescript_is_not_served(
        workspace: Path, marker: Path, tmp_path: Path, start_hub: StartHub,
        require_binary: Callable[[str], str]) -> None:
    """typescript-language-server installed without a TypeScript beside it: nothing outside the workspace to pin,
    so the server is not started for the untrusted root, and the user is told why, once."""
    plant_typescript(workspace, marker, hub_tsserver(require_binary))
    lonely = tmp_path / "lonely" / "bin" / "typescript-language-server"
    _script(lonely, f"#!/bin/sh\nexec '{os.path.realpath(require_binary('typescript-language-server'))}' \"$@\"\n")
    # The wrapper's real location has no node_modules/typescript above it; no other server is on this PATH.
    client = await start_hub(workspace, path=f"{lonely.parent}{os.pathsep}/usr/bin{os.pathsep}/bin")
    uri = client.open(workspace / "main.ts", "typescript")
    await client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                "position": position_of(SOURCE, "answer * 2")}, timeout=SLOW)
    client.open(workspace / "other.ts", "typescript", text=SOURCE)
    await client.wait_for(lambda: [m for m in shown_messages(client) if "was not started" in m], timeout=SLOW,
                          what="the reason typescript-language-server was not started")
    refusals = [m for m in shown_messages(client) if "was not started" in m]
    assert len(refusals) == 1 and "node_modules/typescript/lib/tsserver.js" in refusals[0], refusals
    assert not marker.exists()
    status = await client.status()
    assert [s["state"] for s in status["servers"] if s["name"] == "typescript-language-server"] == ["missing"]


# ============================================================================================ tsserver plugins
def plant_plugin_package(root: Path, marker: Path) -> None:
    plugin = root / "node_modules" / "evil-plugin"
    plugin.mkdir(parents=True)
    (plugin / "package.json").write_text('{"name": "evil-plugin", "version": "1.0.0", "main": "index.js"}\n')
    (plugin / "index.js").write_text(
        f"require('fs').appendFileSync({json.dumps(str(marker))}, 'plugin\\n');\n"
        "module.exports = () => ({ create: (info) => info.languageService });\n")


def plant_plugin(root: Path, marker: Path) -> None:
    """The plugin, named in an (untrusted) project file's initialization options."""
    plant_plugin_package(root, marker)
    (root / ".lsp-hub.toml").write_text(
        "[server.typescript-language-server.initialization_options]\n"
        f"plugins = [{{ name = \"evil-plugin\", location = {json.dumps(str(root))} }}]\n")


async def test_project_file_plugins_load_only_in_a_trusted_workspace(
        workspace: Path, marker: Path, tmp_path: Path, start_hub: StartHub) -> None:
    plant_plugin(workspace, marker)
    untrusted = await start_hub(workspace)
    assert "answer" in await hover_text(untrusted, workspace)
    await asyncio.sleep(1.0)  # the semantic server has loaded the project (and would have loaded plugins) by now
    assert not marker.exists(), marker.read_text()
    problems = (await untrusted.status())["configProblems"]
    assert any("initialization_options.plugins" in problem for problem in problems), problems
    await untrusted.stop()

    trust(workspace, tmp_path)
    trusted = await start_hub(workspace)
    assert "answer" in await hover_text(trusted, workspace)
    await trusted.wait_for(marker.exists, timeout=SLOW, what="the trusted project's tsserver plugin to load")
