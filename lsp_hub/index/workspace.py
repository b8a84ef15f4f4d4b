"""The index of one workspace root: building it (cold, warm from the cache, in worker processes), keeping it fresh
file by file, and handing queries a consistent snapshot.

Threading model: `build()` may run in a worker thread while queries run on another (the hub's event loop). Every
change produces a new `Snapshot` that is swapped in whole under a lock; a query takes `index.snapshot()` once and
works on that object, which never changes underneath it. Graphs and tables derived from a snapshot are computed on
first use and cached on the snapshot, so they are rebuilt lazily after a change.

Open documents: `update_file(path, text)` indexes an editor's in-memory text, which then shadows the file on disk
(a build keeps it) until `update_file(path, None)` goes back to the disk version (or removes a file that is gone).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

# Its parts (builder, parse_pool, snapshot) are beside it; their public names stay importable from here.
from lsp_hub.index.builder import IndexBuilding, ProgressCallback, stored_row
from lsp_hub.index.languages import language_for_path
from lsp_hub.index.parse_pool import IN_PROCESS_LIMIT
from lsp_hub.index.parse_worker import (
    BatchResult,
    ParseJob,
    parse_job,
    parse_source,
)
from lsp_hub.index.records import FileRecord
from lsp_hub.index.shared_records import (
    DEFAULT_CACHE_MAX_MB,
    SharedRecords,
    SharedRecordsLocation,
    shared_records_at,
    shared_records_path,
)
from lsp_hub.index.snapshot import (
    GRAPH_ANCHOR_KEY,
    REPORTED_PATHS_LIMIT,
    Snapshot,
    changed_files,
    file_uri,
    relative_path,
)
from lsp_hub.index.store import EXTRACTOR_VERSION, IndexStore, StoredFile, default_cache_dir
from lsp_hub.index.walk import (
    DEFAULT_MAX_FILE_SIZE,
    REASON_UNREADABLE,
    IndexingCancelled,
    exclusion_reason,
)

__all__ = [
    "GRAPH_ANCHOR_KEY",
    "IN_PROCESS_LIMIT",
    "REPORTED_PATHS_LIMIT",
    "IndexState",
    "ProgressCallback",
    "Snapshot",
    "WorkspaceIndex",
    "file_uri",
    "relative_path",
]

log = logging.getLogger(__name__)

IndexState = Literal["empty", "building", "ready", "failed"]


class WorkspaceIndex(IndexBuilding):
    """The code index of one workspace root."""

    def __init__(
        self,
        root: str | Path,
        *,
        cache_dir: Path | None = None,
        use_cache: bool = True,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        max_workers: int | None = None,
        in_process_limit: int = IN_PROCESS_LIMIT,
        cache_max_mb: int = DEFAULT_CACHE_MAX_MB,
        store_beside: bool = False,
    ) -> None:
        """`cache_dir` holds the per-root cache and the records shared by every root (`shared_records.py`), which
        `cache_max_mb` bounds; `use_cache=False` uses neither. `store_beside`: a build's last rows are written in a
        thread, beside what the caller does next (a one-shot command)."""
        self.root = Path(root).resolve()
        self.max_file_size = max_file_size
        self.max_workers = max_workers
        self.in_process_limit = in_process_limit
        self.store_beside = store_beside
        self.store: IndexStore | None = IndexStore(self.root, cache_dir) if use_cache else None
        self.shared: SharedRecords | None = None
        if use_cache:
            location = SharedRecordsLocation(
                str(shared_records_path(cache_dir or default_cache_dir())), EXTRACTOR_VERSION
            )
            self.shared = shared_records_at(location, cache_max_mb * 1024 * 1024)
            assert self.store is not None
            self.store.shared = self.shared
        self._lock = threading.RLock()
        self._build_lock = threading.Lock()
        self._stopped = threading.Event()
        self._ready = threading.Event()
        self._state: IndexState = "empty"
        self._snapshot = Snapshot(self.root, {})
        self._version = 0
        self._disk: dict[str, FileRecord] = {}  # results of files as they are on disk
        self._disk_skips: dict[str, StoredFile] = {}  # files known to be left out (binary...), by size and mtime
        self._documents: dict[str, FileRecord] = {}  # open documents' in-memory text, shadowing the disk
        self._skipped: tuple[tuple[str, str], ...] = ()
        self._skip_counts: dict[str, int] = {}
        self._markers: dict[str, str] = {}
        self._changes_during_build: dict[str, FileRecord | None] | None = None
        self._loaded_store = False
        self.parse_count = 0  # files parsed since creation (tests check that a warm start parses nothing)
        self.walk_count = 0  # walks of the tree since creation (tests check that a watched index walks no more)
        self.last_build_seconds: float | None = None
        self.last_build_parsed = 0
        # Why the last build raised (a bug of ours, logged with its traceback), until one succeeds: a status that
        # said "building" for ever hid it.
        self.build_error: str | None = None

    # --- queries' view ------------------------------------------------------------------------------------------

    @property
    def state(self) -> IndexState:
        return self._state

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until a build has finished (True) or the timeout passed (False)."""
        return self._ready.wait(timeout)

    def relative_path(self, uri_or_path: str | Path) -> str | None:
        return relative_path(self.root, uri_or_path)

    def statistics(self) -> dict[str, Any]:
        snapshot = self._snapshot
        return {
            "state": self._state if self._state in ("ready", "failed") else "building",
            **({"error": self.build_error} if self.build_error is not None else {}),
            "files": len(snapshot.files),
            "symbols": snapshot.symbol_count(),
            "languages": dict(sorted(snapshot.language_counts().items())),
            "lastBuildSeconds": None if self.last_build_seconds is None else round(self.last_build_seconds, 3),
            "skippedFiles": len(snapshot.skipped),
            "skipReasons": dict(sorted(snapshot.skip_counts.items())),
            "pendingFiles": len(snapshot.pending),
            "parsedFiles": self.last_build_parsed,
        }

    # --- building -----------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop building for good (the owner is leaving): a running build gives up within about STOP_POLL_SECONDS
        (killing its worker processes) and raises IndexingCancelled, as does any later build. Thread-safe; queries
        keep answering from the last snapshot."""
        self._stopped.set()

    def build(self, progress: ProgressCallback | None = None) -> dict[str, Any]:
        """Walk the root and bring the index up to date: parse new and changed files (in worker processes when
        there are many), reuse unchanged ones from memory or the cache. Returns `statistics()`.
        Raises IndexingCancelled when the index is stopped before or while it builds."""
        self.bring_up_to_date(progress)
        return self.statistics()

    def bring_up_to_date(self, progress: ProgressCallback | None = None) -> None:
        """`build()` without its statistics, for callers that do not report them (counting every file's symbols
        and languages cost a warm map 0.2 s at 100,000 files)."""
        if self._stopped.is_set():
            raise IndexingCancelled
        with self._build_lock:
            started = time.perf_counter()
            with self._lock:
                if self._state != "ready":
                    self._state = "building"
                self._changes_during_build = {}
            try:
                self._build(progress)
            except IndexingCancelled:
                raise
            except Exception as error:
                with self._lock:
                    self.build_error = f"{type(error).__name__}: {error}"
                    if self._state != "ready":  # a refresh that failed leaves the last good snapshot standing
                        self._state = "failed"
                raise
            finally:
                with self._lock:
                    self._changes_during_build = None
            self.last_build_seconds = time.perf_counter() - started
            with self._lock:
                self._state = "ready"
                self.build_error = None
            self._ready.set()

    # --- incremental changes -----------------------------------------------------------------------------------

    def update_file(self, path: str | Path, text: bytes | str | None = None) -> bool:
        """Re-index one file: from an open document's `text`, or (None) from disk, removing it when it is gone or
        no longer indexable. Returns whether the index changed. Raises ValueError for a path outside the root."""
        relative = self._require_relative(path)
        reason = exclusion_reason(self.root, relative)
        if reason is not None:
            return self.remove_file(relative)
        language = language_for_path(relative)
        assert language is not None
        if text is not None:
            data = text.encode("utf-8") if isinstance(text, str) else text
            current = self._snapshot.files.get(relative)
            outcome = parse_source(
                ParseJob(relative, language, current.digest if current is not None else None),
                data,
                -1,
                -1,
                self.max_file_size,
            )
            with self._lock:
                if outcome.skip_reason is not None:
                    changed = self._documents.pop(relative, None) is not None
                    self._republish((relative,))
                    return changed
                if outcome.unchanged and current is not None and self._documents.get(relative) is current:
                    return False
                self._documents[relative] = self._record_of(outcome, current)
                self._republish((relative,))
            return True
        return self._update_from_disk(relative, language)

    def _update_from_disk(self, relative: str, language: str) -> bool:
        with self._lock:
            had_document = self._documents.pop(relative, None) is not None
            known = self._disk.get(relative)
        absolute = self.root / relative
        if not absolute.is_file():
            return self.remove_file(relative) or had_document
        try:
            status = absolute.stat()
        except OSError:
            return self.remove_file(relative) or had_document
        if known is not None and known.size == status.st_size and known.mtime_ns == status.st_mtime_ns:
            if had_document:
                with self._lock:
                    self._republish((relative,))
            return had_document
        outcome = parse_job(
            str(self.root),
            ParseJob(relative, language, known.digest if known is not None else None),
            self.max_file_size,
            self._shared_location,
        )
        if outcome.skip_reason is not None:
            removed = self.remove_file(relative)
            with self._lock:
                if outcome.skip_reason != REASON_UNREADABLE:
                    self._disk_skips[relative] = StoredFile(
                        relative, language, outcome.size, outcome.mtime_ns, outcome.digest, outcome.skip_reason
                    )
                self._skipped = tuple(sorted({*self._skipped, (relative, outcome.skip_reason)}))
                self._republish((relative,))
            return removed or had_document
        record = self._record_of(outcome, known)
        with self._lock:
            self._disk[relative] = record
            self._disk_skips.pop(relative, None)
            self._skipped = tuple(entry for entry in self._skipped if entry[0] != relative)
            if self._changes_during_build is not None:
                self._changes_during_build[relative] = record
            self._republish((relative,))
        if self.store is not None:
            self.store.write([stored_row(record)])
        if self.shared is not None and outcome.parsed:
            self.shared.put([(record.digest, language, record.encoded, record.definition_count)])
        return not (outcome.unchanged and not had_document)

    def refresh_files(self, paths: Iterable[str]) -> int:
        """Bring these workspace-relative files up to date from disk in one step, by the walk's rules: parse the
        new and changed (in worker processes when many), forget the gone and excluded, publish once. For a watcher
        reporting many changes at once (a checkout, a formatter over the tree), where `update_file` per file would
        publish a snapshot per file. Open documents keep shadowing their files. Returns how many files changed."""
        with self._lock:
            known = dict(self._disk)
        jobs: list[ParseJob] = []
        sizes: dict[str, int] = {}
        gone: list[str] = []
        for relative in dict.fromkeys(paths):
            language = language_for_path(relative)
            if language is None or exclusion_reason(self.root, relative) is not None:
                gone.append(relative)
                continue
            try:
                status = (self.root / relative).stat()
            except OSError:
                gone.append(relative)
                continue
            record = known.get(relative)
            if record is not None and record.size == status.st_size and record.mtime_ns == status.st_mtime_ns:
                continue
            jobs.append(ParseJob(relative, language, record.digest if record is not None else None))
            sizes[relative] = status.st_size
        changed: dict[str, FileRecord | None] = {path: None for path in gone if path in known}
        skips: dict[str, StoredFile] = {}
        shared_puts: list[tuple[bytes, str, bytes, int]] = []

        def take(result: BatchResult) -> None:
            loader = self._encoded_from_cache
            for path, language, size, mtime_ns, digest, definitions, _used in result.hits:
                changed[path] = FileRecord(path, size, mtime_ns, digest, None, language, definitions, None, loader)
            for outcome in result.outcomes:
                if outcome.skip_reason is not None:
                    changed[outcome.path] = None
                    if outcome.skip_reason != REASON_UNREADABLE:
                        skips[outcome.path] = StoredFile(
                            outcome.path,
                            outcome.language,
                            outcome.size,
                            outcome.mtime_ns,
                            outcome.digest,
                            outcome.skip_reason,
                        )
                    continue
                previous = known.get(outcome.path)
                record = self._record_of(outcome, previous)
                if outcome.parsed:
                    shared_puts.append((record.digest, outcome.language, record.encoded, record.definition_count))
                changed[outcome.path] = record

        self._run_jobs(jobs, sizes, take)
        if not changed and not skips:
            return 0
        self._decode_for_graphs(
            [
                *(known[path] for path in changed if path in known),
                *(record for record in changed.values() if record is not None),
            ]
        )
        with self._lock:
            for path, record in changed.items():
                if record is None:
                    self._disk.pop(path, None)
                else:
                    self._disk[path] = record
                    self._disk_skips.pop(path, None)
                if self._changes_during_build is not None:
                    self._changes_during_build[path] = record
            self._disk_skips.update(skips)
            self._skipped = tuple(
                sorted(
                    {
                        *(entry for entry in self._skipped if entry[0] not in changed),
                        *((path, skip.skip_reason or "") for path, skip in skips.items()),
                    }
                )
            )
            self._republish(changed)
        if self.store is not None:
            upserts = [stored_row(record) for record in changed.values() if record is not None]
            self.store.write(
                [*upserts, *skips.values()],
                [path for path, record in changed.items() if record is None and path not in skips],
            )
        if self.shared is not None:
            self.shared.put(shared_puts)
        return len(changed)

    def _decode_for_graphs(self, records: Iterable[FileRecord]) -> None:
        """When graphs were built on the current files, decode the changed files' records, old and new, here (the
        watcher's thread when it calls): the graphs' update reads what each defines and uses, and the old ones'
        rows are about to be overwritten, after which a query would wait on the shared records' lookups (a
        quarter of a second for 1,000 files) or on decoding results found there. The names the update reads of
        each are found here too (30 ms of a query for 1,000 files)."""
        current = self._snapshot
        if current.anchor is not None or current.has_derived(GRAPH_ANCHOR_KEY):
            for record in records:
                record.defined_names()
                record.graph_names()
                record.reference_counts()

    def remove_file(self, path: str | Path) -> bool:
        """Forget a file (deleted, or no longer indexable). Returns whether the index changed."""
        relative = self._require_relative(path)
        with self._lock:
            changed = self._documents.pop(relative, None) is not None
            changed = self._disk.pop(relative, None) is not None or changed
            skip = self._disk_skips.pop(relative, None)
            skipped = tuple(entry for entry in self._skipped if entry[0] != relative)
            changed = changed or len(skipped) != len(self._skipped)
            self._skipped = skipped
            if self._changes_during_build is not None:
                self._changes_during_build[relative] = None
            if changed:
                self._republish((relative,))
        if self.store is not None and (changed or skip is not None):
            self.store.write([], [relative])
        return changed

    def _require_relative(self, path: str | Path) -> str:
        relative = self.relative_path(path)
        if relative is None:
            raise ValueError(f"{path} is not inside the workspace root {self.root}")
        return relative

    # --- publishing ---------------------------------------------------------------------------------------------

    def _republish(self, touched: Iterable[str]) -> None:
        """Publish the current state (caller holds the lock) after a change of the `touched` files, keeping a first
        build's pending set."""
        current = self._snapshot
        pending = current.pending - self._disk.keys() - self._documents.keys()
        skip_counts = self._skip_counts or current.skip_counts
        markers = self._markers or current.markers
        self._publish(self._disk, frozenset(pending), self._skipped, skip_counts, markers, frozenset(touched))

    def _publish(
        self,
        disk: Mapping[str, FileRecord],
        pending: frozenset[str],
        skipped: Iterable[tuple[str, str]],
        skip_counts: Mapping[str, int],
        markers: Mapping[str, str],
        touched: frozenset[str] | None = None,
    ) -> None:
        """Publish a snapshot of these files; `touched` names every file whose record may have changed since the
        last one (None: not named, as after a walk, and found here by comparing every file once)."""
        files = dict(disk)
        files.update(self._documents)
        self._version += 1
        previous = self._snapshot
        snapshot = Snapshot(self.root, files, tuple(skipped), dict(skip_counts), pending, dict(markers), self._version)
        graphs = previous.has_derived(GRAPH_ANCHOR_KEY) or previous.has_derived("reference_graph")
        snapshot.anchor = previous if graphs else previous.anchor
        if snapshot.anchor is not None:
            if touched is None:
                # Compared here, once per walk, rather than at every graph update after it (0.1 s at 100,000 files).
                touched = frozenset(changed_files(previous.files, files))
            before = frozenset() if graphs else previous.changed_from_anchor
            snapshot.changed_from_anchor = None if before is None else before | touched
        snapshot.store = self.store
        snapshot.stopped = self._stopped.is_set
        self._snapshot = snapshot

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.shared is not None:
            # Other indexes of this process share the object: their next use opens the connection again.
            self.shared.close()
