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


async def test_project_file_with_inf_and_nan_timings_is_reported_and_its_deadline_is_not_used(
        start_hub: StartHub, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    user_config = tmp_path / "xdg-config" / "lsp-hub" / "config.toml"  # the hub's XDG_CONFIG_HOME in start_hub
    user_config.parent.mkdir(parents=True)
    user_config.write_text("[hub]\nrequest_timeout_seconds = 1.5\n")  # the earlier layer, which must still apply
    (workspace / ".lsp-hub.toml").write_text("[hub]\nrequest_timeout_seconds = inf\n"
                                              "[server.fakeA]\nrequest_timeout_seconds = nan\n")
    hub = await start_hub({"fakeA": {"responses": {"textDocument/hover": {"hang": True}}}},
                          languages={"alpha": {"extensions": ["alpha"], "servers": ["fakeA"]}},
                          hub={"initialize_timeout_seconds": 20.0})
    status = await hub.client.status()
    problems = [p for p in status["configProblems"] if "expected a finite number" in p]
    assert [p.split(": ")[1] for p in problems] == ["hub.request_timeout_seconds",
                                                     "server.fakeA.request_timeout_seconds"], problems
    uri = hub.client.open(hub.file("x.alpha", "a\n"), "alpha")
    started = asyncio.get_running_loop().time()
    with pytest.raises(Exception, match=r"within 1\.5 s"):  # the user's deadline, not none (inf) or a random one (nan)
        await hub.client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                        "position": {"line": 0, "character": 0}}, timeout=15.0)
    assert 1.4 <= asyncio.get_running_loop().time() - started < 10.0
