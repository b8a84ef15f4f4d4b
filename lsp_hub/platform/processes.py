"""Pipe buffer sizes and whether a process still runs."""

from __future__ import annotations

import logging
import os
import stat
import sys
from pathlib import Path

from lsp_hub.pid_liveness import pid_exists

logger = logging.getLogger(__name__)

PROC = Path("/proc")


def widen_pipe_buffer(descriptor: int, size: int) -> bool:
    """Ask for a `size`-byte buffer on a pipe (Linux F_SETPIPE_SZ; other systems size pipes themselves).

    Anything that is not a pipe, or a system that refuses, keeps what it has; returns whether it was widened."""
    if sys.platform == "win32":
        return False
    import fcntl

    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:
        return False
    try:
        if not stat.S_ISFIFO(os.fstat(descriptor).st_mode):
            return False
        fcntl.fcntl(descriptor, set_size, size)
    except OSError as error:
        logger.debug("pipe buffer left as it is: %s", error)
        return False
    return True


def pid_alive(pid: int, proc: Path = PROC) -> bool:
    """Whether `pid` runs (a zombie has ended): /proc on Linux, else psutil, else a signal 0."""
    if sys.platform == "win32":
        return _alive_by_psutil(pid, default=False)
    if not pid_exists(pid):
        return False
    try:
        with open(proc / str(pid) / "stat") as process_stat:
            return process_stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        if proc.is_dir():  # /proc is there and the process is not in it: it ended
            return False
    except (OSError, IndexError):
        pass
    # No /proc (macOS): a zombie still answers signal 0, so ask psutil for its status where it is installed.
    return _alive_by_psutil(pid, default=True)


def _alive_by_psutil(pid: int, *, default: bool) -> bool:
    try:
        import psutil
    except ImportError:
        return default
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return default
