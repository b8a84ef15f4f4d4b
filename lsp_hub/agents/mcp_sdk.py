"""The MCP SDK's server as `lsp-hub mcp` presents its tools: compact JSON schemas (an agent pays for the whole tool
list in every conversation), one line per argument that does not fit a schema, and a tool's docstring as its
description in one paragraph. Knows no tool (`mcp_tools.py` declares them).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import Tool
from pydantic import ValidationError


class HubMCPServer(MCPServer):
    """MCPServer whose answer to arguments that do not fit a tool's schema is one line per argument, not pydantic's
    report (with its links), and whose tool list carries compact schemas (`compact_schema`): an agent pays for the
    whole list in every conversation."""

    async def list_tools(self) -> list[Tool]:
        return [
            tool.model_copy(update={"input_schema": compact_schema(tool.input_schema)})
            for tool in await super().list_tools()
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if not isinstance(error.__cause__, ValidationError):
                raise
            problems = "; ".join(
                f"{'.'.join(str(part) for part in problem['loc']) or 'arguments'}: {problem['msg']}"
                for problem in error.__cause__.errors()
            )
            raise ToolError(f"{name}: invalid arguments: {problems}") from None


def compact_schema(schema: Any) -> Any:
    """A tool's JSON schema without what a model needs neither to choose nor to call the tool: pydantic's titles
    (the property names say them) and `"default": null` (an optional property left out is null)."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    compact: dict[str, Any] = {}
    for key, value in schema.items():
        if (key == "title" and isinstance(value, str)) or (key == "default" and value is None):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):  # names, not schema keywords
            compact[key] = {name: compact_schema(item) for name, item in value.items()}
        else:
            compact[key] = compact_schema(value)
    return compact


def add_tool(app: MCPServer, function: Callable[..., Any]) -> Callable[..., Any]:
    """A tool described by its docstring as one paragraph (not its source indentation)."""
    return app.tool(description=" ".join((inspect.getdoc(function) or "").split()))(function)
