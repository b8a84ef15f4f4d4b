"""The commits `relevance_cochange.py` replays, and the simple rankings it compares against (no lsp_hub query here).

A commit qualifies when it has one parent, changed 2..MAX_SOURCE_FILES source files (the index's languages), its
subject names no mechanical change (format, lint, version, release, bump, merge, typo...), its changes are not
only renames (read without rename detection: a pure rename is a deletion and an addition of the same blob), and at
least one file it modified is not a test. Its target is the non-test file it modified most (lines added plus
deleted; ties by path), its answer key the other source files it modified or deleted (they existed in the parent).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from relevance_history import git

from lsp_hub.index.languages import language_for_path

MAX_SOURCE_FILES = 8
MIN_COMMITS_BEFORE = 100  # the oldest commits have too little history (and tree) behind them to ask about
MECHANICAL_SUBJECT = re.compile(
    r"\b(format\w*|fmt|lint\w*|clippy|prettier|eslint|gofmt|rustfmt|black|version\w*|releas\w*|bump\w*|merge\w*|"
    r"typos?|chore\(deps\)|deps|dependabot|changelog)\b",
    re.IGNORECASE,
)
_TEST_PART = re.compile(r"^(tests?|testsuite|__tests__|spec|testing|testdata)$")
_TEST_NAME = re.compile(r"^test_|_test$|\.test$|\.spec$|_spec$|^conftest$|Test$")
_EXAMPLE_PART = re.compile(r"^(_?examples?|docs?|benches|benchmarks?|samples?)$")
MANIFESTS = frozenset({"Cargo.toml", "package.json", "go.mod", "pyproject.toml", "setup.py", "deno.json"})


@dataclass(frozen=True)
class Change:
    path: str
    status: str  # A, M, D, T (git's raw status, renames undetected)
    lines: int  # added plus deleted (0 for binary)
    old_blob: str
    new_blob: str


@dataclass(frozen=True)
class Query:
    sha: str
    parent: str
    time: int  # committer time, seconds since the epoch
    subject: str
    target: str
    expected: tuple[str, ...]  # the key before the index filters it (a file the walker skips cannot be found)


def is_test_path(path: str) -> bool:
    """In a test directory, or named as a test (`test_x.py`, `x_test.go`, `x.test.ts`, `x.spec.js`, `XTest.java`)."""
    *directories, name = path.split("/")
    without_extension = name.rsplit(".", 1)[0]
    return any(_TEST_PART.match(part) for part in directories) or bool(_TEST_NAME.search(without_extension))


def subject_stem(path: str) -> str:
    """The file's name without extensions and test affixes: `test_app.py`, `app.pyi`, `app.test.ts` -> app."""
    stem = posixpath.basename(path).split(".", 1)[0]
    for prefix in ("test_",):
        stem = stem.removeprefix(prefix)
    for suffix in ("_test", "_spec", "Test"):
        stem = stem.removesuffix(suffix)
    return stem


def _parse_log(output: str) -> Iterable[tuple[str, list[str], int, str, list[Change]]]:
    for record in output.split("\x1e")[1:]:
        header, _, body = record.partition("\n")
        shas, time, subject = header.split("\x1f", 2)
        sha, *parents = shas.split()
        raw: dict[str, tuple[str, str, str]] = {}
        lines: dict[str, int] = {}
        for line in body.splitlines():
            if line.startswith(":"):
                meta, _, path = line.partition("\t")
                _old_mode, _new_mode, old_blob, new_blob, status = meta[1:].split()
                raw[path] = (status[0], old_blob, new_blob)
            elif line.count("\t") >= 2:
                added, deleted, path = line.split("\t", 2)
                lines[path] = (int(added) + int(deleted)) if added.isdigit() and deleted.isdigit() else 0
        changes = [Change(path, status, lines.get(path, 0), old, new) for path, (status, old, new) in raw.items()]
        yield sha, parents, int(time), subject, changes


def _only_renames(changes: list[Change]) -> bool:
    deleted = {change.old_blob for change in changes if change.status == "D"}
    added = {change.new_blob for change in changes if change.status == "A"}
    return all(
        (change.status == "D" and change.old_blob in added) or (change.status == "A" and change.new_blob in deleted)
        for change in changes
    )


def candidate_queries(repo: Path, min_commits_before: int = MIN_COMMITS_BEFORE) -> tuple[int, list[Query]]:
    """(non-merge commits in the repository, the qualifying ones oldest first as queries)."""
    log = git(
        repo,
        "-c",
        "core.quotepath=off",
        "log",
        "--no-merges",
        "--date-order",
        "--reverse",
        "--raw",
        "--numstat",
        "--no-renames",
        "--abbrev=40",
        "--format=%x1e%H %P%x1f%ct%x1f%s",
    )
    queries: list[Query] = []
    count = 0
    for position, (sha, parents, time, subject, changes) in enumerate(_parse_log(log)):
        count += 1
        sources = [change for change in changes if language_for_path(change.path) is not None]
        if (
            position < min_commits_before
            or len(parents) != 1
            or not 2 <= len(sources) <= MAX_SOURCE_FILES
            or MECHANICAL_SUBJECT.search(subject)
            or _only_renames(sources)
        ):
            continue
        modified = [change for change in sources if change.status == "M" and not is_test_path(change.path)]
        if not modified:
            continue
        target = min(modified, key=lambda change: (-change.lines, change.path)).path
        expected = tuple(
            sorted(change.path for change in sources if change.status in ("M", "D", "T") and change.path != target)
        )
        if expected:
            queries.append(Query(sha, parents[0], time, subject, target, expected))
    return count, queries


def spread(queries: list[Query], count: int, span: int) -> list[Query]:
    """`count` queries spread evenly over the newest `span` (oldest first)."""
    recent = queries[-span:]
    if len(recent) <= count:
        return recent
    step = len(recent) / count
    return [recent[int(index * step)] for index in range(count)]


# --- baselines --------------------------------------------------------------------------------------------------


def _directory_distance(first: str, second: str) -> int:
    first_parts = [part for part in first.split("/") if part]
    second_parts = [part for part in second.split("/") if part]
    common = 0
    for mine, theirs in zip(first_parts, second_parts, strict=False):
        if mine != theirs:
            break
        common += 1
    return len(first_parts) + len(second_parts) - 2 * common


def _common_prefix(first: str, second: str) -> int:
    return len(posixpath.commonprefix([first, second]))


def same_directory_ranking(target: str, files: Iterable[str], limit: int) -> list[str]:
    """Files nearest the target in the directory tree (same directory first), then by the length of the name they
    share with it, then by path: what "look next to it" finds."""
    directory, name = posixpath.split(target)
    return sorted(
        (path for path in files if path != target),
        key=lambda path: (
            _directory_distance(directory, posixpath.dirname(path)),
            -_common_prefix(name, posixpath.basename(path)),
            path,
        ),
    )[:limit]


def package_root(path: str, manifest_directories: Collection[str]) -> str:
    """The deepest directory holding a package manifest (Cargo.toml, package.json, go.mod...) above the path."""
    directory = posixpath.dirname(path)
    while directory and directory not in manifest_directories:
        directory = posixpath.dirname(directory)
    return directory


def manifest_directories(worktree: Path) -> frozenset[str]:
    names = git(worktree, "-c", "core.quotepath=off", "ls-files").splitlines()
    return frozenset(posixpath.dirname(name) for name in names if posixpath.basename(name) in MANIFESTS)


def miss_kind(target: str, missed: str, manifests: Collection[str]) -> str:
    """One word for what a missed file is to the target: its twin (same name stem, e.g. `x.py` / `sansio/x.py` /
    `x.pyi` / `x_test.go`), a test, an example or docs, in another package or crate, in the same directory, or
    elsewhere in the same package."""
    if subject_stem(missed) == subject_stem(target):
        return "twin"
    if is_test_path(missed):
        return "test"
    if any(_EXAMPLE_PART.match(part) for part in missed.split("/")[:-1]):
        return "example/docs"
    if package_root(missed, manifests) != package_root(target, manifests):
        return "other package"
    if posixpath.dirname(missed) == posixpath.dirname(target):
        return "same directory"
    return "same package"
