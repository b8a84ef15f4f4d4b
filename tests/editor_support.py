"""Helpers shared by the tests that drive real editors headless (Neovim, Emacs)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import REPO_ROOT


def lua_value(value: object) -> str:
    """A Lua literal for a JSON-like value."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {lua_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "{" + ", ".join(lua_value(v) for v in value) + "}"
    return json.dumps(value)


def isolated_env(base: Path) -> dict[str, str]:
    """The environment of an editor under test: this checkout's lsp_hub, and its own XDG directories."""
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "XDG_CONFIG_HOME": str(base / "cfg"),
            "XDG_CACHE_HOME": str(base / "cache"), "XDG_STATE_HOME": str(base / "state"),
            "XDG_DATA_HOME": str(base / "data")}
