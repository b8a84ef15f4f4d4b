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

import contextlib
import hashlib
import logging
import multiprocessing
import os
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import unquote, urlparse

from lsp_hub.index.languages import language_for_path
from lsp_hub.index.parse_worker import (
    ParseJob,
    ParseOutcome,
    parse_batch,
    parse_job,
    parse_source,
    worker_initializer,
)
from lsp_hub.index.records import P_DEFINITIONS, FileRecord, encode_packed
from lsp_hub.index.shared_records import (
    DEFAULT_CACHE_MAX_MB,
    SharedRecords,
    SharedRecordsLocation,
    shared_records_at,
    shared_records_path,
)
from lsp_hub.index.store import EXTRACTOR_VERSION, IndexStore, StoredFile, default_cache_dir
from lsp_hub.index.walk import (
    DEFAULT_MAX_FILE_SIZE,
    REASON_UNREADABLE,
    IndexingCancelled,
    exclusion_reason,
    walk_workspace,
)

log = logging.getLogger(__name__)

IndexState = Literal["empty", "building", "ready"]
ProgressCallback = Callable[[int, int], None]
T = TypeVar("T")

# Fewer files than this to parse: parse in this process (starting workers costs more than it saves).
IN_PROCESS_LIMIT = 50
MAX_BATCH_FILES = 256
MIN_BATCH_BYTES = 64 * 1024
BATCH_SHARE_DIVISOR = 4  # a batch takes 1/(4 * workers) of the remaining bytes
PER_FILE_COST_BYTES = 512  # opening, hashing and querying a file costs about as much as parsing this many bytes
PARTIAL_PUBLISH_SECONDS = 1.0
STORE_WRITE_ROWS = 200  # cache rows written in one transaction while a build runs
REPORTED_PATHS_LIMIT = 100  # skippedFiles/pendingFiles lists in results are cut here (counts stay exact)
STOP_POLL_SECONDS = 0.1  # how often a build waiting on its workers checks whether the index was stopped
IN_PROCESS_BATCH = 32  # files parsed in this process between checks for a stop
IN_FLIGHT_PER_WORKER = 2  # batches handed to the pool per worker at a time (the rest wait here, to be taken by anyone)
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
        self.store: IndexStore | None = None  # where graphs computed on this snapshot may be kept (files on disk)
        self.stopped: Callable[[], bool] = lambda: False  # the index is stopping: long computations give up
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
            for path in sorted(snapshot.files):
                hasher.update(path.encode("utf-8", "surrogateescape") + b"\0" + snapshot.files[path].digest)
            for path in sorted(snapshot.markers):
                hasher.update(b"\1" + path.encode("utf-8", "surrogateescape") + b"\0"
                              + snapshot.markers[path].encode("utf-8", "surrogateescape"))
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
        return self.derived("symbol_count",
                            lambda snapshot: sum(r.definition_count for r in snapshot.files.values()))

    def language_counts(self) -> dict[str, int]:
        return self.derived(
            "language_counts", lambda snapshot: dict(Counter(r.language for r in snapshot.files.values()))
        )


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


class WorkspaceIndex:
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
    ) -> None:
        """`cache_dir` holds the per-root cache and the records shared by every root (`shared_records.py`), which
        `cache_max_mb` bounds; `use_cache=False` uses neither."""
        self.root = Path(root).resolve()
        self.max_file_size = max_file_size
        self.max_workers = max_workers
        self.in_process_limit = in_process_limit
        self.store: IndexStore | None = IndexStore(self.root, cache_dir) if use_cache else None
        self.shared: SharedRecords | None = None
        if use_cache:
            location = SharedRecordsLocation(str(shared_records_path(cache_dir or default_cache_dir())),
                                             EXTRACTOR_VERSION)
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
            "state": "ready" if self._state == "ready" else "building",
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
            finally:
                with self._lock:
                    self._changes_during_build = None
            self.last_build_seconds = time.perf_counter() - started
            with self._lock:
                self._state = "ready"
            self._ready.set()
            return self.statistics()

    def _build(self, progress: ProgressCallback | None) -> None:
        walk = walk_workspace(self.root, self.max_file_size, self._stopped.is_set)
        self.walk_count += 1
        markers = self._read_markers(walk.marker_files)
        if not self._loaded_store:
            self._loaded_store = True
            if self.store is not None:
                self._load_store()
        with self._lock:
            known = dict(self._disk)
            known_skips = dict(self._disk_skips)
        walked_paths = {walked.path for walked in walk.files}
        new_disk: dict[str, FileRecord] = {}
        new_skips: dict[str, StoredFile] = {}
        jobs: list[ParseJob] = []
        job_sizes: dict[str, int] = {}
        for walked in walk.files:
            record = known.get(walked.path)
            if record is not None and record.size == walked.size and record.mtime_ns == walked.mtime_ns \
                    and record.language == walked.language:
                new_disk[walked.path] = record
                continue
            skip = known_skips.get(walked.path)
            if skip is not None and skip.size == walked.size and skip.mtime_ns == walked.mtime_ns:
                new_skips[walked.path] = skip
                continue
            jobs.append(ParseJob(walked.path, walked.language, record.digest if record is not None else None))
            job_sizes[walked.path] = walked.size

        total = len(walk.files)
        done = total - len(jobs)
        if progress is not None:
            progress(done, total)
        upserts: list[StoredFile] = []
        shared_puts: list[tuple[bytes, str, bytes, int]] = []  # parsed here: for every other checkout
        shared_hits: list[tuple[bytes, str]] = []
        unstored: list[FileRecord] = []  # records whose bytes are let go once the cache holds them
        unreadable: list[tuple[str, str]] = []
        pending = {job.path for job in jobs}
        first_build = not self._disk and not self._documents
        last_publish = time.perf_counter()

        def take(outcomes: list[ParseOutcome]) -> None:
            nonlocal done, last_publish
            if self._stopped.is_set():
                raise IndexingCancelled
            for outcome in outcomes:
                pending.discard(outcome.path)
                record = self._apply_outcome(outcome, known, new_disk, new_skips, upserts, unreadable)
                if record is not None:
                    unstored.append(record)
                if record is not None and outcome.parsed:
                    shared_puts.append((record.digest, outcome.language, record.encoded, record.definition_count))
                elif outcome.from_shared:
                    shared_hits.append((outcome.digest, outcome.language))
            done += len(outcomes)
            if self.store is not None and len(upserts) >= STORE_WRITE_ROWS:
                # Written while the workers parse: the parent is otherwise idle, and the end of the build is not.
                self._stored_now(upserts, (), unstored)
            if self.shared is not None and len(shared_puts) >= STORE_WRITE_ROWS:
                self.shared.put(shared_puts)
                shared_puts.clear()
            if progress is not None:
                progress(done, total)
            if first_build and time.perf_counter() - last_publish > PARTIAL_PUBLISH_SECONDS:
                # Let queries see what is there while the first build goes on, marked incomplete.
                last_publish = time.perf_counter()
                with self._lock:
                    self._publish(new_disk, frozenset(pending), walk.skipped, walk.skip_counts, markers)

        parsed_before = self.parse_count
        self._run_jobs(jobs, job_sizes, take)
        self.last_build_parsed = self.parse_count - parsed_before

        deletions = (set(known) | set(known_skips)) - walked_paths
        if self.store is not None:
            self._stored_now(upserts, deletions, unstored)
        if self.shared is not None:
            self.shared.put(shared_puts)
            self.shared.touch(shared_hits)
            self.shared.trim()
        skipped = [*walk.skipped, *((path, skip.skip_reason or "") for path, skip in new_skips.items()), *unreadable]
        skip_counts = Counter(walk.skip_counts)
        for _path, reason in skipped[len(walk.skipped):]:
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

    def _stored_now(self, upserts: list[StoredFile], deletions: Iterable[str], records: list[FileRecord]) -> None:
        """Write the rows; once they are stored, the records let go of their bytes (read back when needed)."""
        assert self.store is not None
        if self.store.write(upserts, deletions):
            for record in records:
                record.release_encoded(self._encoded_from_cache)
        upserts.clear()
        records.clear()

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
        stored = self.store.load_identities()
        disk: dict[str, FileRecord] = {}
        skips: dict[str, StoredFile] = {}
        for path, entry in stored.items():
            if entry.skip_reason is None:
                disk[path] = FileRecord(path, entry.size, entry.mtime_ns, entry.digest, None, entry.language,
                                        entry.definitions, loader=self._encoded_from_cache)
            else:
                skips[path] = entry
        with self._lock:
            self._disk = disk
            self._disk_skips = skips

    def _apply_outcome(
        self,
        outcome: ParseOutcome,
        known: Mapping[str, FileRecord],
        new_disk: dict[str, FileRecord],
        new_skips: dict[str, StoredFile],
        upserts: list[StoredFile],
        unreadable: list[tuple[str, str]],
    ) -> FileRecord | None:
        """Takes an outcome into the build's tables; returns the file's record, None for a file left out."""
        path = outcome.path
        if outcome.skip_reason is not None:
            if outcome.skip_reason == REASON_UNREADABLE:
                unreadable.append((path, outcome.skip_reason))  # not cached: it may be readable next time
                return None
            stored = StoredFile(path, outcome.language, outcome.size, outcome.mtime_ns, outcome.digest,
                                outcome.skip_reason)
            new_skips[path] = stored
            upserts.append(stored)
            return None
        record = self._record_of(outcome, known.get(path))
        new_disk[path] = record
        upserts.append(_stored(record))
        return record

    def _record_of(self, outcome: ParseOutcome, known: FileRecord | None) -> FileRecord:
        """The record of a parsed file: the known results under the file's new identity when its content is
        unchanged, else the new results."""
        if outcome.unchanged and known is not None:
            return known.with_identity(outcome.size, outcome.mtime_ns, outcome.digest)
        if outcome.parsed:
            self.parse_count += 1
        return outcome.record(self._encoded_from_cache)

    def _worker_count(self, job_count: int) -> int:
        available = os.cpu_count() or 1
        if sys.platform.startswith("linux"):  # the CPUs this process may use, fewer in a container
            with contextlib.suppress(AttributeError, OSError):
                available = len(os.sched_getaffinity(0))
        limit = min(available, os.cpu_count() or 1)
        if self.max_workers is not None:
            limit = min(limit, self.max_workers)
        return max(1, min(limit, -(-job_count // self.in_process_limit)))

    def _run_jobs(
        self, jobs: list[ParseJob], job_sizes: Mapping[str, int], take: Callable[[list[ParseOutcome]], None]
    ) -> None:
        if not jobs:
            return
        root = str(self.root)
        workers = self._worker_count(len(jobs))
        if len(jobs) < self.in_process_limit or workers <= 1:
            for start in range(0, len(jobs), IN_PROCESS_BATCH):
                take(self._parse_batch(root, jobs[start : start + IN_PROCESS_BATCH]))
            return
        batches = _guided_batches(jobs, job_sizes, workers)
        remaining = {id(batch): batch for batch in batches}
        try:
            self._run_in_workers(root, batches, workers, remaining, take)
        except (BrokenProcessPool, OSError) as error:
            if self._stopped.is_set():
                raise IndexingCancelled from error
            # A worker died (or could not start): finish here rather than leave files out.
            log.warning("index worker pool failed (%s); parsing the rest in-process", error)
            for batch in remaining.values():
                for start in range(0, len(batch), IN_PROCESS_BATCH):
                    take(self._parse_batch(root, batch[start : start + IN_PROCESS_BATCH]))

    def _run_in_workers(
        self,
        root: str,
        batches: list[list[ParseJob]],
        workers: int,
        remaining: dict[int, list[ParseJob]],
        take: Callable[[list[ParseOutcome]], None],
    ) -> None:
        """Parse `batches` in worker processes, taking results as they come; a batch taken leaves `remaining`.
        The workers end with this process (see worker_initializer) and are killed when the index is stopped.

        Starting the workers takes a few hundred milliseconds (the forkserver's interpreter and imports, then each
        worker's), during which cores would idle: until every worker is ready, this process parses the smallest
        batches not yet handed to the pool itself."""
        context = _process_context()
        shared = self._shared_location
        started = context.Value("i", 0)
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                   initializer=worker_initializer, initargs=(os.getpid(), started))
        stopped = False
        queue = deque(batches)  # not handed out yet, largest first
        in_flight: dict[Future[list[ParseOutcome]], list[ParseJob]] = {}
        # The first submit starts the workers, and waits for the forkserver to start and import: meanwhile this
        # thread parses the smallest batches.
        first_batch = queue.popleft()
        first: list[Future[list[ParseOutcome]] | BaseException] = []

        def submit_first() -> None:
            try:
                first.append(pool.submit(parse_batch, root, first_batch, self.max_file_size, shared))
            except BaseException as error:  # handed to the building thread
                first.append(error)

        _pool_opened()
        starter = threading.Thread(target=submit_first, name="index-pool-start", daemon=True)
        starter.start()
        try:
            while starter.is_alive() and queue:
                self._parse_here(root, queue.pop(), remaining, take)
            starter.join()
            if isinstance(first[0], BaseException):
                raise first[0]
            in_flight[first[0]] = first_batch
            while queue or in_flight:
                while queue and len(in_flight) < IN_FLIGHT_PER_WORKER * workers:
                    batch = queue.popleft()
                    in_flight[pool.submit(parse_batch, root, batch, self.max_file_size, shared)] = batch
                if queue and started.value < workers:  # a core is idle: parse the smallest batch left here
                    self._parse_here(root, queue.pop(), remaining, take)
                    continue
                # Wait in short steps rather than for the next result: a stop must not wait for a batch to finish.
                finished, _pending = wait(in_flight, timeout=STOP_POLL_SECONDS, return_when=FIRST_COMPLETED)
                if self._stopped.is_set():
                    raise IndexingCancelled
                for future in finished:
                    batch = in_flight.pop(future)
                    outcomes = future.result()
                    remaining.pop(id(batch), None)
                    take(outcomes)
        except IndexingCancelled:
            stopped = True
            raise
        finally:
            if stopped:
                starter.join()  # the workers it is starting are killed too
                _kill_workers(pool)
            pool.shutdown(wait=not stopped, cancel_futures=True)
            _pool_closed()

    def _parse_here(self, root: str, batch: list[ParseJob], remaining: dict[int, list[ParseJob]],
                    take: Callable[[list[ParseOutcome]], None]) -> None:
        for start in range(0, len(batch), IN_PROCESS_BATCH):
            take(self._parse_batch(root, batch[start : start + IN_PROCESS_BATCH]))
        remaining.pop(id(batch), None)

    @property
    def _shared_location(self) -> SharedRecordsLocation | None:
        return None if self.shared is None or self.shared.disabled else self.shared.location

    def _parse_batch(self, root: str, jobs: list[ParseJob]) -> list[ParseOutcome]:
        return parse_batch(root, jobs, self.max_file_size, self._shared_location)

    def _read_markers(self, marker_files: Iterable[str]) -> dict[str, str]:
        markers: dict[str, str] = {}
        for path in marker_files:
            try:
                markers[path] = (self.root / path).read_text(encoding="utf-8", errors="replace")[:100_000]
            except OSError:
                continue
        return markers

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
                data, -1, -1, self.max_file_size,
            )
            with self._lock:
                if outcome.skip_reason is not None:
                    changed = self._documents.pop(relative, None) is not None
                    self._republish()
                    return changed
                if outcome.unchanged and current is not None and self._documents.get(relative) is current:
                    return False
                self._documents[relative] = self._record_of(outcome, current)
                self._republish()
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
                    self._republish()
            return had_document
        outcome = parse_job(
            str(self.root), ParseJob(relative, language, known.digest if known is not None else None),
            self.max_file_size, self._shared_location,
        )
        if outcome.skip_reason is not None:
            removed = self.remove_file(relative)
            with self._lock:
                if outcome.skip_reason != REASON_UNREADABLE:
                    self._disk_skips[relative] = StoredFile(relative, language, outcome.size, outcome.mtime_ns,
                                                            outcome.digest, outcome.skip_reason)
                self._skipped = tuple(sorted({*self._skipped, (relative, outcome.skip_reason)}))
                self._republish()
            return removed or had_document
        record = self._record_of(outcome, known)
        with self._lock:
            self._disk[relative] = record
            self._disk_skips.pop(relative, None)
            self._skipped = tuple(entry for entry in self._skipped if entry[0] != relative)
            if self._changes_during_build is not None:
                self._changes_during_build[relative] = record
            self._republish()
        if self.store is not None:
            self.store.write([_stored(record)])
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

        def take(outcomes: list[ParseOutcome]) -> None:
            for outcome in outcomes:
                if outcome.skip_reason is not None:
                    changed[outcome.path] = None
                    if outcome.skip_reason != REASON_UNREADABLE:
                        skips[outcome.path] = StoredFile(outcome.path, outcome.language, outcome.size,
                                                         outcome.mtime_ns, outcome.digest, outcome.skip_reason)
                    continue
                previous = known.get(outcome.path)
                record = self._record_of(outcome, previous)
                if outcome.parsed:
                    shared_puts.append((record.digest, outcome.language, record.encoded, record.definition_count))
                changed[outcome.path] = record

        self._run_jobs(jobs, sizes, take)
        if not changed and not skips:
            return 0
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
            self._skipped = tuple(sorted({*(entry for entry in self._skipped if entry[0] not in changed),
                                          *((path, skip.skip_reason or "") for path, skip in skips.items())}))
            self._republish()
        if self.store is not None:
            upserts = [_stored(record) for record in changed.values() if record is not None]
            self.store.write([*upserts, *skips.values()],
                             [path for path, record in changed.items() if record is None and path not in skips])
        if self.shared is not None:
            self.shared.put(shared_puts)
        return len(changed)

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
                self._republish()
        if self.store is not None and (changed or skip is not None):
            self.store.write([], [relative])
        return changed

    def _require_relative(self, path: str | Path) -> str:
        relative = self.relative_path(path)
        if relative is None:
            raise ValueError(f"{path} is not inside the workspace root {self.root}")
        return relative

    # --- publishing ---------------------------------------------------------------------------------------------

    def _republish(self) -> None:
        """Publish the current state (caller holds the lock), keeping a first build's pending set."""
        current = self._snapshot
        pending = current.pending - self._disk.keys() - self._documents.keys()
        skip_counts = self._skip_counts or current.skip_counts
        self._publish(self._disk, frozenset(pending), self._skipped, skip_counts, self._markers or current.markers)

    def _publish(
        self,
        disk: Mapping[str, FileRecord],
        pending: frozenset[str],
        skipped: Iterable[tuple[str, str]],
        skip_counts: Mapping[str, int],
        markers: Mapping[str, str],
    ) -> None:
        files = dict(disk)
        files.update(self._documents)
        self._version += 1
        previous = self._snapshot
        snapshot = Snapshot(self.root, files, tuple(skipped), dict(skip_counts), pending, dict(markers), self._version)
        graphs = previous.has_derived(GRAPH_ANCHOR_KEY) or previous.has_derived("reference_graph")
        snapshot.anchor = previous if graphs else previous.anchor
        snapshot.store = self.store
        snapshot.stopped = self._stopped.is_set
        self._snapshot = snapshot

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.shared is not None:
            # Other indexes of this process share the object: their next use opens the connection again.
            self.shared.close()


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """Kill a pool's worker processes now, mid-batch: shutting down would wait for their current batches."""
    processes = getattr(pool, "_processes", None) or {}  # private, but the only handle on a pool's processes
    for process in list(processes.values()):
        with contextlib.suppress(OSError, ValueError):
            process.kill()
    for process in list(processes.values()):
        with contextlib.suppress(OSError, ValueError, AssertionError):
            process.join(1.0)
    # A worker killed while sending a result leaves half a message in the result pipe, and the pool's manager
    # thread reads on for the rest, for ever: this process holds the pipe's write end too, so no end of file comes,
    # and interpreter exit then hangs joining that thread. Closing our write end lets the read fail instead.
    result_queue = getattr(pool, "_result_queue", None)
    writer = getattr(result_queue, "_writer", None)
    if writer is not None:
        with contextlib.suppress(OSError):
            writer.close()


_pools_lock = threading.Lock()
_open_pools = 0


def _pool_opened() -> None:
    global _open_pools
    with _pools_lock:
        _open_pools += 1


def _pool_closed() -> None:
    """The last pool of this process is done: stop the forkserver too. It holds tree-sitter and the parsers (about
    35 MB) and would idle for the life of the hub, or beside the graphs a one-shot `lsp-hub repomap` builds next;
    the next big build starts another in about 0.1 s."""
    global _open_pools
    with _pools_lock:
        _open_pools -= 1
        if _open_pools:
            return
        from multiprocessing import forkserver

        stop = getattr(forkserver._forkserver, "_stop", None)  # private: the only way to end it before exit
        if stop is not None:
            try:
                stop()
            except (OSError, AttributeError, TypeError) as error:
                log.debug("could not stop the index forkserver: %s", error)


def _process_context() -> multiprocessing.context.BaseContext:
    """forkserver where it exists (safe from a threaded parent, workers start from a small clean process),
    else spawn. The forkserver preloads the parser modules so each worker starts with tree-sitter imported."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["lsp_hub.index.parse_worker", "lsp_hub.index.extract"])
        return context
    return multiprocessing.get_context("spawn")


def _guided_batches(jobs: list[ParseJob], sizes: Mapping[str, int], workers: int) -> list[list[ParseJob]]:
    """Batches in the order they are handed out (guided self-scheduling): the largest files first, each batch a
    fixed share of the bytes still to go, so batches shrink towards the end and the workers finish together
    instead of one of them parsing a last large batch alone."""
    ordered = sorted(jobs, key=lambda job: sizes.get(job.path, 0), reverse=True)

    def cost(job: ParseJob) -> int:
        return max(sizes.get(job.path, 0), 0) + PER_FILE_COST_BYTES

    remaining = sum(cost(job) for job in ordered)
    batches: list[list[ParseJob]] = []
    current: list[ParseJob] = []
    current_cost = 0
    target = max(MIN_BATCH_BYTES, remaining // (BATCH_SHARE_DIVISOR * workers))
    for job in ordered:
        current.append(job)
        current_cost += cost(job)
        if current_cost >= target or len(current) >= MAX_BATCH_FILES:
            batches.append(current)
            remaining -= current_cost
            current, current_cost = [], 0
            target = max(MIN_BATCH_BYTES, remaining // (BATCH_SHARE_DIVISOR * workers))
    if current:
        batches.append(current)
    return batches


def _stored(record: FileRecord) -> StoredFile:
    """The record's row; without the results (None: "in the shared records") when the record holds none."""
    encoded = record.encoded if record.holds_encoded else None
    return StoredFile(record.path, record.language, record.size, record.mtime_ns, record.digest, None, encoded,
                      record.definition_count)
