"""Fixtures that start `lsp-hub` in front of fake servers (tests/fake_server.py), in a throwaway workspace."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_asyncio

from tests.hubclient import REPO_ROOT, HubClient, fake_server_config, recorded

FAKE_LANGUAGES = {
    "alpha": {"extensions": ["alpha"], "language_ids": ["alpha"], "servers": ["fakeA", "fakeB"]},
    "beta": {"extensions": ["beta"], "language_ids": ["beta"], "servers": ["fakeB"]},
}


@dataclass
class HubUnderTest:
    client: HubClient
    workspace: Path
    records: Path
    log_file: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def recorded(self, server: str) -> list[dict[str, Any]]:
        return recorded(self.records, server)

    def received(self, server: str, method: str) -> list[Any]:
        return [m.get("params") for m in self.recorded(server) if m.get("method") == method]

    def file(self, name: str, text: str = "") -> Path:
        path = self.workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def log(self) -> str:
        return self.log_file.read_text() if self.log_file.exists() else ""


StartHub = Callable[..., Awaitable[HubUnderTest]]


@pytest_asyncio.fixture
async def start_hub(tmp_path: Path) -> AsyncIterator[StartHub]:
    """start_hub(servers={name: spec}, languages=..., hub={...}, env={...}) -> a running, initialized hub."""
    started: list[HubClient] = []

    async def start(
        servers: dict[str, dict[str, Any]],
        languages: dict[str, dict[str, Any]] | None = None,
        hub: dict[str, Any] | None = None,
        init_options: dict[str, Any] | None = None,
        capabilities: dict[str, Any] | None = None,
        initialize: bool = True,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> HubUnderTest:
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        records = tmp_path / "records"
        records.mkdir(exist_ok=True)
        config = tmp_path / "hub.toml"
        config.write_text(fake_server_config(servers, languages or FAKE_LANGUAGES, hub, records))
        log_file = tmp_path / "hub.log"
        client = HubClient()
        hub_env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg-config"), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
                   **(env or {})}
        await client.start("--config", str(config), "--log-file", str(log_file), "-vv", *args, env=hub_env,
                           cwd=str(workspace))
        started.append(client)
        under_test = HubUnderTest(client, workspace, records, log_file)
        if initialize:
            under_test.extra["initialize"] = await client.initialize(
                workspace, init_options=init_options, capabilities=capabilities
            )
        return under_test

    yield start
    for client in started:
        await client.stop()


@pytest_asyncio.fixture
async def hub_at(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[HubClient]]]:
    """hub_at(root, path=None) -> `lsp-hub` with the built-in configuration (the real servers), initialized at
    root; `path` replaces the hub's PATH."""
    clients: list[HubClient] = []

    async def start(root: Path, *, path: str | None = None) -> HubClient:
        client = HubClient()
        env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
               **({"PATH": path} if path is not None else {})}
        await client.start("--log-file", str(tmp_path / "hub.log"), "-v", env=env, cwd=str(root))
        clients.append(client)
        await client.initialize(root)
        return client

    yield start
    for client in clients:
        await client.stop()


async def start_daemon(tmp_path: Path, flag: str, *args: str,
                       servers: dict[str, dict[str, Any]] | None = None,
                       languages: dict[str, dict[str, Any]] | None = None,
                       hub: dict[str, Any] | None = None,
                       ) -> tuple[asyncio.subprocess.Process, int]:
    """`lsp-hub --tcp 0` or `--ws 0` in front of fake servers; the process and the port it listens on."""
    config = tmp_path / "hub.toml"
    if servers is None:
        servers = {"fakeA": {"responses": {"textDocument/hover": {"echo": True}}}, "fakeB": {}}
    config.write_text(fake_server_config(servers, languages or FAKE_LANGUAGES, hub))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lsp_hub", flag, "0", "--config", str(config), "--log-file", str(tmp_path / "log"),
        *args, env=env, stderr=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL)
    assert process.stderr is not None
    seen = b""
    while not (match := re.search(rb"listening on \w+://[^ ]*:(\d+)", seen)):
        line = await asyncio.wait_for(process.stderr.readline(), 20)
        assert line, seen  # the hub ended before listening
        seen += line
    return process, int(match.group(1))


def pids_alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        # A zombie is dead for our purposes.
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split()[2] == "Z":
                    continue
        except OSError:
            continue
        alive.append(pid)
    return alive


def start_events(records: Path, server: str) -> list[dict[str, Any]]:
    path = records / f"{server}.jsonl"
    if not path.exists():
        return []
    events = (json.loads(line) for line in path.read_text().splitlines() if line)
    return [event for event in events if event.get("event") == "start"]
