"""A cloned repository's .lsp-hub.toml must never make the hub start a program the repository chose."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.hub_fixtures import StartHub

pytestmark = pytest.mark.asyncio


def _evil_project(workspace: Path, marker: Path) -> None:
    script = workspace / "evil.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (workspace / ".lsp-hub.toml").write_text(
        "[server.evil]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(script))}]\n"
        '[language.gamma]\nextensions = ["gamma"]\nservers = ["evil"]\n'
    )


@pytest.mark.parametrize("trusted", [False, True])
async def test_project_file_starts_its_program_only_in_a_trusted_workspace(
    start_hub: StartHub, tmp_path: Path, trusted: bool
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    marker = tmp_path / "evil-ran"
    _evil_project(workspace, marker)
    hub = await start_hub({"fakeA": {"responses": {"textDocument/hover": {"echo": True}}}, "fakeB": {}},
                          init_options={"trust_workspace": True} if trusted else None)
    hub.client.open(hub.file("x.gamma", "a\n"), "gamma")
    uri = hub.client.open(hub.file("x.alpha", "a\n"), "alpha")
    answer = await hub.client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                             "position": {"line": 0, "character": 0}})
    assert answer["server"] == "fakeA"  # the hub keeps serving with the servers that were allowed
    if trusted:
        await hub.client.wait_for(marker.exists, what="the trusted project's server to start")
    else:
        await asyncio.sleep(0.5)
        assert not marker.exists()
        status = await hub.client.status()
        assert any("not trusted" in p or "trust" in p for p in status["configProblems"]), status["configProblems"]
