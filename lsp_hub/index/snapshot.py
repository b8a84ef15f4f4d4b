"""A snapshot of one workspace's index (`workspace.WorkspaceIndex.snapshot()`): an immutable view at one moment,
with the graphs and tables derived from it cached on it; and the workspace's relative paths."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

from lsp_hub.index.import_parts import ImportParts
from lsp_hub.index.records import FileRecord
from lsp_hub.index.store import IndexStore
from lsp_hub.index.table_parts import TableParts

T = TypeVar("T")

REPORTED_PATHS_LIMIT = 100  # skippedFiles/pendingFiles lists in results are cut here (counts stay exact)
# The derived value whose presence makes a snapshot the anchor later snapshots update their graphs from.
GRAPH_ANCHOR_KEY = "file_links"


class Snapshot:
    """An immutable view of the index at one moment, with lazily derived data (graphs, tables) cached on it."""

    def __init__(
        self,
        root: Path,
        files: Mapping[str, FileRecord],
        skipped: tuple[tuple[str, str], ...] = (),
        skip_counts: Mapping[str, int] | None = None,
        pending: frozenset[str] = frozenset(),
        markers: Mapping[str, str] | None = None,
        version: int = 0,
    ) -> None:
        self.root = root
        self.files = files
        self.skipped = skipped  # (path, reason), only reasons that leave source code out
        self.skip_counts: Mapping[str, int] = skip_counts or {}
        self.pending = pending  # files found by the walk but not indexed yet (first build in progress)
        self.markers: Mapping[str, str] = markers or {}  # go.mod / Cargo.toml path -> text
        self.version = version
        # The nearest earlier snapshot whose graphs were computed: graphs of this one are updated from it for the
        # files that differ (see graph.py) instead of built anew. Dropped once this snapshot has its own.
        self.anchor: Snapshot | None = None
        # The files that may differ from the anchor's (a superset), as the workspace's changes and walks named them
        # when they published; None without one (a snapshot made outside a workspace: the files are compared).
        self.changed_from_anchor: frozenset[str] | None = None
        self.store: IndexStore | None = None  # where graphs computed on this snapshot may be kept (files on disk)
        self.stopped: Callable[[], bool] = lambda: False  # the index is stopping: long computations give up
        self.table_parts: TableParts | None = None  # name tables a cold build gathered as its results came
        self.import_parts: ImportParts | None = None  # and its imports, resolved
        self._derived: dict[str, Any] = {}
        self._computing: set[str] = set()
        self._derived_lock = threading.RLock()

    def derived(self, key: str, factory: Callable[[Snapshot], T]) -> T:
        """`factory(self)`, computed once per snapshot."""
        try:
            value: T = self._derived[key]
            return value
        except KeyError:
            pass
        with self._derived_lock:
            if key not in self._derived:
                self._computing.add(key)
                try:
                    self._derived[key] = factory(self)
                finally:
                    self._computing.discard(key)
            value = self._derived[key]
            return value

    def forget(self, key: str) -> None:
        """Drop a derived value that another now answers for (the next ask computes it again)."""
        with self._derived_lock:
            self._derived.pop(key, None)

    def has_derived(self, key: str) -> bool:
        """Whether `key` is computed, or being computed (asking for it then waits for it)."""
        return key in self._derived or key in self._computing

    def is_derived(self, key: str) -> bool:
        """Whether `key` is computed (asking for it returns at once)."""
        return key in self._derived

    def fingerprint(self) -> str:
        """What the snapshot's graphs depend on: every file's path and content digest, and the marker files."""

        def digest(snapshot: Snapshot) -> str:
            hasher = hashlib.blake2b(digest_size=16)
            files = snapshot.files
            # The same bytes as an update per file, in one (a third of the time at 100,000 files).
            hasher.update(
                b"".join(
                    [path.encode("utf-8", "surrogateescape") + b"\0" + files[path].digest for path in sorted(files)]
                )
            )
            for path in sorted(snapshot.markers):
                hasher.update(
                    b"\1"
                    + path.encode("utf-8", "surrogateescape")
                    + b"\0"
                    + snapshot.markers[path].encode("utf-8", "surrogateescape")
                )
            return hasher.hexdigest()

        return self.derived("fingerprint", digest)

    def on_disk(self) -> bool:
        """Whether every file is as on disk (no open document's text): only then are its graphs worth keeping."""
        return self.derived("on_disk", lambda snapshot: all(r.size >= 0 for r in snapshot.files.values()))

    @property
    def complete(self) -> bool:
        return not self.pending and not self.skipped

    def completeness(self) -> dict[str, Any]:
        """The `complete` part of a command result: `{complete: true}` or what was left out."""
        result: dict[str, Any] = {"complete": self.complete}
        if self.skipped:
            result["skippedFiles"] = [
                {"path": path, "reason": reason} for path, reason in self.skipped[:REPORTED_PATHS_LIMIT]
            ]
            if len(self.skipped) > REPORTED_PATHS_LIMIT:
                result["skippedCount"] = len(self.skipped)
        if self.pending:
            result["pendingFiles"] = sorted(self.pending)[:REPORTED_PATHS_LIMIT]
            if len(self.pending) > REPORTED_PATHS_LIMIT:
                result["pendingCount"] = len(self.pending)
        return result

    def symbol_count(self) -> int:
        return self.derived("symbol_count", lambda snapshot: sum(r.definition_count for r in snapshot.files.values()))

    def language_counts(self) -> dict[str, int]:
        return self.derived(
            "language_counts", lambda snapshot: dict(Counter(r.language for r in snapshot.files.values()))
        )


def changed_files(old: Mapping[str, FileRecord], new: Mapping[str, FileRecord]) -> set[str]:
    """Files present in only one of two snapshots, or with another record (records are replaced, never mutated)."""
    changed = {path for path, record in new.items() if old.get(path) is not record}
    changed.update(path for path in old if path not in new)
    return changed


def relative_path(root: Path, uri_or_path: str | Path) -> str | None:
    """Workspace-relative POSIX path of a `file://` URI, an absolute path or a relative one; None when outside.

    Symbolic links are resolved first (`root` must be resolved already): a path through a link that leads out of
    the root is outside, and one whose target is inside the root means that target."""
    text = str(uri_or_path)
    if text.startswith("file:"):
        parsed = urlparse(text)
        text = unquote(parsed.path)
        if os.name == "nt" and len(text) > 2 and text[0] == "/" and text[2] == ":":
            text = text[1:]
    candidate = Path(text)
    if not candidate.is_absolute():
        parts = [part for part in candidate.as_posix().split("/") if part not in ("", ".")]
        if not parts or ".." in parts:
            return None
        candidate = root.joinpath(*parts)
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        return None
    try:
        relative = resolved.relative_to(root)
    except ValueError:
        return None
    posix = relative.as_posix()
    return None if posix in ("", ".") else posix


def file_uri(root: Path, path: str) -> str:
    return (root / path).as_uri()
