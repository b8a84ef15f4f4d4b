"""Open documents: text, version, language, and incremental edits in UTF-16 positions.

The hub keeps its own copy of every open document so it can give each backend the sync kind that backend asked
for (full text or the client's incremental changes), re-open documents in a restarted backend, and hand the
index the in-memory text.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

logger = logging.getLogger(__name__)


def uri_to_path(uri: str) -> str | None:
    """The local file system path of a file:// URI, else None."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if parsed.netloc and parsed.netloc != "localhost":
        path = f"//{parsed.netloc}{path}"
    return path


def path_to_uri(path: str) -> str:
    from pathlib import Path

    return Path(path).absolute().as_uri()


def utf16_to_index(line: str, character: int) -> int:
    """The str index of a UTF-16 column in `line` (clamped to the line's end, as LSP asks)."""
    if line.isascii():
        return min(character, len(line))
    units = 0
    for index, char in enumerate(line):
        if units >= character:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    return len(line)


@dataclass
class Document:
    uri: str
    language_id: str
    version: int
    text: str
    # Backends (by key) this document has been opened in.
    opened_in: set[str] = field(default_factory=set)

    def offset_at(self, line: int, character: int) -> int:
        """The str offset of an LSP position (UTF-16 columns); positions past the end clamp to the end."""
        if line < 0:
            return 0
        start = 0
        text = self.text
        for _ in range(line):
            newline = text.find("\n", start)
            if newline < 0:
                return len(text)
            start = newline + 1
        end = text.find("\n", start)
        line_text = text[start:] if end < 0 else text[start:end]
        if line_text.endswith("\r"):
            line_text = line_text[:-1]
        return start + utf16_to_index(line_text, max(character, 0))

    def apply_changes(self, changes: list[dict[str, Any]], version: int) -> None:
        """Apply didChange content changes in order (each either a full replacement or a range edit)."""
        for change in changes:
            text = change.get("text", "")
            range_ = change.get("range")
            if range_ is None:
                self.text = text
                continue
            start = self.offset_at(range_["start"]["line"], range_["start"]["character"])
            end = self.offset_at(range_["end"]["line"], range_["end"]["character"])
            if end < start:
                start, end = end, start
            self.text = self.text[:start] + text + self.text[end:]
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
