"""One writer per file at a time, across every lsp-hub process of this user (MCP servers, queries, the daemon).

A verified write reads a file, builds its new text, checks it, writes it and waits for its diagnostics; two agents
doing that to one file at once would each write over the other's edit. The lock is a file in the user's private
runtime directory named after the target's real path, held with the platform's file lock (`platform.locks`:
`flock`, `msvcrt.locking` on Windows) for the whole read-check-write-verify step, so the second writer reads what
the first wrote. The lock files are never removed: removing one while another process waits on it would let a
third lock a new file of the same name.

Standard library only."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from lsp_hub.platform.locks import try_lock, unlock
from lsp_hub.platform.users import current_user
from lsp_hub.transport.daemon_client import DaemonError, check_private_directory, prepare_runtime_directory

POLL_SECONDS = 0.02


class WriteLockError(Exception):
    """Another writer held the file for longer than the caller could wait, or no lock could be made."""


def _private_directory(name: str) -> Path:
    """`name/` in the daemon's private runtime directory; where that cannot be had (XDG_RUNTIME_DIR names a
    directory that does not exist), in a private directory of this user's under the temporary directory."""
    try:
        base = prepare_runtime_directory().directory
    except DaemonError:
        base = Path(tempfile.gettempdir()) / f"lsp-hub-files-{current_user()}"
        with contextlib.suppress(FileExistsError):
            os.mkdir(base, 0o700)
        check_private_directory(base)
    directory = base / name
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    return directory


def journal_directory() -> Path:
    """Where the undo journal keeps what verified writes replaced: private to the user, like the locks."""
    try:
        return _private_directory("undo")
    except (DaemonError, OSError) as error:
        raise WriteLockError(f"cannot keep an undo journal: {error}") from None


def lock_path(target: Path) -> Path:
    try:
        directory = _private_directory("locks")
    except (DaemonError, OSError) as error:
        raise WriteLockError(f"cannot lock {target} for writing: {error}") from None
    digest = hashlib.sha256(os.fsencode(os.path.realpath(target))).hexdigest()[:32]
    return directory / f"{digest}.lock"


@contextlib.contextmanager
def exclusive(target: Path, timeout: float) -> Iterator[float]:
    """Hold the write lock of `target`; yields the seconds spent waiting for it. Raises WriteLockError."""
    started = time.monotonic()
    descriptor = os.open(lock_path(target), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        while not try_lock(descriptor):
            if time.monotonic() - started > timeout:
                raise WriteLockError(f"{target} is being written by another agent or editor session; waited "
                                  f"{timeout:.0f} s")
            time.sleep(POLL_SECONDS)
        try:
            yield time.monotonic() - started
        finally:
            unlock(descriptor)
    finally:
        os.close(descriptor)
