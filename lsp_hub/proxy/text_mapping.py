"""Positions of one text of a document mapped into another text of it, line by line.

The servers hold one text per document (the leading session's, see workspace.py); a client session whose own text
differs is answered through a `LineMap` between the two: its request's positions are mapped into the servers' text,
and the answer's positions back. Lines inside a region where the two texts differ have no counterpart: a position
there is `Unmappable`, and an answer item that needs one is left out. Pure: no I/O, no LSP traffic.
"""

from __future__ import annotations

import bisect
import difflib
from typing import Any


class Unmappable(Exception):
    """A position on a line that exists only in one of the two texts (or differs between them)."""

    def __init__(self, line: int) -> None:
        super().__init__(f"line {line} differs between the two texts")
        self.line = line


class LineMap:
    """Which line of `ours` is which line of `theirs`: the equal runs of lines of the two texts (difflib's matching
    blocks on lines, so edits cost the changed lines only). A line in no run has no counterpart."""

    __slots__ = ("_runs", "_starts", "line_counts")

    def __init__(self, runs: list[tuple[int, int, int]], line_counts: tuple[int, int]) -> None:
        self._runs = runs  # (first line in ours, first line in theirs, length), in order of both
        self._starts = [ours for ours, _, _ in runs]
        self.line_counts = line_counts

    @classmethod
    def between(cls, ours: str, theirs: str) -> LineMap:
        our_lines, their_lines = ours.split("\n"), theirs.split("\n")
        matcher = difflib.SequenceMatcher(None, our_lines, their_lines, autojunk=False)
        runs = [(a, b, size) for a, b, size in matcher.get_matching_blocks() if size]
        return cls(runs, (len(our_lines), len(their_lines)))

    def reversed(self) -> LineMap:
        return LineMap([(theirs, ours, size) for ours, theirs, size in self._runs],
                       (self.line_counts[1], self.line_counts[0]))

    def line(self, line: int) -> int | None:
        """Our `line` in theirs, or None if it is in a region that differs."""
        index = bisect.bisect_right(self._starts, line) - 1
        if index < 0:
            return None
        ours, theirs, size = self._runs[index]
        return theirs + (line - ours) if line < ours + size else None

    def position(self, position: dict[str, Any], *, range_end: bool = False) -> dict[str, Any]:
        """Our LSP position in theirs (the same column: the line is the same). A range's end at the start of a
        changed line is the end of the equal line before it (the same point between two lines)."""
        line = position["line"]
        mapped = self.line(line)
        if mapped is None and range_end and position["character"] == 0 and line > 0:
            before = self.line(line - 1)
            mapped = before + 1 if before is not None else None
        if mapped is None:
            raise Unmappable(line)
        return {**position, "line": mapped}


def _is_position(value: dict[str, Any]) -> bool:
    return len(value) == 2 and type(value.get("line")) is int and type(value.get("character")) is int


def _is_range(value: dict[str, Any]) -> bool:
    start, end = value.get("start"), value.get("end")
    return isinstance(start, dict) and isinstance(end, dict) and _is_position(start) and _is_position(end)


# Opaque to the mapping: what the hub hands back to a server as it got it (item data for */resolve, a command's
# arguments for executeCommand) must stay in the server's text.
_OPAQUE_KEYS = frozenset({"data", "command", "arguments"})
# A LocationLink's target is in the document its targetUri names; the link's origin is in the asked document.
_TARGET_KEYS = frozenset({"targetRange", "targetSelectionRange"})


class PositionMapper:
    """Maps every position of one document (`uri`) in an LSP value through a `LineMap`, generically on the JSON:
    positions and ranges, in Locations and LocationLinks (by their uri), TextDocumentEdits and WorkspaceEdit
    `changes` (by theirs), FoldingRange lines, and, outside anything that names a document, those of the value
    itself when it is about that document (a hover's range, document symbols, text edits).

    `lenient` (answers): an item of a list that cannot be mapped is left out and counted in `left_out`; strict
    (requests): any unmappable position raises `Unmappable`. `version`, when given, replaces the version of a
    TextDocumentEdit of the document (the client's own, not the servers')."""

    def __init__(self, uri: str, lines: LineMap, *, lenient: bool, version: int | None = None) -> None:
        self.uri = uri
        self.lines = lines
        self.lenient = lenient
        self.version = version
        self.left_out: list[Any] = []

    def map(self, value: Any, *, about_document: bool = True) -> Any:
        return self._value(value, about_document)

    def _value(self, value: Any, inside: bool) -> Any:
        if isinstance(value, list):
            return self._list(value, inside)
        if isinstance(value, dict):
            return self._dict(value, inside)
        return value

    def _list(self, items: list[Any], inside: bool) -> list[Any]:
        mapped = []
        for item in items:
            try:
                mapped.append(self._value(item, inside))
            except Unmappable:
                if not self.lenient:
                    raise
                self.left_out.append(item)
        return mapped

    def _dict(self, value: dict[str, Any], inside: bool) -> dict[str, Any]:
        if inside and _is_position(value):
            return self.lines.position(value)
        if inside and _is_range(value):
            return {**value, "start": self.lines.position(value["start"]),
                    "end": self.lines.position(value["end"], range_end=True)}
        uri = value.get("uri")
        if isinstance(uri, str):
            inside = uri == self.uri
        target_uri = value.get("targetUri")
        identifier = value.get("textDocument")
        named = identifier.get("uri") if isinstance(identifier, dict) else None
        names_document = isinstance(named, str)
        if names_document:
            inside = named == self.uri
        result: dict[str, Any] = {}
        for key, item in value.items():
            if key in _OPAQUE_KEYS:
                result[key] = item
            elif key == "fromRanges":  # an incoming call's are in its caller's document, an outgoing one's here
                caller = value.get("from")
                caller_uri = caller.get("uri") if isinstance(caller, dict) else None
                result[key] = self._value(item, caller_uri == self.uri if isinstance(caller_uri, str) else inside)
            elif key in _TARGET_KEYS and isinstance(target_uri, str):
                result[key] = self._value(item, target_uri == self.uri)
            elif key == "changes" and isinstance(item, dict):  # WorkspaceEdit.changes: uri -> TextEdit[]
                result[key] = {edit_uri: self._value(edits, edit_uri == self.uri) for edit_uri, edits in item.items()}
            elif key == "textDocument" and names_document and inside and self.version is not None and \
                    isinstance(item.get("version"), int):
                result[key] = {**item, "version": self.version}
            elif key in ("startLine", "endLine") and inside and type(item) is int:  # FoldingRange
                mapped = self.lines.line(item)
                if mapped is None:
                    raise Unmappable(item)
                result[key] = mapped
            else:
                result[key] = self._value(item, inside)
        return result


def map_diagnostics(diagnostics: list[dict[str, Any]], uri: str, lines: LineMap
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The diagnostics whose range maps, mapped; and those left out (on lines that differ), as they were."""
    mapper = PositionMapper(uri, lines, lenient=True)
    return mapper.map(diagnostics), mapper.left_out



def map_semantic_tokens(data: list[int], lines: LineMap) -> list[int]:
    """Semantic tokens (relative 5-integer groups) with each token's line mapped; tokens on lines that differ are
    left out."""
    mapped: list[int] = []
    line = column = 0
    last_line = last_column = 0
    for index in range(0, len(data) - 4, 5):
        delta_line, delta_column, length, kind, modifiers = data[index:index + 5]
        line, column = (line + delta_line, delta_column) if delta_line else (line, column + delta_column)
        target = lines.line(line)
        if target is None or target < last_line:
            continue
        relative = column - last_column if target == last_line else column
        mapped += [target - last_line, relative, length, kind, modifiers]
        last_line, last_column = target, column
    return mapped
