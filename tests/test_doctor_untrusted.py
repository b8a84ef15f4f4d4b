"""`lsp-hub doctor` runs installed binaries for their version: never with a PATH that lets the workspace choose."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from lsp_hub.doctor import run_doctor


def flat(text: str) -> str:
    """The doctor's report with wrapped lines joined: whitespace runs become one space."""
    return " ".join(text.split())


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
    assert "PATH: node_modules/.bin (not searched: a relative entry)" in flat(out.getvalue())


def test_doctor_shows_what_an_untrusted_root_is_pinned_to_or_why_a_server_will_not_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "proj"
    root.mkdir()
    prefix = tmp_path / "tools"
    cli = prefix / "node_modules" / "fake-ls" / "cli.js"
    cli.parent.mkdir(parents=True)
    cli.write_text("#!/bin/sh\necho 1.0\n")
    cli.chmod(0o755)
    tsserver = prefix / "node_modules" / "typescript" / "lib" / "tsserver.js"
    tsserver.parent.mkdir(parents=True)
    tsserver.write_text("")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "fake-ls").symlink_to(cli)
    config = tmp_path / "extra.toml"
    config.write_text('[server.fake]\ncommand = "fake-ls"\n'
                      'pin_untrusted = { "initialization_options.tsserver.path" = '
                      '"node_modules/typescript/lib/tsserver.js" }\n'
                      'pin_untrusted_values = { "initialization_options.handledSchemaProtocols" = ["file"] }\n'
                      'untrusted_notifications = { "yaml/registerContentRequest" = {} }\n'
                      '[language.fake]\nextensions = ["fk"]\nservers = ["fake"]\n')
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}:/usr/bin:/bin")
    out = io.StringIO()
    run_doctor(root, cli_config=config, out=out, version_timeout=5.0)
    assert (f"note: fake: {root} is not trusted, so initialization_options.tsserver.path = {tsserver} "
            "(not the workspace's own)") in flat(out.getvalue())
    assert (f'note: fake: {root} is not trusted, so initialization_options.handledSchemaProtocols = ["file"]'
            in flat(out.getvalue()))
    assert f"note: fake: {root} is not trusted, so it is sent yaml/registerContentRequest" in flat(out.getvalue())

    tsserver.unlink()
    out = io.StringIO()
    run_doctor(root, cli_config=config, out=out, version_timeout=5.0)
    report = flat(out.getvalue())
    assert f"note: fake was not started for {root}: the workspace is not trusted" in report
    assert "found (not started here)" in report
    assert "fake not started: workspace not trusted" in report
