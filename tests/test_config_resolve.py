"""Finding a server's executable: workspace tool directories (trusted only), then PATH, then the hub's own."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from lsp_hub.config import resolve
from lsp_hub.config.model import ServerSpec
from lsp_hub.config.resolve import child_search_path, prepare_launch, resolve_command

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def no_hub_directories(monkeypatch: pytest.MonkeyPatch) -> None:
    """The PATH rules are tested alone; tests of the hub's own directories set them."""
    monkeypatch.setattr(resolve, "hub_tool_directories", lambda: ())


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A workspace with `tool` in .venv/bin and node_modules/.bin, and another `tool` on PATH."""
    root = tmp_path / "ws"
    on_path = tmp_path / "bin"
    executable(on_path / "tool")
    monkeypatch.setenv("PATH", str(on_path))
    return root, on_path


def spec(command: str) -> ServerSpec:
    return ServerSpec(name="s", command=command)


def test_trusted_root_prefers_venv_then_node_modules_then_path(layout: tuple[Path, Path]) -> None:
    root, on_path = layout
    venv_tool = executable(root / ".venv" / "bin" / "tool")
    node_tool = executable(root / "node_modules" / ".bin" / "tool")

    found = resolve_command(spec("tool"), root, trusted=True)
    assert found.path == str(venv_tool)
    assert found.searched == [str(root / ".venv" / "bin")]
    assert found.skipped_local is None

    venv_tool.unlink()
    found = resolve_command(spec("tool"), root, trusted=True)
    assert found.path == str(node_tool)
    assert found.searched == [str(root / ".venv" / "bin"), str(root / "node_modules" / ".bin")]

    node_tool.unlink()
    found = resolve_command(spec("tool"), root, trusted=True)
    assert found.path == str(on_path / "tool")
    assert found.searched == [str(root / ".venv" / "bin"), str(root / "node_modules" / ".bin"), "PATH"]


def test_untrusted_root_uses_path_only_and_names_the_binary_it_passed_over(layout: tuple[Path, Path]) -> None:
    root, on_path = layout
    venv_tool = executable(root / ".venv" / "bin" / "tool")
    found = resolve_command(spec("tool"), root, trusted=False)
    assert found.path == str(on_path / "tool")
    assert found.searched == ["PATH"]
    assert found.skipped_local == str(venv_tool)


def test_untrusted_local_binary_is_never_used_even_if_path_has_none(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    node_tool = executable(root / "node_modules" / ".bin" / "only-local")
    found = resolve_command(spec("only-local"), root, trusted=False)
    assert found.path is None
    assert found.skipped_local == str(node_tool)
    assert found.searched == ["PATH"]


def test_missing_everywhere(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    found = resolve_command(spec("no-such-server"), root, trusted=True)
    assert found.path is None
    assert found.skipped_local is None
    assert found.searched[-1] == "PATH"


def test_non_executable_local_file_is_ignored(layout: tuple[Path, Path]) -> None:
    root, on_path = layout
    plain = root / ".venv" / "bin" / "tool"
    plain.parent.mkdir(parents=True)
    plain.write_text("not a program")
    assert resolve_command(spec("tool"), root, trusted=True).path == str(on_path / "tool")


def test_absolute_command_is_used_as_is_if_executable(tmp_path: Path, layout: tuple[Path, Path]) -> None:
    root, _ = layout
    program = executable(tmp_path / "opt" / "server")
    assert resolve_command(spec(str(program)), root, trusted=False).path == str(program)
    program.chmod(0o644)
    found = resolve_command(spec(str(program)), root, trusted=False)
    assert found.path is None
    assert found.searched == [str(program)]


def test_relative_path_command_is_inside_the_root_and_trusted_only(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    program = executable(root / "tools" / "server")
    assert resolve_command(spec("tools/server"), root, trusted=True).path == str(program)
    untrusted = resolve_command(spec("tools/server"), root, trusted=False)
    assert untrusted.path is None
    assert untrusted.skipped_local == str(program)


def test_empty_command_is_missing(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    assert resolve_command(spec(""), root, trusted=True).path is None


def test_relative_path_entries_are_never_searched(layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH=node_modules/.bin:.venv/bin:$PATH in a project shell must not let the workspace choose the program."""
    root, on_path = layout
    local = executable(root / "node_modules" / ".bin" / "tool")
    executable(root / "scripts" / "tool")
    executable(root / "only-here")
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", f"node_modules/.bin{os.pathsep}scripts{os.pathsep}{os.pathsep}{on_path}")
    untrusted = resolve_command(spec("tool"), root, trusted=False)
    assert untrusted.path == str(on_path / "tool")  # absolute, from the absolute entry
    assert untrusted.searched == ["PATH (relative entries ignored: node_modules/.bin, scripts, (empty))"]
    assert untrusted.skipped_local == str(local)
    local.unlink()
    # Trusted or not, a relative entry is not searched: it means whatever directory a process runs in.
    assert resolve_command(spec("tool"), root, trusted=True).path == str(on_path / "tool")
    assert resolve_command(spec("only-here"), root, trusted=True).path is None  # "" is not the current directory


def test_no_absolute_path_entry_left_finds_nothing(layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = layout
    executable(root / "tool")
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", ".")
    found = resolve_command(spec("tool"), root, trusted=True)
    assert found.path is None


def test_absolute_path_entries_inside_an_untrusted_workspace_are_passed_over(
        tmp_path: Path, layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, on_path = layout
    workspace = tmp_path / "ws"
    root = workspace / "web"  # the server's root lies below the workspace folder that holds the tools
    tools = workspace / "tools"
    inside = executable(tools / "tool")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{on_path}")
    untrusted = resolve_command(spec("tool"), root, trusted=False, workspace=workspace)
    assert untrusted.path == str(on_path / "tool")
    assert untrusted.skipped_local == str(inside)
    assert untrusted.searched == [f"PATH (passed over inside the untrusted workspace: {tools})"]
    assert resolve_command(spec("tool"), root, trusted=True, workspace=workspace).path == str(inside)
    # Without the workspace folder, only entries inside the root itself count as the workspace's.
    assert resolve_command(spec("tool"), root, trusted=False).path == str(inside)


def test_servers_inherit_the_cleaned_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    monkeypatch.setenv("PATH", f"node_modules/.bin{os.pathsep}{root}/bin{os.pathsep}/usr/bin{os.pathsep}")
    assert child_search_path(root, trusted=False) == "/usr/bin"
    assert child_search_path(root, trusted=True) == f"{root}/bin{os.pathsep}/usr/bin"
    launched = prepare_launch(ServerSpec(name="s", command="s", env={"A": "1"}), "/usr/bin/s", root, trusted=False)
    assert launched.spec.env == {"A": "1", "PATH": "/usr/bin"}
    # A trusted layer's own PATH is the user's choice and stays.
    own = prepare_launch(ServerSpec(name="s", command="s", env={"PATH": "bin"}), "/usr/bin/s", root, trusted=False)
    assert own.spec.env == {"PATH": "bin"}
    monkeypatch.delenv("PATH")
    assert child_search_path(root, trusted=False) is None


# ======================================================================================= the hub's own directories
def test_the_hubs_own_directories_come_after_path_and_servers_inherit_them(
        tmp_path: Path, layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, on_path = layout
    own = tmp_path / "hub" / ".venv" / "bin"
    own_tool = executable(own / "tool")
    only_own = executable(own / "only-own")
    monkeypatch.setattr(resolve, "hub_tool_directories", lambda: (str(own),))
    found = resolve_command(spec("tool"), root, trusted=False)
    assert found.path == str(on_path / "tool")  # the user's PATH wins
    assert found.searched == ["PATH", f"lsp-hub's own {own}"]
    assert resolve_command(spec("only-own"), root, trusted=False).path == str(only_own)
    assert child_search_path(root, trusted=False) == f"{on_path}{os.pathsep}{own}"
    monkeypatch.setenv("PATH", "")  # an empty PATH still finds the hub's own servers, and gives them to servers
    assert resolve_command(spec("tool"), root, trusted=False).path == str(own_tool)
    monkeypatch.delenv("PATH")  # no PATH: the system's default one, as a program run without PATH would search
    assert child_search_path(root, trusted=False) == f"{os.defpath}{os.pathsep}{own}"
    # Already on PATH (scripts/env.sh sourced): searched once, in PATH's place.
    monkeypatch.setenv("PATH", f"{own}{os.pathsep}{on_path}")
    assert resolve_command(spec("tool"), root, trusted=False).searched == ["PATH"]
    assert child_search_path(root, trusted=False) == f"{own}{os.pathsep}{on_path}"


def test_the_hubs_own_directories_inside_an_untrusted_workspace_are_still_the_hubs(
        tmp_path: Path, layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """lsp-hub's checkout opened as a workspace: its .venv/bin is the running hub's own, not the workspace's."""
    root, _ = layout
    own_tool = executable(root / ".venv" / "bin" / "hub-tool")
    monkeypatch.setattr(resolve, "hub_tool_directories", lambda: (str(root / ".venv" / "bin"),))
    found = resolve_command(spec("hub-tool"), root, trusted=False)
    assert (found.path, found.skipped_local) == (str(own_tool), None)


def test_hub_tool_directories_of_this_checkout_without_any_environment() -> None:
    """What a fresh interpreter of this checkout's venv finds, with no PATH and no VIRTUAL_ENV: its own scripts
    directory and the checkout's .tools/npm (make setup), found from the package's location."""
    venv_python = REPO_ROOT / ".venv" / "bin" / "python"
    if not venv_python.exists():
        pytest.skip("no .venv: run `make setup`")
    code = "from lsp_hub.config.resolve import hub_tool_directories; print('\\n'.join(hub_tool_directories()))"
    env = {"PYTHONPATH": str(REPO_ROOT)}
    printed = subprocess.run([str(venv_python), "-c", code], env=env, capture_output=True, text=True,
                             check=True, cwd="/").stdout.split()
    real = [os.path.realpath(directory) for directory in printed]
    assert os.path.realpath(REPO_ROOT / ".venv" / "bin") in real
    npm_bin = REPO_ROOT / ".tools" / "npm" / "node_modules" / ".bin"
    if npm_bin.is_dir():
        assert os.path.realpath(npm_bin) in real


# ==================================================================================================== pin_untrusted
TSSERVER = "node_modules/typescript/lib/tsserver.js"


@pytest.fixture
def npm_install(tmp_path: Path) -> Path:
    """An npm prefix outside any workspace: bin/server -> node_modules/server/lib/cli.js, and typescript beside it."""
    prefix = tmp_path / "tools"
    cli = executable(prefix / "node_modules" / "server" / "lib" / "cli.js")
    (prefix / TSSERVER).parent.mkdir(parents=True)
    (prefix / TSSERVER).write_text("// the hub's own\n")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "server").symlink_to(cli)
    return prefix


def pinned_spec(**pins: str) -> ServerSpec:
    return ServerSpec(name="ts", command="server", initialization_options={"tsserver": {"logVerbosity": "off"}},
                      settings={"typescript": {"format": {}}}, pin_untrusted=pins)


def test_untrusted_root_gets_the_file_found_beside_the_real_command(tmp_path: Path, npm_install: Path) -> None:
    root = tmp_path / "ws"
    executable(root / TSSERVER)  # the workspace's own copy, which the server would prefer
    spec = pinned_spec(**{"initialization_options.tsserver.path": TSSERVER, "settings.typescript.tsdk": TSSERVER})
    plan = prepare_launch(spec, str(npm_install / "bin" / "server"), root, trusted=False)
    own = str(npm_install / TSSERVER)
    assert plan.refused is None
    assert plan.spec.initialization_options == {"tsserver": {"logVerbosity": "off", "path": own}}
    assert plan.spec.settings == {"typescript": {"format": {}, "tsdk": own}}
    assert plan.pinned == {"initialization_options.tsserver.path": own, "settings.typescript.tsdk": own}
    assert spec.initialization_options == {"tsserver": {"logVerbosity": "off"}}  # the configured spec is untouched


def test_trusted_root_and_empty_pins_change_nothing(tmp_path: Path, npm_install: Path) -> None:
    root = tmp_path / "ws"
    spec = pinned_spec(**{"initialization_options.tsserver.path": TSSERVER})
    trusted = prepare_launch(spec, str(npm_install / "bin" / "server"), root, trusted=True)
    assert trusted.spec.initialization_options == spec.initialization_options and trusted.pinned == {}
    off = prepare_launch(pinned_spec(**{"initialization_options.tsserver.path": ""}),
                         str(npm_install / "bin" / "server"), root, trusted=False)
    assert off.refused is None and off.spec.initialization_options == spec.initialization_options


def test_no_file_outside_the_workspace_refuses_the_server(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    root = workspace / "web"
    # The only tsserver.js above this command lies inside the workspace: using it would run the workspace's code.
    command = executable(workspace / "tools" / "bin" / "server")
    executable(workspace / TSSERVER)
    plan = prepare_launch(pinned_spec(**{"initialization_options.tsserver.path": TSSERVER}), str(command), root,
                          trusted=False, workspace=workspace)
    assert plan.refused is not None
    assert "not started" in plan.refused and TSSERVER in plan.refused and f"lsp-hub trust {root}" in plan.refused
    elsewhere = executable(tmp_path / "bare" / "bin" / "server")
    assert prepare_launch(pinned_spec(**{"initialization_options.tsserver.path": TSSERVER}), str(elsewhere), root,
                          trusted=False, workspace=workspace).refused is not None


def test_a_pin_outside_initialization_options_and_settings_refuses(tmp_path: Path, npm_install: Path) -> None:
    plan = prepare_launch(pinned_spec(**{"env.PATH": TSSERVER}), str(npm_install / "bin" / "server"),
                          tmp_path / "ws", trusted=False)
    assert plan.refused is not None and "'env.PATH'" in plan.refused


# ============================================================================================ pin_untrusted_programs
def python_spec(*names: str) -> ServerSpec:
    return ServerSpec(name="py", command="server", settings={"python": {"analysis": {}}},
                      pin_untrusted_programs={"settings.python.pythonPath": names})


def test_untrusted_root_gets_the_python_outside_it_not_its_venv(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    planted = executable(root / ".venv" / "bin" / "python3")  # what the server would run on its own
    outside = executable(tmp_path / "usr" / "bin" / "python3")
    command = executable(tmp_path / "tools" / "bin" / "server")
    # The workspace's own venv first on PATH (a project shell that activated it): passed over.
    monkeypatch.setenv("PATH", os.pathsep.join((str(planted.parent), str(outside.parent))))
    plan = prepare_launch(python_spec("python3", "python"), str(command), root, trusted=False)
    assert plan.refused is None
    assert plan.spec.settings == {"python": {"analysis": {}, "pythonPath": str(outside)}}
    assert plan.pinned == {"settings.python.pythonPath": str(outside)}
    trusted = prepare_launch(python_spec("python3", "python"), str(command), root, trusted=True)
    assert trusted.spec.settings == {"python": {"analysis": {}}} and trusted.pinned == {}


def test_the_first_program_found_wins_and_none_found_refuses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    command = executable(tmp_path / "tools" / "bin" / "server")
    plain = executable(tmp_path / "usr" / "bin" / "lsp-hub-test-python")
    monkeypatch.setenv("PATH", str(plain.parent))
    plan = prepare_launch(python_spec("lsp-hub-test-python3", "lsp-hub-test-python"), str(command), root,
                          trusted=False)
    assert plan.pinned == {"settings.python.pythonPath": str(plain)}
    plain.unlink()
    refused = prepare_launch(python_spec("lsp-hub-test-python3", "lsp-hub-test-python"), str(command), root,
                             trusted=False)
    assert refused.refused is not None
    assert "lsp-hub-test-python3 or lsp-hub-test-python" in refused.refused
    assert f"lsp-hub trust {root}" in refused.refused
    off = prepare_launch(python_spec(), str(command), root, trusted=False)  # an empty list turns the pin off
    assert off.refused is None and off.pinned == {}


def test_a_trusted_only_server_starts_only_for_a_trusted_root(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    command = executable(tmp_path / "tools" / "bin" / "server")
    spec = ServerSpec(name="rust", command="server", trusted_only=True)
    refused = prepare_launch(spec, str(command), root, trusted=False)
    assert refused.refused is not None
    assert "project's own code" in refused.refused and f"lsp-hub trust {root}" in refused.refused
    assert prepare_launch(spec, str(command), root, trusted=True).refused is None


def test_an_untrusted_roots_venv_packages_are_read_not_its_interpreter_run(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    command = executable(tmp_path / "tools" / "bin" / "server")
    spec = ServerSpec(name="py", command="server", settings={"python": {"analysis": {"extraPaths": ["/opt/x"]}}},
                      untrusted_venv_packages="settings.python.analysis.extraPaths")
    assert prepare_launch(spec, str(command), root, trusted=False).venv_packages == []  # no .venv
    packages = root / ".venv" / "lib" / "python3.11" / "site-packages"
    packages.mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    elsewhere = tmp_path / "elsewhere" / "site-packages"  # a site-packages linked from outside is not read
    elsewhere.mkdir(parents=True)
    (root / ".venv" / "lib" / "python3.12").mkdir()
    (root / ".venv" / "lib" / "python3.12" / "site-packages").symlink_to(elsewhere)
    plan = prepare_launch(spec, str(command), root, trusted=False)
    real = os.path.realpath(packages)
    assert plan.venv_packages == [real]
    assert plan.spec.settings == {"python": {"analysis": {"extraPaths": ["/opt/x", real]}}}
    trusted = prepare_launch(spec, str(command), root, trusted=True)
    assert trusted.venv_packages == [] and trusted.spec.settings == spec.settings


def test_an_untrusted_venv_packages_key_outside_the_settings_refuses(tmp_path: Path) -> None:
    command = executable(tmp_path / "tools" / "bin" / "server")
    spec = ServerSpec(name="py", command="server", untrusted_venv_packages="env.PYTHONPATH")
    plan = prepare_launch(spec, str(command), tmp_path / "ws", trusted=False)
    assert plan.refused is not None and "its untrusted_venv_packages key 'env.PYTHONPATH'" in plan.refused


def test_the_hubs_own_typescript_counts_when_the_workspace_holds_the_hub(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lsp-hub's checkout opened as the workspace (its examples/sample in a fresh clone, from a shell that sourced
    nothing): the TypeScript installed beside the hub's own server lay inside the workspace, and the server was
    refused there."""
    workspace = tmp_path / "checkout"
    prefix = workspace / ".tools" / "npm"
    cli = executable(prefix / "node_modules" / "server" / "lib" / "cli.js")
    (prefix / TSSERVER).parent.mkdir(parents=True)
    (prefix / TSSERVER).write_text("// the hub's own\n")
    (prefix / "node_modules" / ".bin").mkdir()
    (prefix / "node_modules" / ".bin" / "server").symlink_to(cli)
    monkeypatch.setattr(resolve, "hub_tool_directories", lambda: (str(prefix / "node_modules" / ".bin"),))
    plan = prepare_launch(pinned_spec(**{"initialization_options.tsserver.path": TSSERVER}),
                          str(prefix / "node_modules" / ".bin" / "server"), workspace / "examples" / "web",
                          trusted=False, workspace=workspace)
    assert plan.refused is None and plan.pinned == {"initialization_options.tsserver.path": str(prefix / TSSERVER)}
    executable(workspace / TSSERVER)  # the workspace's own, beside no hub tool directory, still is not used
    other = prepare_launch(pinned_spec(**{"initialization_options.tsserver.path": TSSERVER}),
                           str(executable(workspace / "tools" / "bin" / "server")), workspace / "examples" / "web",
                           trusted=False, workspace=workspace)
    assert other.refused is not None


def test_a_value_pin_is_set_for_an_untrusted_root_only_and_must_name_a_pinnable_table(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    command = executable(tmp_path / "tools" / "bin" / "server")
    spec = ServerSpec(name="json", command="server", initialization_options={"provideFormatter": True},
                      pin_untrusted_values={"initialization_options.handledSchemaProtocols": ["file"]})
    plan = prepare_launch(spec, str(command), root, trusted=False)
    assert plan.refused is None
    assert plan.spec.initialization_options == {"provideFormatter": True, "handledSchemaProtocols": ["file"]}
    assert plan.pinned_values == {"initialization_options.handledSchemaProtocols": '["file"]'}
    trusted = prepare_launch(spec, str(command), root, trusted=True)
    assert trusted.spec.initialization_options == {"provideFormatter": True} and trusted.pinned_values == {}
    wrong = ServerSpec(name="json", command="server", pin_untrusted_values={"env.SCHEMAS": "off"})
    refused = prepare_launch(wrong, str(command), root, trusted=False)
    assert refused.refused is not None and "pin_untrusted_values key 'env.SCHEMAS'" in refused.refused
