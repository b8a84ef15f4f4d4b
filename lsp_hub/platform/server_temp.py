"""A temporary directory of its own for each language server the hub starts, removed when the server has ended.

Servers leave files in the system's temporary directory that nothing removes: typescript-language-server makes a
directory there for tsserver's cancellation files at every start and never deletes it (this machine's /tmp held
3,052 of them after a day of tests), and a daemon that starts servers for days, or agents that start a
`query` process per question, pile them up. So a server gets TMPDIR (TEMP and TMP on Windows) pointing at a fresh
private directory (`tempfile.mkdtemp`: mode 0700, a name nobody can take first), removed when its process ends.
One left by a hub that was killed is removed by the next hub that starts a server: its name carries the owning
hub's pid, and it goes once that process is gone.

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
from pathlib import Path

from lsp_hub.platform.processes import pid_alive
from lsp_hub.platform.users import owned_by_current_user

logger = logging.getLogger(__name__)

PREFIX = "lsp-hub-server-"
ENVIRONMENT_KEYS = ("TEMP", "TMP") if sys.platform == "win32" else ("TMPDIR",)


def enabled() -> bool:
    return sys.platform != "darwin"


class ServerTemporaryDirectories:
    """Makes each server's directory under `base` (the system's temporary directory), removes it, and once per
    process sweeps those of hubs that have ended."""

    def __init__(self, base: Path | None = None, owner_pid: int | None = None) -> None:
        self._base = base
        self._owner_pid = owner_pid
        self._swept = False
        self._lock = threading.Lock()

    @property
    def base(self) -> Path:
        return self._base if self._base is not None else Path(tempfile.gettempdir())

    def make(self) -> Path | None:
        """A new private directory for one server, or None (the server keeps the system's) where none can be made."""
        if not enabled():
            return None
        self._sweep_once()
        owner = self._owner_pid if self._owner_pid is not None else os.getpid()
        try:
            return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{owner}-", dir=self.base))
        except OSError as error:
            logger.info("servers keep the system's temporary directory: %s", error)
            return None

    @staticmethod
    def environment(directory: Path | None) -> dict[str, str]:
        """The variables that point a server at `directory` (none for None)."""
        return {key: str(directory) for key in ENVIRONMENT_KEYS} if directory is not None else {}

    @staticmethod
    def remove(directory: Path | None) -> None:
        """Remove a server's directory with what it left; what cannot be removed yet (a file still open on Windows)
        goes with the next sweep after this hub."""
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    def _sweep_once(self) -> None:
        with self._lock:
            if self._swept:
                return
            self._swept = True
        # In the background: the system's temporary directory can hold thousands of entries.
        threading.Thread(target=self.sweep, name="lsp-hub server-temp sweep", daemon=True).start()

    def sweep(self) -> list[Path]:
        """Remove the directories of hubs that no longer run (ours alone: owned by this user, not a link)."""
        removed: list[Path] = []
        try:
            entries = list(os.scandir(self.base))
        except OSError:
            return removed
        for entry in entries:
            owner = _owner_pid(entry.name)
            if owner is None or owner == os.getpid() or pid_alive(owner):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and owned_by_current_user(info.st_uid):
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed.append(Path(entry.path))
        return removed


def _owner_pid(name: str) -> int | None:
    if not name.startswith(PREFIX):
        return None
    owner, _, _random = name.removeprefix(PREFIX).partition("-")
    return int(owner) if owner.isdigit() else None


SERVER_TEMP = ServerTemporaryDirectories()
