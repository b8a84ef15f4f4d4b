"""Finding and starting programs by Windows' rules (PATHEXT, npm's .cmd shims, cmd.exe's quoting), run on Linux
over a fake file system with PureWindowsPath; and the POSIX rules through the resolver on this machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lsp_hub.config.model import ServerSpec
from lsp_hub.config.resolve import prepare_launch, resolve_program
from lsp_hub.platform.commands import System, find_program, launch_for

WINDOWS = System.windows_with(".COM;.EXE;.BAT;.CMD")
NPM = r"C:\Users\ada\AppData\Roaming\npm"
NODEJS = r"C:\Program Files\nodejs"
# npm's cmd-shim as `npm install -g typescript-language-server` writes it (cmd-shim 6).
NPM_SHIM = r"""@ECHO off
GOTO start
:find_dp0
SET dp0=%~dp0
EXIT /b
:start
SETLOCAL
CALL :find_dp0

IF EXIST "%dp0%\node.exe" (
  SET "_prog=%dp0%\node.exe"
) ELSE (
  SET "_prog=node"
  SET PATHEXT=%PATHEXT:;.JS;=;%
)

endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  """ \
    r""""%dp0%\node_modules\typescript-language-server\lib\cli.mjs" %*
"""


def files(*paths: str) -> set[str]:
    return {path.lower() for path in paths}


def on(file_system: set[str]):  # type: ignore[no-untyped-def]
    return lambda path: path.lower() in file_system  # NTFS compares names without case


def test_pathext_is_tried_in_its_order_in_each_directory_in_turn() -> None:
    fs = files(NPM + r"\tsserver.cmd", NODEJS + r"\tsserver.exe", NODEJS + r"\node.exe")
    assert find_program("tsserver", [NPM, NODEJS], WINDOWS, on(fs)) == NPM + r"\tsserver.CMD"
    assert find_program("tsserver", [NODEJS, NPM], WINDOWS, on(fs)) == NODEJS + r"\tsserver.EXE"
    # A name with one of PATHEXT's extensions is taken as it is; one with another extension gets PATHEXT's too.
    assert find_program("node.exe", [NPM, NODEJS], WINDOWS, on(fs)) == NODEJS + r"\node.exe"
    assert find_program("tsserver.cmd", [NODEJS], WINDOWS, on(fs)) is None
    fs_js = files(NPM + r"\cli.js.cmd")
    assert find_program("cli.js", [NPM], WINDOWS, on(fs_js)) == NPM + r"\cli.js.CMD"
    # PATHEXT as the user set it: without .CMD, a shim is not a program.
    assert find_program("tsserver", [NPM], System.windows_with(".EXE"), on(fs)) is None


def test_relative_and_drive_relative_entries_are_never_searched() -> None:
    fs = files(r"ws\node_modules\.bin\tsserver.cmd", r"C:tools\tsserver.cmd", r"\tools\tsserver.cmd")
    for entry in (r"ws\node_modules\.bin", r"C:tools", r"\tools", "", "."):
        assert find_program("tsserver", [entry], WINDOWS, on(fs)) is None, entry
    unc = r"\\server\share\bin"
    assert find_program("tsserver", [unc], WINDOWS, on(files(unc + r"\tsserver.bat"))) == unc + r"\tsserver.BAT"


def test_an_npm_shim_is_started_as_node_and_its_script() -> None:
    shim = NPM + r"\typescript-language-server.cmd"
    script = NPM + r"\node_modules\typescript-language-server\lib\cli.mjs"
    launch = launch_for(shim, ["--stdio"], WINDOWS, read_text=lambda path: NPM_SHIM, is_file=on(files()),
                        find_node=lambda: NODEJS + r"\node.exe")
    assert (launch.argv, launch.refused) == ([NODEJS + r"\node.exe", script], None)
    # node.exe beside the shim (a portable install) is the one the shim itself would run.
    beside = launch_for(shim, [], WINDOWS, read_text=lambda path: NPM_SHIM, is_file=on(files(NPM + r"\node.exe")),
                        find_node=lambda: NODEJS + r"\node.exe")
    assert beside.argv == [NPM + r"\node.exe", script]
    without_node = launch_for(shim, [], WINDOWS, read_text=lambda path: NPM_SHIM, is_file=on(files()),
                              find_node=lambda: None)
    assert without_node.argv == [] and "no node was found" in str(without_node.refused)


def test_another_batch_file_runs_through_cmd_only_when_nothing_in_it_is_cmd_syntax() -> None:
    plain = launch_for(r"C:\tools\server.bat", ["--stdio", "--log=C:\\x.log"], WINDOWS, read_text=lambda p: "@echo",
                       is_file=on(files()), find_node=lambda: None)
    assert plain.argv == ["cmd.exe", "/d", "/c", r"C:\tools\server.bat"] and plain.refused is None
    for program, args in ((r"C:\Program Files\x\server.bat", []), (r"C:\tools\server.bat", ["a&calc.exe"]),
                          (r"C:\tools\server.bat", ["%PATH%"]), (r"C:\tools\server.bat", ['"quoted"'])):
        refused = launch_for(program, args, WINDOWS, read_text=lambda p: "@echo", is_file=on(files()),
                             find_node=lambda: None)
        assert refused.argv == [] and "cmd.exe would interpret" in str(refused.refused), (program, args)


def test_on_posix_a_program_is_started_as_it_is() -> None:
    posix = System(windows=False)
    assert launch_for("/usr/bin/server.cmd", [], posix, read_text=lambda p: NPM_SHIM, is_file=lambda p: True,
                      find_node=lambda: None).argv == ["/usr/bin/server.cmd"]
    assert posix.candidates("tsserver") == ["tsserver"]


def test_the_resolver_keeps_its_rules_through_the_platform_search(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    bin_directory, workspace = tmp_path / "bin", tmp_path / "ws"
    for directory in (bin_directory, workspace / "tools"):
        directory.mkdir(parents=True)
        program = directory / "srv"
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    (bin_directory / "not-executable").write_text("")
    monkeypatch.chdir(workspace / "tools")
    monkeypatch.setenv("PATH", os.pathsep.join(["", ".", str(workspace / "tools"), str(bin_directory)]))
    found = resolve_program("srv", workspace, trusted=False)
    assert found.path == str(bin_directory / "srv")  # not the current directory's, nor the workspace's
    assert found.skipped_local == str(workspace / "tools" / "srv")
    assert resolve_program("not-executable", workspace, trusted=False).path is None
    plan = prepare_launch(ServerSpec(name="srv", command="srv"), str(bin_directory / "srv"), workspace, trusted=False)
    assert plan.program_argv == [str(bin_directory / "srv")] and plan.refused is None
