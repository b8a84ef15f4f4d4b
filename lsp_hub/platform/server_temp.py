"""A temporary directory of its own for each language server the hub starts, removed when the server has ended.

Servers leave files in the system's temporary directory that nothing removes: typescript-language-server makes a
directory there for tsserver's cancellation files at every start and never deletes it (this machine's /tmp held
3,052 of them after a day of tests), and a daemon that starts servers for days, or agents that start a
`query` process per question, pile them up. So a server gets TMPDIR (TEMP and TMP on Windows) pointing at a fresh
private directory (`tempfile.mkdtemp`: mode 0700, a name nobody can take first), removed when its process ends.
One left by a hub that was killed is removed by the next hub that starts a server. While a server runs, its hub
holds a lock on the directory (`flock` of the directory itself, released however the hub ends), so the sweep
takes only what nobody holds, a pid that another container reuses or cannot see included; on Windows, which cannot
lock a directory, the pid in the name must name no running process. A directory younger than a minute is left
alone: its hub may not have locked it yet.

Not on macOS: there the temporary directory is already the user's own and the system clears what lies unused in it
for three days, and a directory more in the path could push a server's Unix socket past the 104-byte limit.
A TMPDIR the user's configuration sets for a server wins (`env` is applied after this).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path

from lsp_hub.platform.locks import try_lock
from lsp_hub.platform.processes import pid_alive
from lsp_hub.platform.users import owned_by_current_user

logger = logging.getLogger(__name__)

PREFIX = "lsp-hub-server-"
ENVIRONMENT_KEYS = ("TEMP", "TMP") if sys.platform == "win32" else ("TMPDIR",)
SWEEP_MIN_AGE_SECONDS = 60.0  # between mkdtemp and the lock, a directory is nobody's
_DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_LOCKS_DIRECTORIES = sys.platform != "win32"


def enabled() -> bool:
    return sys.platform != "darwin"


class ServerTemporaryDirectories:
    """Makes each server's directory under `base` (the system's temporary directory) and holds it, removes it, and
    once per process sweeps those nobody holds."""

    def __init__(self, base: Path | None = None, owner_pid: int | None = None) -> None:
        self._base = base
        self._owner_pid = owner_pid
        self._swept = False
        self._lock = threading.Lock()
        self._held: dict[Path, int] = {}  # directory -> the descriptor that holds its lock

    @property
    def base(self) -> Path:
        return self._base if self._base is not None else Path(tempfile.gettempdir())

    def make(self) -> Path | None:
        """A new private directory for one server, held until `remove`, or None (the server keeps the system's)
        where none can be made."""
        if not enabled():
            return None
        self._sweep_once()
        owner = self._owner_pid if self._owner_pid is not None else os.getpid()
        try:
            directory = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{owner}-", dir=self.base))
        except OSError as error:
            logger.info("servers keep the system's temporary directory: %s", error)
            return None
        if _LOCKS_DIRECTORIES:
            try:
                descriptor = os.open(directory, _DIRECTORY_FLAGS)
            except OSError as error:  # unheld, it is still removed when the server ends, and swept after a minute
                logger.info("cannot hold %s: %s", directory, error)
            else:
                try_lock(descriptor)
                with self._lock:
                    self._held[directory] = descriptor
        return directory

    @staticmethod
    def environment(directory: Path | None) -> dict[str, str]:
        """The variables that point a server at `directory` (none for None)."""
        return {key: str(directory) for key in ENVIRONMENT_KEYS} if directory is not None else {}

    def remove(self, directory: Path | None) -> None:
        """Remove a server's directory with what it left; what cannot be removed yet (a file still open on Windows)
        goes with a sweep after this hub."""
        if directory is None:
            return
        shutil.rmtree(directory, ignore_errors=True)
        with self._lock:
            descriptor = self._held.pop(directory, None)
        if descriptor is not None:
            os.close(descriptor)

    def _sweep_once(self) -> None:
        with self._lock:
            if self._swept:
                return
            self._swept = True
        # In the background: the system's temporary directory can hold thousands of entries.
        threading.Thread(target=self.sweep, name="lsp-hub server-temp sweep", daemon=True).start()

    def sweep(self, min_age_seconds: float = SWEEP_MIN_AGE_SECONDS) -> list[Path]:
        """Remove the directories nobody holds (ours alone: owned by this user, not a link), older than
        `min_age_seconds`."""
        removed: list[Path] = []
        try:
            entries = list(os.scandir(self.base))
        except OSError:
            return removed
        now = time.time()
        for entry in entries:
            owner = _owner_pid(entry.name)
            if owner is None or owner == os.getpid():
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if not stat.S_ISDIR(info.st_mode) or not owned_by_current_user(info.st_uid):
                    continue
                if now - info.st_mtime < min_age_seconds:
                    continue
                if self._remove_unheld(Path(entry.path), owner):
                    removed.append(Path(entry.path))
        return removed

    @staticmethod
    def _remove_unheld(directory: Path, owner: int) -> bool:
        if not _LOCKS_DIRECTORIES:
            if pid_alive(owner):
                return False
            shutil.rmtree(directory, ignore_errors=True)
            return True
        descriptor = os.open(directory, _DIRECTORY_FLAGS)
        try:
            if not try_lock(descriptor):
                return False  # its hub runs
            shutil.rmtree(directory, ignore_errors=True)
            return True
        finally:
            os.close(descriptor)


def _owner_pid(name: str) -> int | None:
    if not name.startswith(PREFIX):
        return None
    owner, _, _random = name.removeprefix(PREFIX).partition("-")
    return int(owner) if owner.isdigit() else None


SERVER_TEMP = ServerTemporaryDirectories()
