"""Find the source files of a workspace: what the index parses, and what it leaves out and why.

Rules, in the order they apply to each directory entry:
- directories that are hidden (`.git`, `.venv`...) or conventionally hold no hand-written source (node_modules,
  build output, virtual environments, caches) are not entered;
- `.gitignore` files at every level and `.git/info/exclude` are honoured with git's semantics (a deeper file's
  patterns override a shallower one's, `!pattern` re-includes);
- symbolic links are never followed out of the root, into a directory that contains them (a loop), or to a place
  already reachable inside the root (the target is indexed under its own path instead);
- files in a language the index does not support are passed over; supported ones over the size cap are skipped;
- directories more than MAX_DIRECTORY_DEPTH levels down are not entered (`too_deep`).

Binary content is only detectable by reading the file, so that check (a NUL byte in the first 8 KB,
`skip_reasons.is_binary`) happens where files are read for parsing. Every skip is counted by reason in
`WalkResult.skip_counts`; skips that leave source code out of the index are also listed by path in
`WalkResult.skipped`.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import pathspec

from lsp_hub.index.languages import language_for_name, language_for_path
from lsp_hub.index.skip_reasons import (
    LEFT_OUT_REASONS,
    REASON_BROKEN_SYMLINK,
    REASON_GITIGNORED,
    REASON_HIDDEN_DIRECTORY,
    REASON_IGNORED_DIRECTORY,
    REASON_SYMLINK_DUPLICATE,
    REASON_SYMLINK_LOOP,
    REASON_SYMLINK_OUTSIDE_ROOT,
    REASON_TOO_DEEP,
    REASON_TOO_LARGE,
    REASON_UNREADABLE,
    REASON_UNSUPPORTED_LANGUAGE,
)

DEFAULT_MAX_FILE_SIZE = 1024 * 1024
# Directories nested deeper than this are not entered. Real source trees stay far below it; generated or
# pathological chains (a symlink-free loop made by a tool, a test fixture) would otherwise be walked to the bottom.
MAX_DIRECTORY_DEPTH = 128

SKIPPED_DIRECTORY_NAMES: frozenset[str] = frozenset(
    (
        "node_modules",
        "bower_components",
        "jspm_packages",
        ".venv",
        "venv",
        ".env",
        "virtualenv",
        ".tox",
        ".nox",
        "site-packages",
        "dist",
        "build",
        "out",
        "target",
        "vendor",
        "obj",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
        ".next",
        ".nuxt",
        ".svelte-kit",
        ".turbo",
        ".parcel-cache",
        ".cache",
        "coverage",
        "htmlcov",
        ".nyc_output",
        ".git",
        ".hg",
        ".svn",
        ".idea",
        ".vscode",
    )
)

# Files that are not source code but tell the import resolver how the project is laid out.
MARKER_FILE_NAMES: frozenset[str] = frozenset(
    ("go.mod", "Cargo.toml", "tsconfig.json", "jsconfig.json", "package.json")
)



class WalkedFile(NamedTuple):  # a tuple: made 100,000 times by a walk, twice as fast as a frozen dataclass
    path: str  # workspace-relative POSIX path
    language: str
    size: int
    mtime_ns: int


@dataclass(slots=True)
class WalkResult:
    files: list[WalkedFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason) for LEFT_OUT_REASONS only
    skip_counts: Counter[str] = field(default_factory=Counter)  # reason -> files or directories skipped
    marker_files: list[str] = field(default_factory=list)  # go.mod, Cargo.toml, workspace-relative

    def skip(self, path: str, reason: str) -> None:
        self.skip_counts[reason] += 1
        if reason in LEFT_OUT_REASONS:
            self.skipped.append((path, reason))


class _IgnoreRules:
    """The .gitignore specs that apply inside one directory, innermost last."""

    __slots__ = ("specs",)

    def __init__(self, specs: tuple[tuple[str, pathspec.PathSpec], ...]) -> None:
        self.specs = specs  # (directory prefix with trailing '/', or '' for the root; spec)

    def extended(self, directory: str, lines: list[str]) -> _IgnoreRules:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        if not spec.patterns:
            return self
        return _IgnoreRules((*self.specs, (f"{directory}/" if directory else "", spec)))

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Git semantics: the innermost file with a matching pattern decides; its last matching pattern wins."""
        for prefix, spec in reversed(self.specs):
            relative = path[len(prefix) :] if prefix else path
            if is_dir:
                relative += "/"
            result = spec.check_file(relative)
            if result.include is not None:
                return bool(result.include)
        return False


def _read_ignore_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


class IndexingCancelled(Exception):
    """The index was stopped (its owner is leaving) while it walked or parsed: the work is abandoned."""


def walk_workspace(
    root: Path,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    should_stop: Callable[[], bool] | None = None,
    files_found: Callable[[int], None] | None = None,
    result: WalkResult | None = None,
) -> WalkResult:
    """All indexable source files under `root` (resolved first), sorted by path, plus what was skipped and why.

    Iterative (an explicit stack, so no directory depth reaches Python's recursion limit); directories deeper than
    MAX_DIRECTORY_DEPTH are skipped as `too_deep`. `should_stop` is asked before each directory; when it answers
    True the walk raises IndexingCancelled. `files_found` is told after each directory how many files were found;
    they are in `result` (filled when given, empty), in the order found until the walk sorts them at its end."""
    root = root.resolve()
    result = WalkResult() if result is None else result
    rules = _IgnoreRules(())
    exclude_lines = _read_ignore_lines(root / ".git" / "info" / "exclude")
    if exclude_lines:
        rules = rules.extended("", exclude_lines)
    root_stat = root.stat()
    root_identity = (root_stat.st_dev, root_stat.st_ino)
    # (device, inode) of every directory entered: no directory is walked twice, whatever leads to it.
    entered: set[tuple[int, int]] = {root_identity}
    stack = [_Directory(root, "", rules, frozenset((root_identity,)), 0)]
    while stack:
        if should_stop is not None and should_stop():
            raise IndexingCancelled
        directory = stack.pop()
        subdirectories = _walk_directory(directory, result, max_file_size, str(root), entered)
        stack.extend(reversed(subdirectories))  # popped in name order, as a recursive walk would go
        if files_found is not None:
            files_found(len(result.files))
    result.files.sort(key=lambda walked: walked.path)
    result.skipped.sort()
    result.marker_files.sort()
    return result


@dataclass(frozen=True, slots=True)
class _Directory:
    path: Path
    relative: str  # '' for the root
    rules: _IgnoreRules  # the .gitignore rules of its parent
    ancestors: frozenset[tuple[int, int]]  # (device, inode) of itself and every directory above it
    depth: int


def _inside(real_path: str, root_real: str) -> bool:
    return real_path == root_real or real_path.startswith(root_real + os.sep)


def _walk_directory(
    directory: _Directory,
    result: WalkResult,
    max_file_size: int,
    root_real: str,
    entered: set[tuple[int, int]],
) -> list[_Directory]:
    """Record the files of one directory; return its subdirectories to enter."""
    relative_directory = directory.relative
    rules = directory.rules
    gitignore_lines = _read_ignore_lines(directory.path / ".gitignore")
    if gitignore_lines:
        rules = rules.extended(relative_directory, gitignore_lines)
    try:
        with os.scandir(directory.path) as listing:
            entries = list(listing)
    except OSError:
        result.skip(relative_directory or ".", REASON_UNREADABLE)
        return []
    # Regular files first, in the listing's order (the files are sorted once, at the end), known from the listing
    # without a stat; then the rest (directories, links) in name order, which decides which of two ways into one
    # directory is taken.
    others: list[os.DirEntry[str]] = []
    prefix = f"{relative_directory}/" if relative_directory else ""
    for entry in entries:
        try:
            regular = entry.is_file(follow_symlinks=False)
        except OSError:
            regular = False
        if regular:
            _take_file(entry, prefix + entry.name, rules, result, max_file_size)
        else:
            others.append(entry)
    others.sort(key=lambda entry: entry.name)
    subdirectories: list[_Directory] = []
    for entry in others:
        name = entry.name
        relative = prefix + name
        try:
            is_symlink = entry.is_symlink()
            entry_stat = entry.stat(follow_symlinks=True)
        except OSError:
            result.skip(relative, REASON_BROKEN_SYMLINK if _is_link(entry) else REASON_UNREADABLE)
            continue
        is_dir = stat.S_ISDIR(entry_stat.st_mode)
        if is_dir:
            if name.startswith("."):
                result.skip(relative, REASON_HIDDEN_DIRECTORY)
                continue
            if name in SKIPPED_DIRECTORY_NAMES:
                result.skip(relative, REASON_IGNORED_DIRECTORY)
                continue
            if rules.ignored(relative, is_dir=True):
                result.skip(relative, REASON_GITIGNORED)
                continue
            identity = (entry_stat.st_dev, entry_stat.st_ino)
            if identity in directory.ancestors:
                result.skip(relative, REASON_SYMLINK_LOOP)
                continue
            if is_symlink:
                # Never followed: the target is outside the root, or inside it and indexed under its own path.
                inside = _inside(os.path.realpath(entry.path), root_real)
                result.skip(relative, REASON_SYMLINK_DUPLICATE if inside else REASON_SYMLINK_OUTSIDE_ROOT)
                continue
            if identity in entered:  # a bind mount or hard-linked directory seen before
                result.skip(relative, REASON_SYMLINK_DUPLICATE)
                continue
            if directory.depth >= MAX_DIRECTORY_DEPTH:
                result.skip(relative, REASON_TOO_DEEP)
                continue
            entered.add(identity)
            subdirectories.append(
                _Directory(Path(entry.path), relative, rules, directory.ancestors | {identity}, directory.depth + 1)
            )
            continue
        if stat.S_ISREG(entry_stat.st_mode):
            _take_file(entry, relative, rules, result, max_file_size, entry_stat, root_real if is_symlink else None)
    return subdirectories


def _take_file(
    entry: os.DirEntry[str],
    relative: str,
    rules: _IgnoreRules,
    result: WalkResult,
    max_file_size: int,
    entry_stat: os.stat_result | None = None,
    link_under: str | None = None,
) -> None:
    """A regular file, by the same rules in the same order however it was reached. From the directory listing
    (`entry_stat` None) it is stated only when the index takes it: the walk's one system call per source file;
    other files cost none. `link_under`: the entry is a link to it, and this the root's real path; a link is never
    followed (its target is outside the root, or inside it and indexed under its own path)."""
    name = entry.name
    ignorable = bool(rules.specs)  # most directories have no ignore file: no call per file then
    if name in MARKER_FILE_NAMES:
        if not (ignorable and rules.ignored(relative, is_dir=False)):
            result.marker_files.append(relative)
        return
    language = language_for_name(name)
    if language is None:
        result.skip_counts[REASON_UNSUPPORTED_LANGUAGE] += 1
        return
    if ignorable and rules.ignored(relative, is_dir=False):
        result.skip(relative, REASON_GITIGNORED)
        return
    if link_under is not None:
        inside = _inside(os.path.realpath(entry.path), link_under)
        result.skip(relative, REASON_SYMLINK_DUPLICATE if inside else REASON_SYMLINK_OUTSIDE_ROOT)
        return
    if entry_stat is None:
        try:
            entry_stat = entry.stat()
        except OSError:
            result.skip(relative, REASON_UNREADABLE)
            return
    if entry_stat.st_size > max_file_size:
        result.skip(relative, REASON_TOO_LARGE)
        return
    result.files.append(WalkedFile(relative, language, entry_stat.st_size, entry_stat.st_mtime_ns))


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def exclusion_reason(root: Path, path: str) -> str | None:
    """Why the walk would not index the workspace-relative `path` (ignoring its size and content), or None.

    Used for single-file updates (an edited document, a watched-file event), so they follow the walk's rules."""
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return REASON_SYMLINK_OUTSIDE_ROOT
    if language_for_path(parts[-1]) is None:
        return REASON_UNSUPPORTED_LANGUAGE
    if len(parts) - 1 > MAX_DIRECTORY_DEPTH:
        return REASON_TOO_DEEP
    rules = _IgnoreRules(())
    exclude_lines = _read_ignore_lines(root / ".git" / "info" / "exclude")
    if exclude_lines:
        rules = rules.extended("", exclude_lines)
    directory = root
    for depth, name in enumerate(parts[:-1]):
        relative_directory = "/".join(parts[:depth])
        gitignore_lines = _read_ignore_lines(directory / ".gitignore")
        if gitignore_lines:
            rules = rules.extended(relative_directory, gitignore_lines)
        if name.startswith("."):
            return REASON_HIDDEN_DIRECTORY
        if name in SKIPPED_DIRECTORY_NAMES:
            return REASON_IGNORED_DIRECTORY
        relative = "/".join(parts[: depth + 1])
        if rules.ignored(relative, is_dir=True):
            return REASON_GITIGNORED
        directory = directory / name
        if directory.is_symlink():
            real = os.path.realpath(directory)
            return REASON_SYMLINK_DUPLICATE if _inside(real, str(root)) else REASON_SYMLINK_OUTSIDE_ROOT
    gitignore_lines = _read_ignore_lines(directory / ".gitignore")
    if gitignore_lines:
        rules = rules.extended("/".join(parts[:-1]), gitignore_lines)
    if rules.ignored("/".join(parts), is_dir=False):
        return REASON_GITIGNORED
    file_path = directory / parts[-1]
    if file_path.is_symlink():
        real = os.path.realpath(file_path)
        return REASON_SYMLINK_DUPLICATE if _inside(real, str(root)) else REASON_SYMLINK_OUTSIDE_ROOT
    return None


def not_a_project(directory: Path) -> str | None:
    """Why `directory` is never taken as a workspace to index, or None: the file system's root, the home directory
    or a directory above it hold everything below, not a project (a dotfiles repository makes $HOME hold `.git`),
    and walking one would parse all of it. The hub's roots and the command line's implicit one both keep to it."""
    resolved = directory.resolve()
    home = Path.home().resolve()
    if resolved == Path(resolved.anchor):
        return "the file system's root"
    if resolved == home:
        return "your home directory"
    if resolved in home.parents:
        return "above your home directory"
    return None
