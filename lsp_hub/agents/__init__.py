"""The agent surfaces: `lsp-hub query` (`query/`), the MCP server (`mcp_server`, `mcp_tools`, `mcp_sdk`,
`agent_tools`) and the verified write with its lock, undo journal, format style and changed lines. The query
client and the write path import the standard library, the transport's daemon client and the platform room only,
so they start fast."""
