"""The name tables of a cold build, gathered file by file while the build's results arrive: the building process
waits on its parser workers most of that time, and would otherwise go over every file again once they are done,
alone, while the cores idle (the serial tail of a cold map). `graph_inputs` takes the tables from here when they
were gathered over exactly the snapshot's records, and builds them as before otherwise.

The bottom of the graph modules with `records`: it imports nothing of the index but the records.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import cast

from lsp_hub.index.records import FileRecord, dependency_names, linkable_names, member_names

# name -> files: one file as a tuple (final), more as a list in the order the files came (sorted at the end)
Table = dict[str, tuple[str, ...] | list[str]]
SortedTable = dict[str, tuple[str, ...]]  # name -> files, sorted (as graph_inputs builds them)
SortedTables = tuple[SortedTable, SortedTable, SortedTable, SortedTable]  # definers, referencers, members, dependents


class TableParts:
    """Name tables gathered one record at a time (`add`), handed out once for a set of files (`tables_for`).

    Most names have one file: their entry is final as it arrives, one tuple per path shared by all its names (at
    100,000 files a tuple of its own for each took 80 MB). Only the names that came from several files are sorted
    when the tables are handed out: sorting every entry then was most of the graph inputs' time after the workers
    (50 ms on the standard library), while the workers' results are taken in on an otherwise waiting thread."""

    def __init__(self) -> None:
        self._records: dict[str, FileRecord] = {}
        self._tables: tuple[Table, Table, Table, Table] = ({}, {}, {}, {})
        self._grown: tuple[list[str], list[str], list[str], list[str]] = ([], [], [], [])  # names now in lists
        self._lock = threading.Lock()
        self._spent = False

    def add(self, record: FileRecord) -> None:
        """Take one file's names in; a path added again (a file changed while the build ran) spoils the parts, and
        the tables are then built from the snapshot as before."""
        with self._lock:
            if self._spent:
                return
            if record.path in self._records:
                self._spend()
                return
            self._records[record.path] = record
            self._add(record)

    def _add(self, record: FileRecord) -> None:
        path = record.path
        alone = (path,)
        for names, table, grown in zip(
            (
                # Not the record's cached `defined_names()` and `reference_counts()`: held by every record of a
                # cold build, they were 1.6 KB a file (the graphs ask the name tables instead).
                linkable_names(record),
                record.reference_uses(),
                member_names(record),
                dependency_names(record),
            ),
            self._tables,
            self._grown,
            strict=True,
        ):
            for name in names:
                entries = table.get(name)
                if entries is None:
                    table[name] = alone
                elif isinstance(entries, list):
                    entries.append(path)
                else:  # the name's second file
                    table[name] = [*entries, path]
                    grown.append(name)

    def tables_for(self, files: Mapping[str, FileRecord]) -> SortedTables | None:
        """The tables of exactly `files` (the records not added yet are added now), sorted; None when the parts
        hold a record `files` lacks or replaced, or were handed out already. The parts are spent either way."""
        with self._lock:
            if self._spent:
                return None
            records = self._records
            if any(files.get(path) is not record for path, record in records.items()):
                self._spend()
                return None
            for path, record in files.items():
                if path not in records:
                    self._add(record)
            for table, grown in zip(self._tables, self._grown, strict=True):
                for name in grown:
                    table[name] = tuple(sorted(table[name]))
            definers, referencers, members, dependents = cast(tuple[SortedTable, ...], self._tables)
            self._spend()
            return definers, referencers, members, dependents

    def _spend(self) -> None:
        self._spent = True
        self._records = {}
        self._tables = ({}, {}, {}, {})
        self._grown = ([], [], [], [])
