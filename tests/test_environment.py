"""The setup installed the real tools the suite drives; under CI a missing one fails here, by name."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

# Every binary an end-to-end or editor test starts.
REAL_TOOLS = ["basedpyright-langserver", "ruff", "typescript-language-server", "clangd", "nvim"]


@pytest.mark.parametrize("name", REAL_TOOLS)
def test_real_tool_is_on_path(name: str, require_binary: Callable[[str], str]) -> None:
    path = Path(require_binary(name))
    assert path.is_file()


def _typescript_package_beside(server_binary: str) -> Path:
    # typescript-language-server looks for tsserver in the node_modules tree it was installed in.
    node_modules = Path(server_binary).resolve().parents[2]
    assert node_modules.name == "node_modules", f"unexpected install layout for {server_binary}"
    return node_modules / "typescript"


def test_typescript_language_server_finds_typescript_5_with_tsserver(require_binary: Callable[[str], str]) -> None:
    server = require_binary("typescript-language-server")
    typescript = _typescript_package_beside(server)
    manifest = json.loads((typescript / "package.json").read_text())
    # TypeScript 7 ships no tsserver.js: "Could not find a valid TypeScript installation".
    assert manifest["version"].startswith("5."), f"typescript {manifest['version']} installed, 5.x expected"
    assert (typescript / "lib" / "tsserver.js").is_file()


def test_typescript_language_server_runs(require_binary: Callable[[str], str]) -> None:
    server = require_binary("typescript-language-server")
    completed = subprocess.run([server, "--version"], capture_output=True, text=True, timeout=30, check=True)
    assert completed.stdout.strip().split(".")[0].isdigit()


def test_neovim_is_at_least_0_7(require_binary: Callable[[str], str]) -> None:
    nvim = require_binary("nvim")
    completed = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30, check=True)
    first_line = completed.stdout.splitlines()[0]  # "NVIM v0.7.2"
    major, minor = (int(part) for part in first_line.split()[1].lstrip("v").split(".")[:2])
    assert (major, minor) >= (0, 7), first_line
