"""The on-disk cache of per-file results: one SQLite database per workspace root under the user cache directory.

`$XDG_CACHE_HOME/lsp-hub/index-<hash of the root path>.sqlite3` (XDG_CACHE_HOME defaults to ~/.cache). Rows are
keyed by workspace-relative path and carry size, mtime_ns and a content digest, so a file whose size and mtime are
unchanged is trusted without reading it, and a touched file with the same content is not re-parsed. A row's results
may be NULL: they are in the records every root shares (`shared_records.py`), under the row's digest. The cache is
only ever an accelerator: a database that is corrupt, from another schema version or unwritable is deleted and
rebuilt (or, failing that, the index runs without one); no cache problem ever reaches the caller as an exception.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

from lsp_hub.index import pending_save
from lsp_hub.index.records import PACKED_FORMAT, looks_packed
from lsp_hub.index.shared_records import SharedRecords, discard_database
from lsp_hub.index.store_rows import StoredRow, write_rows

log = logging.getLogger(__name__)


def _extractor_fingerprint() -> str:
    """What the stored results depend on besides the files: the extraction code, the queries and the grammars.
    A cache written by another version of any of them is rebuilt rather than trusted."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    names = (
        "extract.py",
        "import_forms.py",
        "model.py",
        "records.py",
        "definition_scopes.py",
        "text.py",
        "languages.py",
        "file_kinds.py",
        "c_library.py",
        "ruby_bare_calls.py",
        "generated_marks.py",
        "struct_fields.py",
    )
    sources = [here / name for name in names]
    for path in [*sources, *sorted((here / "queries").glob("*.scm"))]:
        with contextlib.suppress(OSError):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    grammars = _grammars_version()
    if grammars is not None:
        digest.update(grammars.encode())
    return digest.hexdigest()[:12]


GRAMMARS_DISTRIBUTION = "tree-sitter-language-pack"


def _grammars_version() -> str | None:
    """The grammars' version, as importlib.metadata gives it, read from the METADATA beside the package when it is
    there: importing importlib.metadata (email, zipfile...) costs every process more than the rest of this module;
    None when no metadata is found (a vendored install: the sources still count)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("tree_sitter_language_pack")  # finds it without importing it
        if spec is not None and spec.origin:
            prefix = GRAMMARS_DISTRIBUTION.replace("-", "_")
            for info in Path(spec.origin).parent.parent.glob(f"{prefix}-*.dist-info"):
                with (info / "METADATA").open(encoding="utf-8") as metadata:
                    for line in metadata:
                        if line.startswith("Version:"):
                            return line.partition(":")[2].strip()
                        if not line.strip():
                            break  # the headers end at the first empty line
    except (OSError, ValueError, ImportError):
        pass
    try:
        from importlib.metadata import version

        return version(GRAMMARS_DISTRIBUTION)
    except Exception:  # metadata missing (a vendored install)
        return None


_GRAPH_SOURCES = (
    *("graph_inputs.py", "graph.py", "reexports.py", "links.py", "rows.py", "pagerank.py", "ranking.py"),
    *("table_parts.py", "import_parts.py", "resolve.py", "graph_store.py", "graph_cache.py", "records.py"),
    *("definition_scopes.py", "file_kinds.py"),
)
_graph_code: str | None = None


def graph_code_fingerprint() -> str:
    """What stored graphs and rankings depend on besides the files: the code that computes them. Part of the key
    they are stored under, so that another version of that code never reads them (the files' rows stay valid)."""
    global _graph_code
    if _graph_code is None:
        here = Path(__file__).resolve().parent
        digest = hashlib.sha256()
        for name in _GRAPH_SOURCES:
            with contextlib.suppress(OSError):
                digest.update(name.encode() + b"\0" + (here / name).read_bytes())
        _graph_code = digest.hexdigest()[:12]
    return _graph_code


# Bump when the table layout changes; PACKED_FORMAT covers the layout of the stored results, the fingerprint what
# produced them.
EXTRACTOR_VERSION = f"{PACKED_FORMAT}.{_extractor_fingerprint()}"  # what the shared records are keyed by too
SCHEMA_VERSION = f"2.{EXTRACTOR_VERSION}"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "lsp-hub"


def _seconds(text: str) -> float:
    """A time this cache noted, as seconds since the epoch; a damaged note reads as long ago (the work is due)."""
    try:
        return float(text)
    except ValueError:
        return 0.0


def database_path(root: Path, cache_dir: Path | None = None) -> Path:
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return (cache_dir or default_cache_dir()) / f"index-{digest}.sqlite3"


# Every column but the results: what a warm start reads of every row, from this index alone.
_IDENTITY_INDEX = (
    "CREATE INDEX IF NOT EXISTS files_identity"
    " ON files (path, language, size, mtime_ns, digest, skip_reason, definitions)"
)

# The rows whose results are in the shared records alone (a worktree's hits, a cold build's parsed files): their
# entries there are refreshed once a day near the shared bound (`shared_refresh_due`), or the bound would trim a
# root in daily use as if nobody read it (its warm starts read its own rows, not the shared records).
_BARE_INDEX = (
    "CREATE INDEX IF NOT EXISTS files_bare ON files (digest, language) WHERE data IS NULL AND skip_reason IS NULL"
)
_SHARED_TOUCHED_KEY = "shared_touched"


_Read = TypeVar("_Read")


class _OutdatedCache(ValueError):
    """The database was written by another version of the extractor or schema."""


@dataclass(frozen=True, slots=True)
class StoredFile:
    path: str
    language: str
    size: int
    mtime_ns: int
    digest: bytes
    skip_reason: str | None  # e.g. "binary": known to be left out, nothing parsed
    # The packed results in marshal form (`records.py`); None for a skipped file, and for a file whose results are
    # in the shared records (`shared_records.py`) under its digest and language.
    encoded: bytes | None = None
    definitions: int | None = None  # how many definitions, stored beside them


WRITE_BESIDE_CACHE_KB = 64 * 1024


class IndexStore:
    """Thread-safe (one connection behind a lock); every method swallows database errors after recovering."""

    def __init__(self, root: Path, cache_dir: Path | None = None) -> None:
        self.root = root
        self.path = database_path(root, cache_dir)
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self.recovered = False  # True once a broken or outdated database was thrown away
        self._saved_graphs: dict[str, tuple[str, float]] = {}  # key -> (fingerprint, monotonic time) last stored
        self.disabled = False
        self._writing: threading.Thread | None = None  # a write_beside under way
        # The records every root shares: graphs are looked up there when this root has none for its files (a new
        # checkout of files indexed elsewhere) and stored there too.
        self.shared: SharedRecords | None = None

    # --- connection management -------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection | None:
        if self._connection is not None or self.disabled:
            return self._connection
        try:
            self._connection = self._open_checked()
        except (sqlite3.Error, OSError, ValueError) as error:
            # A cache written by another version of lsp-hub is expected after an upgrade, not a problem to report.
            level = logging.INFO if isinstance(error, _OutdatedCache) else logging.WARNING
            log.log(level, "index cache %s unusable (%s); rebuilding it", self.path, error)
            self._discard()
            try:
                self._connection = self._open_checked()
            except (sqlite3.Error, OSError, ValueError) as second_error:
                log.warning("index cache disabled: %s", second_error)
                self.disabled = True
                self._connection = None
        return self._connection

    def _open_checked(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=10, check_same_thread=False, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                has_files = connection.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'files'"
                ).fetchone()
                if has_files:
                    raise ValueError("database without a schema version")
                self._create_schema(connection)
            elif row[0] != SCHEMA_VERSION:
                raise _OutdatedCache(f"schema version {row[0]!r}, expected {SCHEMA_VERSION!r}")
            root_row = connection.execute("SELECT value FROM meta WHERE key = 'root'").fetchone()
            if root_row is not None and root_row[0] != str(self.root):
                raise ValueError(f"database belongs to {root_row[0]!r}")  # a hash collision, in theory
        except BaseException:
            connection.close()
            raise
        return connection

    def _create_schema(self, connection: sqlite3.Connection) -> None:
        connection.execute("BEGIN")
        connection.execute(
            "CREATE TABLE files (path TEXT PRIMARY KEY, language TEXT NOT NULL, size INTEGER NOT NULL,"
            " mtime_ns INTEGER NOT NULL, digest BLOB NOT NULL, skip_reason TEXT, data BLOB, definitions INTEGER)"
        )
        connection.execute(_IDENTITY_INDEX)
        connection.execute(_BARE_INDEX)
        connection.execute("CREATE TABLE graphs (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, data BLOB NOT NULL)")
        connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        connection.execute("INSERT INTO meta VALUES ('root', ?)", (str(self.root),))
        connection.execute("COMMIT")

    def _discard(self) -> None:
        """Close and delete the database files (the database and SQLite's journal companions)."""
        discard_database(self._connection, self.path)
        self._connection = None
        self.recovered = True

    def close(self) -> None:
        self.join_writes()
        with self._lock:
            if self._connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._connection.close()
                self._connection = None

    # --- reading and writing --------------------------------------------------------------------------------

    def load(self) -> dict[str, StoredFile]:
        """Every stored file; an unreadable database is discarded and reads as empty."""
        return self._read_or_discard(self._load, (sqlite3.Error, ValueError, EOFError, TypeError)) or {}

    @staticmethod
    def _load(connection: sqlite3.Connection) -> dict[str, StoredFile]:
        stored: dict[str, StoredFile] = {}
        rows = connection.execute(
            "SELECT path, language, size, mtime_ns, digest, skip_reason, data, definitions FROM files"
        )
        for path, language, size, mtime_ns, digest, skip_reason, data, definitions in rows:
            if skip_reason is None and ((data is not None and not looks_packed(data)) or definitions is None):
                raise ValueError(f"row for {path!r} has neither results nor a skip reason")
            stored[path] = StoredFile(path, language, size, mtime_ns, bytes(digest), skip_reason, data, definitions)
        return stored

    def identity_rows(self) -> list[tuple[Any, ...]]:
        """`load_identities` as the rows SQLite gives, (path, language, size, mtime_ns, digest, skip_reason,
        definitions): a warm start makes its records of them directly (100,000 objects fewer)."""
        return self._read_or_discard(self._identity_rows, (sqlite3.Error, ValueError)) or []

    def load_identities(self) -> dict[str, StoredFile]:
        """Every stored file without its results (`encoded` None: `encoded_of` reads them when needed), after a
        check in SQL that every row has them; an unreadable database is discarded and reads as empty."""
        return self._read_or_discard(self._load_identities, (sqlite3.Error, ValueError)) or {}

    def _read_or_discard(
        self, read: Callable[[sqlite3.Connection], _Read], damage: tuple[type[Exception], ...]
    ) -> _Read | None:
        """`read(connection)`; a database that fails it with one of `damage` is discarded and made anew (once), and
        what cannot be opened reads as None."""
        with self._lock:
            for _attempt in range(2):
                connection = self._connect()
                if connection is None:
                    return None
                try:
                    return read(connection)
                except damage as error:
                    log.warning("index cache %s is corrupt (%s); rebuilding it", self.path, error)
                    self._discard()
            return None

    @staticmethod
    def _identity_rows(connection: sqlite3.Connection) -> list[tuple[Any, ...]]:
        connection.execute(_IDENTITY_INDEX)  # a cache made before the index had it
        # Both read the identity index alone, not the rows: their results, inline, make the table a hundred times
        # larger (a scan of it read 650 MB at 100,000 files). Results are checked when read (`encoded_of`).
        bad = connection.execute(
            "SELECT path FROM files WHERE skip_reason IS NULL AND definitions IS NULL LIMIT 1"
        ).fetchone()
        if bad is not None:
            raise ValueError(f"row for {bad[0]!r} has neither results nor a skip reason")
        return connection.execute(
            "SELECT path, language, size, mtime_ns, digest, skip_reason, definitions FROM files"
        ).fetchall()

    @classmethod
    def _load_identities(cls, connection: sqlite3.Connection) -> dict[str, StoredFile]:
        return {
            path: StoredFile(path, language, size, mtime_ns, bytes(digest), skip_reason, None, definitions)
            for path, language, size, mtime_ns, digest, skip_reason, definitions in cls._identity_rows(connection)
        }

    def shared_refresh_due(self, due_before: float) -> bool:
        """Whether the shared entries this root's rows name were last refreshed before `due_before`; noted as
        refreshed now when they were. (Their index, `files_bare`, is made here in a cache older than it.)"""
        with self._lock:
            connection = self._connect()
            if connection is None:
                return False
            try:
                row = connection.execute("SELECT value FROM meta WHERE key = ?", (_SHARED_TOUCHED_KEY,)).fetchone()
                if row is not None and _seconds(row[0]) >= due_before:
                    return False
                connection.execute(_BARE_INDEX)
                connection.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (_SHARED_TOUCHED_KEY, str(time.time())))
            except sqlite3.Error as error:  # a busy database: the next build's turn
                log.warning("index cache %s: the shared entries' refresh put off (%s)", self.path, error)
                return False
            return True

    def encoded_of(self, path: str, digest: bytes) -> bytes | None:
        """The stored results of `path` when the row is still of content with this digest, else None."""
        with self._lock:
            connection = self._connect()
            if connection is None:
                return None
            try:
                row = connection.execute("SELECT data, digest FROM files WHERE path = ?", (path,)).fetchone()
            except UnicodeEncodeError:
                return None  # a file name that is not valid Unicode: never stored (`store_rows`)
            except sqlite3.Error as error:
                log.warning("index cache %s unreadable (%s)", self.path, error)
                return None
        if row is None or row[0] is None or bytes(row[1]) != digest:
            return None
        if not looks_packed(row[0]):  # damaged: the caller reads them elsewhere (the shared records, the file)
            log.warning("index cache %s: the stored results of %s are damaged", self.path, path)
            return None
        return bytes(row[0])

    def write(
        self, upserts: Iterable[StoredFile], deletions: Iterable[str] = (), rows: Iterable[StoredRow] = ()
    ) -> bool:
        """Insert or replace rows (`upserts`, and `rows` already in the table's column order) and delete others, in
        one transaction; returns whether they are stored."""
        ordered, deleted = _ordered(upserts, rows), [(path,) for path in deletions]
        if not ordered and not deleted:
            return True
        self.join_writes()
        with self._lock:
            for _attempt in range(2):
                connection = self._connect()
                if connection is None:
                    return False
                try:
                    write_rows(connection, ordered, deleted)
                    return True
                except sqlite3.Error as error:
                    log.warning("index cache %s write failed (%s); rebuilding it", self.path, error)
                    self._discard()
            return False

    def write_beside(
        self,
        upserts: Iterable[StoredFile],
        deletions: Iterable[str] = (),
        rows: Iterable[StoredRow] = (),
        stored: Callable[[], None] | None = None,
    ) -> None:
        """`write` in a thread, on a connection of its own, so that reading (a map's stored ranking) goes on
        meanwhile: SQLite runs the inserts without the GIL, on the other core. `stored` runs once the rows are
        stored. Every later write, and closing, waits for it; a process exits only once it is done."""
        ordered, deleted = _ordered(upserts, rows), [(path,) for path in deletions]
        self.join_writes()
        if not ordered and not deleted:
            if stored is not None:
                stored()
            return
        with self._lock:
            if self._connect() is None:  # made (or found unusable) here, not in the thread
                return
        # Not a daemon, whatever thread starts it (a daemon's would be one): the process exits once the rows are stored.
        writing = threading.Thread(
            target=self._write_aside, args=(ordered, deleted, stored), name="index-store-write", daemon=False
        )
        self._writing = writing
        writing.start()

    def _write_aside(
        self, ordered: list[StoredRow], deleted: list[tuple[str]], stored: Callable[[], None] | None
    ) -> None:
        try:
            connection = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        except sqlite3.Error as error:
            log.warning("index cache %s write failed (%s)", self.path, error)
            return
        try:
            connection.execute("PRAGMA synchronous=NORMAL")
            # Room for the pages of all three B-trees (the table, its key, the identity index) a new root's rows
            # fill, rather than spilling them mid-transaction: 100,000 rows 0.7-0.8 s -> 0.5 s. Freed at close.
            connection.execute(f"PRAGMA cache_size = -{WRITE_BESIDE_CACHE_KB}")
            write_rows(connection, ordered, deleted)
        except sqlite3.Error as error:  # only an accelerator: the next build finds the rows missing and writes them
            log.warning("index cache %s write failed (%s)", self.path, error)
            return
        finally:
            connection.close()
        if stored is not None:
            stored()

    def join_writes(self) -> None:
        """Wait for a `write_beside` under way."""
        writing, self._writing = self._writing, None
        if writing is not None:
            writing.join()

    def load_graph(self, key: str, fingerprint: str, across_roots: bool = True) -> bytes | None:
        """Stored graph data under `key`, when it was computed on files with this fingerprint by this version of
        the graph code; from another root's (the shared store) only when `across_roots`."""
        saved_fingerprint = fingerprint
        fingerprint = f"{fingerprint}:{graph_code_fingerprint()}"
        pending_save.wait_for_saves(self.path.parent)  # graphs a process that has answered is still storing
        with self._lock:
            connection = self._connect()
            row = None
            if connection is not None:
                try:
                    row = connection.execute(
                        "SELECT data FROM graphs WHERE key = ? AND fingerprint = ?", (key, fingerprint)
                    ).fetchone()
                except sqlite3.Error as error:
                    log.warning("index cache %s: stored graphs unreadable (%s)", self.path, error)
        data = bytes(row[0]) if row is not None else None
        if data is None and across_roots and self.shared is not None:
            data = self.shared.get_graph(key, fingerprint)  # another root's, kept where every root looks
        if data is not None:
            # Stored already: saving the same graphs again would encode and write them whole for nothing (on a
            # 20,000-file monorepo that left a daemon 50 MB larger, and took a new worktree's process 1.3 s).
            last_saved = self._saved_graphs.get(key)
            self._saved_graphs[key] = (saved_fingerprint, last_saved[1] if last_saved else -math.inf)
        return data

    def save_graph(self, key: str, fingerprint: str, data: bytes, across_roots: bool = True) -> None:
        """Keep `data` under `key` for these files; also where every root looks (the shared store) when
        `across_roots`: not for what depends on more than the files' content (weights fitted to this root's
        history), which the fingerprint does not tell apart."""
        saved_fingerprint = fingerprint
        fingerprint = f"{fingerprint}:{graph_code_fingerprint()}"
        with self._lock:
            connection = self._connect()
            if connection is None:
                return
            try:
                connection.execute("INSERT OR REPLACE INTO graphs VALUES (?, ?, ?)", (key, fingerprint, data))
                self._saved_graphs[key] = (saved_fingerprint, time.monotonic())
            except sqlite3.Error as error:
                log.warning("index cache %s: could not store graphs (%s)", self.path, error)
        if across_roots and self.shared is not None:
            self.shared.put_graph(key, fingerprint, data)

    def seconds_since_saved(self, key: str) -> float:
        saved = self._saved_graphs.get(key)
        return float("inf") if saved is None else time.monotonic() - saved[1]

    def graph_saved(self, key: str) -> str | None:
        """The fingerprint this process last stored under `key` (saving the same again is pointless)."""
        saved = self._saved_graphs.get(key)
        return None if saved is None else saved[0]


def _ordered(upserts: Iterable[StoredFile], rows: Iterable[StoredRow]) -> list[StoredRow]:
    """Rows in the table's order: inserted next to each other, not all over its B-trees."""
    return sorted(
        chain(
            (
                (s.path, s.language, s.size, s.mtime_ns, s.digest, s.skip_reason, s.encoded, s.definitions)
                for s in upserts
            ),
            rows,
        ),
        key=itemgetter(0),
    )
