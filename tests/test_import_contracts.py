"""The import rules ARCHITECTURE.md states, checked by import-linter (the contracts are in pyproject.toml): the
index is a library that imports nothing of the hub; the agent clients (query, confined writes, the verified write)
import only the standard library and each other; the configuration knows no session, transport or process; the
graph modules of the index form layers (graph_cache, graph, links, ranking, graph_store) without an import circle."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_the_import_contracts_are_kept() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--no-cache"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout and "4 kept" in done.stdout, done.stdout[-2000:]
