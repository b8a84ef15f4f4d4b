"""Structural search with ast-grep (`ast-grep-py`), the field's structural search engine: a pattern in its
pattern language (`$A.get($B)`) over the indexed files of one language, best-ranked files first, each match with
the definition that encloses it. Files are searched in rank order until `limit` matches are found."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsp_hub.index.navigation.common import Completeness, NavigationError, index_completeness, take_snapshot
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

if TYPE_CHECKING:  # ast-grep is imported by a structural search, not with this module
    from ast_grep_py import Pattern

# The index's language names -> ast-grep's, for the languages both know.
AST_GREP_LANGUAGES = {"python": "python", "javascript": "javascript", "typescript": "typescript", "tsx": "tsx",
                      "go": "go", "rust": "rust", "c": "c", "cpp": "cpp", "java": "java", "csharp": "csharp",
                      "ruby": "ruby", "bash": "bash", "kotlin": "kotlin", "swift": "swift", "php": "php",
                      "scala": "scala", "lua": "lua"}
_ALIASES = {"py": "python", "js": "javascript", "ts": "typescript", "c++": "cpp", "cs": "csharp", "rs": "rust",
            "golang": "go", "c#": "csharp"}


def structural_search(index: WorkspaceIndex, pattern: str, language: str, limit: int = DEFAULT_SEARCH_LIMIT,
                      wait: float = 0.0) -> SearchResult:
    """Matches of an ast-grep `pattern` in the workspace's files of `language`, at most `limit` (0: all)."""
    from ast_grep_py import SgRoot

    wanted = _ALIASES.get(language.strip().lower(), language.strip().lower())
    if wanted not in AST_GREP_LANGUAGES:
        raise NavigationError(f"language {language!r} is not one structural search knows: "
                              + ", ".join(sorted(AST_GREP_LANGUAGES)))
    if not pattern.strip():
        raise NavigationError("pattern is empty")
    rule = _pattern_rule(pattern, AST_GREP_LANGUAGES[wanted])
    snapshot = take_snapshot(index, wait)
    completeness = index_completeness(index, snapshot)
    ranks = file_order(snapshot)
    paths = sorted((path for path, record in snapshot.files.items() if record.language == wanted),
                   key=lambda path: (-ranks.get(path, 0.0), path))
    files: list[FileMatches] = []
    total = shown = searched = 0
    unreadable: list[str] = []
    for path in paths:
        if limit > 0 and shown >= limit:
            break
        searched += 1
        try:
            text = (index.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            unreadable.append(path)
            continue
        try:
            found = SgRoot(text, AST_GREP_LANGUAGES[wanted]).root().find_all(pattern=rule)
        except (RuntimeError, ValueError) as error:  # a pattern ast-grep cannot parse
            raise NavigationError(f"structural pattern {pattern!r}: {str(error).splitlines()[0]}") from error
        if not found:
            continue
        entry = FileMatches(path)
        total += len(found)
        for node in found:
            if limit > 0 and shown >= limit:
                break
            start = node.range().start
            entry.matches.append(SearchMatch(start.line + 1, start.column + 1, clipped(node.text().split("\n")[0])))
            shown += 1
        name_enclosing(snapshot, path, entry.matches)
        files.append(entry)
    _report(completeness, unreadable, searched, len(paths), limit)
    result = SearchResult(pattern, f"structural:{wanted}", files, total, len(files), completeness)
    result.unsearched_files = len(paths) - searched
    return result


_EXPRESSION_PROBE = "int __lsp_hub_probe = {};"


def _pattern_rule(pattern: str, language: str) -> str | Pattern:
    """The pattern as ast-grep is to match it. tree-sitter-c reads a call alone (`jv_free($A)`) as a declaration,
    so it matched nothing, and with a `;` only statements: a C or C++ pattern that is an expression is given to
    ast-grep inside an initializer, with that expression's kind as what it selects (ast-grep's pattern context)."""
    if language not in ("c", "cpp") or pattern.rstrip().endswith((";", "}")):
        return pattern
    from ast_grep_py import SgRoot

    context = _EXPRESSION_PROBE.format(pattern)
    root = SgRoot(context, language).root()
    declarator = root.find(kind="init_declarator")
    value = declarator.field("value") if declarator is not None else None
    if value is None or root.find(kind="ERROR") is not None:
        return pattern
    return {"context": context, "selector": value.kind(), "strictness": "smart"}  # smart: ast-grep's default


def _report(completeness: Completeness, unreadable: list[str], searched: int, candidates: int, limit: int) -> None:
    if unreadable:
        completeness.add(f"could not read {len(unreadable)} files (e.g. {unreadable[0]})")
    if searched < candidates:
        completeness.add(f"stopped at {limit} matches after {searched} of {candidates} files")
