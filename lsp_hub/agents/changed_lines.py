"""Which lines a write touched, and whether a formatter's output changes any other: a verified write formats only
the lines it changed (`changed_blocks`), and refuses a formatter's edits outside them (`changes_outside`).
Line alignment is difflib's, anchored on lines unique to both sides so that large files stay fast. Standard
library only."""

from __future__ import annotations

import bisect
import difflib
import itertools
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class LineBlock:
    """Lines `start` up to (not including) `end` of a text, 0-based; empty (start == end) where lines were only
    removed."""

    start: int
    end: int


def text_lines(text: str) -> list[str]:
    """The lines of `text` as LSP counts them (`\\n`, `\\r\\n` or `\\r` ends one), each with its line end."""
    lines: list[str] = []
    start = 0
    for end in _LINE_END.finditer(text):
        lines.append(text[start : end.end()])
        start = end.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def changed_blocks(old: str, new: str) -> list[LineBlock]:
    """The blocks of lines of `new` that differ from `old`, in order (difflib's alignment; on large texts anchored
    on the lines that occur once in each, as patience diff does)."""
    return [
        LineBlock(new_start, new_end) for _, _, new_start, new_end in _line_changes(text_lines(old), text_lines(new))
    ]


def changes_outside(before: str, after: str, allowed: list[LineBlock]) -> bool:
    """Whether turning `before` into `after` changes any line of `before` outside the `allowed` blocks: false
    exactly when `after` is the untouched runs of lines of `before`, in order and byte for byte, with anything in
    place of each allowed block (lines may be inserted at an empty block, or at a block's edges)."""
    lines = text_lines(before)
    kept = _untouched_runs(len(lines), allowed)
    line_starts = {0, len(after)}
    offset = 0
    for line in text_lines(after):
        offset += len(line)
        line_starts.add(offset)
    if not lines:
        return after != "" and not _insertion_at(0, allowed)
    position = 0
    for start, end in kept:
        run = "".join(lines[start:end])
        first = start == 0 and not _insertion_at(0, allowed)  # nothing may come before it
        last = end == len(lines) and not _insertion_at(len(lines), allowed)  # nor after it
        if last:
            found = len(after) - len(run) if after.endswith(run) else -1
            found = -1 if found < position or (first and found != 0) else found
        elif first:
            found = 0 if after.startswith(run) else -1
        else:  # the leftmost place leaves the most room for the runs after it
            found = after.find(run, position)
            while found != -1 and not (found in line_starts and found + len(run) in line_starts):
                found = after.find(run, found + 1)
        if found == -1 or found not in line_starts or found + len(run) not in line_starts:
            return True
        position = found + len(run)
    return False


def _untouched_runs(line_count: int, allowed: list[LineBlock]) -> list[tuple[int, int]]:
    """The runs of lines in no allowed block, also split where an empty block lets lines be inserted."""
    cuts = sorted({0, line_count, *(block.start for block in allowed), *(block.end for block in allowed)})
    return [
        (start, end)
        for start, end in itertools.pairwise(cuts)
        if end <= line_count and not any(block.start <= start < block.end for block in allowed)
    ]


def _insertion_at(line: int, allowed: list[LineBlock]) -> bool:
    return any(block.start == block.end == line for block in allowed)


SMALL_DIFF = 250_000  # len(a) * len(b) up to which difflib aligns two runs of lines directly
MAX_ANCHOR_DEPTH = 32


def _line_changes(
    a: list[str], b: list[str], a_offset: int = 0, b_offset: int = 0, depth: int = 0
) -> list[tuple[int, int, int, int]]:
    """(a_start, a_end, b_start, b_end) of each differing block of lines. The common head and tail are cut off
    first (a write usually changes a few lines); what is left, if large, is split at the lines that occur once in
    each, in an order both share: difflib on thousands of lines with many equal ones (`}`, blank) takes minutes."""
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    a, b = a[head : len(a) - tail], b[head : len(b) - tail]
    a_offset, b_offset = a_offset + head, b_offset + head
    if not a and not b:
        return []
    if len(a) * len(b) <= SMALL_DIFF:
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        return [
            (a_offset + a_start, a_offset + a_end, b_offset + b_start, b_offset + b_end)
            for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes()
            if tag != "equal"
        ]
    anchors = _unique_common_lines(a, b) if depth < MAX_ANCHOR_DEPTH else []
    if not anchors:
        return [(a_offset, a_offset + len(a), b_offset, b_offset + len(b))]
    changes: list[tuple[int, int, int, int]] = []
    a_from = b_from = 0
    for a_at, b_at in [*anchors, (len(a), len(b))]:
        changes.extend(_line_changes(a[a_from:a_at], b[b_from:b_at], a_offset + a_from, b_offset + b_from, depth + 1))
        a_from, b_from = a_at + 1, b_at + 1
    return changes


def _unique_common_lines(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Pairs (index in a, index in b) of lines that occur once in each, the longest chain increasing in both."""
    a_counts, b_counts = Counter(a), Counter(b)
    b_index = {line: index for index, line in enumerate(b) if b_counts[line] == 1}
    pairs = [(index, b_index[line]) for index, line in enumerate(a) if a_counts[line] == 1 and line in b_index]
    # Longest increasing subsequence of the b indexes (patience sorting).
    tails: list[int] = []  # tails[k]: the pair ending the best chain of length k + 1 found so far
    tail_values: list[int] = []  # its b index
    previous: list[int] = []
    for position, (_, b_at) in enumerate(pairs):
        k = bisect.bisect_left(tail_values, b_at)
        previous.append(tails[k - 1] if k else -1)
        if k == len(tails):
            tails.append(position)
            tail_values.append(b_at)
        else:
            tails[k], tail_values[k] = position, b_at
    chain: list[tuple[int, int]] = []
    at = tails[-1] if tails else -1
    while at != -1:
        chain.append(pairs[at])
        at = previous[at]
    return chain[::-1]


def block_range(block: LineBlock, text: str) -> dict[str, Any]:
    """The LSP range of a non-empty block of `text`'s lines: from its first line's start to its last line's end
    (before the line end), UTF-16 columns."""
    lines = text_lines(text)
    last = lines[block.end - 1]
    content = last.rstrip("\r\n")
    return {
        "start": {"line": block.start, "character": 0},
        "end": {"line": block.end - 1, "character": len(content.encode("utf-16-le")) // 2},
    }


def edits_overlap(edits: list[dict[str, Any]]) -> bool:
    """Whether any two TextEdits' ranges overlap (two insertions at one point count: their order is unknown)."""
    spans = sorted(
        (
            (edit["range"]["start"]["line"], edit["range"]["start"]["character"]),
            (edit["range"]["end"]["line"], edit["range"]["end"]["character"]),
        )
        for edit in edits
    )
    return any(
        later[0] < earlier[1] or earlier[0] == earlier[1] == later[0] == later[1]
        for earlier, later in itertools.pairwise(spans)
    )
