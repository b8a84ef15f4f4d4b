"""The platform room: every facility that differs between Linux, macOS and Windows, behind one interface.

Each module picks its implementation by what the running system offers (not by its name alone) and has a safe
fallback for a system that offers none:
- `users`: who this process runs as, in the form each system compares users by;
- `locks`: an exclusive non-blocking lock on an open file (`flock`; `msvcrt.locking` on Windows);
- `processes`: pipe buffer sizes, whether a pid still runs;
- `peers`: who is on the other end of a local connection (unix socket: SO_PEERCRED, getpeereid; loopback TCP:
  /proc/net/tcp, else psutil);
- `children`: children that die with the hub (PR_SET_PDEATHSIG; else a warden process that kills them when the
  hub's pipe to it closes; Windows: a Job Object with KILL_ON_JOB_CLOSE);

No module outside this package imports fcntl, termios, msvcrt or ctypes.windll, or reads /proc
(tests/test_platform_room.py). Standard library only at import time (psutil is imported where it is needed), so
`lsp-hub --connect` still starts fast.
"""
