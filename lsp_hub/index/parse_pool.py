"""Running an index build's parse jobs (`workspace.WorkspaceIndex`): in this process when they are few, else in
worker processes (a forkserver's, `parse_worker`, run by `worker_processes`), in batches handed out largest first
(guided self-scheduling), the workers killed when the index is stopped and the forkserver stopped with the last
pool."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING

from lsp_hub.index.parse_worker import (
    BatchResult,
    ParseJob,
    parse_batch,
    worker_initializer,
)
from lsp_hub.index.shared_records import (
    SharedRecords,
    SharedRecordsLocation,
)
from lsp_hub.index.walk import (
    IndexingCancelled,
    WalkedFile,
    WalkResult,
)
from lsp_hub.index.walk_feed import STREAM_AFTER_FILES, WalkFeed
from lsp_hub.index.worker_processes import WorkerProcesses, stop_forkserver

if TYPE_CHECKING:  # multiprocessing is imported by a build that starts workers, not by every process
    import multiprocessing.context

log = logging.getLogger("lsp_hub.index.workspace")

# Fewer files than this to parse: parse in this process (starting workers costs more than it saves).
IN_PROCESS_LIMIT = 50
MAX_BATCH_FILES = 256
MIN_BATCH_BYTES = 64 * 1024
BATCH_SHARE_DIVISOR = 4  # a batch takes 1/(4 * workers) of the remaining bytes
PER_FILE_COST_BYTES = 512  # opening, hashing and querying a file costs about as much as parsing this many bytes
STOP_POLL_SECONDS = 0.1  # how often a build waiting on its workers checks whether the index was stopped
IN_PROCESS_BATCH = 32  # files parsed in this process between checks for a stop
IN_FLIGHT_PER_WORKER = 2  # batches handed to the pool per worker at a time (the rest wait here, to be taken by anyone)
PARSING_SHARE = 8  # a fed build's files taken by the walk's end: parsed when more than one in this many were


class ParseRunning:
    """The part of `WorkspaceIndex` that runs parse jobs; the index sets these attributes."""

    root: Path
    max_file_size: int
    max_workers: int | None
    in_process_limit: int
    shared: SharedRecords | None
    _stopped: threading.Event

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
        self,
        jobs: list[ParseJob],
        job_sizes: Mapping[str, int],
        take: Callable[[BatchResult], None],
        feed: WalkFeed | None = None,
    ) -> None:
        """Run `jobs`, or with a `feed` the jobs it hands out as its walk goes on (it has begun cutting them)."""
        if not jobs and feed is None:
            return
        root = str(self.root)
        workers = self._worker_count(len(jobs) if feed is None else STREAM_AFTER_FILES)
        if feed is None and (len(jobs) < self.in_process_limit or workers <= 1):
            for start in range(0, len(jobs), IN_PROCESS_BATCH):
                take(self._parse_batch(root, jobs[start : start + IN_PROCESS_BATCH]))
            return
        batches = _guided_batches(jobs, job_sizes, workers)
        remaining = {id(batch): batch for batch in batches}
        try:
            self._run_in_workers(root, batches, workers, remaining, take, feed)
        except OSError as error:  # WorkerDied among them
            if self._stopped.is_set():
                raise IndexingCancelled from error
            # A worker died (or could not start): finish here rather than leave files out.
            log.warning("index worker pool failed (%s); parsing the rest in-process", error)
            left = list(remaining.values())
            if feed is not None:
                left += _the_rest_of(feed, workers, self._stopped)
            for batch in left:
                for start in range(0, len(batch), IN_PROCESS_BATCH):
                    take(self._parse_batch(root, batch[start : start + IN_PROCESS_BATCH]))

    def _run_in_workers(
        self,
        root: str,
        batches: list[list[ParseJob]],
        workers: int,
        remaining: dict[int, list[ParseJob]],
        take: Callable[[BatchResult], None],
        feed: WalkFeed | None = None,
    ) -> None:
        """Parse `batches` in worker processes, taking results as they come; a batch taken leaves `remaining`.
        The workers end with this process (see worker_initializer) and are killed when the index is stopped.
        With a `feed`, its batches join them as its walk cuts them, and the rest once the walk has ended.

        Starting the workers takes a few hundred milliseconds (the forkserver's interpreter and imports, then each
        worker's), during which cores would idle: until every worker is ready, this process parses the smallest
        batches not yet handed to the pool itself, those it has the queries for (`_compiled_here`)."""
        context = _process_context(job.language for batch in batches for job in batch)
        # Parsing in workers leaves this process time to load what the graphs over their results need (numpy and
        # the graph modules: 0.1-0.3 s of a cold map's serial part after the parse otherwise).
        threading.Thread(target=_load_graph_modules, name="index-graph-modules", daemon=True).start()
        shared = self._shared_location
        started = context.Value("i", 0)
        pool = WorkerProcesses(context, workers, parse_batch, worker_initializer, (os.getpid(), started))
        finished = False
        queue = deque(batches)  # not handed out yet, largest first
        in_flight: dict[int, list[ParseJob]] = {}  # job number -> its batch
        fed = feed is None  # every batch is in the queue, or has been
        taken_files = [0, 0]  # files taken so far: found in the shared records, and the rest (parsed, mostly)

        def counted(result: BatchResult) -> None:
            taken_files[0] += len(result.hits)
            taken_files[1] += len(result.outcomes)
            take(result)

        def feed_queue(timeout: float) -> None:
            nonlocal fed
            assert feed is not None
            walk_ended = feed.finished  # read first: the batches it cut before it ended are all taken next
            more = feed.batches(timeout)
            if walk_ended and _parsing(*taken_files):
                # What is not handed out yet goes out as a whole build's would (largest first, shrinking), so that
                # the workers of a long parse finish together rather than behind a batch cut in the walk's order.
                waiting = [*queue, *more]
                for batch in queue:
                    del remaining[id(batch)]
                queue.clear()
                jobs = [job for batch in waiting for job in batch]
                more = _guided_batches([*jobs, *feed.rest()], feed.sizes, workers)
                fed = True
            elif walk_ended:  # files looked up, each about as long as another: the batches stay as they are
                more += _guided_batches(feed.rest(), feed.sizes, workers)
                fed = True
            for batch in more:
                remaining[id(batch)] = batch
            queue.extend(more)

        def hand_out(batch: list[ParseJob]) -> None:
            in_flight[pool.send((root, batch, self.max_file_size, shared))] = batch

        if not fed:
            feed_queue(0.0)
        # Starting the workers waits for the forkserver to start and import: meanwhile this thread parses the
        # smallest batches.
        first_batch = queue.popleft()
        failed: list[BaseException] = []

        def start_workers() -> None:
            try:
                pool.start()
            except BaseException as error:  # handed to the building thread
                failed.append(error)

        _pool_opened()
        starter = threading.Thread(target=start_workers, name="index-pool-start", daemon=True)
        starter.start()
        try:
            while starter.is_alive() and queue and fed and _compiled_here(queue[-1]):  # (a walk has the core)
                self._parse_here(root, queue.pop(), remaining, counted)
            starter.join()
            if failed:
                raise failed[0]
            if pool.count < workers:
                raise OSError("the index workers could not all be started")
            hand_out(first_batch)
            while queue or in_flight or not fed:
                if not fed:
                    feed_queue(0.0 if queue or in_flight else STOP_POLL_SECONDS)
                    if self._stopped.is_set():
                        raise IndexingCancelled
                    if not queue and not in_flight:
                        continue
                while queue and len(in_flight) < IN_FLIGHT_PER_WORKER * workers:
                    hand_out(queue.popleft())
                if queue and fed and started.value < workers and _compiled_here(queue[-1]):
                    self._parse_here(root, queue.pop(), remaining, counted)  # a core is idle: the smallest batch
                    continue
                # Wait in short steps rather than for the next result: a stop must not wait for a batch to finish.
                answers = pool.answers(STOP_POLL_SECONDS)
                if self._stopped.is_set():
                    raise IndexingCancelled
                for number, result in answers:
                    batch = in_flight.pop(number)
                    remaining.pop(id(batch), None)
                    counted(result)
            finished = True
        finally:
            if finished:
                pool.close()
            else:  # stopped, or failed: the workers' batches are not waited for
                pool.kill()
                starter.join()  # the workers it is still starting are not started
                pool.kill()
            _pool_closed(pool.forkserver_pid)

    def _parse_here(
        self,
        root: str,
        batch: list[ParseJob],
        remaining: dict[int, list[ParseJob]],
        take: Callable[[BatchResult], None],
    ) -> None:
        for start in range(0, len(batch), IN_PROCESS_BATCH):
            take(self._parse_batch(root, batch[start : start + IN_PROCESS_BATCH]))
        remaining.pop(id(batch), None)

    @property
    def _shared_location(self) -> SharedRecordsLocation | None:
        return None if self.shared is None or self.shared.disabled else self.shared.location

    def _parse_batch(self, root: str, jobs: list[ParseJob]) -> BatchResult:
        return parse_batch(root, jobs, self.max_file_size, self._shared_location)


def _compiled_here(batch: list[ParseJob]) -> bool:
    """Whether this process can parse `batch` without compiling a query first. While the workers start it parses
    the smallest batches; compiling for them (on commander JavaScript's and TypeScript's queries, a third of a
    second, for a few small files) cost more than it saved, the workers having theirs from the forkserver. Asking
    imports no tree-sitter: nothing is compiled before `extract` is imported."""
    extract = sys.modules.get("lsp_hub.index.extract")
    return extract is not None and all(extract.query_compiled(job.language) for job in batch)


def _parsing(found_shared: int, others: int) -> bool:
    """Whether the files taken so far were mostly parsed (or none were taken yet): then how long a batch takes
    depends on its files' sizes. Files found in the shared records take about as long as each other."""
    return others * PARSING_SHARE >= found_shared + others


def _the_rest_of(feed: WalkFeed, workers: int, stopped: threading.Event) -> list[list[ParseJob]]:
    """Every batch a feed has still to hand out, once its walk has ended."""
    left: list[list[ParseJob]] = []
    while not feed.finished:
        left += feed.batches(STOP_POLL_SECONDS)
        if stopped.is_set():
            raise IndexingCancelled
    return [*left, *feed.batches(), *_guided_batches(feed.rest(), feed.sizes, workers)]


class WorkerPrestart:
    """Starts the forkserver the workers come from while a walk is still finding the files they will take: a pool
    started after the walk waited 0.45 s for it (its interpreter and imports), with a core idle. It is stopped
    with the last pool, or at `close` when no pool came."""

    def __init__(
        self, threshold: int, root: Path | None = None, max_file_size: int = 0, shared: SharedRecords | None = None
    ) -> None:
        self.threshold = threshold  # files found (all to be looked up or parsed) that start it
        self.started = False
        # Where to sample the files found, to tell the forkserver only the languages it will have to parse.
        self.root, self.max_file_size, self.shared = root, max_file_size, shared

    def files_found(self, count: int, walking: WalkResult | None = None) -> None:
        """The walk has found `count` files, the first of `walking.files` (its result as filled so far)."""
        if self.started or count < self.threshold:
            return
        self.started = True
        _pool_opened()
        languages = _languages_ahead(walking, count) if walking is not None else set()
        if languages and walking is not None and self.root is not None and self.shared is not None:
            found = walking.files[:count]
            indexed = _indexed_before(self.root, self.shared, found, self.max_file_size)
            # Every file sampled was indexed before: a new worktree, whose languages seen only in its markers (a
            # tsconfig.json's TypeScript) are most likely indexed too.
            languages = set() if indexed >= {walked.language for walked in found} else languages - indexed
        context = _process_context(languages)
        if context.get_start_method() == "forkserver":
            from multiprocessing import forkserver

            with contextlib.suppress(OSError, ValueError):
                forkserver.ensure_running()  # returns at once: the forkserver imports on its own

    def close(self) -> None:
        if self.started:
            self.started = False
            _pool_closed()


_pools_lock = threading.Lock()
_open_pools = 0
_forkserver_stopping: threading.Thread | None = None
_known_forkserver: int | None = None  # the forkserver's pid, as the last pool's workers told it


def _pool_opened() -> None:
    global _open_pools
    with _pools_lock:
        if _forkserver_stopping is not None:
            _forkserver_stopping.join()  # its forkserver is ending: the next is started once it has
        _open_pools += 1


def _pool_closed(forkserver_pid: int | None = None) -> None:
    """A pool (or a prestart) is done; the last of them stops the forkserver too. It holds tree-sitter and the
    parsers (about 35 MB) and would idle for the life of the hub, or beside the graphs a one-shot `lsp-hub repomap`
    builds next; the next big build starts another in about 0.1 s. `forkserver_pid` is the pool's workers' parent
    (found without a search of this process's children), kept for the last to close."""
    global _open_pools, _forkserver_stopping, _known_forkserver
    with _pools_lock:
        _open_pools -= 1
        _known_forkserver = forkserver_pid or _known_forkserver
        if _open_pools:
            return
        # In a thread, which waits for the forkserver to have exited (a search of this process's children when no
        # pool told its pid: psutil's import and a scan): the build's answer need not. A pool opened meanwhile waits
        # for it (`_pool_opened`).
        _forkserver_stopping = threading.Thread(
            target=stop_forkserver, args=(_known_forkserver,), name="index-forkserver-stop", daemon=True
        )
        _known_forkserver = None
        _forkserver_stopping.start()


def _process_context(languages: Iterable[str] = ()) -> multiprocessing.context.BaseContext:
    """forkserver where it exists (safe from a threaded parent, workers start from a small clean process),
    else spawn. The forkserver preloads the parser modules so each worker starts with tree-sitter imported, and,
    when it is started now, the compiled queries of `languages` (`query_preload`)."""
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(
            ["lsp_hub.index.parse_worker", "lsp_hub.index.extract", *query_preload_modules(languages)]
        )
        return context
    return multiprocessing.get_context("spawn")


def _languages_ahead(walking: WalkResult, count: int) -> set[str]:
    """The languages of the files a walk has found, and TypeScript where it found a `tsconfig.json`: a JavaScript
    package's typings come late in the walk, and each worker that met one compiled TypeScript's query (150 ms)."""
    languages = {walked.language for walked in walking.files[:count]}
    if any(marker.rpartition("/")[2] == "tsconfig.json" for marker in walking.marker_files):
        languages.add("typescript")
    return languages


SAMPLED_PER_LANGUAGE = 3


def _indexed_before(root: Path, shared: SharedRecords, files: Sequence[WalkedFile], max_file_size: int) -> set[str]:
    """The languages whose first few files found are all in the shared records: a new worktree or copy of a tree
    indexed before, whose workers will look its files up rather than parse them. Their queries are not worth the
    forkserver's time before it can fork the first worker (TypeScript's, TSX's and JavaScript's: 0.4 s)."""
    from lsp_hub.index.records import content_digest

    sampled: dict[str, list[bytes]] = {}
    for walked in files:
        digests = sampled.setdefault(walked.language, [])
        if len(digests) >= SAMPLED_PER_LANGUAGE or not 0 < walked.size <= max_file_size:
            continue
        try:
            digests.append(content_digest((root / walked.path).read_bytes()))
        except OSError:
            continue  # the workers will say what is wrong with it
    found = shared.lookup_many([(digest, language) for language, digests in sampled.items() for digest in digests])
    return {
        language
        for language, digests in sampled.items()
        if digests and all((digest, language) in found for digest in digests)
    }


QUERY_PRELOAD_PACKAGE = "lsp_hub.index.query_preload"  # not imported here: its import changes the import system


def query_preload_modules(languages: Iterable[str]) -> list[str]:
    """The modules that make a forkserver compile these languages' queries, in a stable order."""
    return [f"{QUERY_PRELOAD_PACKAGE}.{language}" for language in sorted(set(languages)) if language.isidentifier()]


GRAPH_MODULES = ("numpy", "lsp_hub.index.graph_store", "lsp_hub.index.repomap")


def _load_graph_modules() -> None:
    import importlib

    for name in GRAPH_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as error:  # the command that needs it says so when it asks
            log.debug("not preloaded: %s (%s)", name, error)


def _guided_batches(jobs: list[ParseJob], sizes: Mapping[str, int], workers: int) -> list[list[ParseJob]]:
    """Batches in the order they are handed out (guided self-scheduling): the largest files first, each batch a
    fixed share of the bytes still to go, so batches shrink towards the end and the workers finish together
    instead of one of them parsing a last large batch alone."""
    # Each job with its cost, computed once (a new worktree hands out 100,000 jobs: a call per job and comparison
    # showed up in its profile).
    costs = [(max(sizes.get(job.path, 0), 0) + PER_FILE_COST_BYTES, job) for job in jobs]
    costs.sort(key=itemgetter(0), reverse=True)
    remaining = sum(cost for cost, _job in costs)
    batches: list[list[ParseJob]] = []
    current: list[ParseJob] = []
    current_cost = 0
    target = max(MIN_BATCH_BYTES, remaining // (BATCH_SHARE_DIVISOR * workers))
    for cost, job in costs:
        current.append(job)
        current_cost += cost
        if current_cost >= target or len(current) >= MAX_BATCH_FILES:
            batches.append(current)
            remaining -= current_cost
            current, current_cost = [], 0
            target = max(MIN_BATCH_BYTES, remaining // (BATCH_SHARE_DIVISOR * workers))
    if current:
        batches.append(current)
    return batches
