"""Reads and writes confined to a workspace root: no race redirects them, refusals are one sentence, nothing left."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_hub.agents.query import QueryError, atomic_write
from lsp_hub.platform import confined_files
from lsp_hub.platform.confined_files import ConfinedRoot, FileMissing, FileRefused

# Swaps two names until its standard input closes (at most 60 s): an atomic exchange where the C library has
# renameat2, else through a third name. A process of its own, so it runs truly beside the writes.
FLIPPER = r"""
import ctypes, ctypes.util, os, select, sys, time
a, b, spare = (os.fsencode(name) for name in sys.argv[1:4])
renameat2 = getattr(ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True), "renameat2", None)
print("flipping", flush=True)
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not select.select([sys.stdin], [], [], 0)[0]:
    for _ in range(50):
        if renameat2 is not None:
            renameat2(-100, a, -100, b, 2)
        else:
            os.rename(a, spare); os.rename(b, a); os.rename(spare, b)
"""


def _stray_files(directory: Path) -> list[str]:
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*") if path.is_file())


def _race(tmp_path: Path, write: Callable[[int], None], rounds: int = 1000) -> tuple[list[str], list[str]]:
    """`write(i)` while another process swaps ws/sub and ws/link, a directory and a symbolic link to a directory
    outside the workspace. Returns the files that ended up outside, and the temporary files left anywhere."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "sub").mkdir()
    (workspace / "link").symlink_to(outside)
    flipper = subprocess.Popen([sys.executable, "-c", FLIPPER, str(workspace / "sub"), str(workspace / "link"),
                                str(workspace / "spare")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert flipper.stdout is not None and flipper.stdout.readline() == b"flipping\n"
    try:
        for index in range(rounds):
            with contextlib.suppress(FileRefused, QueryError):  # refusing is fine; escaping is not
                write(index)
    finally:
        assert flipper.stdin is not None
        flipper.stdin.close()
        flipper.wait(10)
    temporaries = [name for name in _stray_files(tmp_path) if ".lsp-hub" in name]
    inside = [name for name in _stray_files(workspace) if ".lsp-hub" not in name]
    assert len(inside) > rounds // 10, "the race must let writes through, or it proves nothing"
    return _stray_files(outside), temporaries


def _either(index: int) -> str:
    """One of the two swapped names, in turn: whichever is the directory at that moment lets the write through."""
    return "sub" if index % 2 else "link"


def test_a_directory_swapped_for_a_link_outside_never_redirects_a_write(tmp_path: Path) -> None:
    def write(index: int) -> None:
        ConfinedRoot(tmp_path / "ws").write(f"{_either(index)}/x{index}.py", b"x = 1\n")

    escaped, temporaries = _race(tmp_path, write)
    assert escaped == [] and temporaries == []


def test_query_writes_survive_the_same_race(tmp_path: Path) -> None:
    def write(index: int) -> None:
        workspace = tmp_path / "ws"
        atomic_write(workspace / _either(index) / f"y{index}.py", "y = 1\n", ConfinedRoot(workspace))

    escaped, temporaries = _race(tmp_path, write)
    assert escaped == [] and temporaries == []


def test_links_inside_the_root_are_followed_and_links_out_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "real").mkdir(parents=True)
    outside.mkdir()
    (root / "alias").symlink_to("real")
    (root / "out").symlink_to(outside)
    (root / "real" / "file.py").write_text("a\n")
    (root / "file_link.py").symlink_to("real/file.py")
    (root / "escape.py").symlink_to(outside / "secret.py")
    (outside / "secret.py").write_text("secret\n")
    files = ConfinedRoot(root)
    assert files.read("alias/file.py").data == b"a\n"
    result = files.write("file_link.py", b"b\n")  # the link's target is written, the link stays
    assert result.path == files.root / "real" / "file.py" and not result.created
    assert (root / "file_link.py").is_symlink() and (root / "real" / "file.py").read_text() == "b\n"
    for name in ("out/new.py", "escape.py", "../outside/secret.py", str(outside / "secret.py")):
        with pytest.raises(FileRefused, match="outside the workspace"):
            files.write(name, b"x\n")
    assert (outside / "secret.py").read_text() == "secret\n" and _stray_files(outside) == ["secret.py"]


def test_refusals_are_one_sentence_and_leave_the_file_alone(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    files = ConfinedRoot(root)
    (root / "frozen.py").write_text("old\n")
    (root / "frozen.py").chmod(0o444)
    with pytest.raises(FileRefused, match=r"frozen.py is read-only \(mode 444\).*force"):
        files.write("frozen.py", b"new\n")
    assert (root / "frozen.py").read_text() == "old\n"
    files.write("frozen.py", b"new\n", force=True)  # asked for: replaced, still read-only
    assert (root / "frozen.py").read_text() == "new\n"
    assert stat.S_IMODE((root / "frozen.py").stat().st_mode) == 0o444

    (root / "locked").mkdir()
    (root / "locked" / "a.py").write_text("a\n")
    (root / "locked").chmod(0o555)
    try:
        with pytest.raises(FileRefused, match=r"directory of locked/a\.py is read-only"):
            files.write("locked/a.py", b"b\n")
    finally:
        (root / "locked").chmod(0o755)
    assert (root / "locked" / "a.py").read_text() == "a\n"

    long_name = "n" * 240 + ".py"  # 243 characters: fine, the temporary file's name is short
    files.write(long_name, b"x\n")
    assert (root / long_name).read_text() == "x\n"
    with pytest.raises(FileRefused, match="is 303 bytes long; file systems allow at most 255 bytes"):
        files.write("n" * 300 + ".py", b"x\n")

    files.write("~user.py", b"tilde\n")  # a character, not a home directory
    assert (root / "~user.py").read_text() == "tilde\n"
    with pytest.raises(FileRefused, match="is a directory"):
        files.write("locked", b"x\n")
    os.mkfifo(root / "pipe.py")
    with pytest.raises(FileRefused, match=r"pipe\.py is a FIFO, not a regular file"):
        files.read("pipe.py")  # refused without blocking on the FIFO
    with pytest.raises(FileMissing):
        files.read("missing/none.py")
    assert [name for name in _stray_files(root) if confined_files.TEMPORARY_PREFIX in name] == []


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("old\n")

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(confined_files.os, "rename", full_disk)
    with pytest.raises(FileRefused, match=r"a\.py: the disk is full; the file is unchanged"):
        ConfinedRoot(root).write("a.py", b"new\n")
    assert (root / "a.py").read_text() == "old\n" and os.listdir(root) == ["a.py"]


def test_without_dir_fd_symbolic_links_in_a_path_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confined_files, "HAS_DIR_FD", False)
    root = tmp_path / "ws"
    (root / "real").mkdir(parents=True)
    (root / "alias").symlink_to("real")
    files = ConfinedRoot(root)
    with pytest.raises(FileRefused, match="alias is a symbolic link; on this platform"):
        files.write("alias/a.py", b"x\n")
    written = files.write("real/a.py", b"x\n")
    assert written.created and files.read("real/a.py").data == b"x\n"
    assert os.listdir(root / "real") == ["a.py"]
