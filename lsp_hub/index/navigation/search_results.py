"""What text and structural search answer alike: matches grouped by file (files in the repo map's order), each
with its line and the definition that encloses it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lsp_hub.index.model import Span
from lsp_hub.index.navigation.common import Completeness, join_lines, more_line
from lsp_hub.index.symbols import enclosing_definition, qualified_name
from lsp_hub.index.workspace import Snapshot

DEFAULT_SEARCH_LIMIT = 100  # matches
MAX_MATCH_TEXT = 200  # characters of a matching line shown
ENCLOSING_KINDS = ("function", "method", "class", "interface", "type", "module")


@dataclass(slots=True)
class SearchMatch:
    line: int  # 1-based
    column: int  # 1-based
    text: str
    symbol: str | None = None  # the enclosing definition, qualified

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"line": self.line, "column": self.column, "text": self.text}
        if self.symbol:
            result["symbol"] = self.symbol
        return result


@dataclass(slots=True)
class FileMatches:
    path: str
    matches: list[SearchMatch] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "matches": [match.to_json() for match in self.matches]}


@dataclass(slots=True)
class SearchResult:
    pattern: str
    mode: str  # "literal", "regex" or "structural:<language>"
    files: list[FileMatches]
    total_matches: int
    total_files: int
    completeness: Completeness
    unsearched_files: int = 0  # a search that stopped at its limit: the totals count only the files searched

    @property
    def shown_matches(self) -> int:
        return sum(len(entry.matches) for entry in self.files)

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"pattern": self.pattern, "mode": self.mode,
                                  "files": [entry.to_json() for entry in self.files],
                                  "totalMatches": self.total_matches, "totalFiles": self.total_files,
                                  "countedAll": self.unsearched_files == 0}
        result.update(self.completeness.to_json())
        return result

    def to_text(self) -> str:
        lines: list[str] = []
        for entry in self.files:
            lines.append(entry.path)
            for match in entry.matches:
                where = f" [{match.symbol}]" if match.symbol else ""
                lines.append(f"  {match.line}:{where} {match.text.strip()}")
        if not self.files:
            lines.append(f"no match for {self.pattern!r} ({self.mode})")
        left = self.total_matches - self.shown_matches
        if self.unsearched_files:
            found = f"at least {left} more matches; " if left > 0 else ""
            lines.append(f"... {found}{self.unsearched_files} files not searched (a larger limit searches them)")
        elif left > 0:
            lines.extend(more_line(left, f"matches ({self.total_files - len(self.files)} more files)"))
        lines.append(self.completeness.to_text())
        return join_lines(lines)


def clipped(text: str) -> str:
    return text if len(text) <= MAX_MATCH_TEXT else text[:MAX_MATCH_TEXT] + "..."


def file_order(snapshot: Snapshot) -> Mapping[str, float]:
    """The repo map's rank of each file (higher first); an empty map when the ranking cannot be built."""
    from lsp_hub.index.ranking import base_pagerank

    return base_pagerank(snapshot)


def name_enclosing(snapshot: Snapshot, path: str, matches: list[SearchMatch]) -> None:
    """Set each match's enclosing definition (positions as the index counts them: 0-based)."""
    record = snapshot.files.get(path)
    if record is None:
        return
    outline = record.outline()
    for match in matches:
        enclosing = enclosing_definition(outline, Span(match.line - 1, match.column - 1, match.line - 1,
                                                       match.column - 1), ENCLOSING_KINDS)
        if enclosing is not None:
            match.symbol = qualified_name(enclosing)
