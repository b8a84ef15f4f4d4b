"""Lookups over a snapshot's paths and names that relevance asks for on every question, made once per snapshot:
files by directory, by bare name, tests by the module name they test, files by the words of their path, defined
names by their squashed spelling. Without them each `relevantFiles` scanned every path and name again (0.4-0.8 s of
a warm question at 20,000 files)."""

from __future__ import annotations

import posixpath
import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Collection
from itertools import accumulate, islice

from lsp_hub.index.file_kinds import bare_name, test_subject
from lsp_hub.index.graph_inputs import name_tables
from lsp_hub.index.workspace import Snapshot

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SEPARATORS = re.compile(r"[^0-9a-zA-Z]+")
_LEADING_WORD = re.compile(r"_*([a-z]+|[A-Z]+(?![a-z])|[A-Z][a-z]+)")
PREFIX_SHARE = 0.05
PREFIX_MIN_NAMES = 20
PREFIX_SAMPLE = 4000


def split_words(identifier: str) -> list[str]:
    """`parseHTTPRequest` -> parse, http, request; `user_cache` -> user, cache."""
    return [word.lower() for chunk in identifier.split("_") for word in _WORD.findall(chunk)]


def singular(word: str) -> str:
    """A crude singular ("users" -> "user", "entries" -> "entry"), enough to match names to prose."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def squashed(text: str) -> str:
    """Lower case without separators: `UserCache`, `user_cache` and `user cache` compare equal."""
    return _SEPARATORS.sub("", text).lower()


class PathTables:
    """The snapshot's paths grouped for relevance's lookups (lists in path order)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.by_directory: dict[str, list[str]] = defaultdict(list)
        self.by_bare_name: dict[str, list[str]] = defaultdict(list)
        self.tests_by_subject: dict[str, list[str]] = defaultdict(list)
        self.by_singular_path_word: dict[str, list[str]] = defaultdict(list)  # by the singular of each word
        for path in sorted(snapshot.files):
            self.by_directory[posixpath.dirname(path)].append(path)
            self.by_bare_name[bare_name(path)].append(path)
            subject = test_subject(path)
            if subject is not None:
                self.tests_by_subject[subject].append(path)
            for word in {singular(word) for word in split_words(path.rsplit(".", 1)[0].replace("/", "_"))}:
                self.by_singular_path_word[word].append(path)
        self._names = name_tables(snapshot).definers
        self.names_by_squashed: dict[str, list[str]] = defaultdict(list)
        for name in self._names:
            self.names_by_squashed[squashed(name)].append(name)
        self._name_prefixes: frozenset[str] | None = None
        self._squashed_lines: str | None = None  # every squashed name on a line, made for the first question
        self._line_starts: list[int] = []

    def names_made_of(
        self, words: Collection[str], fillers: Collection[str], holding: dict[str, set[str]]
    ) -> list[str]:
        """The defined names made only of `words` (in any order, singular or plural) and `fillers`, with at least two
        distinct `words`: "follow redirects, strip the Authorization header" finds `_redirect_headers` and
        `get_host_header`, which no run of its words spells. `holding`: `names_holding(name_stems(words))`."""
        keys = [key for key, held in holding.items() if len(held) > 1]
        if not keys:
            return []
        # The names holding two of the words, then made of them alone, two at least: squashed names have no
        # separators left, and the backtracking match finds where each word ends.
        forms = {form for word in words for form in _forms(word)}
        content, filler = _alternatives(forms), _alternatives((set(fillers) | self.name_prefixes()) - forms)
        filler += "|v?[0-9]+"  # a version or a number: fzf's `FuzzyMatchV2`, `bonusCamel123`
        made_of = re.compile(f"(?:{filler})*(?:{content})(?:{filler})*(?:{content})(?:{content}|{filler})*")
        return [name for key in sorted(keys) if made_of.fullmatch(key) for name in self.names_by_squashed[key]]

    def names_holding(self, stems: Collection[str]) -> dict[str, set[str]]:
        """The squashed names that hold any of `stems` anywhere, each with the stems it holds: one search of every
        name at once (a regular expression tried on each name cost 10-25 ms a question on the standard library's
        43,000 names; a question takes 3 ms without it)."""
        if self._squashed_lines is None:
            self._squashed_lines = "\n".join(self.names_by_squashed) + "\n"
            self._line_starts = [0, *accumulate(len(key) + 1 for key in self.names_by_squashed)]
        lines, starts = self._squashed_lines, self._line_starts
        by_line: dict[int, set[str]] = defaultdict(set)
        for stem in stems:
            at = lines.find(stem)
            while at != -1:
                by_line[bisect_right(starts, at) - 1].add(stem)
                at = lines.find(stem, at + 1)
        return {lines[starts[line] : starts[line + 1] - 1]: held for line, held in by_line.items()}

    def name_prefixes(self) -> frozenset[str]:
        """The words that begin a twentieth of the names or more (at least 20): a C library's namespace (hiredis's
        `redisCallbackList` is made of "callback list"), or a convention such as `test_`."""
        if self._name_prefixes is None:
            # Counted on a sample of PREFIX_SAMPLE names at most: all of the standard library's took 25 ms.
            step = max(1, len(self._names) // PREFIX_SAMPLE)
            counts: Counter[str] = Counter()
            sampled = 0
            for name in islice(self._names, 0, None, step):
                sampled += 1
                leading = _LEADING_WORD.match(name)
                if leading is not None and leading.end() < len(name):
                    counts[leading.group(1).lower()] += 1
            floor = max(PREFIX_MIN_NAMES / step, PREFIX_SHARE * sampled)
            self._name_prefixes = frozenset(word for word, count in counts.items() if count >= floor)
        return self._name_prefixes


def name_stems(words: Collection[str]) -> set[str]:
    """What a name holding one of `words` holds: its singular, without a closing y ("entr" finds entry and
    entries)."""
    stems = {singular(word) for word in words}
    return {stem[:-1] if stem.endswith("y") else stem for stem in stems}


def _forms(word: str) -> set[str]:
    one = singular(word)
    forms = {word, one, one + "s", one + "es"}
    if one.endswith("y"):
        forms.add(one[:-1] + "ies")
    return forms


def _alternatives(words: Collection[str]) -> str:
    return "|".join(re.escape(word) for word in sorted(words, key=lambda word: (-len(word), word))) or "(?!)"


def path_tables(snapshot: Snapshot) -> PathTables:
    return snapshot.derived("path_tables", PathTables)
