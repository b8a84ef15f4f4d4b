"""A session's configuration is loaded in a thread, within a deadline (issue #20): while it loads, the event loop
serves everyone else, the session stays "new", and a configuration that takes too long leaves the project files
out, saying so."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.config import loader
from lsp_hub.config.loader import LoadedConfig, load_config
from lsp_hub.proxy.session import Session
from lsp_hub.proxy.workspace import Workspaces
from lsp_hub.transport.jsonrpc import INVALID_REQUEST, REQUEST_FAILED, SERVER_NOT_INITIALIZED
from tests.test_message_path import Recorder, bodies, endpoint


class SlowLoad:
    """load_config that waits for `release` (a threading.Event) first: when reading the project files only, or
    always."""

    def __init__(self, *, even_without_project_files: bool = False) -> None:
        self.release = threading.Event()
        self.even_without_project_files = even_without_project_files
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **options: Any) -> LoadedConfig:
        self.calls.append(options)
        if options.get("unread_project_reason") is None or self.even_without_project_files:
            self.release.wait(10)
        return load_config(**options)


@pytest.fixture
def slow_load(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowLoad]:
    slow = SlowLoad()
    monkeypatch.setattr(loader, "load_config", slow)
    yield slow
    slow.release.set()  # no thread left waiting


class Client:
    """A session in this process, driven message by message."""

    def __init__(self) -> None:
        self.out = Recorder()
        self.protocol = endpoint(self.out, "client")
        self.workspaces = Workspaces()
        self.session = Session(self.protocol, workspaces=self.workspaces)
        self._ids = 0

    def send(self, method: str, params: Any = None) -> int:
        self._ids += 1
        self.protocol.handle_message({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        return self._ids

    def answers(self) -> dict[Any, dict[str, Any]]:
        return {message["id"]: message for message in bodies(self.out.writes) if "id" in message}

    def shown(self) -> list[str]:
        return [message["params"]["message"] for message in bodies(self.out.writes)
                if message.get("method") == "window/showMessage"]

    async def answer(self, msg_id: int, seconds: float = 5.0) -> dict[str, Any]:
        for _ in range(int(seconds / 0.01)):
            if msg_id in self.answers():
                return self.answers()[msg_id]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no answer to request {msg_id}")


def initialize_params(root: Path) -> dict[str, Any]:
    return {"processId": None, "rootUri": root.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".lsp-hub.toml").write_text("[server.ruff]\ndisabled = true\n")
    return root


async def test_while_the_configuration_loads_the_session_is_new_and_the_loop_is_free(
        slow_load: SlowLoad, workspace: Path) -> None:
    client = Client()
    first = client.send("initialize", initialize_params(workspace))
    early = client.send("textDocument/hover", {"textDocument": {"uri": (workspace / "a.py").as_uri()},
                                               "position": {"line": 0, "character": 0}})
    second = client.send("initialize", initialize_params(workspace))
    await asyncio.sleep(0.2)  # this loop runs: the loading waits in its own thread
    answers = client.answers()
    assert first not in answers and client.session.state == "new"
    assert answers[early]["error"] == {"code": SERVER_NOT_INITIALIZED,
                                       "message": "textDocument/hover before initialize"}
    assert answers[second]["error"] == {"code": INVALID_REQUEST, "message": "initialize was already received"}
    slow_load.release.set()
    assert "capabilities" in (await client.answer(first))["result"]
    assert client.session.state == "initialized" and client.session.workspace.config.servers["ruff"].disabled
    await client.session.close()


async def test_past_the_deadline_the_project_files_are_left_out_and_the_client_told(
        slow_load: SlowLoad, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lsp_hub.proxy.config_loading.CONFIG_DEADLINE_SECONDS", 0.3)
    client = Client()
    answer = await client.answer(client.send("initialize", initialize_params(workspace)))
    assert "capabilities" in answer["result"] and client.session.state == "initialized"
    assert not client.session.workspace.config.servers["ruff"].disabled  # the project file was not applied
    project = workspace / ".lsp-hub.toml"
    assert client.session.config_problems == [f"{project}: could not be read within 0.3 s; ignored"]
    await asyncio.sleep(0.05)
    assert client.shown() == [f"lsp-hub configuration problems: {project}: could not be read within 0.3 s; "
                              "ignored. Valid settings still apply."]
    await client.session.close()


async def test_when_even_the_users_files_hang_initialize_fails_and_may_be_sent_again(
        slow_load: SlowLoad, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lsp_hub.proxy.config_loading.CONFIG_DEADLINE_SECONDS", 0.2)
    slow_load.even_without_project_files = True
    client = Client()
    answer = await client.answer(client.send("initialize", initialize_params(workspace)))
    assert answer["error"]["code"] == REQUEST_FAILED
    assert "could not read its configuration within 0.2 s" in answer["error"]["message"]
    assert client.session.state == "new" and list(client.workspaces) == []
    slow_load.even_without_project_files = False
    slow_load.release.set()
    retried = await client.answer(client.send("initialize", initialize_params(workspace)))
    assert "capabilities" in retried["result"] and client.session.state == "initialized"
    await client.session.close()


async def test_a_client_that_leaves_while_its_configuration_loads_joins_no_workspace(
        slow_load: SlowLoad, workspace: Path) -> None:
    client = Client()
    client.send("initialize", initialize_params(workspace))
    await asyncio.sleep(0.05)
    await client.session.close()
    slow_load.release.set()
    await asyncio.sleep(0.2)
    assert client.session.state == "closed" and list(client.workspaces) == []
