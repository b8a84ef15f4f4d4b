"""Open documents: text, version, language, and incremental edits in UTF-16 positions.

The hub keeps its own copy of every open document so it can give each backend the sync kind that backend asked
for (full text or the client's incremental changes), re-open documents in a restarted backend, and hand the
index the in-memory text.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from lsp_hub.platform import paths

logger = logging.getLogger(__name__)


@functools.lru_cache(maxsize=4096)  # asked on every request about a document
def uri_to_path(uri: str) -> str | None:
    """The local file system path of a file:// URI, else None (`platform.paths`: drive letters, UNC)."""
    return paths.uri_to_path(uri)


def path_to_uri(path: str) -> str:
    return paths.path_to_uri(path)


def utf16_to_index(line: str, character: int) -> int:
    """The str index of a UTF-16 column in `line` (clamped to the line's end, as LSP asks; a column inside a
    surrogate pair counts as after it).

    Runs in C whatever the line: a 10 MB line with one non-ASCII character costs a slice and an encode, not a
    Python loop per character."""
    if character <= 0:
        return 0
    if line.isascii():
        return min(character, len(line))
    prefix = line[:character]  # each character is at least one UTF-16 unit: the column is within this prefix
    encoded = prefix.encode("utf-16-le", "surrogatepass")
    if len(encoded) <= 2 * character:  # no astral character before the column, or the line ends first
        return len(prefix)
    # A cut through a surrogate pair decodes to its lone high half, which counts the pair: rounds up.
    return len(encoded[: 2 * character].decode("utf-16-le", "surrogatepass"))


class Document:
    """An open document. From its first edit on, kept as its lines (split at "\n" only, as before: "\r" stays at
    the line's end) so an edit costs O(changed lines) whatever the document's size; the full text is joined when
    asked for, and kept until the next edit."""

    __slots__ = ("_lines", "_text", "language_id", "opened_in", "uri", "version")

    def __init__(self, uri: str, language_id: str, version: int, text: str) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        # Backends (by key) this document has been opened in.
        self.opened_in: set[str] = set()
        # Split at the first edit: a document that is only read never pays for its lines.
        self._lines: list[str] | None = None
        self._text: str | None = text

    def __repr__(self) -> str:
        return f"Document({self.uri!r}, {self.language_id!r}, version={self.version})"

    @property
    def text(self) -> str:
        if self._text is None:
            assert self._lines is not None  # one of the two is always there
            self._text = "\n".join(self._lines)
        return self._text

    @text.setter
    def text(self, text: str) -> None:
        self._lines = None
        self._text = text

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.text.split("\n")
        return self._lines

    def _locate(self, line: int, character: int) -> tuple[int, int]:
        """(line, str index in that line) of an LSP position; positions past the end clamp to the end."""
        lines = self.lines
        if line < 0:
            return 0, 0
        if line >= len(lines):
            return len(lines) - 1, len(lines[-1])
        line_text = lines[line]
        # A column never reaches into the "\r" of a CRLF ending.
        limit = len(line_text) - 1 if line_text.endswith("\r") else len(line_text)
        return line, min(utf16_to_index(line_text, character), limit)

    def offset_at(self, line: int, character: int) -> int:
        """The str offset in `text` of an LSP position (UTF-16 columns). O(line number): for tests and rare use;
        edits do not need it."""
        line, index = self._locate(line, character)
        return sum(len(text) + 1 for text in self.lines[:line]) + index

    def apply_changes(self, changes: list[dict[str, Any]], version: int) -> None:
        """Apply didChange content changes in order (each either a full replacement or a range edit)."""
        for change in changes:
            text = change.get("text", "")
            range_ = change.get("range")
            if range_ is None:
                self.text = text
                continue
            start = self._locate(range_["start"]["line"], range_["start"]["character"])
            end = self._locate(range_["end"]["line"], range_["end"]["character"])
            if end < start:
                start, end = end, start
            (first, start_index), (last, end_index) = start, end
            lines = self.lines
            edited = lines[first][:start_index] + text + lines[last][end_index:]
            if "\n" in text:
                lines[first : last + 1] = edited.split("\n")
            else:  # typing: no need to scan the whole edited line for line breaks
                lines[first : last + 1] = (edited,)
            self._text = None
        self.version = version


class DocumentStore:
    """The open documents of one client session, by URI."""

    def __init__(self) -> None:
        self._documents: dict[str, Document] = {}

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        document = Document(uri=uri, language_id=language_id, version=version, text=text)
        self._documents[uri] = document
        return document

    def get(self, uri: str) -> Document | None:
        return self._documents.get(uri)

    def close(self, uri: str) -> Document | None:
        return self._documents.pop(uri, None)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._documents.values()))

    def __len__(self) -> int:
        return len(self._documents)


class SharedDocument:
    """What a workspace's backends see of one URI: the text of the session that leads it (`source`, that session's
    own `Document`; see `Workspace._takes_lead`), under the workspace's own version numbers, which only grow."""

    __slots__ = ("opened_in", "source", "source_changed", "uri", "version")

    def __init__(self, source: Document) -> None:
        self.uri = source.uri
        self.source = source
        self.version = source.version
        self.opened_in: set[str] = set()  # backends (by key) this document has been opened in
        self.source_changed = False  # another session has written it since it was opened

    def __repr__(self) -> str:
        return f"SharedDocument({self.uri!r}, version={self.version})"

    @property
    def language_id(self) -> str:
        return self.source.language_id

    @property
    def text(self) -> str:
        return self.source.text


def _utf16_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def replacement_edit(old: str, new: str) -> dict[str, Any]:
    """One incremental content change that turns `old` into `new`: the lines between their common first and last
    lines replaced (UTF-16 positions). With a "\r" in either (a line break of its own in LSP), the whole text."""
    if "\r" in old or "\r" in new:
        return {"text": new}
    old_lines, new_lines = old.split("\n"), new.split("\n")
    shortest = min(len(old_lines), len(new_lines))
    start = 0
    while start < shortest - 1 and old_lines[start] == new_lines[start]:
        start += 1
    end = 0
    while end < shortest - start and old_lines[-1 - end] == new_lines[-1 - end]:
        end += 1
    if end == 0:
        last = len(old_lines) - 1
        range_end = {"line": last, "character": _utf16_length(old_lines[last])}
        text = "\n".join(new_lines[start:])
    else:
        range_end = {"line": len(old_lines) - end, "character": 0}
        text = "".join(line + "\n" for line in new_lines[start:len(new_lines) - end])
    return {"range": {"start": {"line": start, "character": 0}, "end": range_end}, "text": text}


# What a backend is given of a document: a session's own, or a workspace's shared view of it.
OpenText = Document | SharedDocument
