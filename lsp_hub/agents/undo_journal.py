"""What verified writes replaced, so that `undo` can put it back.

Each verified write of a session (an MCP session, or the shell's `lsp-hub query` calls on one root) appends one
entry: for every file it wrote, the bytes before (none for a file it created) and a digest of the bytes it left.
`undo` takes the session's last entry back, but only while every file in it still holds what the write left: a
file changed since (by an editor, another agent) is named and nothing is restored. Entries live in the user's
private runtime directory, one folder per workspace root, at most `depth` per session (the oldest go first).

Standard library only."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_hub.agents.write_lock import journal_directory
from lsp_hub.platform.confined_files import ConfinedRoot, FileMissing, FileRefused

SHELL_SESSION = "shell"  # every `lsp-hub query` on a root: the user's shell is one session


class NothingToUndo(Exception):
    """The session has no write left to take back, or a file changed since; the message names which."""


@dataclass(frozen=True)
class JournalFile:
    path: str  # real path inside the root
    before: bytes | None  # None: the write created it
    after_digest: str


@dataclass(frozen=True)
class JournalEntry:
    name: str  # the entry's file name in the journal
    files: tuple[JournalFile, ...]
    when: float


def digest(data: bytes | None) -> str:
    return "absent" if data is None else hashlib.sha256(data).hexdigest()


class UndoJournal:
    def __init__(self, root: Path, session: str, depth: int) -> None:
        self.root = Path(os.path.realpath(root))
        self.session = session
        self.depth = depth
        key = hashlib.sha256(os.fsencode(self.root)).hexdigest()[:24]
        self.directory = journal_directory() / key

    def record(self, files: list[tuple[Path, bytes | None, bytes | None]]) -> None:
        """One verified write: (path, bytes before or None if created, bytes after or None if deleted) per file."""
        if self.depth <= 0 or not files:
            return
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        entry = {"session": self.session, "when": time.time(), "files": [
            {"path": str(path), "before": None if before is None else base64.b64encode(before).decode("ascii"),
             "after": digest(after)} for path, before, after in files]}
        name = f"{time.time_ns():020d}-{secrets.token_hex(4)}.json"
        temporary = self.directory / f".{name}.tmp"
        temporary.write_text(json.dumps(entry), encoding="utf-8")
        os.replace(temporary, self.directory / name)
        for stale in self._entries()[:-self.depth]:
            with contextlib.suppress(OSError):
                (self.directory / stale.name).unlink()

    def _entries(self) -> list[JournalEntry]:
        """This session's entries, oldest first."""
        entries = []
        try:
            names = sorted(name for name in os.listdir(self.directory) if name.endswith(".json"))
        except FileNotFoundError:
            return []
        for name in names:
            try:
                data: Any = json.loads((self.directory / name).read_text(encoding="utf-8"))
                if data.get("session") != self.session:
                    continue
                files = tuple(JournalFile(item["path"], None if item["before"] is None else
                                          base64.b64decode(item["before"]), item["after"]) for item in data["files"])
                entries.append(JournalEntry(name, files, float(data.get("when", 0))))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a damaged entry is skipped, never fatal
        return entries

    def last(self) -> JournalEntry:
        entries = self._entries()
        if not entries:
            raise NothingToUndo("nothing to undo: this session has made no verified write (or undid them all)")
        return entries[-1]

    def check_unchanged(self, entry: JournalEntry, files: ConfinedRoot) -> None:
        """Raise NothingToUndo naming the files that no longer hold what the write left."""
        changed = []
        for item in entry.files:
            try:
                current: bytes | None = files.read(item.path).data
            except FileMissing:
                current = None
            except FileRefused as refusal:
                raise NothingToUndo(f"nothing undone: {refusal}") from None
            if digest(current) != item.after_digest:
                changed.append(os.path.relpath(item.path, self.root))
        if changed:
            raise NothingToUndo(f"nothing undone: {', '.join(changed)} changed since that write (undo would lose "
                                "those changes); edit them back by hand")

    def forget(self, entry: JournalEntry) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.directory / entry.name).unlink()
