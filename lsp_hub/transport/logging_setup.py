"""Where the log goes and how much of it: one function every entry point calls (the CLI's verbs, `lsp-hub mcp`).

A leaf: standard library only, importing no lsp_hub module, so any entry point may use it without a circle."""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def setup_logging(verbosity: int, log_file: Path | None) -> None:
    """WARNING by default, INFO with -v, DEBUG with -vv; to `log_file`, else stderr."""
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler: logging.Handler = (
        logging.FileHandler(log_file, encoding="utf-8") if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
