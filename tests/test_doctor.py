"""`lsp-hub doctor`: found/missing binaries, versions, routes for ROOT, configuration problems, exit codes."""

from __future__ import annotations

import io
import stat
import time
from pathlib import Path

import pytest

from lsp_hub.config.trust import TrustStore
from lsp_hub.doctor import first_output_line, marker_root, run_doctor


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Only tmp_path/bin on PATH, so the defaults' real servers are missing and no real binary is run."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


FAKE_CONFIG = """
[server.fake]
command = "fake-ls"
args = ["--stdio"]
root_markers = ["fake.root"]

[server.ghost]
command = "ghost-ls"
root_markers = [".git"]

[language.fakelang]
extensions = ["fk"]
servers = ["ghost", "fake"]
"""


@pytest.fixture
def setup(tmp_path: Path, isolated: Path) -> tuple[Path, Path]:
    """A workspace whose marker sits one level above ROOT, a --config file, and a fake server on PATH."""
    script(isolated / "fake-ls", 'if [ "$1" = "--version" ]; then echo "fake-ls 1.2.3"; echo "more"; fi')
    workspace = tmp_path / "ws"
    root = workspace / "pkg"
    root.mkdir(parents=True)
    (workspace / "fake.root").write_text("")
    config = tmp_path / "cli.toml"
    config.write_text(FAKE_CONFIG)
    return root, config


def doctor(root: Path, config: Path | None, version_timeout: float = 5.0) -> tuple[int, str]:
    out = io.StringIO()
    code = run_doctor(root, cli_config=config, out=out, version_timeout=version_timeout)
    return code, out.getvalue()


def line_starting(text: str, prefix: str) -> str:
    matches = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(matches) == 1, (prefix, text)
    return matches[0]


def test_reports_found_and_missing_servers_versions_and_routes(setup: tuple[Path, Path], isolated: Path) -> None:
    root, config = setup
    code, text = doctor(root, config)
    assert code == 0, text
    fake = line_starting(text, "fake ")
    assert "found" in fake and "fake-ls 1.2.3" in fake and "more" not in fake
    assert "fakelang" in fake and "fake.root" in fake and str(isolated / "fake-ls") in fake
    ghost = line_starting(text, "ghost ")
    assert "missing" in ghost and "searched:" in ghost and "PATH" in ghost
    basedpyright = line_starting(text, "basedpyright ")  # defaults are listed too; not installed here
    assert "missing" in basedpyright and "python" in basedpyright
    route = line_starting(text, "fakelang ")
    # The marker one level up decides fake's root; ghost is skipped because it is missing.
    assert f"fake at {root.parent}" in route
    assert "skipped: ghost missing" in route
    assert "*.fk" in route
    assert "no problems" in text
    assert str(config) in text  # the layers are listed


def test_invalid_configuration_exits_non_zero_and_names_the_problem(setup: tuple[Path, Path]) -> None:
    root, config = setup
    config.write_text(FAKE_CONFIG + '\n[server.ruff]\nargs = "server"\n')
    code, text = doctor(root, config)
    assert code == 1
    assert f"{config}: server.ruff.args: expected a list of strings, got string" in text
    assert "fake-ls 1.2.3" in text  # the valid parts are still reported


def test_invalid_toml_exits_non_zero(setup: tuple[Path, Path]) -> None:
    root, config = setup
    config.write_text("[server.fake\n")
    code, text = doctor(root, config)
    assert code == 1
    assert f"{config}: invalid TOML" in text


def test_missing_servers_alone_are_not_an_error(tmp_path: Path) -> None:
    code, text = doctor(tmp_path, None)
    assert code == 0
    assert "missing" in line_starting(text, "ruff ")


def test_disabled_server_is_shown_and_not_routed(setup: tuple[Path, Path], tmp_path: Path) -> None:
    root, config = setup
    config.write_text(FAKE_CONFIG.replace('args = ["--stdio"]', 'args = ["--stdio"]\ndisabled = true'))
    code, text = doctor(root, config)
    assert code == 0
    assert "found (disabled)" in line_starting(text, "fake ")
    route = line_starting(text, "fakelang ")
    assert "none" in route and "fake disabled" in route


def test_version_failures_are_tolerated_and_never_hang(setup: tuple[Path, Path], isolated: Path) -> None:
    root, config = setup
    script(isolated / "ghost-ls", "/bin/sleep 30")
    script(isolated / "fake-ls", "echo boom >&2; exit 3")
    started = time.monotonic()
    code, text = doctor(root, config, version_timeout=0.5)
    assert time.monotonic() - started < 4
    assert code == 0
    assert "? (no answer in 0.5 s)" in line_starting(text, "ghost ")
    assert "? (exit status 3: boom)" in line_starting(text, "fake ")


def test_servers_without_version_args_are_not_run(setup: tuple[Path, Path], isolated: Path, tmp_path: Path) -> None:
    root, config = setup
    witness = tmp_path / "ran"
    script(isolated / "fake-ls", f"touch {witness}; echo 9.9")
    config.write_text(FAKE_CONFIG.replace('args = ["--stdio"]', 'args = ["--stdio"]\nversion_args = []'))
    code, text = doctor(root, config)
    assert code == 0
    assert not witness.exists()
    assert "9.9" not in text


def test_version_command_is_found_next_to_the_server(setup: tuple[Path, Path], isolated: Path) -> None:
    root, config = setup
    script(isolated / "fake-cli", 'echo "fake-cli 4.5"')
    config.write_text(FAKE_CONFIG.replace('args = ["--stdio"]', 'args = ["--stdio"]\nversion_command = "fake-cli"'))
    code, text = doctor(root, config)
    assert code == 0
    assert "fake-cli 4.5" in line_starting(text, "fake ")


def test_untrusted_workspace_binary_is_passed_over_and_trust_lets_it_run(setup: tuple[Path, Path],
                                                                         isolated: Path) -> None:
    root, config = setup
    local = script(root.parent / ".venv" / "bin" / "fake-ls", 'echo "local 0.1"')
    code, text = doctor(root, config)
    assert code == 0
    fake = line_starting(text, "fake ")
    assert "fake-ls 1.2.3" in fake and "local 0.1" not in fake  # the local binary was not run
    assert f"passed over {local}" in text and f"lsp-hub trust {root.parent}" in text
    assert "not trusted workspace" in text

    TrustStore().add(root.parent)
    code, text = doctor(root, config)
    assert code == 0
    fake = line_starting(text, "fake ")
    assert "local 0.1" in fake and str(local) in fake
    assert "passed over" not in text
    assert "(trusted workspace)" in text


def test_untrusted_project_file_is_reported(setup: tuple[Path, Path]) -> None:
    root, config = setup
    (root / ".lsp-hub.toml").write_text('[server.ruff]\ncommand = "/bin/evil"\n')
    code, text = doctor(root, config)
    assert code == 1
    assert "server.ruff.command: ignored: workspace not trusted" in text
    assert "untrusted" in line_starting(text, "  project")


def test_marker_root(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (tmp_path / "a" / "go.mod").write_text("")
    assert marker_root(deep, ["go.mod"]) == tmp_path / "a"
    assert marker_root(deep, ["no-such-marker-anywhere.xyz"]) == deep


def test_first_output_line_of_a_missing_program(tmp_path: Path) -> None:
    assert first_output_line([str(tmp_path / "nope")]).startswith("? (")
