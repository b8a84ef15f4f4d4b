"""Children that die with the hub, however the hub ends (SIGKILL included), on every system.

- Linux: each child asks for SIGTERM when its parent dies (`prctl(PR_SET_PDEATHSIG)`, in the child before exec),
  in a process group of its own (so the hub can end what the child starts, too).
- Other POSIX systems (macOS), or Linux where prctl cannot be called: a process group of its own, listed with the
  hub's warden (`warden.py`), which ends every listed group when the hub's pipe to it closes.
- Windows: a Job Object per child with KILL_ON_JOB_CLOSE (`windows_jobs.py`), and a process group of its own.

`ChildKeeper.launch_options()` goes to `create_subprocess_exec`/`Popen`, `adopt(pid)` right after the start,
`release(pid)` once the child has ended, `signal_group(pid, sig)` to stop or kill it with what it started.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lsp_hub.platform.windows_jobs import JobObjects

logger = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
# The signal that cannot be caught; Windows has none (any signal to a process there is TerminateProcess).
if sys.platform == "win32":
    KILL = signal.SIGTERM
else:
    KILL = signal.SIGKILL


def _find_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


# Found once at import (a child between fork and exec must not load libraries); tests set it to None.
PRCTL = _find_prctl()


class Warden:
    """The warden process of this hub (started on first use) and what it has been told."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _send(self, line: str) -> None:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = self._start()
            if self._process is None or self._process.stdin is None:
                return
            try:
                self._process.stdin.write(line.encode() + b"\n")
                self._process.stdin.flush()
            except OSError as error:
                logger.warning("the warden of this hub's children is gone (%s); children may outlive the hub", error)

    @staticmethod
    def _start() -> subprocess.Popen[bytes] | None:
        try:
            # Neither of the hub's output streams: an editor waits for their EOF, which must come when the hub ends.
            return subprocess.Popen([sys.executable, "-m", "lsp_hub.platform.warden"], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
                                    start_new_session=True)
        except OSError as error:
            logger.warning("cannot start the warden of this hub's children (%s); children may outlive the hub", error)
            return None

    def watch(self, group: int) -> None:
        self._send(f"+{group}")

    def forget(self, group: int) -> None:
        self._send(f"-{group}")

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def close(self) -> None:
        """Ends the warden (it ends the groups still listed: none after an orderly stop)."""
        with self._lock:
            if self._process is not None and self._process.stdin is not None:
                with contextlib.suppress(OSError):
                    self._process.stdin.close()
                self._process = None


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the hub dies."""
    if PRCTL is not None:
        PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


class ChildKeeper:
    """How this process starts children that end with it; one per process (`CHILDREN`)."""

    def __init__(self) -> None:
        self.warden = Warden()
        self._jobs: JobObjects | None = None

    @property
    def jobs(self) -> JobObjects:
        if self._jobs is None:  # imported on first use: ctypes.wintypes is of no use elsewhere
            from lsp_hub.platform.windows_jobs import JobObjects

            self._jobs = JobObjects()
        return self._jobs

    @property
    def mechanism(self) -> str:
        if sys.platform == "win32":
            return "job-object"
        return "pdeathsig" if PRCTL is not None else "warden"

    def launch_options(self) -> dict[str, Any]:
        if sys.platform == "win32":
            return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
        if PRCTL is not None:
            return {"start_new_session": True, "preexec_fn": _die_with_parent}
        return {"start_new_session": True}

    def adopt(self, pid: int) -> None:
        """Right after the start: make the child end with us where its launch options could not."""
        if sys.platform == "win32":
            refusal = self.jobs.adopt(pid)
            if refusal is not None:
                logger.warning("child %s may outlive the hub: %s", pid, refusal)
        elif PRCTL is None:
            self.warden.watch(pid)  # started with a session of its own: its pid is its group

    def release(self, pid: int) -> None:
        """The child has ended: its group (or job) is no longer ours to end."""
        if sys.platform == "win32":
            self.jobs.release(pid)
        elif PRCTL is None:
            self.warden.forget(pid)

    def signal_group(self, pid: int, sig: int) -> None:
        """Send `sig` to the child and what it started (Windows: any signal but 0 ends the job)."""
        if sys.platform == "win32":
            if sig and not self.jobs.terminate(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)  # TerminateProcess
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)


CHILDREN = ChildKeeper()


def kill_group(pid: int) -> None:
    """Kill a child started with `new_group_options()` and everything in its group, now."""
    if sys.platform == "win32":
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(["taskkill", "/F", "/T", "/PID", str(pid)], capture_output=True, timeout=10)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def new_group_options() -> dict[str, Any]:
    """Options for a short-lived child in a group of its own (so a timeout can end what it starts too)."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def detached_options() -> dict[str, Any]:
    """Options for the daemon: a session of its own, no console, outliving its starter."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS}
    return {"start_new_session": True}
