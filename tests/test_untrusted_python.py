"""An untrusted repository's `.venv/bin/python` never runs, with the real basedpyright.

basedpyright, given no Python setting, runs `<root>/.venv/bin/python` when there is one, to learn the search paths
and the version. A cloned repository can ship any program there. The hub pins `python.pythonPath` for an untrusted
root to the Python found outside it; once the user trusts the workspace, basedpyright finds its `.venv` as usual.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from lsp_hub.transport.rawclient import HubClient
from tests.test_untrusted_code import _script, trust

pytestmark = [pytest.mark.asyncio, pytest.mark.real_server]

SLOW = 60.0  # a cold basedpyright on a loaded 2-core machine
SOURCE = 'count: int = "three"\n'
StartHub = Callable[..., Awaitable[HubClient]]


def plant_interpreter(root: Path, marker: Path) -> None:
    """A working `.venv/bin/python` (and python3) that notes each run, then runs a real Python."""
    real = shutil.which("python3") or shutil.which("python")
    assert real is not None
    for name in ("python", "python3"):
        _script(root / ".venv" / "bin" / name, f"#!/bin/sh\necho ran >> '{marker}'\nexec '{real}' \"$@\"\n")
    (root / ".venv" / "pyvenv.cfg").write_text(f"home = {os.path.dirname(real)}\n")


async def type_error_reported(client: HubClient, root: Path) -> None:
    """basedpyright's verdict on app.py: proof that Python is served."""
    uri = client.open(root / "app.py", "python")
    await client.wait_for(
        lambda: any("assignable" in d.get("message", "") for d in client.diagnostics.get(uri, [])),
        timeout=SLOW,
        what="basedpyright's type error in app.py",
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
    plant_interpreter(root, marker)

    untrusted = await hub_at(root)
    await type_error_reported(untrusted, root)
    await asyncio.sleep(1.0)  # basedpyright asks its interpreter before it checks: it would have run by now
    assert not marker.exists(), marker.read_text()
    await untrusted.stop()

    trust(root, tmp_path)
    trusted = await hub_at(root)
    await type_error_reported(trusted, root)
    await trusted.wait_for(marker.exists, timeout=SLOW, what="the trusted workspace's .venv/bin/python to run")
