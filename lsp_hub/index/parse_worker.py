"""Reading and parsing files, in the building process or in worker processes.

Kept apart from the rest of the index so a worker process imports only tree-sitter and the extractor, not networkx
or the graph code. The extractor (and with it tree-sitter) is imported on the first file actually parsed, so a build
that finds every file in the cache never loads it. A worker reads the file itself (the parent never ships file
contents), hashes it, and parses it only when the content differs from what the cache knows, returning packed
tuples, which travel back in marshal form.
"""

from __future__ import annotations

import gc
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from lsp_hub.index.records import (
    P_DEFINITIONS,
    EncodedLoader,
    FileRecord,
    Packed,
    content_digest,
    decode_head,
    encode_head,
    encode_packed,
    head_of,
)
from lsp_hub.index.shared_records import SharedRecordsLocation, shared_records_at
from lsp_hub.index.skip_reasons import (
    REASON_BINARY,
    REASON_EXTRACTION_FAILED,
    REASON_TOO_LARGE,
    REASON_UNREADABLE,
    is_binary,
)
from lsp_hub.pid_liveness import pid_exists

OWNER_POLL_SECONDS = 0.5  # how often a worker checks that its owner lives, where it cannot wait on a pidfd
READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)  # Windows would translate line ends without O_BINARY
READ_CHUNK = 1 << 20
LOOKUP_FILES = 64  # files read, then looked up in the shared records in one query (their contents held meanwhile)


@dataclass(frozen=True, slots=True)
class ParseJob:
    path: str  # workspace-relative POSIX path
    language: str
    known_digest: bytes | None  # the cached content digest, if any: equal content is not parsed again

    def __reduce__(self) -> tuple[Callable[..., ParseJob], tuple[Any, ...]]:
        # Sent to a worker by the hundred thousand for a new worktree: as its fields, read back through the
        # constructor (a third of the work of the slots' default state, on each side).
        return ParseJob, (self.path, self.language, self.known_digest)


@dataclass(frozen=True, slots=True)
class ParseOutcome:
    path: str
    language: str
    size: int
    mtime_ns: int
    digest: bytes
    skip_reason: str | None  # the file is left out (binary, unreadable, too large)
    packed: Packed | None  # None when skipped or when `unchanged`
    unchanged: bool  # content equals known_digest: keep the cached results
    parsed: bool
    # From a worker: `packed` in marshal form (not decoded: the record keeps it so, and the cache stores it as is),
    # with its definition count beside it, and `packed` None. From the shared records: the count alone (the
    # bytes stay there, and are read back when needed).
    encoded: bytes | None = None
    definitions: int | None = None
    # From a worker, beside `encoded`: what the record keeps decoded (`records.head_of`), made there so that the
    # building process only loads it (about half the work of decoding the results and deriving it).
    head: bytes | None = None
    # From the shared records, beside `definitions`: when the entry was last used (the building process refreshes
    # only the entries due for it, instead of asking for every hit).
    shared_used: int | None = None

    @property
    def from_shared(self) -> bool:
        """The results came from the shared records (content indexed before, in any checkout): nothing parsed."""
        return self.skip_reason is None and not self.unchanged and not self.parsed

    def __reduce__(self) -> tuple[Callable[..., ParseOutcome], tuple[Any, ...]]:
        # From a worker to the parent the results travel in marshal form, which is written about six times and
        # read about twice as fast as pickle's object protocol, and is the form the cache keeps.
        encoded, definitions, head = self.encoded, self.definitions, self.head
        if encoded is None and self.packed is not None:
            encoded, definitions = encode_packed(self.packed), len(self.packed[P_DEFINITIONS])
            head = encode_head(head_of(self.packed))
        return (
            ParseOutcome,
            (
                self.path,
                self.language,
                self.size,
                self.mtime_ns,
                self.digest,
                self.skip_reason,
                None,
                self.unchanged,
                self.parsed,
                encoded,
                definitions,
                head,
                self.shared_used,
            ),
        )

    def record(self, loader: EncodedLoader | None = None) -> FileRecord:
        """The parsed results as a record (not for skipped or `unchanged` outcomes); `loader` gives the bytes of
        results found in the shared records."""
        if self.encoded is None and self.packed is None:
            assert self.definitions is not None and loader is not None
            return FileRecord(
                self.path, self.size, self.mtime_ns, self.digest, None, self.language, self.definitions, loader=loader
            )
        if self.packed is not None:
            return FileRecord.of_packed(self.path, self.size, self.mtime_ns, self.digest, self.packed)
        assert self.encoded is not None and self.definitions is not None
        head = decode_head(self.head) if self.head is not None else None
        return FileRecord(
            self.path,
            self.size,
            self.mtime_ns,
            self.digest,
            self.encoded,
            self.language,
            self.definitions,
            head=head,
        )


def parse_source(
    job: ParseJob,
    data: bytes,
    size: int,
    mtime_ns: int,
    max_file_size: int,
    shared: SharedRecordsLocation | None = None,
) -> ParseOutcome:
    """Parse content already in memory (a file just read, or an open document's text), unless its results are in
    the `shared` records already."""
    digest = content_digest(data)
    settled = _settled(job, data, size, mtime_ns, digest, max_file_size)
    if settled is not None:
        return settled
    if shared is not None:
        found = shared_records_at(shared).lookup(digest, job.language)
        if found is not None:
            definitions, used = found
            return ParseOutcome(
                job.path, job.language, size, mtime_ns, digest, None, None, False, False, None, definitions, None, used
            )
    return _parsed(job, data, size, mtime_ns, digest)


def _settled(
    job: ParseJob, data: bytes, size: int, mtime_ns: int, digest: bytes, max_file_size: int
) -> ParseOutcome | None:
    """The outcome of content that is not to be parsed (too large, binary, or as the cache knows it), else None."""
    if len(data) > max_file_size:
        return ParseOutcome(job.path, job.language, size, mtime_ns, digest, REASON_TOO_LARGE, None, False, False)
    if is_binary(data):
        return ParseOutcome(job.path, job.language, size, mtime_ns, digest, REASON_BINARY, None, False, False)
    if job.known_digest == digest:
        return ParseOutcome(job.path, job.language, size, mtime_ns, digest, None, None, True, False)
    return None


def _parsed(job: ParseJob, data: bytes, size: int, mtime_ns: int, digest: bytes) -> ParseOutcome:
    from lsp_hub.index.extract import extract_packed  # tree-sitter: only once something is parsed

    try:
        packed = extract_packed(data, job.language)
    except Exception as error:  # one file the extractor fails on must not end the build
        # fmt's base.h (`enum : unsigned {...}` parsed as C) once raised here, and the whole index never came up.
        import logging  # not at the top: the forkserver imports this module, and starts while cores wait

        logging.getLogger("lsp_hub.index.workspace").warning(
            "%s left out of the index: extracting its %s failed (%s: %s)",
            job.path,
            job.language,
            type(error).__name__,
            error,
        )
        failed = REASON_EXTRACTION_FAILED
        return ParseOutcome(job.path, job.language, size, mtime_ns, digest, failed, None, False, False)
    return ParseOutcome(job.path, job.language, size, mtime_ns, digest, None, packed, False, True)


def parse_job(
    root: str, job: ParseJob, max_file_size: int, shared: SharedRecordsLocation | None = None
) -> ParseOutcome:
    """Read and parse one file under `root`; never raises for file problems."""
    read = _read(root, job, max_file_size)
    if isinstance(read, ParseOutcome):
        return read
    data, size, mtime_ns = read
    return parse_source(job, data, size, mtime_ns, max_file_size, shared)


def _read(root: str, job: ParseJob, max_file_size: int) -> tuple[bytes, int, int] | ParseOutcome:
    """(content, size, mtime) of a job's file, or the outcome of a file too large or unreadable. Through the
    operating system's calls, not a file object: half the cost, which a new worktree pays for every file."""
    try:
        handle = os.open(os.path.join(root, job.path), READ_FLAGS)
    except OSError:
        return ParseOutcome(job.path, job.language, -1, -1, b"", REASON_UNREADABLE, None, False, False)
    try:
        status = os.fstat(handle)
        if status.st_size > max_file_size:
            return ParseOutcome(
                job.path, job.language, status.st_size, status.st_mtime_ns, b"", REASON_TOO_LARGE, None, False, False
            )
        data = os.read(handle, status.st_size + 1)
        if len(data) > status.st_size:  # it grew since: read it to the end
            parts = [data]
            while part := os.read(handle, READ_CHUNK):
                parts.append(part)
            data = b"".join(parts)
        return data, status.st_size, status.st_mtime_ns
    except OSError:
        return ParseOutcome(job.path, job.language, -1, -1, b"", REASON_UNREADABLE, None, False, False)
    finally:
        os.close(handle)


def worker_initializer(owner_pid: int | None = None, started: Any = None) -> None:
    """Run once in each worker process. `started` (a shared counter) counts the workers ready to parse, so the
    owner can parse small batches itself while cores are still idle.

    Workers only parse, and what they build holds no reference cycles, so the cyclic garbage collector only costs
    there: its passes over each batch's growing results took about 7% of a worker's CPU on the standard library.
    Reference counting still frees everything.

    `owner_pid` is the process that builds the index (the hub). A worker's parent is multiprocessing's forkserver,
    not the owner, so neither PR_SET_PDEATHSIG nor watching getppid() would notice the owner's death; and a worker
    never sees EOF on its task queue, since it holds that queue's write end itself. So the worker watches the owner:
    when it dies (even by SIGKILL) the worker ends at once. With the workers gone, the forkserver (whose "alive"
    pipe they held) and the resource tracker (whose pipe they held) see EOF and end as well."""
    gc.disable()
    if owner_pid is not None:
        threading.Thread(target=_exit_when_gone, args=(owner_pid,), name="owner-watch", daemon=True).start()
    if started is not None:
        with started.get_lock():
            started.value += 1


def _exit_when_gone(pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            handle: int | None = os.pidfd_open(pid)
        except ProcessLookupError:
            os._exit(0)  # the owner is already gone
        except (AttributeError, OSError):  # no pidfd (kernel < 5.3): poll
            handle = None
        if handle is not None:
            select.select([handle], [], [])  # a pidfd becomes readable when the process ends
            os._exit(0)
    while pid_exists(pid):
        time.sleep(OWNER_POLL_SECONDS)
    os._exit(0)


# A file whose results the shared records hold, as a batch sends it back: (path, language, size, mtime_ns, digest,
# definition count, time the entry was last used). A plain tuple: a new worktree finds every file there, and the
# building process took them one object at a time (made, sent, taken apart) for most of its time.
SharedHit = tuple[str, str, int, int, bytes, int, int]


class BatchResult(NamedTuple):
    outcomes: list[ParseOutcome]  # files parsed, skipped or unchanged
    hits: list[SharedHit]  # files found in the shared records

    @property
    def file_count(self) -> int:
        return len(self.outcomes) + len(self.hits)


def parse_batch(
    root: str, jobs: list[ParseJob], max_file_size: int, shared: SharedRecordsLocation | None = None
) -> BatchResult:
    """The unit of work sent to a worker process: several files per task to keep IPC overhead low, looked up in
    the shared records LOOKUP_FILES at a time (one query each: a third of the cost of one per file)."""
    result = BatchResult([], [])
    for start in range(0, len(jobs), LOOKUP_FILES):
        _settle_files(root, jobs[start : start + LOOKUP_FILES], max_file_size, shared, result)
    return result


def _settle_files(
    root: str, jobs: list[ParseJob], max_file_size: int, shared: SharedRecordsLocation | None, result: BatchResult
) -> None:
    """Read the files, then look those that need it up at once, then parse what was not found."""
    unsettled: list[tuple[ParseJob, bytes, int, int, bytes]] = []
    for job in jobs:
        read = _read(root, job, max_file_size)
        if isinstance(read, ParseOutcome):
            result.outcomes.append(read)
            continue
        data, size, mtime_ns = read
        digest = content_digest(data)
        settled = _settled(job, data, size, mtime_ns, digest, max_file_size)
        if settled is not None:
            result.outcomes.append(settled)
        else:
            unsettled.append((job, data, size, mtime_ns, digest))
    found = (
        shared_records_at(shared).lookup_many([(digest, job.language) for job, _d, _s, _m, digest in unsettled])
        if shared is not None and unsettled
        else {}
    )
    for job, data, size, mtime_ns, digest in unsettled:
        known = found.get((digest, job.language))
        if known is not None:
            result.hits.append((job.path, job.language, size, mtime_ns, digest, known[0], known[1]))
        else:
            result.outcomes.append(_parsed(job, data, size, mtime_ns, digest))
