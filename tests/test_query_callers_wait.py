"""`lsp-hub query callers`: the definitions' files are opened for their servers together, and waited for within
one wait's time in all (vite's four playgrounds, each a TypeScript project of its own, took 23.6 s one after
another)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsp_hub.agents.query import index_actions
from lsp_hub.agents.query.documents import Workspace
from lsp_hub.agents.query.hub_requests import hub_wait_ms


def test_the_files_open_together_and_share_one_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = []
    for number in range(4):
        path = tmp_path / f"play{number}" / "server.ts"
        path.parent.mkdir()
        path.write_text("export function createServer() {}\n")
        paths.append(path)
    events: list[tuple[str, Any]] = []
    clock = [100.0]

    def hub_command(workspace: Workspace, command: str, arguments: dict[str, Any] | None = None, **_: Any) -> Any:
        if command == "lspHub.callers":
            return {"definitions": [{"uri": path.as_uri()} for path in paths]}
        assert command == "lspHub.diagnostics" and arguments is not None
        events.append(("wait", arguments["timeoutMs"]))
        clock[0] += arguments["timeoutMs"] / 1000  # a server that never reports: every wait runs out
        return {}

    class Opening(Workspace):
        def open(self, path: Path) -> str:
            events.append(("open", path))
            return path.as_uri()

    monkeypatch.setattr(index_actions, "hub_command", hub_command)
    monkeypatch.setattr(index_actions, "languages_of", lambda workspace: [])
    monkeypatch.setattr(index_actions, "language_entry", lambda languages, path: {"servers": [{"state": "idle"}]})
    monkeypatch.setattr(index_actions, "monotonic", lambda: clock[0])
    workspace = Opening(tmp_path, timeout=30.0)
    index_actions.open_for_servers(workspace, {"symbol": "createServer"})
    assert [kind for kind, _ in events] == ["open"] * 4 + ["wait"] * 4
    waits = [value for kind, value in events if kind == "wait"]
    assert waits[0] == hub_wait_ms(30.0) and waits[1:] == [index_actions.MIN_WAIT_MS] * 3
