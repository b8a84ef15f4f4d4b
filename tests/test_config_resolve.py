"""Finding a server's executable: workspace tool directories (trusted only), then PATH."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from lsp_hub.config.model import ServerSpec
from lsp_hub.config.resolve import resolve_command


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
