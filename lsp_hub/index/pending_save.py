"""The mark a save of graphs leaves in the cache directory while it outlives the process that answered
(`background.save_after_exit`): `graph-save.pid`, naming the process that is storing (pid and host). A process
about to read stored graphs from that directory waits while the named process runs, so that a map asked right
after a cold one still finds the graphs the first stored rather than building them again.

A file and a pid rather than a lock on a file: the index imports nothing of the platform room, and the one fact it
needs, whether a pid still runs, is the `pid_liveness` leaf's. A mark left by a process that died is stale and read
as none; a pid reused meanwhile by another process costs a reader at most `WAIT_SECONDS`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path

from lsp_hub.pid_liveness import pid_exists

MARK_FILE_NAME = "graph-save.pid"
WAIT_SECONDS = 30.0  # a save at 100,000 files takes a few seconds; building the graphs instead takes far longer
_POLL_SECONDS = 0.01
_HOST = socket.gethostname().replace(" ", "_")


def _named_pid(mark: Path) -> int | None:
    """The pid the mark names, when it was made on this machine (a cache directory shared over the network may
    hold another machine's mark, whose pid means nothing here)."""
    try:
        pid, _, host = mark.read_text(encoding="utf-8").strip().partition(" ")
        return int(pid) if host == _HOST else None
    except (OSError, ValueError):
        return None


def _mark_text(pid: int) -> str:
    return f"{pid} {_HOST}"


def claim(cache_dir: Path) -> bool:
    """Mark a save under way in `cache_dir`, naming this process; False when a running process's save holds the
    mark already (or it cannot be made). A mark naming a process that has ended is replaced."""
    mark = cache_dir / MARK_FILE_NAME
    for _attempt in range(2):
        try:
            descriptor = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            holder = _named_pid(mark)
            if holder is not None and pid_exists(holder):
                return False
            with contextlib.suppress(OSError):
                mark.unlink()  # stale: its process has ended
            continue
        except OSError:
            return False
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(_mark_text(os.getpid()))
        return True
    return False


def hand_to(cache_dir: Path, pid: int) -> None:
    """Name `pid` (the child now storing) in the mark this process holds, replacing it whole."""
    mark = cache_dir / MARK_FILE_NAME
    staged = cache_dir / f"{MARK_FILE_NAME}.{os.getpid()}"
    with contextlib.suppress(OSError):
        staged.write_text(_mark_text(pid), encoding="utf-8")
        os.replace(staged, mark)


def release(cache_dir: Path, handed_by: int | None = None) -> None:
    """Remove the mark if it names this process, or `handed_by` (the process that claimed it, when this child
    finished before it was named)."""
    mark = cache_dir / MARK_FILE_NAME
    if _named_pid(mark) in (os.getpid(), handed_by):
        with contextlib.suppress(OSError):
            mark.unlink()


def wait_for_saves(cache_dir: Path, timeout: float = WAIT_SECONDS) -> float:
    """Wait (up to `timeout`) while the mark of `cache_dir` names a running process other than this one; returns the
    seconds waited. No mark (nearly always): one failed open."""
    mark = cache_dir / MARK_FILE_NAME
    started = time.monotonic()
    while True:
        holder = _named_pid(mark)
        if holder is None or holder == os.getpid() or not pid_exists(holder):
            break
        if time.monotonic() - started >= timeout:
            break
        time.sleep(_POLL_SECONDS)
    return time.monotonic() - started
