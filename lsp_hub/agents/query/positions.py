"""Files and positions as a shell gives them and as LSP wants them: URIs, 1-based character columns <-> 0-based
UTF-16 columns, and `FILE:LINE:COL`. Pure functions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

from lsp_hub.agents.query.errors import QueryError


def path_uri(path: Path | str) -> str:
    return "file://" + quote(str(path))


def uri_path(uri: str) -> str:
    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def utf16_column(line_text: str, characters: int) -> int:
    return len(line_text[:characters].encode("utf-16-le")) // 2


def character_column(line_text: str, utf16: int) -> int:
    """The character index of a UTF-16 column (rounded down inside a surrogate pair)."""
    encoded = line_text.encode("utf-16-le")[:utf16 * 2]
    return len(encoded.decode("utf-16-le", "ignore"))


@dataclass(frozen=True)
class Location:
    """A place in a file as a person gives it: FILE (absolute, or relative to the anchor: --root when given, else
    the current directory), a 1-based line and a 1-based column in characters."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def parse_location(text: str) -> tuple[str, int, int]:
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit() or not parts[0]:
        raise QueryError(f"lsp-hub query: expected FILE:LINE:COL (1-based) or --symbol NAME, not {text!r}")
    line, column = int(parts[1]), int(parts[2])
    if line < 1 or column < 1:
        raise QueryError("lsp-hub query: LINE and COL are 1-based")
    return parts[0], line, column


def location(text: str) -> Location:
    """`FILE:LINE:COL` as a Location (QueryError, one line, when it is not one)."""
    return Location(*parse_location(text))
