"""References and renames that cover the workspace (issue 21, item 6): a server answers only for the files it
analyses, so the hub completes its references with the index's uses in the files it listed nothing in, each
tagged with its origin, and a rename applied covers them too, or is refused naming what it would miss. Scripted
with the fake server: it "analyses" pkg/ only, as basedpyright does with `[tool.pyright] include = ["pkg"]`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.agents.agent_tools import AgentTools, ToolFailure
from lsp_hub.agents.query import HubConnection, spawn_hub
from tests.fake_server import DEFAULT_CAPABILITIES
from tests.hub_fixtures import HubUnderTest, StartHub
from tests.hubclient import fake_server_config

LANGUAGES = {"python": {"extensions": ["py"], "language_ids": ["python"], "servers": ["fakeA"]}}
FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def compute_total(items):\n    return sum(items)\n",
    "pkg/user.py": "from pkg.core import compute_total\n\n\ndef report():\n    return compute_total([1])\n",
    # Outside what the server analyses: a test that imports and calls it, and one that uses it under an alias.
    "tests/test_core.py": ("from pkg.core import compute_total\n\n\ndef test_total():\n"
                           "    assert compute_total([1, 2]) == 3\n"),
    "tests/test_alias.py": ("from pkg.core import compute_total as total\n\n\ndef test_alias():\n"
                            "    assert total([1]) == 1\n"),
    # Read, not called (the name in the comment and the string is not a use).
    "tests/test_handlers.py": ("from pkg.core import compute_total\n\n"
                               "HANDLERS = [compute_total]  # compute_total, 'compute_total'\n"),
}


def span(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


def server_answers(root: Path, new_name: str = "grand_total") -> dict[str, Any]:
    """fakeA: references and rename for the files of pkg/ only (the definition, the import and the call)."""
    core, user = (root / "pkg/core.py").as_uri(), (root / "pkg/user.py").as_uri()
    references = [{"uri": core, "range": span(0, 4, 17)}, {"uri": user, "range": span(0, 21, 34)},
                  {"uri": user, "range": span(4, 11, 24)}]
    rename = {"changes": {core: [{"range": span(0, 4, 17), "newText": new_name}],
                          user: [{"range": span(0, 21, 34), "newText": new_name},
                                 {"range": span(4, 11, 24), "newText": new_name}]}}
    return {"capabilities": {**DEFAULT_CAPABILITIES, "referencesProvider": True, "renameProvider": True},
            "diagnostics_on_open_and_change": [],
            "responses": {"textDocument/references": {"result": references},
                          "textDocument/rename": {"result": rename}}}


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def where(root: Path, name: str, line: int, character: int) -> dict[str, Any]:
    return {"textDocument": {"uri": (root / name).as_uri()}, "position": {"line": line, "character": character}}


def listed(locations: list[dict[str, Any]], root: Path) -> list[tuple[Any, ...]]:
    return [(str(Path(entry["uri"].removeprefix("file://")).relative_to(root)), entry["range"]["start"]["line"],
             entry["range"]["start"]["character"], *([entry["origin"]] if "origin" in entry else []))
            for entry in locations]


async def hub_with_server_running(start_hub: StartHub, tmp_path: Path) -> HubUnderTest:
    root = tmp_path / "ws"
    hub = await start_hub({"fakeA": server_answers(root)}, languages=LANGUAGES, initialize=False)
    write_files(hub.workspace, FILES)
    await hub.client.initialize(hub.workspace)
    hub.client.open(hub.workspace / "pkg/core.py", "python")
    await hub.client.wait_for(lambda: hub.received("fakeA", "textDocument/didOpen"), what="fakeA running")
    return hub


@pytest.mark.asyncio
async def test_an_lsp_clients_references_include_the_index_uses_in_files_the_server_left_out(
        start_hub: StartHub, tmp_path: Path) -> None:
    hub = await hub_with_server_running(start_hub, tmp_path)
    root = hub.workspace
    params = {**where(root, "pkg/core.py", 0, 6), "context": {"includeDeclaration": True}}
    expected_from_index = [("tests/test_alias.py", 0, 21), ("tests/test_alias.py", 4, 11),
                           ("tests/test_core.py", 0, 21), ("tests/test_core.py", 4, 11),
                           ("tests/test_handlers.py", 0, 21), ("tests/test_handlers.py", 2, 12)]
    answer: list[dict[str, Any]] = []
    for _ in range(100):  # the index may still be building its first time round
        answer = await hub.client.request("textDocument/references", params)
        if len(answer) > 3:
            break
        await hub.client.wait_for(lambda: True, what="a moment")
    # The server's three, then the four only the index knows; plain Locations, as the spec shapes them.
    assert sorted(listed(answer, root)) == sorted([("pkg/core.py", 0, 4), ("pkg/user.py", 0, 21),
                                                   ("pkg/user.py", 4, 11), *expected_from_index])
    assert all(set(entry) == {"uri", "range"} for entry in answer)

    # lspHub.references says where each came from, and which files no server listed anything in.
    covered = await hub.client.request("workspace/executeCommand", {
        "command": "lspHub.references", "arguments": [{"uri": (root / "pkg/core.py").as_uri(),
                                                       "position": {"line": 0, "character": 6}}]})
    assert listed(covered["locations"], root) == [
        ("pkg/core.py", 0, 4, "both"), ("pkg/user.py", 0, 21, "both"), ("pkg/user.py", 4, 11, "both"),
        *[(*site, "index") for site in expected_from_index]]
    assert [Path(uri).name for uri in covered["uncovered"]] == ["test_alias.py", "test_core.py", "test_handlers.py"]
    assert covered["servers"] == [{"name": "fakeA", "complete": True}] and covered["complete"] is True


class Agent:
    """AgentTools (what `lsp-hub mcp` runs) over a hub of its own in front of fakeA."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "ws"
        self.root.mkdir()
        config_home = tmp_path / "config"
        (config_home / "lsp-hub").mkdir(parents=True)
        (config_home / "lsp-hub" / "config.toml").write_text(
            fake_server_config({"fakeA": server_answers(self.root)}, LANGUAGES))
        env = {"XDG_CONFIG_HOME": str(config_home), "XDG_CACHE_HOME": str(tmp_path / "cache")}

        def connect(root: Path) -> HubConnection:
            return spawn_hub(root, env=env)

        self.tools = AgentTools(self.root, connect, timeout=20.0)


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    made = Agent(tmp_path)
    yield made
    made.tools.close()


def test_references_through_the_agent_tools_carry_their_origin(agent: Agent) -> None:
    write_files(agent.root, FILES)
    answer = agent.tools.lsp("references", file="pkg/core.py", line=1, column=7)
    origins = {(Path(entry["path"]).relative_to(agent.root).as_posix(), entry["line"]): entry["origin"]
               for entry in answer.data["locations"]}
    assert origins == {("pkg/core.py", 1): "both", ("pkg/user.py", 1): "both", ("pkg/user.py", 5): "both",
                       ("tests/test_alias.py", 1): "index", ("tests/test_alias.py", 5): "index",
                       ("tests/test_core.py", 1): "index", ("tests/test_core.py", 5): "index",
                       ("tests/test_handlers.py", 1): "index", ("tests/test_handlers.py", 3): "index"}
    assert [Path(path).name for path in answer.data["uncovered"]] == ["test_alias.py", "test_core.py",
                                                                      "test_handlers.py"]
    assert "[index]" in answer.text and "no server listed anything in 3 file(s)" in answer.text


def test_a_rename_applied_covers_the_files_the_server_left_out(agent: Agent) -> None:
    write_files(agent.root, FILES)
    preview = agent.tools.lsp("rename", file="pkg/core.py", line=1, column=7, new_name="grand_total")
    assert "+    assert grand_total([1, 2]) == 3" in preview.text  # the preview shows the index's edits too
    assert (agent.root / "tests/test_core.py").read_text() == FILES["tests/test_core.py"]
    answer = agent.tools.lsp("rename", file="pkg/core.py", line=1, column=7, new_name="grand_total", apply=True)
    assert answer.data["applied"] is True
    assert (agent.root / "tests/test_core.py").read_text() == FILES["tests/test_core.py"].replace(
        "compute_total", "grand_total")
    # A use under an alias keeps the alias; its import names the new name.
    assert (agent.root / "tests/test_alias.py").read_text() == FILES["tests/test_alias.py"].replace(
        "compute_total", "grand_total")
    assert (agent.root / "tests/test_handlers.py").read_text() == (
        "from pkg.core import grand_total\n\nHANDLERS = [grand_total]  # compute_total, 'compute_total'\n")
    assert sorted((entry["path"], entry["line"]) for entry in answer.data["from_index"]) == sorted([
        (str(agent.root / "tests/test_alias.py"), 1), (str(agent.root / "tests/test_core.py"), 1),
        (str(agent.root / "tests/test_core.py"), 5), (str(agent.root / "tests/test_handlers.py"), 1),
        (str(agent.root / "tests/test_handlers.py"), 3)])


def test_a_rename_that_would_miss_a_use_is_refused_naming_it(agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(agent.root, FILES)
    from lsp_hub.agents import query
    from lsp_hub.agents.query import edit_actions

    covering = edit_actions.covering_references

    def a_use_that_reads_otherwise(workspace: query.Workspace, where: dict[str, Any]) -> dict[str, Any]:
        """The index's answer, with one more use in a file the server left out where the file reads `assert`, not
        the old name (changed behind the index's back, say): no exact edit can rename it."""
        answer = covering(workspace, where)
        answer["locations"].append({"uri": (agent.root / "tests/test_core.py").as_uri(), "range": span(4, 4, 10),
                                    "origin": "index", "name": "compute_total"})
        return answer

    monkeypatch.setattr(edit_actions, "covering_references", a_use_that_reads_otherwise)
    with pytest.raises(ToolFailure, match=r"nothing written.*1 use.*tests/test_core.py:5:5  reads 'assert'"):
        agent.tools.lsp("rename", file="pkg/core.py", line=1, column=7, new_name="grand_total", apply=True)
    assert {name: (agent.root / name).read_text() for name in FILES} == FILES  # nothing written, anywhere


def test_a_rename_is_refused_when_the_server_gives_no_references(tmp_path: Path) -> None:
    """Without the server's references the hub cannot tell which files it covers: the rename is not applied."""
    agent = Agent(tmp_path)
    try:
        spec = server_answers(agent.root)
        spec["responses"]["textDocument/references"] = {"error": {"code": -32603, "message": "no project"}}
        config = agent.root.parent / "config" / "lsp-hub" / "config.toml"
        config.write_text(fake_server_config({"fakeA": spec}, LANGUAGES))
        write_files(agent.root, FILES)
        with pytest.raises(ToolFailure, match=r"nothing written: the uses found may not be all"):
            agent.tools.lsp("rename", file="pkg/core.py", line=1, column=7, new_name="grand_total", apply=True)
        assert {name: (agent.root / name).read_text() for name in FILES} == FILES
    finally:
        agent.tools.close()


@pytest.mark.real_server
def test_basedpyright_with_tests_left_out_of_its_include_still_gets_the_uses_there(tmp_path: Path) -> None:
    """basedpyright analyses `pkg` only (`[tool.pyright] include`): `lsp-hub query references` finds the uses in
    tests/ too, from the index, and names the file; basedpyright's own answer there is empty."""
    import io
    import json

    from lsp_hub.agents.query import query_main
    from tests.conftest import find_required_binary

    find_required_binary("basedpyright-langserver")
    root = tmp_path / "project"
    write_files(root, {**FILES, "pyproject.toml": '[project]\nname = "pkg"\n\n[tool.pyright]\ninclude = ["pkg"]\n'})
    home = tmp_path / "xdg"
    connection = spawn_hub(root, env={"XDG_CONFIG_HOME": str(home / "cfg"), "XDG_CACHE_HOME": str(home / "cache")},
                           owned=False)
    try:
        connection.initialize(root, 60.0)
        out, err = io.StringIO(), io.StringIO()
        code = query_main(["references", f"{root / 'pkg/core.py'}:1:5", "--json", "--timeout", "90"], out=out,
                          err=err, connection=connection)
        assert code == 0, err.getvalue()
        answer = json.loads(out.getvalue())
    finally:
        connection.owned = True
        connection.close()
    found = {(Path(entry["path"]).relative_to(root).as_posix(), entry["line"], entry["column"]): entry["origin"]
             for entry in answer["locations"]}
    # basedpyright's own: the definition, and the import and call in pkg/user.py (both found them)...
    assert {site: origin for site, origin in found.items() if site[0].startswith("pkg/")} == {
        ("pkg/core.py", 1, 5): "both", ("pkg/user.py", 1, 22): "both", ("pkg/user.py", 5, 12): "both"}
    # ... and the index's in the files it leaves out.
    assert {site: origin for site, origin in found.items() if site[0].startswith("tests/")} == {
        ("tests/test_core.py", 1, 22): "index", ("tests/test_core.py", 5, 12): "index",
        ("tests/test_alias.py", 1, 22): "index", ("tests/test_alias.py", 5, 12): "index",
        ("tests/test_handlers.py", 1, 22): "index", ("tests/test_handlers.py", 3, 13): "index"}
    assert sorted(Path(path).name for path in answer["uncovered"]) == ["test_alias.py", "test_core.py",
                                                                       "test_handlers.py"]
