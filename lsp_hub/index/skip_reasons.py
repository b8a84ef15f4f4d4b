"""Why a file is left out of the index, by reason, and the binary check that gives one of them.

Apart from the walk (`walk.py`) because the parse workers record these reasons too, and a worker's forkserver
must start fast: the walk's import of pathspec cost it 10-15 ms, with every core idle meanwhile.
"""

from __future__ import annotations

BINARY_SNIFF_BYTES = 8192

# Skip reasons. The first group leaves source code out of the index and is reported per file.
REASON_TOO_LARGE = "too_large"
REASON_BINARY = "binary"
REASON_UNREADABLE = "unreadable"
REASON_SYMLINK_OUTSIDE_ROOT = "symlink_outside_root"
REASON_TOO_DEEP = "too_deep"  # a directory below `walk.MAX_DIRECTORY_DEPTH`: not entered
REASON_EXTRACTION_FAILED = "extraction_failed"  # the extractor raised on it: a bug of ours, the rest still indexed
LEFT_OUT_REASONS: frozenset[str] = frozenset(
    (
        REASON_TOO_LARGE,
        REASON_BINARY,
        REASON_UNREADABLE,
        REASON_SYMLINK_OUTSIDE_ROOT,
        REASON_TOO_DEEP,
        REASON_EXTRACTION_FAILED,
    )
)
REASON_SYMLINK_LOOP = "symlink_loop"
REASON_SYMLINK_DUPLICATE = "symlink_duplicate"
REASON_BROKEN_SYMLINK = "broken_symlink"
REASON_GITIGNORED = "gitignored"
REASON_IGNORED_DIRECTORY = "ignored_directory"
REASON_HIDDEN_DIRECTORY = "hidden_directory"
REASON_UNSUPPORTED_LANGUAGE = "unsupported_language"


def is_binary(head: bytes) -> bool:
    """Whether content starting with `head` looks binary: a NUL byte in the first 8 KB, as git decides."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]
