"""The name tables of a cold build, gathered file by file while the build's results arrive: the building process
waits on its parser workers most of that time, and would otherwise go over every file again once they are done,
alone, while the cores idle (the serial tail of a cold map). `graph_inputs` takes the tables from here when they
were gathered over exactly the snapshot's records, and builds them as before otherwise.

The bottom of the graph modules with `records`: it imports nothing of the index but the records.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from lsp_hub.index.records import D_NAME, FileRecord, dependency_names, member_names

# name -> files, in the order the files came
Table = dict[str, list[str]]
SortedTable = dict[str, tuple[str, ...]]  # name -> files, sorted (as graph_inputs builds them)
SortedTables = tuple[SortedTable, SortedTable, SortedTable, SortedTable]  # definers, referencers, members, dependents


class TableParts:
    """Name tables gathered one record at a time (`add`), handed out once for a set of files (`tables_for`)."""

    def __init__(self) -> None:
        self._records: dict[str, FileRecord] = {}
        self._tables: tuple[Table, Table, Table, Table] = ({}, {}, {}, {})
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
        definers, referencers, members, dependents = self._tables
        for names, table in (
            # Not the record's cached `defined_names()` and `reference_counts()`: held by every record of a cold
            # build, they were 1.6 KB a file (the graphs ask the name tables instead).
            ({definition[D_NAME] for definition in record.definitions}, definers),
            (record.reference_uses(), referencers),
            (member_names(record), members),
            (dependency_names(record), dependents),
        ):
            for name in names:
                entries = table.get(name)
                if entries is None:
                    table[name] = [path]
                else:
                    entries.append(path)

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
            alone: dict[str, tuple[str]] = {}
            sorted_tables = []
            for table in self._tables:
                sorted_tables.append({name: _sorted(paths, alone) for name, paths in table.items()})
                table.clear()  # at once: the lists and the tuples made from them are never all held together
            definers, referencers, members, dependents = sorted_tables
            self._spend()
            return definers, referencers, members, dependents

    def _spend(self) -> None:
        self._spent = True
        self._records = {}
        self._tables = ({}, {}, {}, {})


def _sorted(paths: list[str], alone: dict[str, tuple[str]]) -> tuple[str, ...]:
    """The paths sorted; one path as the same tuple for every name of that path in `alone` (most names have one
    file: at 100,000 files a tuple of its own for each took 80 MB)."""
    if len(paths) == 1:
        path = paths[0]
        single = alone.get(path)
        if single is None:
            single = alone[path] = (path,)
        return single
    return tuple(sorted(paths))
