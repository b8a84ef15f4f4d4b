"""An exclusive, non-blocking lock on an open file, released when the descriptor closes or the process ends
(even by SIGKILL): `flock` on POSIX, `msvcrt.locking` of the first byte on Windows."""

from __future__ import annotations

import os
import sys

if sys.platform == "win32":
    import msvcrt

    def try_lock(descriptor: int) -> bool:
        """Take the lock if it is free; False when another holds it."""
        try:
            os.lseek(descriptor, 0, os.SEEK_SET)
            msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def unlock(descriptor: int) -> None:
        os.lseek(descriptor, 0, os.SEEK_SET)
        msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)

else:
    # fcntl is imported when a lock is taken, not with this module: every module must import on a system that
    # lacks it (tests/test_platform_imports.py).

    def try_lock(descriptor: int) -> bool:
        """Take the lock if it is free; False when another holds it."""
        import fcntl

        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def unlock(descriptor: int) -> None:
        import fcntl

        fcntl.flock(descriptor, fcntl.LOCK_UN)


def read_from_start(descriptor: int, size: int) -> bytes:
    """Up to `size` bytes from the start of the file (os.pread does not exist on Windows)."""
    os.lseek(descriptor, 0, os.SEEK_SET)
    return os.read(descriptor, size)


def replace_content(descriptor: int, data: bytes) -> None:
    """Make the file hold exactly `data` (written through the descriptor that holds its lock)."""
    os.ftruncate(descriptor, 0)
    os.lseek(descriptor, 0, os.SEEK_SET)
    os.write(descriptor, data)
