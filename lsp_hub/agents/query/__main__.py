"""`python -m lsp_hub.agents.query ACTION ...`: the same as `lsp-hub query ACTION ...`."""

import sys

from lsp_hub.agents.query.cli import query_main

raise SystemExit(query_main(sys.argv[1:]))
