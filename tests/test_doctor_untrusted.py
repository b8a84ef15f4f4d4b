"""`lsp-hub doctor` runs installed binaries for their version: never with a PATH that lets the workspace choose."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from lsp_hub.doctor import run_doctor


def test_version_probe_gets_no_program_from_a_relative_path_entry(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed server starting with `#!/usr/bin/env fake-node` must not find the workspace's fake-node
    through PATH=node_modules/.bin:..., with doctor run in the workspace."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "proj"
    marker = tmp_path / "workspace-code-ran"
    fake_node = root / "node_modules" / ".bin" / "fake-node"
    fake_node.parent.mkdir(parents=True)
    fake_node.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    fake_node.chmod(0o755)
    installed = tmp_path / "bin"
    installed.mkdir()
    (installed / "fake-ls").write_text("#!/usr/bin/env fake-node\n")
    (installed / "fake-ls").chmod(0o755)
    config = tmp_path / "extra.toml"
    config.write_text('[server.fake]\ncommand = "fake-ls"\n')
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", f"node_modules/.bin:{installed}:/usr/bin:/bin")
    out = io.StringIO()
    run_doctor(root, cli_config=config, out=out, version_timeout=5.0)
    assert not marker.exists()
    assert "relative entries ignored: node_modules/.bin" in out.getvalue()
