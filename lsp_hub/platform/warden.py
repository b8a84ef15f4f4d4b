"""`python -m lsp_hub.platform.warden`: kills the hub's children when the hub dies, where the kernel will not.

Linux's PR_SET_PDEATHSIG has no counterpart on macOS. The hub starts one warden and tells it, on the warden's
stdin, the process group of each child it starts (`+PGID`) and of each child that ended (`-PGID`). Nothing but the
hub holds the other end of that pipe, so when the hub ends, however it ends (SIGKILL included), the warden reads
EOF and ends every group still listed: SIGTERM, then SIGKILL after a grace period. A pipe's EOF needs no kqueue
and works on every POSIX system. The warden runs in a session of its own, so a Ctrl-C meant for the hub's
terminal does not end it before it has done its work.

Standard library only.
"""

from __future__ import annotations

import os
import signal
import sys
import time

GRACE_SECONDS = 2.0


def _signal_groups(groups: set[int], sig: int) -> set[int]:
    """Signal each group; returns those that still exist."""
    alive: set[int] = set()
    if sys.platform == "win32":
        return alive
    for group in groups:
        try:
            os.killpg(group, sig)
            alive.add(group)
        except (ProcessLookupError, PermissionError):
            continue
    return alive


def end_groups(groups: set[int], grace_seconds: float = GRACE_SECONDS) -> None:
    if sys.platform == "win32":
        return  # Windows children die with the hub through their Job Object; no warden runs there
    alive = _signal_groups(groups, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = _signal_groups(alive, 0)
    _signal_groups(alive, signal.SIGKILL)


def watch(stream_fd: int = 0) -> set[int]:
    """Read +PGID / -PGID lines until EOF; returns the groups still listed."""
    groups: set[int] = set()
    pending = b""
    while chunk := os.read(stream_fd, 4096):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            try:
                group = int(line[1:])
            except ValueError:
                continue
            if line.startswith(b"+") and group > 1:
                groups.add(group)
            elif line.startswith(b"-"):
                groups.discard(group)
    return groups


def main() -> int:
    if sys.platform != "win32":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    end_groups(watch())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
