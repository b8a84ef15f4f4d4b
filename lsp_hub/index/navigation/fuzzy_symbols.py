"""`symbols`: fuzzy search of the index's definitions by name: exact, prefix, camelCase and snake_case pieces,
substring; ranked by match quality, then kind (types and functions before variables), then shorter names.

Candidates are found by one regular expression over all distinct names joined into one string (the query's
letters in order), so the per-name scoring in Python runs only on names that can match."""

from __future__ import annotations

import bisect
import heapq
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from lsp_hub.index.file_kinds import is_example_path, is_test_call_name, is_test_file
from lsp_hub.index.navigation.common import (
    Completeness,
    NavigationError,
    index_completeness,
    join_lines,
    more_line,
    take_snapshot,
)
from lsp_hub.index.records import D_CONTAINER, D_KIND, D_LOCAL, D_NAME, D_START_LINE, IN_BODY
from lsp_hub.index.symbols import _QUERY_PIECE, _humps
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

DEFAULT_SYMBOLS_LIMIT = 30
MAX_SUBSTRING_NAMES = 2000  # names containing the query scored at most; exact, prefix and word matches all are
_KIND_ORDER = {"class": 0, "interface": 0, "type": 1, "function": 1, "method": 2, "module": 3, "constant": 3,
               "variable": 4, "field": 4}
TEST_ORDER = 6  # after every kind
DEFINITION_KINDS = frozenset(("class", "interface", "type", "function", "method", "module"))


@dataclass(frozen=True, slots=True)
class NameTable:
    names: list[str]
    lowered: list[str]  # the names lowercased, sorted (prefix matches by bisection)
    lowered_names: dict[str, list[str]]  # lowercased -> the names
    joined: str  # the names lowercased, one per line, for the substring search
    name_line_starts: list[int]
    words: str  # each name's words lowercased and space-separated, one name per line (the same order)
    word_line_starts: list[int]
    # name -> (path, kind, container, 0-based line, standing: PROJECT_CODE, TESTS_OR_EXAMPLES or LOCAL)
    places: dict[str, list[tuple[str, str, str | None, int, int]]]


def _line_starts(lines: list[str]) -> list[int]:
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    return starts


# Where a definition stands, for the order of equal matches: the project's code, then its tests' and examples', then
# a function's locals (fastapi's `docs_src` tutorials sort before `fastapi/`, and a test's nested `def dependency`
# named in a task came before the library's).
PROJECT_CODE, TESTS_OR_EXAMPLES, LOCAL = 0, 1, 2


def name_table(snapshot: Snapshot) -> NameTable:
    def build(s: Snapshot) -> NameTable:
        places: dict[str, list[tuple[str, str, str | None, int, int]]] = defaultdict(list)
        for path, record in s.files.items():
            file_standing = TESTS_OR_EXAMPLES if is_test_file(path) or is_example_path(path) else PROJECT_CODE
            for definition in record.definitions:
                standing = LOCAL if definition[D_LOCAL] == IN_BODY else file_standing
                places[definition[D_NAME]].append((path, definition[D_KIND], definition[D_CONTAINER],
                                                   definition[D_START_LINE], standing))
        names = sorted(places)
        lowered_names: dict[str, list[str]] = defaultdict(list)
        for name in names:
            lowered_names[name.lower()].append(name)
        lowered = sorted(lowered_names)
        word_lines = [" ".join(word.lower() for word in _humps(name)) for name in names]
        return NameTable(names, lowered, dict(lowered_names), "\n".join(lowered), _line_starts(lowered),
                         "\n".join(word_lines), _line_starts(word_lines), dict(places))

    return snapshot.derived("navigation_name_table", build)


@dataclass(frozen=True, slots=True)
class SymbolMatch:
    name: str
    kind: str
    container: str | None
    path: str
    line: int  # 1-based
    score: int

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"name": self.name, "kind": self.kind, "path": self.path, "line": self.line}
        if self.container:
            result["container"] = self.container
        return result

    def text(self) -> str:
        qualified = f"{self.container}.{self.name}" if self.container else self.name
        return f"{self.kind} {qualified}  {self.path}:{self.line}"


@dataclass(slots=True)
class SymbolsResult:
    query: str
    matches: list[SymbolMatch]
    omitted: int
    completeness: Completeness

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"query": self.query, "symbols": [match.to_json() for match in self.matches]}
        if self.omitted:
            result["omitted"] = self.omitted
        result.update(self.completeness.to_json())
        return result

    def to_text(self) -> str:
        lines = [match.text() for match in self.matches]
        if not self.matches:
            lines.append(f"no definition matches {self.query!r} (exact, prefix, camelCase/snake_case pieces or "
                         "substring)")
        lines.extend(more_line(self.omitted, "symbols"))
        lines.append(self.completeness.to_text())
        return join_lines(lines)


def _hump_pieces(query: str) -> list[str]:
    """The pieces of a query that must each start a word of the name, in order: its camelCase/snake_case/spaced
    words, or the letters of an all-capitals abbreviation (`HTC`)."""
    if "_" in query or " " in query or "-" in query or (
            any(c.isupper() for c in query) and any(c.islower() for c in query)):
        return [piece.lower() for piece in _QUERY_PIECE.findall(query)]
    if query.isalpha() and query.isupper():
        return list(query.lower())
    return []


def _starts_words_in_order(pieces: list[str], words: list[str]) -> bool:
    position = 0
    for piece in pieces:
        while position < len(words) and not words[position].startswith(piece):
            position += 1
        if position == len(words):
            return False
        position += 1
    return True


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset) - 1


def _matching_names(table: NameTable, query: str, truncated: list[int]) -> dict[str, int]:
    """Name -> score for every name that matches. Occurrences are found by the regular expression engine's literal
    search over the joined tables (fast), then each candidate line is scored."""
    scores: dict[str, int] = {}
    lowered = query.lower()
    # Exact and prefix matches by bisection of the sorted lowercased names: complete whatever the scan below finds.
    position = bisect.bisect_left(table.lowered, lowered)
    while position < len(table.lowered) and table.lowered[position].startswith(lowered):
        for name in table.lowered_names[table.lowered[position]]:
            if name == query:
                scores[name] = 100
            elif table.lowered[position] == lowered:
                scores[name] = 90
            else:
                scores[name] = 80 if name.startswith(query) else 70
        position += 1
    # Substring matches: the regular expression engine's literal search over all names, capped.
    seen_lines: set[int] = set()
    for found in re.finditer(re.escape(lowered), table.joined):
        line = _line_of(table.name_line_starts, found.start())
        if line in seen_lines:
            continue
        if len(seen_lines) >= MAX_SUBSTRING_NAMES:
            truncated.append(MAX_SUBSTRING_NAMES)
            break
        seen_lines.add(line)
        for name in table.lowered_names[table.lowered[line]]:
            scores.setdefault(name, 50)
    pieces = _hump_pieces(query)
    if len(pieces) >= 2:
        checked: set[int] = set()
        words_text = table.words
        for found in re.finditer(re.escape(pieces[0]), words_text):
            start = found.start()
            if start > 0 and words_text[start - 1] not in " \n":
                continue  # not at a word start
            line = _line_of(table.word_line_starts, start)
            if line in checked:
                continue
            checked.add(line)
            name = table.names[line]
            if scores.get(name, 0) >= 60:
                continue
            line_start = table.word_line_starts[line]
            words = words_text[start:words_text.find("\n", line_start) % (len(words_text) + 1)].split(" ")
            if _starts_words_in_order(pieces[1:], words[1:]):
                scores[name] = 60
    return scores


def symbols(index: WorkspaceIndex, query: str, limit: int = DEFAULT_SYMBOLS_LIMIT,
            include_variables: bool = False, wait: float = 0.0) -> SymbolsResult:
    """Definitions matching `query`, best first, at most `limit` (0: all). Variables and constants are left out
    unless `include_variables` (or the query names one exactly)."""
    query = query.strip()
    if not query or not any(character.isalnum() for character in query):
        raise NavigationError("query is empty: give a name or part of one")
    snapshot = take_snapshot(index, wait)
    completeness = index_completeness(index, snapshot)
    table = name_table(snapshot)
    ranked: list[tuple[int, int, int, int, str, str, int, str, str | None]] = []
    truncated: list[int] = []
    for name, score in _matching_names(table, query, truncated).items():
        for path, kind, container, line, standing in table.places[name]:
            if kind not in DEFINITION_KINDS and not include_variables and score < 90:
                continue
            # A TS/JS test (`describe("Command.parseOptions()")`) spells what it tests: after what it tests.
            order = TEST_ORDER if is_test_call_name(name) else _KIND_ORDER.get(kind, 5)
            ranked.append((-score, standing, order, len(name), path, name, line, kind, container))
    shown = heapq.nsmallest(limit, ranked) if 0 < limit < len(ranked) else sorted(ranked)
    omitted = len(ranked) - len(shown)
    if omitted:
        completeness.add(f"capped at {limit} symbols")
    if truncated:
        completeness.add(f"over {MAX_SUBSTRING_NAMES} names contain {query!r}: substring matches not all counted or "
                         "ranked; a longer query narrows it")
    matches = [SymbolMatch(name, kind, container, path, line + 1, -score)
               for score, _standing, _order, _length, path, name, line, kind, container in shown]
    return SymbolsResult(query, matches, omitted, completeness)
