"""Writing a root's rows to its cache (`store.IndexStore`): one transaction per write, rows without results as one
JSON text, and file names that are not valid Unicode left out rather than failing the rest."""

from __future__ import annotations

import sqlite3

# A row of the files table: path, language, size, mtime_ns, digest, skip_reason, encoded results, definitions.
StoredRow = tuple[str, str, int, int, bytes, str | None, bytes | None, int | None]

# Rows without results (files found in the shared records, files left out) go in as one JSON text through one
# statement, which SQLite runs without holding the GIL: bound one by one (executemany), a new worktree's 100,000 rows
# took 1.05 s instead of 0.64 s beside a thread holding the GIL (the map a one-shot command makes meanwhile).
BARE_DIGEST_BYTES = 16  # `records.content_digest`'s: the digests travel beside the JSON, as one blob, at fixed offsets
INSERT_BARE_ROWS = (
    "INSERT OR REPLACE INTO files SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3,"
    f" substr(?2, key * {BARE_DIGEST_BYTES} + 1, {BARE_DIGEST_BYTES}), value ->> 4, NULL, value ->> 5"
    " FROM json_each(?1)"
)
# `->>` and `json_each` are built into SQLite from 3.38 (Python's own may be older).
JSON_ROWS = sqlite3.sqlite_version_info >= (3, 38, 0)
INSERT_ROWS = "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


def write_rows(connection: sqlite3.Connection, ordered: list[StoredRow], deleted: list[tuple[str]]) -> None:
    try:
        _write_all_rows(connection, ordered, deleted)
    except UnicodeEncodeError:
        # A file name that is not valid Unicode (undecodable bytes, kept as escapes) cannot be a TEXT key: those
        # files are left out of the cache (parsed again, or found in the shared records, next time), not the rest.
        _write_all_rows(
            connection,
            [row for row in ordered if _valid_text(row[0])],
            [entry for entry in deleted if _valid_text(entry[0])],
        )


def _valid_text(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _write_all_rows(connection: sqlite3.Connection, ordered: list[StoredRow], deleted: list[tuple[str]]) -> None:
    bare = [row for row in ordered if row[6] is None and len(row[4]) == BARE_DIGEST_BYTES]
    rest = ordered if not bare else [row for row in ordered if row[6] is not None or len(row[4]) != BARE_DIGEST_BYTES]
    connection.execute("BEGIN IMMEDIATE")
    try:
        if bare and not (JSON_ROWS and insert_bare_rows(connection, bare)):
            connection.executemany(INSERT_ROWS, bare)
        connection.executemany(INSERT_ROWS, rest)
        connection.executemany("DELETE FROM files WHERE path = ?", deleted)
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def insert_bare_rows(connection: sqlite3.Connection, rows: list[StoredRow]) -> bool:
    """Insert rows without results in one statement; False when this SQLite was built without its JSON functions,
    or a path is not valid Unicode (an undecodable file name, which fails to bind one row at a time too, rather
    than reaching SQLite as an escape it would decode into another path): then nothing was inserted."""
    import orjson  # a sixth of json's time, which holds the GIL

    columns = [(path, language, size, mtime, skip, count) for path, language, size, mtime, _d, skip, _e, count in rows]
    try:
        text = orjson.dumps(columns).decode()
    except orjson.JSONEncodeError:
        return False
    digests = b"".join(row[4] for row in rows)
    try:
        connection.execute(INSERT_BARE_ROWS, (text, digests))
    except sqlite3.OperationalError as error:
        if "no such" not in str(error):  # function or table: SQLite built without JSON
            raise
        return False
    return True
