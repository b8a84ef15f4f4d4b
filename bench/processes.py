"""Process trees from /proc (Linux), for the benchmarks that measure what a tree of processes holds."""

from __future__ import annotations

import os

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def process_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, RSS bytes) for every process we can read."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        table[int(entry)] = (int(fields[1]), int(fields[21]) * PAGE_SIZE)
    return table


def descendants(roots: list[int], table: dict[int, tuple[int, int]]) -> set[int]:
    """`roots` (those in the table) and every process below them."""
    wanted = {pid for pid in roots if pid in table}
    changed = True
    while changed:  # every process whose parent is already wanted
        changed = False
        for pid, (parent, _rss) in table.items():
            if parent in wanted and pid not in wanted:
                wanted.add(pid)
                changed = True
    return wanted


def tree_rss(root_pid: int, include_root: bool = True) -> int:
    """Summed resident memory of `root_pid` (unless not `include_root`) and all its descendants."""
    table = process_table()
    wanted = descendants([root_pid], table)
    if not include_root:
        wanted.discard(root_pid)
    return sum(table[pid][1] for pid in wanted)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def descendants_cpu(root_pid: int) -> dict[int, float]:
    """pid -> CPU seconds (user and system) of each process below `root_pid`, not counting itself."""
    wanted = descendants([root_pid], process_table())
    wanted.discard(root_pid)
    seconds = {}
    for pid in wanted:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # ended since the table was read
        seconds[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return seconds
