from lsp_hub.cli import script

raise SystemExit(script())
