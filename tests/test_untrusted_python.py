"""An untrusted repository's `.venv/bin/python` never runs, with the real basedpyright, and its packages still count.

basedpyright, given no Python setting, runs `<root>/.venv/bin/python` when there is one, to learn the search paths
and the version. A cloned repository can ship any program there. The hub pins `python.pythonPath` for an untrusted
root to the Python found outside it, and has the `.venv`'s installed packages read as extra paths, so the imports an
agent's `uv sync` installed still resolve; once the user trusts the workspace, basedpyright uses its `.venv` itself.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from lsp_hub.transport.rawclient import HubClient
from tests.test_untrusted_code import _script, trust

pytestmark = [pytest.mark.asyncio, pytest.mark.real_server]

SLOW = 60.0  # a cold basedpyright on a loaded 2-core machine
# A type error that only the venv's package explains: its `measure()` returns an int.
SOURCE = "from measuring import measure\n\ncount: str = measure()\n"
StartHub = Callable[..., Awaitable[HubClient]]


def plant_venv(root: Path, marker: Path) -> None:
    """A real `.venv` (one package installed) whose python and python3 note each run, then run its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    bin_dir = root / ".venv" / "bin"
    (bin_dir / "python").rename(bin_dir / "python-real")  # run from here, it still finds the venv's packages
    for name in ("python", "python3"):
        (bin_dir / name).unlink(missing_ok=True)
        _script(bin_dir / name, f'#!/bin/sh\necho ran >> \'{marker}\'\nexec "$(dirname "$0")/python-real" "$@"\n')
    [site_packages] = (root / ".venv" / "lib").glob("python*/site-packages")
    package = site_packages / "measuring"
    package.mkdir()
    (package / "__init__.py").write_text("def measure() -> int:\n    return 3\n")


async def type_error_reported(client: HubClient, root: Path) -> None:
    """basedpyright's verdict on app.py: Python is served, and the venv's package was read."""
    uri = client.open(root / "app.py", "python")
    await client.wait_for(
        lambda: any('"int" is not assignable' in d.get("message", "") for d in client.diagnostics.get(uri, [])),
        timeout=SLOW,
        what="basedpyright's type error in app.py, which only the venv's package explains",
    )


async def test_workspace_venv_python_runs_only_in_a_trusted_workspace(
    tmp_path: Path, hub_at: StartHub, require_binary: Callable[[str], str]
) -> None:
    require_binary("basedpyright-langserver")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "cloned"\nversion = "1.0"\n')
    (root / "app.py").write_text(SOURCE)
    marker = tmp_path / "workspace-python-ran"
    plant_venv(root, marker)

    untrusted = await hub_at(root)
    await type_error_reported(untrusted, root)
    await asyncio.sleep(1.0)  # basedpyright asks its interpreter before it checks: it would have run by now
    assert not marker.exists(), marker.read_text()
    await untrusted.stop()

    trust(root, tmp_path)
    trusted = await hub_at(root)
    await type_error_reported(trusted, root)
    await trusted.wait_for(marker.exists, timeout=SLOW, what="the trusted workspace's .venv/bin/python to run")
