"""What an agent pays to carry `lsp-hub mcp`'s tools, and how a new tool is added: the whole `tools/list` (every
tool's name, description and input schema as JSON) stays under 4,000 tokens (characters/4), with room left for the
navigation tools of issue #24; a tool that is one `lspHub.*` command is a few lines (`command_tool`) and answers
its text plus structuredContent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from lsp_hub.agents.mcp_sdk import compact_schema
from lsp_hub.agents.mcp_tools import Tools, build_server, command_tool
from lsp_hub.agents.query import HubConnection, connect_socket, spawn_hub

# With the navigation tools of issue #24 too. The nine tools of today take 1,568 (2,107 before the schemas were
# compacted and the descriptions trimmed): about 240 tokens are left for each of ten more tools.
TOOLS_LIST_TOKENS = 4_000


async def tools_list_characters() -> int:
    app = build_server(Tools(None, connect_socket, timeout=30.0, fenced=False))
    listed = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in await app.list_tools()]
    return len(json.dumps([{key: tool[key] for key in ("name", "description", "inputSchema")} for tool in listed]))


async def test_the_tool_list_costs_an_agent_less_than_4000_tokens() -> None:
    tokens = await tools_list_characters() / 4
    assert tokens < TOOLS_LIST_TOKENS, f"{tokens:.0f} tokens: group tools or trim their descriptions"


def test_compact_schemas_drop_titles_and_null_defaults_but_no_property() -> None:
    schema = {"title": "outlineArguments", "type": "object", "required": ["title"], "properties": {
        "title": {"title": "Title", "type": "string"},
        "limit": {"title": "Limit", "type": "integer", "default": 50},
        "file": {"title": "File", "anyOf": [{"type": "string"}, {"type": "null"}], "default": None}}}
    assert compact_schema(schema) == {"type": "object", "required": ["title"], "properties": {
        "title": {"type": "string"}, "limit": {"type": "integer", "default": 50},
        "file": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Tools]:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "good.py").write_text("def f():\n    return 1\n")
    (root / "bad.py").write_text("def f(:\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def connect(workspace: Path) -> HubConnection:
        return spawn_hub(workspace, env=env)

    monkeypatch.chdir(tmp_path)  # the server moves into the root on its first call; the test's directory comes back
    tools = Tools(root, connect, timeout=60.0, fenced=False)
    yield tools
    tools.close()


async def test_a_tool_that_is_one_hub_command_is_a_few_lines(project: Tools) -> None:
    app = build_server(project)

    @command_tool(app, project, "lspHub.syntaxCheck", uris=("uri",),
                  render=lambda data: "no syntax errors" if data.get("ok") else f"{len(data['errors'])} error(s)")
    def syntax(file: Annotated[str, Field(description="the file")]) -> dict[str, Any]:
        """Check one file's syntax."""
        return {"uri": file}

    listed = {tool.name: tool for tool in await app.list_tools()}
    assert listed["syntax"].description == "Check one file's syntax."
    assert listed["syntax"].input_schema == {"type": "object", "required": ["file"], "properties": {
        "file": {"type": "string", "description": "the file"}}}

    broken = await app.call_tool("syntax", {"file": "bad.py"})
    assert not broken.is_error
    assert broken.content[0].text == f"{len(broken.structured_content['errors'])} error(s)"
    assert broken.structured_content["ok"] is False and broken.structured_content["errors"]
    fine = await app.call_tool("syntax", {"file": "good.py"})
    assert fine.content[0].text == "no syntax errors" and fine.structured_content["ok"] is True

    outside = await app.call_tool("syntax", {"file": "../elsewhere.py"})
    assert outside.is_error and "\n" not in outside.content[0].text and "outside" in outside.content[0].text
    missing = await app.call_tool("syntax", {"file": "gone.py"})
    assert missing.is_error and missing.content[0].text == "gone.py: no such file or directory in the workspace"
