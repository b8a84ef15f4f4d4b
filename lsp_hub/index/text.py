"""Decoding and position helpers shared by extraction and the syntax check.

tree-sitter reports (row, byte column); LSP wants (line, UTF-16 column). Byte columns equal UTF-16 columns on a
line whose prefix is ASCII, which is nearly every line of nearly every source file, so the conversion first asks
whether the whole source is ASCII (one C-speed check) and then whether the line prefix is, and only decodes when
neither is true. Invalid UTF-8 decodes with U+FFFD per bad byte, so it never raises. Rows count '\\n' only, as
tree-sitter does; a lone '\\r' line break (old Mac files) is not counted as a line, which LSP clients would do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsp_hub.index.model import Span

if TYPE_CHECKING:
    import tree_sitter


def decode(data: bytes) -> str:
    """Bytes from a source file as text, never raising: invalid UTF-8 becomes U+FFFD."""
    return data.decode("utf-8", errors="replace")


def utf16_length(text: str) -> int:
    """How many UTF-16 code units `text` takes: one per character, two for characters beyond the BMP."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def count_lines(source: bytes) -> int:
    """Number of lines as an editor shows them: an empty file has 0, a final line without '\\n' still counts."""
    if not source:
        return 0
    newlines = source.count(b"\n")
    return newlines if source.endswith(b"\n") else newlines + 1


class PositionConverter:
    """Turns tree-sitter byte positions of one source into UTF-16 positions, cheaply for ASCII text."""

    __slots__ = ("ascii", "source")

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.ascii = source.isascii()

    def column(self, byte_offset: int, byte_column: int) -> int:
        """UTF-16 column of the position at `byte_offset`, which lies `byte_column` bytes into its line."""
        if self.ascii or byte_column == 0:
            return byte_column
        prefix = self.source[byte_offset - byte_column : byte_offset]
        if prefix.isascii():
            return byte_column
        return utf16_length(decode(prefix))

    def span(self, node: tree_sitter.Node) -> Span:
        """The node's range as a Span in lines and UTF-16 columns."""
        start_row, start_column = node.start_point
        end_row, end_column = node.end_point
        if self.ascii:
            return Span(start_row, start_column, end_row, end_column)
        return Span(
            start_row,
            self.column(node.start_byte, start_column),
            end_row,
            self.column(node.end_byte, end_column),
        )

    def span_of_bytes(self, start_byte: int, start_row: int, start_column: int, end_byte: int, end_row: int,
                      end_column: int) -> Span:
        """A Span from explicit byte positions (for ranges that are not exactly one node)."""
        return Span(start_row, self.column(start_byte, start_column), end_row, self.column(end_byte, end_column))
