"""One code index per workspace: the sessions of a root share it, and it outlives them on a daemon."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.hub_fixtures import start_daemon
from tests.hubclient import HubClient

pytestmark = pytest.mark.asyncio

LANGUAGES = {"python": {"extensions": ["py"], "language_ids": ["python"], "servers": ["fakeA"]},
             "alpha": {"extensions": ["alpha"], "servers": ["fakeA"]}}
CORE = "def compute_total(items):\n    return sum(items)\n"
USER = "from pkg.core import compute_total\n\n\ndef report():\n    return compute_total([1])\n"


def _project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text(CORE)
    user = root / "pkg" / "user.py"
    user.write_text(USER)
    return user


async def _client(port: int, root: Path) -> HubClient:
    client = HubClient()
    await client.connect_tcp("127.0.0.1", port)
    await client.initialize(root)
    return client


async def _ready(client: HubClient) -> dict[str, Any]:
    for _ in range(200):
        status = await client.status()
        if status.get("index", {}).get("state") == "ready":
            return status["index"]
        await asyncio.sleep(0.05)
    raise AssertionError("the index never became ready")


async def _command(client: HubClient, name: str, argument: dict[str, Any]) -> Any:
    return await client.request("workspace/executeCommand", {"command": name, "arguments": [argument]})


async def _callers(client: HubClient) -> list[str]:
    found = await _command(client, "lspHub.callers", {"symbol": "compute_total"})
    return sorted(c["caller"] for c in found["callers"])


def _builds_logged(log: Path, root: Path) -> int:
    return sum(1 for line in log.read_text().splitlines() if f"indexed {root}:" in line)


async def test_two_sessions_of_a_root_share_one_index_and_see_each_others_edits(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    user = _project(root)
    process, port = await start_daemon(tmp_path, "--tcp", "-v", languages=LANGUAGES)
    try:
        first = await _client(port, root)
        second = await _client(port, root)
        one, two = await _ready(first), await _ready(second)
        assert one["builds"] == two["builds"] == 1 and one["roots"] == two["roots"] == [str(root)]
        assert _builds_logged(tmp_path / "log", root) == 1

        uri = first.open(user, "python")
        first.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 0}},
             "text": "\ndef summarize_everything():\n    return compute_total([2])\n"}]})
        for _ in range(100):
            if await _callers(second) == ["report", "summarize_everything"]:
                break
            await asyncio.sleep(0.05)
        assert await _callers(second) == ["report", "summarize_everything"]  # the first's unsaved text
        repo_map = await _command(second, "lspHub.repoMap", {"mentionedIdents": ["summarize_everything"]})
        assert "summarize_everything" in repo_map["text"]

        # The second writes the document too: the index takes the latest writer's text.
        second.open(user, "python", text=USER.replace("report", "weekly_report"))
        for _ in range(100):
            if await _callers(first) == ["weekly_report"]:
                break
            await asyncio.sleep(0.05)
        assert await _callers(first) == ["weekly_report"]

        # The first leaves: the index stays, with the second's text.
        await first.disconnect()
        await asyncio.sleep(0.5)
        assert await _callers(second) == ["weekly_report"]
        assert (await _ready(second))["builds"] == 1
        await second.disconnect()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)
    assert _builds_logged(tmp_path / "log", root) == 1


@pytest.mark.parametrize("with_a_server", [True, False])
async def test_after_the_last_client_leaves_the_next_queries_the_warm_index(tmp_path: Path,
                                                                           with_a_server: bool) -> None:
    """An agent's `lsp-hub query repomap` after another: the index is warm whether or not a server runs there
    (the workspace lingers for idle_shutdown_seconds after its last session)."""
    root = tmp_path / "ws"
    user = _project(root)
    process, port = await start_daemon(tmp_path, "--tcp", "-v", languages=LANGUAGES)
    try:
        first = await _client(port, root)
        if with_a_server:
            first.open(user, "python")  # fakeA starts
        assert (await _ready(first))["builds"] == 1
        assert await _callers(first) == ["report"]
        await first.request("shutdown", None)
        first.notify("exit", None)
        await first.disconnect()
        await asyncio.sleep(0.3)

        second = await _client(port, root)
        status = await second.status()
        assert status["index"]["state"] == "ready" and status["index"]["builds"] == 1  # no build, not even started
        repo_map = await _command(second, "lspHub.repoMap", {"mentionedIdents": ["compute_total"]})
        assert "compute_total" in repo_map["text"]
        assert await _callers(second) == ["report"]
        await second.disconnect()
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 15)
    assert _builds_logged(tmp_path / "log", root) == 1


async def test_a_workspace_whose_root_failed_to_build_is_failed_not_building() -> None:
    from lsp_hub.proxy.index_shared import _joint_state

    assert _joint_state(["ready", "failed"]) == "failed"
    assert _joint_state(["ready", "building"]) == "building"
    assert _joint_state(["ready", "ready"]) == "ready"
