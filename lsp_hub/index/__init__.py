"""The hub's own code index: a library with no LSP server imports (never pygls, nothing outside lsp_hub.index).

Entry points: `workspace.WorkspaceIndex` (build, update, snapshot), `api` (the lspHub.* commands as JSON in/out),
`cli.index_cli_main` (the `lsp-hub repomap|relevant|syntax|callers|index` verbs). Deliberately imports nothing
itself: worker processes import `lsp_hub.index.parse_worker` and should not pay for networkx.
"""
