"""Navigation for agents from the index alone: outline, zoom, imports, impact, search, symbols, context, call
trees and traces. Each command is one function of `lsp_hub.index.api` returning a result with `to_json()` and
`to_text()`."""
