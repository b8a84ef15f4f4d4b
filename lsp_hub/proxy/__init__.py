"""The LSP multiplexer: one `session` per editor connection, one `workspace` per root, the language servers it
drives (`backends/`), the method table (`methods`, `runners`, `strategies`) that routes and merges each request,
documents, diagnostics and the index's LSP features (`index_*`). Knows no agent surface."""
