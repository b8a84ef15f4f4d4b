"""The agent surfaces: `lsp-hub query` (`query/`), the MCP server (`mcp_server`, `agent_tools`) and the verified
write with its lock, undo journal and format style. The query client and the write path import the standard
library, the transport's daemon client and the platform room only, so they start fast."""
