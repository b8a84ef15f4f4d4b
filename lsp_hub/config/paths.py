"""Where lsp-hub keeps per-user files (XDG base directory rules)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_CONFIG_NAME = ".lsp-hub.toml"


def user_config_dir() -> Path:
    """`$XDG_CONFIG_HOME/lsp-hub`, or `~/.config/lsp-hub` when the variable is unset or not absolute."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    # The XDG spec says relative values are invalid and must be ignored.
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "lsp-hub"


def user_config_file() -> Path:
    return user_config_dir() / "config.toml"


def trust_file() -> Path:
    return user_config_dir() / "trusted.json"
