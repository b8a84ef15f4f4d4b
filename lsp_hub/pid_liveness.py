"""Whether a process id still names a process: the one operating-system fact that both the index (a parse worker
watches the process that owns it) and the platform room (`platform.processes.pid_alive`, which adds the zombie
check that needs /proc or psutil's status) need. A leaf: standard library only at import time, no lsp_hub import,
so the index may use it without importing the platform room.
"""

from __future__ import annotations

import os
import sys


def pid_exists(pid: int) -> bool:
    """Whether `pid` names a process, ours or another user's; a zombie (ended, not yet reaped) still counts."""
    if sys.platform == "win32":  # os.kill(pid, 0) there would terminate the process, not ask about it
        import psutil  # a dependency; imported here so that importing this module stays cheap

        return bool(psutil.pid_exists(pid))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's
        return True
    return True
