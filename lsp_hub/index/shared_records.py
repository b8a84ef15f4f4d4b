"""The per-user store of per-file results shared by every workspace root: content-addressed, so a file indexed in
any checkout (a worktree, a clone, a copy) is never parsed again.

`$XDG_CACHE_HOME/lsp-hub/records.sqlite3`. A row is keyed by the extractor's fingerprint (the code, queries and
grammars that produced it), the content's digest and the language it was parsed as, and holds the packed results
in marshal form (`records.py`) with a short checksum of them. Graphs and rankings are kept the same way, keyed by
what they were computed on (every file's path and digest: `Snapshot.fingerprint`), so an identical set of files
reuses them from whichever root computed them first.

Several processes (hubs, worker processes, one-shot commands) read and write it at once: SQLite in WAL mode with a
busy timeout. It is bounded (`[index] cache_max_mb`): the entries used longest ago go first. Like the per-root
cache it is only an accelerator: an entry that fails its checksum is dropped and the file parsed again, a database
that cannot be opened is deleted and made anew or, failing that, left unused; nothing here raises to the caller.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from lsp_hub.index.records import looks_packed

log = logging.getLogger(__name__)

_Result = TypeVar("_Result")

DEFAULT_CACHE_MAX_MB = 2048
BUSY_TIMEOUT_SECONDS = 10.0
TRIM_TO_SHARE = 0.9  # trimming goes below the bound by this much, so the next builds do not trim again at once
# A hit refreshes its entry's time of use at most this often: a new worktree would otherwise rewrite every
# row it found (an hour made the second worktree of a day rewrite 100,000 rows; a day is fine for a bound).
TOUCH_GRANULARITY_SECONDS = 86400
SHARED_DATABASE_NAME = "records.sqlite3"
# Entries a root's rows name, refreshed at most this many a day (`touch_named_by`): about 0.2 s.
NAMED_TOUCH_LIMIT = 5000
LOOKUP_VARIABLES = 500  # digests per query of `lookup_many` (SQLite before 3.32 takes at most 999 variables)


def discard_database(connection: sqlite3.Connection | None, path: str | Path) -> None:
    """Close a database (if open) and delete its file and SQLite's journal companions; what is gone already is
    fine (shared with the per-root store, which discards a damaged cache the same way)."""
    if connection is not None:
        with contextlib.suppress(sqlite3.Error):
            connection.close()
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            Path(f"{path}{suffix}").unlink()


@dataclass(frozen=True, slots=True)
class SharedRecordsLocation:
    """What a worker process needs to open the store: small, so it travels with each batch."""

    path: str
    fingerprint: str  # the extractor's: rows written by other code are never read


@dataclass(frozen=True, slots=True)
class SharedRecord:
    encoded: bytes
    definitions: int


def checksum(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=8).digest()


class SharedRecords:
    """Thread-safe (one connection behind a lock)."""

    def __init__(self, location: SharedRecordsLocation, max_bytes: int = DEFAULT_CACHE_MAX_MB * 1024 * 1024) -> None:
        self.location = location
        self.path = Path(location.path)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self.disabled = False
        self.dropped = 0  # entries dropped for a failed checksum (tests look)
        # Whether this process stored anything since it last trimmed: the store grows only by puts, so a build that
        # found everything stored does not sum the sizes of every entry (a scan of the whole file) for nothing.
        self.grown = False

    # --- connection -----------------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection | None:
        if self._connection is not None or self.disabled:
            return self._connection
        for attempt in range(2):
            try:
                self._connection = self._open()
                return self._connection
            except (sqlite3.Error, OSError) as error:
                if attempt == 0 and isinstance(error, sqlite3.DatabaseError) and self.path.exists():
                    log.warning("shared index records %s unusable (%s); making them anew", self.path, error)
                    self._delete_files()
                    continue
                log.warning("shared index records disabled: %s", error)
        self.disabled = True
        return None

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False, isolation_level=None
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS records (fingerprint TEXT NOT NULL, digest BLOB NOT NULL,"
                " language TEXT NOT NULL, data BLOB NOT NULL, checksum BLOB NOT NULL, definitions INTEGER NOT NULL,"
                " bytes INTEGER NOT NULL, used INTEGER NOT NULL, PRIMARY KEY (fingerprint, digest, language))"
            )
            # Lookups and the bound read these indexes alone: a row holds its results inline, and reaching a column
            # past them means reading every page they take (a lookup took three times as long).
            # records_used (used alone) is what earlier versions make and read: kept while they may share the file.
            connection.execute("CREATE INDEX IF NOT EXISTS records_used ON records (used)")
            connection.execute("CREATE INDEX IF NOT EXISTS records_used_bytes ON records (used, bytes)")
            connection.execute(
                "CREATE INDEX IF NOT EXISTS records_lookup"
                " ON records (fingerprint, digest, language, definitions, used)"
            )
            connection.execute(
                "CREATE TABLE IF NOT EXISTS graphs (key TEXT NOT NULL, fingerprint TEXT NOT NULL, data BLOB NOT NULL,"
                " checksum BLOB NOT NULL, bytes INTEGER NOT NULL, used INTEGER NOT NULL,"
                " PRIMARY KEY (key, fingerprint))"
            )
        except BaseException:
            connection.close()
            raise
        return connection

    def _unreadable(self, error: sqlite3.Error, what: str) -> None:
        """A read failed (caller holds the lock). A damaged file (SQLite's "malformed", a plain DatabaseError; not
        a busy or locked one) is deleted, to be made anew on next use: checking the whole file on opening instead
        (`PRAGMA quick_check`) read every page, a second at 100,000 files, in every process that looked one up."""
        log.warning("shared index %s %s unreadable (%s)", what, self.path, error)
        if type(error) is sqlite3.DatabaseError:
            self._delete_files()

    def _delete_files(self) -> None:
        discard_database(self._connection, self.path)
        self._connection = None

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._connection.close()
                self._connection = None

    # --- per-file results -----------------------------------------------------------------------------------

    def get(self, digest: bytes, language: str) -> SharedRecord | None:
        """The results of content with this digest parsed as `language`, when known and intact; a damaged entry is
        dropped and reads as unknown."""
        with self._lock:
            connection = self._connect()
            if connection is None:
                return None
            try:
                row = connection.execute(
                    "SELECT data, checksum, definitions FROM records WHERE fingerprint = ? AND digest = ?"
                    " AND language = ?",
                    (self.location.fingerprint, digest, language),
                ).fetchone()
                if row is None:
                    return None
                data, stored_checksum, definitions = bytes(row[0]), bytes(row[1]), row[2]
                if looks_packed(data) and checksum(data) == stored_checksum and isinstance(definitions, int):
                    return SharedRecord(data, definitions)
                log.warning("shared index record %s (%s) is damaged; dropping it", digest.hex(), language)
                self.dropped += 1
                connection.execute(
                    "DELETE FROM records WHERE fingerprint = ? AND digest = ? AND language = ?",
                    (self.location.fingerprint, digest, language),
                )
                return None
            except sqlite3.Error as error:
                self._unreadable(error, "records")
                return None

    def definitions_of(self, digest: bytes, language: str) -> int | None:
        """The definition count of known results, without reading them (a worker looking a file up needs no more:
        the results are read, and their checksum checked, when a query uses them)."""
        found = self.lookup(digest, language)
        return None if found is None else found[0]

    def lookup(self, digest: bytes, language: str) -> tuple[int, int] | None:
        """(definition count, time of last use) of known results, from an index alone (not the row, whose results
        come first: reaching a column after them reads every page they take)."""
        with self._lock:
            connection = self._connect()
            if connection is None:
                return None
            try:
                row = connection.execute(
                    "SELECT definitions, used FROM records INDEXED BY records_lookup"
                    " WHERE fingerprint = ? AND digest = ? AND language = ?",
                    (self.location.fingerprint, digest, language),
                ).fetchone()
            except sqlite3.Error as error:
                self._unreadable(error, "records")
                return None
        if row is None or not isinstance(row[0], int) or not isinstance(row[1], int):
            return None
        return row[0], row[1]

    def lookup_many(self, keys: Sequence[tuple[bytes, str]]) -> dict[tuple[bytes, str], tuple[int, int]]:
        """`lookup` of several (digest, language) at once, in one query: {key: (definition count, time of last
        use)} of those known."""
        digests = list({digest for digest, _language in keys})
        if not digests:
            return {}
        wanted = set(keys)
        with self._lock:
            connection = self._connect()
            if connection is None:
                return {}
            try:
                found: dict[tuple[bytes, str], tuple[int, int]] = {}
                for start in range(0, len(digests), LOOKUP_VARIABLES):
                    part = digests[start : start + LOOKUP_VARIABLES]
                    rows = connection.execute(
                        "SELECT digest, language, definitions, used FROM records INDEXED BY records_lookup"
                        f" WHERE fingerprint = ? AND digest IN ({', '.join('?' * len(part))})",
                        (self.location.fingerprint, *part),
                    )
                    for digest, language, definitions, used in rows:
                        key = (bytes(digest), language)
                        if key in wanted and isinstance(definitions, int) and isinstance(used, int):
                            found[key] = (definitions, used)
            except sqlite3.Error as error:
                self._unreadable(error, "records")
                return {}
        return found

    @staticmethod
    def due_for_touch(used: int | None) -> bool:
        """Whether a hit on an entry last used at `used` should refresh its time of use."""
        return used is None or used < SharedRecords.touch_due_before()

    @staticmethod
    def touch_due_before() -> float:
        """A hit on an entry last used before this time refreshes its time of use."""
        return time.time() - TOUCH_GRANULARITY_SECONDS

    def put(self, entries: Iterable[tuple[bytes, str, bytes, int]], held_elsewhere: bool = False) -> bool:
        """Store (digest, language, encoded results, definition count) entries in one transaction; returns whether
        they are stored (nothing to store counts as stored). Entries `held_elsewhere` (their root's cache keeps a
        copy) are stored as last used a day ago: the bound trims them before entries that are only here, and a
        hit in another checkout refreshes them."""
        used = int(time.time()) - (TOUCH_GRANULARITY_SECONDS + 1 if held_elsewhere else 0)
        fingerprint = self.location.fingerprint
        rows = [
            (fingerprint, digest, language, encoded, checksum(encoded), definitions, len(encoded), used)
            for digest, language, encoded, definitions in entries
        ]
        if not rows:
            return True
        self.grown = True
        return self._write("INSERT OR REPLACE INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def touch(self, keys: Iterable[tuple[bytes, str]]) -> None:
        """Mark entries as used now (what the least-recently-used bound goes by)."""
        now = int(time.time())
        fingerprint = self.location.fingerprint
        rows = [(now, fingerprint, digest, language, now - TOUCH_GRANULARITY_SECONDS) for digest, language in keys]
        if rows:
            self._write(
                "UPDATE records SET used = ? WHERE fingerprint = ? AND digest = ? AND language = ? AND used < ?", rows
            )

    def near_bound(self) -> bool:
        """Whether the store may be trimmed soon: its files (the database and its journal) take half the bound."""
        size = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                size += os.stat(f"{self.path}{suffix}").st_size
        return size >= self.max_bytes // 2

    def touch_named_by(self, root_database: Path, limit: int = NAMED_TOUCH_LIMIT) -> None:
        """Mark as used now the `limit` longest unused of the entries that a root's rows name instead of holding
        their results, in one statement (a row at a time cost 12 us, 0.25 s at 20,000 files). SQLite rewrites each
        row it updates, results and all (40 us a row: 4 s for 100,000), so a large root's entries are refreshed a
        part at a time, the oldest first."""
        now = int(time.time())
        self._beside_root_cache(
            root_database,
            "time of use not refreshed",
            lambda connection: connection.execute(
                "UPDATE records SET used = ? WHERE rowid IN (SELECT records.rowid FROM root_cache.files"
                " JOIN records ON records.fingerprint = ? AND records.digest = files.digest"
                " AND records.language = files.language WHERE files.data IS NULL AND files.skip_reason IS NULL"
                " AND records.used < ? ORDER BY records.used LIMIT ?)",
                (now, self.location.fingerprint, now - TOUCH_GRANULARITY_SECONDS, limit),
            ),
        )

    def missing_named_by(self, root_database: Path) -> list[str]:
        """The paths of a root's rows that name entries no longer here (the store was deleted, made anew after
        damage, or trimmed): that root parses those files again, in its workers, rather than one by one on use."""
        rows = self._beside_root_cache(
            root_database,
            "its rows not checked",
            lambda connection: connection.execute(
                "SELECT files.path FROM root_cache.files WHERE files.data IS NULL AND files.skip_reason IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM records WHERE records.fingerprint = ?"
                " AND records.digest = files.digest AND records.language = files.language)",
                (self.location.fingerprint,),
            ).fetchall(),
        )
        return [path for (path,) in rows or ()]

    def _beside_root_cache(
        self, root_database: Path, failing: str, run: Callable[[sqlite3.Connection], _Result]
    ) -> _Result | None:
        """`run(connection)` with a root's cache attached as `root_cache` (one statement joins the two in SQLite);
        None, said in the log with `failing`, when it cannot run."""
        with self._lock:
            connection = self._connect()
            if connection is None:
                return None
            try:
                connection.execute("ATTACH DATABASE ? AS root_cache", (str(root_database),))
            except sqlite3.Error as error:
                log.warning("shared index records %s: %s not attached (%s)", self.path, root_database, error)
                return None
            try:
                return run(connection)
            except sqlite3.Error as error:
                log.warning("shared index records %s: %s, %s (%s)", self.path, root_database, failing, error)
                return None
            finally:
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("DETACH DATABASE root_cache")

    def _write(self, statement: str, rows: Sequence[tuple[object, ...]]) -> bool:
        with self._lock:
            connection = self._connect()
            if connection is None:
                return False
            try:
                connection.execute("BEGIN IMMEDIATE")
                try:
                    connection.executemany(statement, rows)
                except BaseException:
                    connection.execute("ROLLBACK")
                    raise
                connection.execute("COMMIT")
            except sqlite3.Error as error:
                log.warning("shared index records %s: write failed (%s)", self.path, error)
                return False
        return True

    # --- graphs ---------------------------------------------------------------------------------------------

    def get_graph(self, key: str, fingerprint: str) -> bytes | None:
        with self._lock:
            connection = self._connect()
            if connection is None:
                return None
            try:
                row = connection.execute(
                    "SELECT data, checksum FROM graphs WHERE key = ? AND fingerprint = ?", (key, fingerprint)
                ).fetchone()
                if row is None:
                    return None
                data = bytes(row[0])
                if checksum(data) == bytes(row[1]):
                    connection.execute(
                        "UPDATE graphs SET used = ? WHERE key = ? AND fingerprint = ?",
                        (int(time.time()), key, fingerprint),
                    )
                    return data
                self.dropped += 1
                connection.execute("DELETE FROM graphs WHERE key = ? AND fingerprint = ?", (key, fingerprint))
                return None
            except sqlite3.Error as error:
                self._unreadable(error, "graphs")
                return None

    def put_graph(self, key: str, fingerprint: str, data: bytes) -> None:
        self.grown = True
        self._write(
            "INSERT OR REPLACE INTO graphs VALUES (?, ?, ?, ?, ?, ?)",
            [(key, fingerprint, data, checksum(data), len(data), int(time.time()))],
        )

    # --- the bound ------------------------------------------------------------------------------------------

    def stored_bytes(self) -> int:
        with self._lock:
            connection = self._connect()
            if connection is None:
                return 0
            try:
                row = connection.execute(
                    "SELECT (SELECT COALESCE(SUM(bytes), 0) FROM records)"
                    " + (SELECT COALESCE(SUM(bytes), 0) FROM graphs)"
                ).fetchone()
                return int(row[0])
            except sqlite3.Error as error:
                self._unreadable(error, "records")
                return 0

    def trim(self) -> int:
        """Drop the entries used longest ago until the store is within its bound, when this process stored
        anything since it last trimmed; returns how many went."""
        if not self.grown:
            return 0
        self.grown = False
        total = self.stored_bytes()
        if total <= self.max_bytes:
            return 0
        excess = total - int(self.max_bytes * TRIM_TO_SHARE)
        with self._lock:
            connection = self._connect()
            if connection is None:
                return 0
            try:
                victims: list[tuple[str, tuple[object, ...]]] = []
                rows = connection.execute(
                    "SELECT 'records', rowid, bytes, used FROM records UNION ALL"
                    " SELECT 'graphs', rowid, bytes, used FROM graphs ORDER BY used"
                )
                for table, rowid, size, _used in rows:
                    if excess <= 0:
                        break
                    victims.append((table, (rowid,)))
                    excess -= size
                connection.execute("BEGIN IMMEDIATE")
                for table in ("records", "graphs"):
                    connection.executemany(
                        f"DELETE FROM {table} WHERE rowid = ?", [rowid for name, rowid in victims if name == table]
                    )
                connection.execute("COMMIT")
            except sqlite3.Error as error:
                log.warning("shared index records %s: trimming failed (%s)", self.path, error)
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("ROLLBACK")
                return 0
        return len(victims)


def shared_records_path(cache_dir: Path) -> Path:
    return cache_dir / SHARED_DATABASE_NAME


_opened: dict[SharedRecordsLocation, SharedRecords] = {}
_opened_pid: dict[SharedRecordsLocation, int] = {}  # a store opened before a fork is not the child's to use
_opened_lock = threading.Lock()


def shared_records_at(location: SharedRecordsLocation, max_bytes: int | None = None) -> SharedRecords:
    """One store per location and process, whoever asks (every index of a hub, a worker on its first batch);
    `max_bytes`, when given, sets its bound."""
    with _opened_lock:
        found = _opened.get(location)
        if found is None or os.getpid() != _opened_pid.get(location):
            found = _opened[location] = SharedRecords(location)
            _opened_pid[location] = os.getpid()
        if max_bytes is not None:
            found.max_bytes = max_bytes
        return found
