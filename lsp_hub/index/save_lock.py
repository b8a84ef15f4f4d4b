"""The lock a save of graphs holds when it outlives the process that answered (`background.save_after_exit`): a
process reading stored graphs from the same cache directory waits for it, so that a map asked right after a cold
one still finds the graphs the first stored rather than building them again.

An exclusive `flock` on `graph-save.lock` in the cache directory. `flock` belongs to the open file, which a forked
child shares: taken before the fork, it stays held by the child alone once the parent has exited, and the kernel
lets it go when the child ends, however it ends. Readers take the shared lock and let it go at once. Without `fcntl`
(Windows) there is no lock, and no save outlives its process there either.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

LOCK_FILE_NAME = "graph-save.lock"
WAIT_SECONDS = 30.0  # a save at 100,000 files takes a few seconds; building the graphs instead takes far longer
_POLL_SECONDS = 0.01

if sys.platform == "win32":

    def take(cache_dir: Path) -> int | None:
        """No save outlives its process here: nothing to hold."""
        return None

    def release(descriptor: int) -> None:
        return None

    def wait_for_saves(cache_dir: Path, timeout: float = WAIT_SECONDS) -> float:
        return 0.0

else:
    # fcntl is imported when a lock is taken, not with this module: every module must import on a system that
    # lacks it (tests/test_platform_imports.py).

    def take(cache_dir: Path) -> int | None:
        """The descriptor holding the exclusive lock of `cache_dir`, or None: another save holds it, or the lock
        cannot be made (no such directory)."""
        import fcntl

        try:
            descriptor = os.open(cache_dir / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            return None
        return descriptor

    def release(descriptor: int) -> None:
        import fcntl

        with contextlib.suppress(OSError):
            fcntl.flock(descriptor, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            os.close(descriptor)

    def wait_for_saves(cache_dir: Path, timeout: float = WAIT_SECONDS) -> float:
        """Wait (up to `timeout`) while a save of `cache_dir` holds the lock; returns the seconds waited. No lock
        file, or none held: about 20 microseconds."""
        import fcntl

        try:
            descriptor = os.open(cache_dir / LOCK_FILE_NAME, os.O_RDONLY)
        except OSError:
            return 0.0  # no save has ever been handed on here
        started = time.monotonic()
        try:
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    fcntl.flock(descriptor, fcntl.LOCK_UN)
                    break
                except BlockingIOError:
                    if time.monotonic() - started >= timeout:
                        break
                    time.sleep(_POLL_SECONDS)
                except OSError:
                    break
        finally:
            os.close(descriptor)
        return time.monotonic() - started
