"""`lspHub.callers` confirmed by a language server (issue 11): the index's callers merged with the call sites the
server that serves the definition's file lists (call hierarchy, else references), each with its origin, within a
bounded wait; scripted with the fake server."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fake_server import DEFAULT_CAPABILITIES
from tests.hub_fixtures import HubUnderTest, StartHub

pytestmark = pytest.mark.asyncio

LANGUAGES = {"python": {"extensions": ["py"], "language_ids": ["python"], "servers": ["fakeA"]}}
CORE = "def compute_total(items):\n    return sum(items)\n"
USER = "from pkg.core import compute_total\n\n\ndef report():\n    return compute_total([1])\n"
LEGACY = "from pkg.core import compute_total\n\n\ndef legacy():\n    return compute_total([3])\n"
# A call the index cannot see (through getattr): only the server knows it.
DYNAMIC = "import pkg.core\n\n\ndef dynamic():\n    run = getattr(pkg.core, 'compute_total')\n    return run([2])\n"


def span(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


def item(uri: str, name: str, line: int) -> dict[str, Any]:
    return {"name": name, "kind": 12, "uri": uri, "range": span(line, 0, 10), "selectionRange": span(line, 4, 10)}


def call_hierarchy_server(workspace: Path, incoming: dict[str, Any], references: bool = False) -> dict[str, Any]:
    """fakeA offering call hierarchy and references: its call hierarchy lists report's call in user.py and the
    dynamic one in dyn.py (not legacy's: a server can miss what the index sees). With `references`, the dynamic
    call is listed by its references only (with report's call again, and the import, which is no call)."""
    user, dynamic = (workspace / "pkg/user.py").as_uri(), (workspace / "pkg/dyn.py").as_uri()
    calls = [
        {"from": item(user, "report", 3), "fromRanges": [span(4, 11, 24)]},
        {"from": item(dynamic, "dynamic", 3), "fromRanges": [span(5, 11, 14)]},
    ]
    found = [
        {"uri": user, "range": span(0, 21, 34)},
        {"uri": user, "range": span(4, 11, 24)},
        {"uri": dynamic, "range": span(5, 11, 14)},
    ]
    return {
        "capabilities": {**DEFAULT_CAPABILITIES, "callHierarchyProvider": True},
        "responses": {
            "textDocument/prepareCallHierarchy": {"result": [item("{uri}", "compute_total", 0)]},
            "callHierarchy/incomingCalls": {"result": calls[:1] if references else calls, **incoming},
            "textDocument/references": {"result": found if references else []},
        },
    }


async def callers(hub: HubUnderTest, **arguments: Any) -> dict[str, Any]:
    result: dict[str, Any] = await hub.client.request(
        "workspace/executeCommand",
        {"command": "lspHub.callers", "arguments": [{"symbol": "compute_total", **arguments}]},
    )
    return result


async def workspace_with_server_running(
    start_hub: StartHub, tmp_path: Path, incoming: dict[str, Any], references: bool = False
) -> HubUnderTest:
    hub = await start_hub(
        {"fakeA": call_hierarchy_server(tmp_path / "ws", incoming, references)}, languages=LANGUAGES, initialize=False
    )
    for name, text in (
        ("pkg/__init__.py", ""),
        ("pkg/core.py", CORE),
        ("pkg/user.py", USER),
        ("pkg/legacy.py", LEGACY),
        ("pkg/dyn.py", DYNAMIC),
    ):
        hub.file(name, text)
    await hub.client.initialize(hub.workspace)
    hub.client.open(hub.workspace / "pkg/core.py", "python")  # starts fakeA
    await hub.client.wait_for(lambda: hub.received("fakeA", "textDocument/didOpen"), what="fakeA running")
    return hub


def sites(result: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [
        (Path(c["location"]["uri"]).name, c["location"]["range"]["start"]["line"], c["origin"])
        for c in result["callers"]
    ]


async def test_the_server_confirms_and_adds_call_sites_and_the_index_only_ones_come_last(
    start_hub: StartHub, tmp_path: Path
) -> None:
    hub = await workspace_with_server_running(start_hub, tmp_path, {})
    result = await callers(hub)
    assert sites(result) == [("dyn.py", 5, "server"), ("user.py", 4, "both"), ("legacy.py", 4, "index")]
    assert [c["caller"] for c in result["callers"]] == ["dynamic", "report", "legacy"]
    assert result["complete"] is True
    assert result["servers"] == [
        {"name": "fakeA", "method": "callHierarchy/incomingCalls", "complete": True},
        {"name": "fakeA", "method": "textDocument/references", "complete": True},
    ]
    # Asked for the index alone, nothing reaches the server.
    asked = len(hub.received("fakeA", "callHierarchy/incomingCalls"))
    alone = await callers(hub, servers=False)
    assert sites(alone) == [("legacy.py", 4, "index"), ("user.py", 4, "index")] and alone["servers"] == []
    assert len(hub.received("fakeA", "callHierarchy/incomingCalls")) == asked
    # depth 2: the index walks on from the caller only the server found (nobody calls dynamic: nothing more), and
    # from the index's own.
    hub.file("pkg/top.py", "from pkg.dyn import dynamic\n\n\ndef top():\n    dynamic()\n")
    hub.client.notify(
        "workspace/didChangeWatchedFiles", {"changes": [{"uri": (hub.workspace / "pkg/top.py").as_uri(), "type": 1}]}
    )
    for _ in range(100):
        deeper = await callers(hub, depth=2)
        if len(deeper["callers"]) > 3:
            break
        await asyncio.sleep(0.05)
    assert [
        (name, line, origin, c["depth"])
        for (name, line, origin), c in zip(sites(deeper), deeper["callers"], strict=True)
    ][-1] == ("top.py", 4, "index", 2)


async def test_call_hierarchy_and_references_are_both_asked_and_their_sites_joined(
    start_hub: StartHub, tmp_path: Path
) -> None:
    """typescript-language-server's call hierarchy lists no call of a class field holding a function, which its
    references do: what either lists is a call site, listed once."""
    hub = await workspace_with_server_running(start_hub, tmp_path, {}, references=True)
    result = await callers(hub)
    assert sites(result) == [("dyn.py", 5, "server"), ("user.py", 4, "both"), ("legacy.py", 4, "index")]
    assert [server["method"] for server in result["servers"]] == [
        "callHierarchy/incomingCalls",
        "textDocument/references",
    ]


async def test_servers_are_told_the_hub_asks_for_call_hierarchy_whatever_the_client(
    start_hub: StartHub, tmp_path: Path
) -> None:
    """typescript-language-server offers call hierarchy only to a client that declares it; the hub asks for call
    sites itself, so it declares it even for a client (an agent's) that does not."""
    hub = await workspace_with_server_running(start_hub, tmp_path, {})
    told = hub.received("fakeA", "initialize")[0]["capabilities"]["textDocument"]
    assert told["callHierarchy"] == {"dynamicRegistration": False}


async def test_a_slow_server_leaves_the_index_answer_marked_incomplete(start_hub: StartHub, tmp_path: Path) -> None:
    hub = await workspace_with_server_running(start_hub, tmp_path, {"delay": 5})
    started = time.monotonic()
    result = await callers(hub, timeoutMs=300)
    assert time.monotonic() - started < 3
    assert sites(result) == [("legacy.py", 4, "index"), ("user.py", 4, "index")]
    assert result["complete"] is False
    assert result["servers"] == [
        {"name": "fakeA", "method": "callHierarchy/incomingCalls", "complete": False},
        {"name": "fakeA", "method": "textDocument/references", "complete": True},
    ]
    await hub.client.wait_for(lambda: hub.received("fakeA", "$/cancelRequest"), what="the late request cancelled")


async def test_references_stand_in_for_call_hierarchy_and_without_a_server_the_index_answers_alone(
    start_hub: StartHub,
) -> None:
    def reference(name: str, line: int, start: int, end: int) -> dict[str, Any]:
        return {"uri": (hub.workspace / "pkg" / name).as_uri(), "range": span(line, start, end)}

    # fakeA offers references only; fakeB serves `.pyi` stubs and never runs.
    languages = {**LANGUAGES, "stub": {"extensions": ["pyi"], "servers": ["fakeB"]}}
    hub = await start_hub(
        {"fakeA": {"responses": {"textDocument/references": {"result": []}}}, "fakeB": {}},
        languages=languages,
        initialize=False,
    )
    for name, text in (
        ("pkg/__init__.py", ""),
        ("pkg/core.py", CORE),
        ("pkg/user.py", USER),
        ("pkg/dyn.py", DYNAMIC),
        ("pkg/stub.pyi", "def stubbed(): ...\n"),
        ("pkg/use_stub.py", "from pkg.stub import stubbed\n\nstubbed()\n"),
    ):
        hub.file(name, text)
    await hub.client.initialize(hub.workspace)
    stubbed = await hub.client.request(
        "workspace/executeCommand", {"command": "lspHub.callers", "arguments": [{"symbol": "stubbed"}]}
    )
    assert [c["origin"] for c in stubbed["callers"]] == ["index"] and stubbed["servers"] == []
    assert stubbed["complete"] is True

    # References: the import of the name (not a call) and the two calls; only the calls count.
    refs = [reference("user.py", 0, 21, 34), reference("user.py", 4, 11, 24), reference("dyn.py", 5, 11, 14)]
    await hub.client.stop()
    hub = await start_hub(
        {"fakeA": {"responses": {"textDocument/references": {"result": refs}}}, "fakeB": {}}, languages=languages
    )
    hub.client.open(hub.workspace / "pkg/core.py", "python")
    await hub.client.wait_for(lambda: hub.received("fakeA", "textDocument/didOpen"), what="fakeA running")
    result = await callers(hub)
    assert sites(result) == [("dyn.py", 5, "server"), ("user.py", 4, "both")]
    assert result["servers"] == [{"name": "fakeA", "method": "textDocument/references", "complete": True}]
    assert hub.received("fakeA", "textDocument/references")[-1]["context"] == {"includeDeclaration": False}
