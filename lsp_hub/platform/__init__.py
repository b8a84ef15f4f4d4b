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
- `commands`: finding and starting a program the system's way (PATHEXT, npm's .cmd shims);
- `paths`: file URIs and paths (drive letters, UNC, case-insensitive file systems);
- `detached`: work in a forked child that outlives the process (Linux; elsewhere the caller does it);
- `confined_files`: reading and writing under a root so that no race takes a path outside it (`O_NOFOLLOW` from
  each directory's descriptor; symbolic links refused where there is no `dir_fd`);

No module outside this package imports fcntl, termios, msvcrt or ctypes.windll, or reads /proc
(tests/test_platform_room.py). Standard library only at import time (psutil is imported where it is needed), so
`lsp-hub --connect` still starts fast.
"""
