"""Work that outlives the process: `run_after_exit` runs a function in a child forked from this process, detached
from it, so the process can end while the child finishes (`git gc --auto` detaches the same way). A one-shot
`lsp-hub repomap` hands the save of its graphs to it.

Linux only. macOS's system libraries are not safe in a child forked without exec (Python starts its own processes
there by spawning), and Windows has no fork: there `available()` is False and the caller does the work itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable

DEADLINE_SECONDS = 300  # a child that hangs (a stuck disk) ends by SIGALRM


def available() -> bool:
    """Linux, and not the first process of a container: when that one ends, the container's other processes are
    killed, and the work with them (`docker run ... lsp-hub repomap`)."""
    return sys.platform.startswith("linux") and os.getpid() != 1


if sys.platform == "win32":

    def run_after_exit(work: Callable[[], None]) -> int | None:
        return None  # no fork (`available` says so)

else:

    def run_after_exit(work: Callable[[], None]) -> int | None:
        """Fork a child that runs `work` and ends; returns its pid, or None when none was forked (not `available`,
        or another thread runs: a lock it holds would stay held in the child). The child has its own session (a
        closed terminal's hangup does not end it) and none of this process's descriptors: a reader of this
        process's output sees its end when this process ends, and so does multiprocessing's fork server, which
        holds the same output. The caller must not carry into the child what must not cross a fork (SQLite's
        connections)."""
        if not available() or threading.active_count() > 1:
            return None
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()  # else the child inherits unwritten output (it never writes it: it ends by _exit)
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns of fork in a process with threads: numpy's math library keeps some, which the
                # work given here never calls.
                warnings.simplefilter("ignore", DeprecationWarning)
                child = os.fork()
        except OSError:
            return None
        if child != 0:
            return child
        try:
            _leave_the_parent()
            work()
        finally:
            os._exit(0)

    def _leave_the_parent() -> None:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for descriptor in (0, 1, 2):
            os.dup2(null, descriptor)
        for name in os.listdir("/proc/self/fd"):  # Linux alone comes here
            descriptor = int(name)
            if descriptor > 2:
                with contextlib.suppress(OSError):
                    os.close(descriptor)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(DEADLINE_SECONDS)
