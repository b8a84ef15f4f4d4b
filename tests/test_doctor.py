"""`lsp-hub doctor`: found/missing binaries, versions, routes for ROOT, configuration problems, exit codes."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from lsp_hub.config import resolve
from lsp_hub.config.trust import TrustStore
from lsp_hub.doctor import OUTPUT_WIDTH, first_output_line, marker_root, run_doctor
from tests.conftest import EXAMPLES_DIR, REPO_ROOT, running_under_ci


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Only tmp_path/bin on PATH, and no directories of the hub's own, so the defaults' real servers are missing
    and no real binary is run."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(resolve, "hub_tool_directories", lambda: ())
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


def doctor(root: Path, config: Path | None, version_timeout: float = 5.0, *, verbose: bool = False,
           as_json: bool = False) -> tuple[int, str]:
    out = io.StringIO()
    code = run_doctor(root, cli_config=config, out=out, version_timeout=version_timeout, verbose=verbose,
                      as_json=as_json)
    text = out.getvalue()
    if not as_json:  # only a path longer than the width, alone on its line, may pass it
        assert [line for line in text.splitlines() if len(line) > OUTPUT_WIDTH and " " in line.strip()] == []
    return code, text


def line_starting(text: str, prefix: str) -> str:
    matches = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(matches) == 1, (prefix, text)
    return matches[0]


def wrapped_line(text: str, prefix: str) -> str:
    """The line starting with `prefix`, with the lines the doctor wrapped it onto joined back."""
    lines = text.splitlines()
    start = lines.index(line_starting(text, prefix))
    continuation = " " * (len(prefix) - len(prefix.lstrip()) + 4)
    joined = lines[start]
    for line in lines[start + 1:]:
        if not line.startswith(continuation):
            break
        joined += " " + line.strip()
    return joined


def flat(text: str) -> str:
    """The text with wrapped lines joined: whitespace runs become one space."""
    return " ".join(text.split())


def server_block(text: str, name: str) -> str:
    """A server's row and the indented lines under it (its binary, why it is broken, --verbose details),
    wrapped lines joined back into one."""
    lines = text.splitlines()
    start = lines.index(line_starting(text, name + " "))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        if line.startswith("        "):  # a wrapped continuation of the detail line above
            block[-1] += " " + line.strip()
        else:
            block.append(line)
    return "\n".join(block)


def test_reports_found_and_missing_servers_versions_and_routes(setup: tuple[Path, Path], isolated: Path) -> None:
    root, config = setup
    code, text = doctor(root, config)
    assert code == 0, text
    fake = server_block(text, "fake")
    assert "found" in fake and "fake-ls 1.2.3" in fake and "more" not in fake
    assert "fakelang" in fake and f"\n    {isolated / 'fake-ls'}" in fake
    ghost = server_block(text, "ghost")
    assert "missing" in ghost and "\n" not in ghost  # where it was looked for is listed once, above the servers
    assert f"PATH:           {isolated}" in text
    basedpyright = line_starting(text, "basedpyright ")  # defaults are listed too; not installed here
    assert "missing" in basedpyright and "python" in basedpyright
    route = wrapped_line(text, "  fakelang ")
    # The marker one level up decides fake's root; ghost is skipped because it is missing.
    assert f"fake at {root.parent}" in route
    assert "skipped: ghost missing" in route
    assert "*.fk" in route
    assert "no problems" in text
    assert str(config) in flat(text)  # the layers are listed


def test_invalid_configuration_exits_non_zero_and_names_the_problem(setup: tuple[Path, Path]) -> None:
    root, config = setup
    config.write_text(FAKE_CONFIG + '\n[server.ruff]\nargs = "server"\n')
    code, text = doctor(root, config)
    assert code == 1
    assert f"{config}: server.ruff.args: expected a list of strings, got string" in flat(text)
    assert "fake-ls 1.2.3" in text  # the valid parts are still reported


def test_invalid_toml_exits_non_zero(setup: tuple[Path, Path]) -> None:
    root, config = setup
    config.write_text("[server.fake\n")
    code, text = doctor(root, config)
    assert code == 1
    assert f"{config}: invalid TOML" in flat(text)


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
    route = wrapped_line(text, "  fakelang ")
    assert "none" in route and "fake disabled" in route


def test_version_failures_are_tolerated_and_never_hang(setup: tuple[Path, Path], isolated: Path) -> None:
    root, config = setup
    script(isolated / "ghost-ls", "/bin/sleep 30")
    script(isolated / "fake-ls", "echo boom >&2; exit 3")
    started = time.monotonic()
    code, text = doctor(root, config, version_timeout=0.5)
    assert time.monotonic() - started < 4
    assert code == 0
    assert "found" in line_starting(text, "ghost ") and "? (no answer in 0.5 s)" in line_starting(text, "ghost ")
    fake = server_block(text, "fake")
    assert "broken" in fake and "exit status 3: boom" in fake


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
    fake = server_block(text, "fake")
    assert "fake-ls 1.2.3" in fake and "local 0.1" not in fake  # the local binary was not run
    assert f"passed over {local}" in flat(text) and f"lsp-hub trust {root.parent}" in flat(text)
    assert "not trusted workspace" in flat(text)

    TrustStore().add(root.parent)
    code, text = doctor(root, config)
    assert code == 0
    fake = server_block(text, "fake")
    assert "local 0.1" in fake and str(local) in fake
    assert "passed over" not in text
    assert "(trusted workspace)" in flat(text)


def test_untrusted_project_file_is_reported(setup: tuple[Path, Path]) -> None:
    root, config = setup
    (root / ".lsp-hub.toml").write_text('[server.ruff]\ncommand = "/bin/evil"\n')
    code, text = doctor(root, config)
    assert code == 1
    assert "server.ruff.command: ignored: workspace not trusted" in text
    assert "untrusted" in line_starting(text, "  project")


def test_a_binary_that_fails_to_run_is_broken_not_found(setup: tuple[Path, Path], isolated: Path) -> None:
    """A shim whose toolchain is missing exits non-zero on --version: the hub could not start it either."""
    root, config = setup
    script(isolated / "fake-ls", 'echo "error: toolchain not installed" >&2; exit 1')
    (isolated / "ghost-ls").write_text("#!/no/such/interpreter\n")  # cannot be executed at all
    (isolated / "ghost-ls").chmod(0o755)
    code, text = doctor(root, config)
    assert code == 0
    fake = server_block(text, "fake")
    assert fake.split()[1] == "broken", fake
    assert "exit status 1: error: toolchain not installed" in fake and "fake-ls 1.2.3" not in fake
    ghost = server_block(text, "ghost")
    assert ghost.split()[1] == "broken" and "cannot run: No such file or directory" in ghost, ghost
    assert "none (skipped: ghost broken, fake broken)" in wrapped_line(text, "  fakelang ")

    _, as_json = doctor(root, config, as_json=True)
    [fake_json] = [server for server in json.loads(as_json)["servers"] if server["name"] == "fake"]
    assert (fake_json["state"], fake_json["version"]) == ("broken", None)
    assert fake_json["brokenReason"] == "exit status 1: error: toolchain not installed"


def test_verbose_and_json_give_each_servers_root_markers_and_the_places_searched(
        setup: tuple[Path, Path], isolated: Path) -> None:
    root, config = setup
    _, text = doctor(root, config, verbose=True)
    assert f"root: {root.parent} (not trusted); markers: fake.root" in server_block(text, "fake")
    assert "searched: PATH" in server_block(text, "ghost")
    _, as_json = doctor(root, config, as_json=True)
    report = json.loads(as_json)
    [ghost] = [server for server in report["servers"] if server["name"] == "ghost"]
    assert (ghost["state"], ghost["path"], ghost["searched"]) == ("missing", None, ["PATH"])
    assert {"kind": "PATH", "where": str(isolated)} in report["searched"]
    [route] = [route for route in report["routes"] if route["language"] == "fakelang"]
    assert route == {"language": "fakelang", "files": ["*.fk"], "servers": [{"name": "fake", "root": str(root.parent)}],
                     "skipped": ["ghost missing"]}


def test_the_hubs_own_directories_are_searched_after_path(setup: tuple[Path, Path], isolated: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    root, config = setup
    own = tmp_path / "hub-venv" / "bin"
    script(own / "ghost-ls", 'echo "ghost 2.0"')
    script(own / "fake-ls", 'echo "own fake"')
    monkeypatch.setattr(resolve, "hub_tool_directories", lambda: (str(own),))
    _, text = doctor(root, config)
    assert f"lsp-hub's own:  {own}" in text
    assert "ghost 2.0" in server_block(text, "ghost") and f"    {own / 'ghost-ls'}" in server_block(text, "ghost")
    assert "fake-ls 1.2.3" in server_block(text, "fake")  # PATH's copy wins: the user chose it
    monkeypatch.setenv("PATH", "")
    _, text = doctor(root, config)
    assert "own fake" in server_block(text, "fake")  # an empty PATH still finds the hub's own


def test_marker_root(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (tmp_path / "a" / "go.mod").write_text("")
    assert marker_root(deep, ["go.mod"]) == tmp_path / "a"
    assert marker_root(deep, ["no-such-marker-anywhere.xyz"]) == deep


def test_first_output_line_of_a_missing_program(tmp_path: Path) -> None:
    assert first_output_line([str(tmp_path / "nope")]).startswith("? (")


@pytest.mark.real_server
def test_the_venvs_lsp_hub_finds_the_servers_make_setup_installed_with_no_environment(tmp_path: Path) -> None:
    """`.venv/bin/lsp-hub doctor` run by its path, PATH=/usr/bin:/bin and nothing sourced (issue #21): the servers in
    the venv and in .tools/npm are found, as the user who followed the README expects."""
    lsp_hub = REPO_ROOT / ".venv" / "bin" / "lsp-hub"
    if not lsp_hub.exists() or not (REPO_ROOT / ".tools" / "npm" / "node_modules" / ".bin").is_dir():
        message = "no .venv/bin/lsp-hub or .tools/npm: run `make setup`"
        pytest.fail(message) if running_under_ci() else pytest.skip(message)
    sample = tmp_path / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", sample, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "LSP_HUB_ROOT")}
    env["PATH"] = "/usr/bin:/bin"
    done = subprocess.run([str(lsp_hub), "doctor"], cwd=sample, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for server in ("basedpyright", "ruff", "typescript-language-server"):
        assert line_starting(text, server + " ").split()[1] == "found", text
    own = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("  lsp-hub's own:")]
    assert os.path.realpath(lsp_hub.parent) in [os.path.realpath(directory) for directory in own], text
    assert "python (*.py, *.pyi): basedpyright at" in text
    assert [line for line in text.splitlines() if len(line) > OUTPUT_WIDTH] == []
    # ... and a query through that lsp-hub is answered by them: the broken file's findings, not "no issues".
    env["XDG_CONFIG_HOME"], env["XDG_CACHE_HOME"] = str(tmp_path / "cfg"), str(tmp_path / "cache")
    asked = subprocess.run([str(lsp_hub), "query", "diagnostics", "app/broken.py", "--no-daemon"], cwd=sample,
                           env=env, capture_output=True, text=True, timeout=120)
    assert asked.returncode == 1, asked  # issues found
    assert "[basedpyright] " in asked.stdout and "[Ruff] " in asked.stdout and "F401" in asked.stdout, asked.stdout
