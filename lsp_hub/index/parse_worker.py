"""Reading and parsing files, in the building process or in worker processes.

Kept apart from the rest of the index so a worker process imports only tree-sitter and the extractor, not networkx
or the graph code. A worker reads the file itself (the parent never ships file contents), hashes it, and parses it
only when the content differs from what the cache knows, returning packed tuples, which pickle cheaply.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lsp_hub.index.extract import extract_file
from lsp_hub.index.records import Packed, content_digest, pack_file_index
from lsp_hub.index.walk import REASON_BINARY, REASON_TOO_LARGE, REASON_UNREADABLE, is_binary


@dataclass(frozen=True, slots=True)
class ParseJob:
    path: str  # workspace-relative POSIX path
    language: str
    known_digest: bytes | None  # the cached content digest, if any: equal content is not parsed again


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


def parse_source(job: ParseJob, data: bytes, size: int, mtime_ns: int, max_file_size: int) -> ParseOutcome:
    """Parse content already in memory (a file just read, or an open document's text)."""
    digest = content_digest(data)
    if len(data) > max_file_size:
        return ParseOutcome(job.path, job.language, size, mtime_ns, digest, REASON_TOO_LARGE, None, False, False)
    if is_binary(data):
        return ParseOutcome(job.path, job.language, size, mtime_ns, digest, REASON_BINARY, None, False, False)
    if job.known_digest == digest:
        return ParseOutcome(job.path, job.language, size, mtime_ns, digest, None, None, True, False)
    packed = pack_file_index(extract_file(job.path, data, job.language))
    return ParseOutcome(job.path, job.language, size, mtime_ns, digest, None, packed, False, True)


def parse_job(root: str, job: ParseJob, max_file_size: int) -> ParseOutcome:
    """Read and parse one file under `root`; never raises for file problems."""
    try:
        with open(os.path.join(root, job.path), "rb") as handle:
            status = os.fstat(handle.fileno())
            if status.st_size > max_file_size:
                return ParseOutcome(job.path, job.language, status.st_size, status.st_mtime_ns, b"",
                                    REASON_TOO_LARGE, None, False, False)
            data = handle.read()
    except OSError:
        return ParseOutcome(job.path, job.language, -1, -1, b"", REASON_UNREADABLE, None, False, False)
    return parse_source(job, data, status.st_size, status.st_mtime_ns, max_file_size)


def parse_batch(root: str, jobs: list[ParseJob], max_file_size: int) -> list[ParseOutcome]:
    """The unit of work sent to a worker process: several files per task to keep IPC overhead low."""
    return [parse_job(root, job, max_file_size) for job in jobs]
