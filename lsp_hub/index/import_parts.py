"""Every file's imports of a cold build, resolved while the build's results arrive: the building process waits on
its parser workers most of that time, and resolved them after the workers, alone, in the serial tail of a cold map
(100,000 files: 4 s of CPU). Resolution reads the other files' paths and the markers (go.mod, tsconfig.json...),
which the build's walk gives before most results come; C# namespaces are read from the records, so a tree with C#
files is resolved after the build, as before.

`graph_inputs` takes what was resolved here for exactly the records resolved, when the snapshot has the paths and
markers resolved against, and resolves the rest itself; the result is the same either way (a test compares).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from lsp_hub.index.records import I_ALIASES, FileRecord
from lsp_hub.index.resolve import ImportResolver, ResolvedImport
from lsp_hub.index.walk import WalkedFile

Resolved = dict[str, list[ResolvedImport]]
ImportNames = tuple[dict[str, tuple[str, ...]], dict[str, str]]  # a file's (bindings, renames)


def import_names(record: FileRecord, imports: list[ResolvedImport]) -> ImportNames:
    """The local names a file's imports bind (name -> the files it comes from), and those that rename an imported
    name (local -> imported)."""
    bindings: dict[str, tuple[str, ...]] = {}
    renames: dict[str, str] = {}
    for raw, resolved in zip(record.imports, imports, strict=False):
        aliases = raw[I_ALIASES]
        renamed = {imported for local, imported in aliases if local != imported}
        as_itself = {imported for local, imported in aliases if local == imported}  # `{ a, a as b }`: a and b
        for name, files in resolved.names:
            if name not in renamed or name in as_itself:  # `from m import a as b` binds b, not a
                bindings[name] = files
        if "*" not in renamed:  # `import a.b as z` binds z, not a.b
            for alias in resolved.aliases:
                bindings[alias] = resolved.files
        for local, imported in aliases:
            if local == imported:
                continue
            if imported == "*":
                bindings[local] = resolved.files
            else:
                bindings[local] = dict(resolved.names).get(imported, resolved.files)
                renames[local] = imported
    return bindings, renames


class ImportParts:
    """Imports resolved one record at a time (`add`) once the walk's paths are known (`walked`), handed out once for
    a snapshot's files (`taken`)."""

    def __init__(self) -> None:
        self._resolver: ImportResolver | None = None
        self._markers: Mapping[str, str] = {}
        self._waiting: list[FileRecord] = []  # records that came before the walk ended
        self._resolved: dict[str, tuple[FileRecord, list[ResolvedImport], ImportNames]] = {}
        self._spent = False
        self._lock = threading.Lock()

    def walked(self, files: Sequence[WalkedFile], markers: Mapping[str, str]) -> None:
        """The walk ended with these files and markers: resolve against them from now on."""
        with self._lock:
            if self._spent or self._resolver is not None:
                return
            if any(walked.language == "csharp" for walked in files):
                self._spend()
                return
            self._resolver = ImportResolver({}, markers, [walked.path for walked in files])
            self._markers = markers
            waiting, self._waiting = self._waiting, []
            for record in waiting:
                self._resolve(record)

    def add(self, record: FileRecord) -> None:
        """Resolve one record's imports (or keep it until the walk ends)."""
        with self._lock:
            if self._spent:
                return
            if self._resolver is None:
                self._waiting.append(record)
            else:
                self._resolve(record)

    def _resolve(self, record: FileRecord) -> None:
        assert self._resolver is not None
        imports = self._resolver.resolve_record(record)
        self._resolved[record.path] = (record, imports, import_names(record, imports))

    def taken(
        self, files: Mapping[str, FileRecord], markers: Mapping[str, str]
    ) -> tuple[ImportResolver, Resolved, dict[str, ImportNames]]:
        """A resolver for `files`, and the imports resolved here of those of its records that were and the names
        they bind, when `files` has exactly the paths and `markers` resolved against; else a new resolver and
        nothing (a file the walk found was left out after all, or the markers changed). The parts are spent either
        way."""
        with self._lock:
            resolver, resolved, known_markers = self._resolver, self._resolved, self._markers
            self._spend()
        if resolver is None or markers != known_markers or resolver.paths != files.keys():
            return ImportResolver(files, markers), {}, {}
        imports: Resolved = {}
        names: dict[str, ImportNames] = {}
        for path, (record, file_imports, file_names) in resolved.items():
            if files.get(path) is record:
                imports[path] = file_imports
                names[path] = file_names
        return resolver.with_files(files), imports, names

    def _spend(self) -> None:
        self._spent = True
        self._resolver = None
        self._waiting = []
        self._resolved = {}
