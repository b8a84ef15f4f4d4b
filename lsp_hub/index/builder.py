"""Building a workspace's index (`workspace.WorkspaceIndex.build()`): walk the root, reuse what is unchanged
(in memory, this root's cache, the records shared by every root), parse the rest (`parse_pool`), store the results
as they come, and publish the new snapshot."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from lsp_hub.index.import_parts import ImportParts
from lsp_hub.index.parse_pool import ParseRunning, WorkerPrestart
from lsp_hub.index.parse_worker import (
    BatchResult,
    ParseJob,
    ParseOutcome,
    SharedHit,
    parse_job,
)
from lsp_hub.index.records import P_DEFINITIONS, FileRecord, encode_packed
from lsp_hub.index.shared_records import SharedRecords
from lsp_hub.index.snapshot import Snapshot
from lsp_hub.index.store import IndexStore, StoredFile
from lsp_hub.index.store_rows import StoredRow
from lsp_hub.index.table_parts import TableParts
from lsp_hub.index.walk import (
    REASON_UNREADABLE,
    IndexingCancelled,
    WalkResult,
    walk_workspace,
)
from lsp_hub.index.walk_feed import WalkFeed

log = logging.getLogger("lsp_hub.index.workspace")

ProgressCallback = Callable[[int, int], None]

PARTIAL_PUBLISH_SECONDS = 1.0
# While a build runs, results are written to the cache (and their bytes let go) this many files at a time, at most
# every STORE_WRITE_SECONDS. Rows of files found in the shared records hold no results: they wait for the end and
# go in one sorted transaction (a new worktree of 100,000 files spent 4 s on 500 commits and as much on inserts
# scattered over the table's B-trees).
STORE_WRITE_ROWS = 200
STORE_WRITE_SECONDS = 0.5


class IndexBuilding(ParseRunning):
    """The part of `WorkspaceIndex` that builds it; the index sets these attributes and publishes."""

    store: IndexStore | None
    # Write a build's last rows beside what comes next (`IndexStore.write_beside`): a one-shot command's map is
    # made meanwhile.
    store_beside: bool
    _lock: threading.RLock
    _snapshot: Snapshot
    _disk: dict[str, FileRecord]
    _disk_skips: dict[str, StoredFile]
    _documents: dict[str, FileRecord]
    _skipped: tuple[tuple[str, str], ...]
    _skip_counts: dict[str, int]
    _markers: dict[str, str]
    _changes_during_build: dict[str, FileRecord | None] | None
    _loaded_store: bool
    parse_count: int
    walk_count: int
    last_build_parsed: int

    if TYPE_CHECKING:

        def _publish(
            self,
            disk: Mapping[str, FileRecord],
            pending: frozenset[str],
            skipped: Iterable[tuple[str, str]],
            skip_counts: Mapping[str, int],
            markers: Mapping[str, str],
            touched: frozenset[str] | None = None,
        ) -> None: ...

    def _build(self, progress: ProgressCallback | None) -> None:
        if not self._loaded_store:
            self._loaded_store = True
            if self.store is not None:
                self._load_store()
        with self._lock:
            known = dict(self._disk)
            known_skips = dict(self._disk_skips)
        # Nothing known (a new worktree, a first build): every file found will be a job, and as many as workers
        # take once the walk has found `in_process_limit`: their forkserver starts then, on the core the walk leaves
        # idle, rather than after it.
        prestart = (
            WorkerPrestart(
                self.in_process_limit,
                self.root,
                self.max_file_size,
                self.shared if self.shared is not None and not self.shared.disabled else None,
            )
            if not known and not known_skips and self._worker_count(2 * self.in_process_limit) > 1
            else None
        )
        if prestart is None:
            walk = walk_workspace(self.root, self.max_file_size, self._stopped.is_set)
            self._build_from_walk(walk, known, known_skips, progress)
            return
        # And every file found is handed out as the walk finds it (`walk_feed`).
        feed = WalkFeed(prestart.files_found)
        try:
            feed.start(self._walk_filling, self._stopped.is_set)
            if feed.wait_started():
                self._build_from_walk(None, known, known_skips, progress, feed)
            else:  # a small tree: walked before a batch was cut
                self._build_from_walk(feed.result(), known, known_skips, progress)
        finally:
            feed.abandon()  # the walk has ended, or ends at its next directory
            prestart.close()

    def _walk_filling(
        self, should_stop: Callable[[], bool], files_found: Callable[[int], None], result: WalkResult
    ) -> WalkResult:
        return walk_workspace(self.root, self.max_file_size, should_stop, files_found, result)

    def _build_from_walk(
        self,
        walk: WalkResult | None,
        known: dict[str, FileRecord],
        known_skips: dict[str, StoredFile],
        progress: ProgressCallback | None,
        feed: WalkFeed | None = None,
    ) -> None:
        """Build from a whole `walk`, or (nothing known) from the jobs a `feed` hands out as its walk goes on."""
        self.walk_count += 1
        markers = self._read_markers(walk.marker_files) if walk is not None else {}
        new_disk: dict[str, FileRecord] = {}
        new_skips: dict[str, StoredFile] = {}
        jobs: list[ParseJob] = []  # with a feed: its own
        job_sizes: dict[str, int] = {}
        for walked in walk.files if walk is not None else ():
            record = known.get(walked.path)
            if (
                record is not None
                and record.size == walked.size
                and record.mtime_ns == walked.mtime_ns
                and record.language == walked.language
            ):
                new_disk[record.path] = record  # the record's path: the walk's equal string goes with the walk
                continue
            skip = known_skips.get(walked.path)
            if skip is not None and skip.size == walked.size and skip.mtime_ns == walked.mtime_ns:
                new_skips[walked.path] = skip
                continue
            jobs.append(ParseJob(walked.path, walked.language, record.digest if record is not None else None))
            job_sizes[walked.path] = walked.size

        total = len(walk.files) if walk is not None else feed.found if feed is not None else 0  # with a feed: so far
        done = total - len(jobs)
        if progress is not None:
            progress(done, total)
        upserts: list[StoredFile] = []
        shared_puts: list[tuple[bytes, str, bytes, int]] = []  # parsed here: for every other checkout
        # The shared records hold what is parsed here, and this root's rows then only name it there, as a hit's
        # row does, rather than hold a second copy (a root's cache was as large as its shared records): up to half
        # the shared bound, so that a root larger than that is never left to parse its files again once its own
        # growth trims them from the shared records.
        shared_left = self.shared.max_bytes // 2 if self.shared is not None else 0
        unshared: list[FileRecord] = []  # parsed, with bare rows: their bytes go once the shared records hold them
        held_puts: list[tuple[bytes, str, bytes, int]] = []  # parsed past that half: this root's rows hold them too
        shared_hits: list[tuple[bytes, str]] = []
        hit_rows: list[StoredRow] = []  # they hold no results to let go of: written at the end, in one transaction
        unstored: list[FileRecord] = []  # records whose bytes are let go once the cache holds them
        unreadable: list[tuple[str, str]] = []
        taken: set[str] = set()  # outcomes taken (files found in the shared records go to new_disk alone)
        first_build = not self._disk and not self._documents
        # A cold build gathers the name tables while its workers parse (table_parts.py); a warm one has its graphs
        # stored, or most of its records' names undecoded, so gathering would only add work.
        parts = TableParts() if first_build and (feed is not None or len(jobs) >= self.in_process_limit) else None
        imports = ImportParts() if parts is not None else None
        if imports is not None and walk is not None:
            imports.walked(walk.files, markers)
        last_publish = last_write = time.perf_counter()

        def share() -> None:
            """Put what was parsed in the shared records: the records with bare rows let go of their bytes, or,
            when the put failed, their rows hold the bytes after all."""
            if self.shared is not None and self.shared.put(shared_puts):
                self._release(unshared)
            elif unshared:
                held = {record.path for record in unshared}
                upserts[:] = [row for row in upserts if row.path not in held]
                upserts.extend(stored_row(record) for record in unshared)
                unstored.extend(unshared)
            if self.shared is not None:
                # Trimmed first: this root keeps its own copy, and trimming the bare rows' entries would cost it a
                # parse of those files.
                self.shared.put(held_puts, held_elsewhere=True)
            shared_puts.clear()
            unshared.clear()
            held_puts.clear()

        def take(result: BatchResult) -> None:
            nonlocal done, last_publish, last_write, total, walk, markers, shared_left
            if self._stopped.is_set():
                raise IndexingCancelled
            self._take_hits(result.hits, new_disk, hit_rows, shared_hits)
            for outcome in result.outcomes:
                taken.add(outcome.path)
                bare = outcome.parsed and shared_left > 0
                record = self._apply_outcome(outcome, known, new_disk, new_skips, upserts, unreadable, bare)
                if record is not None:
                    if bare:
                        unshared.append(record)
                        shared_left -= len(record.encoded)
                    elif record.holds_encoded:  # else nothing to let go: its row can wait for the end
                        unstored.append(record)
                    if parts is not None and record.holds_head:  # else its bytes are elsewhere: added at the end
                        parts.add(record)
                        if imports is not None:
                            imports.add(record)
                if record is not None and outcome.parsed:
                    entry = (record.digest, outcome.language, record.encoded, record.definition_count)
                    (shared_puts if bare else held_puts).append(entry)
                elif outcome.from_shared and SharedRecords.due_for_touch(outcome.shared_used):
                    shared_hits.append((outcome.digest, outcome.language))
            done += result.file_count
            if (
                self.store is not None
                and len(unstored) >= STORE_WRITE_ROWS
                and time.perf_counter() - last_write >= STORE_WRITE_SECONDS
            ):
                # Written while the workers parse: the parent is otherwise idle, and the end of the build is not.
                self._stored_now(upserts, (), unstored)
                last_write = time.perf_counter()
            if len(shared_puts) + len(held_puts) >= STORE_WRITE_ROWS:
                share()
            if walk is None and feed is not None and feed.finished:
                walk = feed.result()
                markers = self._read_markers(walk.marker_files)
                if imports is not None:  # the paths to resolve against are known now
                    imports.walked(walk.files, markers)
            if progress is not None:
                total = len(walk.files) if walk is not None else max(feed.found if feed else 0, done)
                progress(done, total)
            if walk is not None and first_build and time.perf_counter() - last_publish > PARTIAL_PUBLISH_SECONDS:
                # Let queries see what is there while the first build goes on, marked incomplete.
                last_publish = time.perf_counter()
                with self._lock:
                    # What is still pending, found once a second, not kept up to date file by file. With a feed,
                    # nothing was known: every file was a job.
                    paths = (job.path for job in jobs) if feed is None else (walked.path for walked in walk.files)
                    pending = frozenset(path for path in paths if path not in new_disk and path not in taken)
                    self._publish(new_disk, pending, walk.skipped, walk.skip_counts, markers)

        parsed_before = self.parse_count
        self._run_jobs(jobs, job_sizes, take, feed)
        self.last_build_parsed = self.parse_count - parsed_before
        if walk is None:
            assert feed is not None
            walk = feed.result()
            markers = self._read_markers(walk.marker_files)

        deletions = (
            (set(known) | set(known_skips)) - {walked.path for walked in walk.files} if known or known_skips else set()
        )
        share()  # before this root's rows: a failed put gives them the bytes
        if self.store is not None and self.store_beside:
            released = list(unstored)
            self.store.write_beside(upserts, deletions, hit_rows, lambda: self._release(released))
        elif self.store is not None:
            self._stored_now(upserts, deletions, unstored, hit_rows)
        if self.shared is not None:
            self.shared.touch(shared_hits)
            self.shared.trim()
        skipped = [*walk.skipped, *((path, skip.skip_reason or "") for path, skip in new_skips.items()), *unreadable]
        skip_counts = Counter(walk.skip_counts)
        for _path, reason in skipped[len(walk.skipped) :]:
            skip_counts[reason] += 1
        with self._lock:
            for path, change in (self._changes_during_build or {}).items():
                if change is None:
                    new_disk.pop(path, None)
                else:
                    new_disk[path] = change
            self._disk = new_disk
            self._disk_skips = new_skips
            self._skipped = tuple(sorted(skipped))
            self._skip_counts = dict(skip_counts)
            self._markers = markers
            self._publish(new_disk, frozenset(), self._skipped, self._skip_counts, markers)
            self._snapshot.table_parts = parts
            self._snapshot.import_parts = imports
        if not first_build:  # a first build's rows are new in the shared records, or were just touched there
            self.refresh_shared_entries()  # after the snapshot is out: queries need not wait for it

    def refresh_shared_entries(self) -> None:
        """Once a day (builds, and a watcher of a root that is not built again, ask): near the shared records'
        bound, mark the entries this root's rows name as used now, since its warm starts read its own rows, never
        the shared records, and the bound would otherwise trim a root in daily use as if nobody read it; and drop
        the rows whose entries are gone, so that the next build parses those files in its workers."""
        if (
            self.store is None
            or self.shared is None
            or not self.store.shared_refresh_due(SharedRecords.touch_due_before())
        ):
            return
        if self.shared.near_bound():  # else nothing is trimmed, and a refresh is work for nothing
            self.shared.touch_named_by(self.store.path)
        missing = self.shared.missing_named_by(self.store.path)
        if missing and self.store.write((), missing):
            log.info("%d files' results are gone from the shared records: parsed again at the next build", len(missing))

    def _stored_now(
        self,
        upserts: list[StoredFile],
        deletions: Iterable[str],
        records: list[FileRecord],
        rows: Iterable[StoredRow] = (),
    ) -> None:
        """Write the rows; once they are stored, the records let go of their bytes (read back when needed)."""
        assert self.store is not None
        if self.store.write(upserts, deletions, rows):
            self._release(records)
        upserts.clear()
        records.clear()

    def _release(self, records: Iterable[FileRecord]) -> None:
        """The cache holds these records' results now: they let go of their bytes."""
        loader = self._encoded_from_cache  # one bound method for all (each access makes another)
        for record in records:
            record.release_encoded(loader)

    def _encoded_from_cache(self, record: FileRecord) -> bytes | None:
        """A record's bytes: this root's row while it is of the same content, else the shared records', else (the
        shared records let them go) parsed again from the file while it still has that content."""
        found = self.store.encoded_of(record.path, record.digest) if self.store is not None else None
        if found is None and self.shared is not None:
            entry = self.shared.get(record.digest, record.language)
            found = entry.encoded if entry is not None else None
        if found is None:
            outcome = parse_job(str(self.root), ParseJob(record.path, record.language, None), self.max_file_size)
            if outcome.packed is not None and outcome.digest == record.digest:
                found = encode_packed(outcome.packed)
                if self.shared is not None:
                    self.shared.put([(record.digest, record.language, found, len(outcome.packed[P_DEFINITIONS]))])
            else:
                log.warning("the results of %s are in no cache and the file changed since", record.path)
        return found

    def _load_store(self) -> None:
        assert self.store is not None
        disk: dict[str, FileRecord] = {}
        skips: dict[str, StoredFile] = {}
        loader = self._encoded_from_cache  # one bound method for every record (each access makes another)
        languages: dict[str, str] = {}  # one string per language, not one per row
        for path, language, size, mtime_ns, digest, skip_reason, definitions in self.store.identity_rows():
            if skip_reason is None:
                language = languages.setdefault(language, language)
                disk[path] = FileRecord(path, size, mtime_ns, digest, None, language, definitions, None, loader)
            else:
                skips[path] = StoredFile(path, language, size, mtime_ns, digest, skip_reason, None, definitions)
        with self._lock:
            self._disk = disk
            self._disk_skips = skips

    def _take_hits(
        self,
        hits: list[SharedHit],
        new_disk: dict[str, FileRecord],
        rows: list[StoredRow],
        due_hits: list[tuple[bytes, str]],
    ) -> None:
        """Takes files found in the shared records: a record reading its results from there when needed, a row
        saying so, and the entries due for a refresh of their time of use."""
        loader = self._encoded_from_cache  # one bound method for all (each access makes another)
        stale = SharedRecords.touch_due_before()
        for path, language, size, mtime_ns, digest, definitions, used in hits:
            new_disk[path] = FileRecord(path, size, mtime_ns, digest, None, language, definitions, None, loader)
            rows.append((path, language, size, mtime_ns, digest, None, None, definitions))
            if used < stale:
                due_hits.append((digest, language))

    def _apply_outcome(
        self,
        outcome: ParseOutcome,
        known: Mapping[str, FileRecord],
        new_disk: dict[str, FileRecord],
        new_skips: dict[str, StoredFile],
        upserts: list[StoredFile],
        unreadable: list[tuple[str, str]],
        bare: bool = False,
    ) -> FileRecord | None:
        """Takes an outcome into the build's tables; returns the file's record, None for a file left out. A `bare`
        row names the results in the shared records instead of holding them."""
        path = outcome.path
        if outcome.skip_reason is not None:
            if outcome.skip_reason == REASON_UNREADABLE:
                unreadable.append((path, outcome.skip_reason))  # not cached: it may be readable next time
                return None
            stored = StoredFile(
                path, outcome.language, outcome.size, outcome.mtime_ns, outcome.digest, outcome.skip_reason
            )
            new_skips[path] = stored
            upserts.append(stored)
            return None
        record = self._record_of(outcome, known.get(path))
        new_disk[path] = record
        upserts.append(stored_row(record, bare))
        return record

    def _record_of(self, outcome: ParseOutcome, known: FileRecord | None) -> FileRecord:
        """The record of a parsed file: the known results under the file's new identity when its content is
        unchanged, else the new results."""
        if outcome.unchanged and known is not None:
            return known.with_identity(outcome.size, outcome.mtime_ns, outcome.digest)
        if outcome.parsed:
            self.parse_count += 1
        return outcome.record(self._encoded_from_cache)

    def _read_markers(self, marker_files: Iterable[str]) -> dict[str, str]:
        markers: dict[str, str] = {}
        for path in marker_files:
            try:
                markers[path] = (self.root / path).read_text(encoding="utf-8", errors="replace")[:100_000]
            except OSError:
                continue
        return markers


def stored_row(record: FileRecord, bare: bool = False) -> StoredFile:
    """The record's row; without the results (None: "in the shared records") when the record holds none, or the
    row is to be `bare`."""
    encoded = record.encoded if record.holds_encoded and not bare else None
    return StoredFile(
        record.path,
        record.language,
        record.size,
        record.mtime_ns,
        record.digest,
        None,
        encoded,
        record.definition_count,
    )
