"""Workspace trust: which directories may choose the programs lsp-hub starts.

A project `.lsp-hub.toml` and binaries inside a workspace (`.venv/bin`, `node_modules/.bin`) come from whoever
wrote the repository. They are only honoured for directories the user trusted with `lsp-hub trust PATH`, recorded
here in `$XDG_CONFIG_HOME/lsp-hub/trusted.json`. Trusting a directory trusts everything below it.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, TextIO

from lsp_hub.config.paths import trust_file

logger = logging.getLogger(__name__)

_FORMAT_VERSION = 1


def _canonical(path: Path | str) -> Path:
    """Absolute, with symlinks resolved, so a link into a trusted tree is judged by where it points."""
    return Path(os.path.expanduser(path)).resolve(strict=False)


class TrustStore:
    """The user's list of trusted directories, stored as JSON.

    The file is read on every query, so `lsp-hub trust` in another process takes effect at the next load. A file
    that cannot be read or parsed is reported through `problem` (and the log) and treated as empty; the next
    `add` keeps a copy of it as `trusted.json.corrupt` before writing a fresh one.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else trust_file()
        self.problem: str | None = None

    # ------------------------------------------------------------------------------------------------ queries
    def list(self) -> builtins.list[Path]:
        """The trusted directories, in the order they were added."""
        return self._read()

    def is_trusted(self, root: Path) -> bool:
        """Whether `root` (symlinks resolved) is a trusted directory or lies below one."""
        return self.trusted_ancestor(root) is not None

    def trusted_ancestor(self, root: Path) -> Path | None:
        """The trusted directory that makes `root` trusted, if any."""
        candidate = _canonical(root)
        for entry in self._read():
            # Entries are stored resolved; resolving again covers hand-edited files naming a symlink.
            for trusted in {entry, _canonical(entry)}:
                if candidate == trusted or trusted in candidate.parents:
                    return entry
        return None

    # ------------------------------------------------------------------------------------------------ changes
    def add(self, path: Path) -> bool:
        """Trust `path` and everything below it. False if it was already in the list."""
        entries = self._read()
        target = _canonical(path)
        if target in entries:
            return False
        self._write([*entries, target])
        return True

    def remove(self, path: Path) -> bool:
        """Stop trusting `path`. False if it was not in the list (a trusted parent stays trusted)."""
        entries = self._read()
        target = _canonical(path)
        # Accept the spelling that was stored even if a symlink on the way changed since.
        absolute = Path(os.path.abspath(os.path.expanduser(path)))
        kept = [entry for entry in entries if entry not in (target, absolute)]
        if len(kept) == len(entries):
            return False
        self._write(kept)
        return True

    # ------------------------------------------------------------------------------------------------ storage
    def _read(self) -> builtins.list[Path]:
        self.problem = None
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as error:
            return self._corrupt(f"cannot read: {error.strerror or error}")
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as error:
            return self._corrupt(f"not valid JSON ({error.msg} at line {error.lineno}); treating it as empty")
        entries = data.get("trusted") if isinstance(data, dict) else None
        if not isinstance(entries, builtins.list) or not all(isinstance(entry, str) for entry in entries):
            return self._corrupt('expected {"trusted": [list of directory paths]}; treating it as empty')
        result: builtins.list[Path] = []
        for entry in entries:
            if os.path.isabs(entry):
                path = Path(entry)
                if path not in result:
                    result.append(path)
        return result

    def _corrupt(self, message: str) -> builtins.list[Path]:
        self.problem = f"{self.path}: {message}"
        logger.warning("trust store %s", self.problem)
        return []

    def _write(self, entries: builtins.list[Path]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.problem is not None and self.path.exists():
            # Never silently destroy a file the user may want to repair by hand.
            with contextlib.suppress(OSError):
                os.replace(self.path, self.path.with_name(self.path.name + ".corrupt"))
        payload = {"version": _FORMAT_VERSION, "trusted": [str(entry) for entry in entries]}
        # Write then rename, so a crash never leaves a half-written file behind.
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".trusted-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(payload, handle, indent=2)
                handle.write("\n")
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        self.problem = None


TRUST_USAGE = "usage: lsp-hub trust PATH | --list | --remove PATH"


def trust_main(argv: builtins.list[str], out: TextIO, store: TrustStore | None = None) -> int:
    """`lsp-hub trust PATH`, `lsp-hub trust --list`, `lsp-hub trust --remove PATH`. Returns the exit code."""
    store = store if store is not None else TrustStore()
    if argv in (["-h"], ["--help"]):
        print(TRUST_USAGE, file=out)
        print("Trusted directories may set server commands in .lsp-hub.toml and use their own", file=out)
        print(f".venv/bin and node_modules/.bin binaries. Stored in {store.path}.", file=out)
        return 0
    if argv == ["--list"]:
        entries = store.list()
        if store.problem:
            print(f"warning: {store.problem}", file=out)
        for entry in entries:
            print(entry, file=out)
        if not entries:
            print("no trusted directories", file=out)
        return 0
    if len(argv) == 2 and argv[0] == "--remove":
        target = Path(argv[1])
        if store.remove(target):
            print(f"no longer trusted: {_canonical(target)}", file=out)
            return 0
        ancestor = store.trusted_ancestor(target)
        if ancestor is not None:
            print(f"{_canonical(target)} is not in the trust list itself; it is trusted through {ancestor}", file=out)
        else:
            print(f"{_canonical(target)} was not trusted", file=out)
        return 1
    if len(argv) == 1 and not argv[0].startswith("-"):
        target = Path(argv[0])
        if not _canonical(target).is_dir():
            print(f"{argv[0]}: not a directory", file=out)
            return 1
        if store.add(target):
            print(f"trusted: {_canonical(target)}", file=out)
        else:
            print(f"already trusted: {_canonical(target)}", file=out)
        return 0
    print(TRUST_USAGE, file=out)
    return 2
