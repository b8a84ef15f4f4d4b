"""Syntax through the hub: server-less documents and lspHub.syntaxCheck judged by the language's own parser, the
TypeScript helper's lifetime (started on first use, gone with the hub even when the hub is killed)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import find_required_binary
from tests.hub_fixtures import HubUnderTest, StartHub, pids_alive

pytestmark = pytest.mark.asyncio

# No server for Python, TypeScript or JSON here (the built-in ones are taken off), so the hub publishes its own
# syntax diagnostics for them.
LANGUAGES = {"alpha": {"extensions": ["alpha"], "servers": ["fakeA"]},
             **{name: {"servers": []} for name in ("python", "typescript", "json", "jsonc")}}
BROKEN_TS = "function f() {\n  return 1;\n}\nlet y = f(,);\n"  # tree-sitter accepts this


async def command(hub: HubUnderTest, name: str, argument: dict[str, Any]) -> Any:
    return await hub.client.request("workspace/executeCommand", {"command": name, "arguments": [argument]})


def typescript_installed() -> None:
    """The hub finds TypeScript beside typescript-language-server on PATH (`make setup`, `. scripts/env.sh`)."""
    find_required_binary("node")
    find_required_binary("typescript-language-server")


async def helper_pid(hub: HubUnderTest) -> int:
    status = await hub.client.status()
    [checkers] = status["index"]["syntaxCheckers"].values()
    pid = checkers["typescript"]["pid"]
    assert isinstance(pid, int), checkers
    return pid


async def test_documents_without_a_server_get_their_languages_own_syntax_errors_and_the_helper_restarts(
        start_hub: StartHub) -> None:
    typescript_installed()
    hub = await start_hub({"fakeA": {}}, languages=LANGUAGES)
    uri = hub.client.open(hub.file("src/a.ts", "export const a = 1;\n"), "typescript", text=BROKEN_TS)
    diagnostics = await hub.client.wait_diagnostics(uri, lambda d: len(d) > 0)
    assert [(d["range"]["start"], d["message"], d["source"]) for d in diagnostics] == [
        ({"line": 3, "character": 10}, "Argument expression expected.", "lsp-hub")]
    checked = await command(hub, "lspHub.syntaxCheck", {"uri": uri})
    assert checked["checker"].startswith("typescript-5.") and checked["ok"] is False
    assert [e["message"] for e in checked["errors"]] == ["Argument expression expected."]

    python = hub.client.open(hub.file("m.py", ""), "python", text="def f():\n    x = 1\n    global x\n")
    diagnostics = await hub.client.wait_diagnostics(python, lambda d: len(d) > 0)
    assert [d["message"] for d in diagnostics] == ["name 'x' is assigned to before global declaration"]
    tsconfig = hub.file("tsconfig.json", '{\n  // strict\n  "compilerOptions": {"strict": true,},\n}\n')
    assert (await command(hub, "lspHub.syntaxCheck", {"uri": tsconfig.as_uri()}))["ok"] is True
    broken_json = await command(hub, "lspHub.syntaxCheck", {"uri": "data.json", "text": '{"a": 1,}'})
    assert (broken_json["checker"], broken_json["errors"][0]["message"]) == (
        "json", "Expecting property name enclosed in double quotes")

    # The TypeScript helper, killed, is started again by the next check.
    first = await helper_pid(hub)
    os.kill(first, signal.SIGKILL)
    checked = await command(hub, "lspHub.syntaxCheck", {"uri": "b.ts", "text": BROKEN_TS})
    assert checked["checker"].startswith("typescript-") and checked["ok"] is False
    assert await helper_pid(hub) != first


async def test_without_node_typescript_falls_back_to_tree_sitter_and_says_why(start_hub: StartHub,
                                                                              tmp_path: Path) -> None:
    # The fake servers run on the hub's Python by absolute path: a PATH without node takes nothing else away.
    hub = await start_hub({"fakeA": {}}, languages=LANGUAGES, env={"PATH": str(tmp_path / "no-tools")})
    checked = await command(hub, "lspHub.syntaxCheck", {"uri": "a.ts", "text": "let x = ;\n"})
    assert (checked["checker"], checked["ok"]) == ("tree-sitter", False)
    assert checked["fallbackReason"].startswith("node not found")
    status = await hub.client.status()
    [checkers] = status["index"]["syntaxCheckers"].values()
    assert checkers["typescript"]["checker"] == "tree-sitter"
    assert checkers["typescript"]["reason"].startswith("node not found")


async def test_the_typescript_helper_ends_with_a_killed_hub(start_hub: StartHub) -> None:
    typescript_installed()
    hub = await start_hub({"fakeA": {}}, languages=LANGUAGES)
    checked = await command(hub, "lspHub.syntaxCheck", {"uri": "a.ts", "text": BROKEN_TS})
    assert checked["checker"].startswith("typescript-")
    pid = await helper_pid(hub)
    assert pids_alive([pid]) == [pid]
    hub.client.process.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 5
    while pids_alive([pid]) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    left = pids_alive([pid])
    for survivor in left:
        with contextlib.suppress(OSError):
            os.kill(survivor, signal.SIGKILL)
    assert left == [], "the TypeScript helper outlived the hub"
    await asyncio.wait_for(hub.client.process.wait(), 5)


async def test_the_typescript_helper_ends_when_the_hub_exits(start_hub: StartHub) -> None:
    typescript_installed()
    hub = await start_hub({"fakeA": {}}, languages=LANGUAGES)
    await command(hub, "lspHub.syntaxCheck", {"uri": "a.ts", "text": "let x = 1;\n"})
    pid = await helper_pid(hub)
    await hub.client.request("shutdown", None, timeout=5)
    hub.client.notify("exit", None)
    await asyncio.wait_for(hub.client.process.wait(), 10)
    deadline = time.monotonic() + 5
    while pids_alive([pid]) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert pids_alive([pid]) == []
