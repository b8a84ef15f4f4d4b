"""Lookups over a snapshot's paths and names that relevance asks for on every question, made once per snapshot:
files by directory, by bare name, tests by the module name they test, files by the words of their path, defined
names by their squashed spelling. Without them each `relevantFiles` scanned every path and name again (0.4-0.8 s of
a warm question at 20,000 files)."""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict

from lsp_hub.index.file_kinds import bare_name, test_subject
from lsp_hub.index.graph_inputs import name_tables
from lsp_hub.index.workspace import Snapshot

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SEPARATORS = re.compile(r"[^0-9a-zA-Z]+")


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
        self.names_by_squashed: dict[str, list[str]] = defaultdict(list)
        for name in name_tables(snapshot).definers:
            self.names_by_squashed[squashed(name)].append(name)


def path_tables(snapshot: Snapshot) -> PathTables:
    return snapshot.derived("path_tables", PathTables)
