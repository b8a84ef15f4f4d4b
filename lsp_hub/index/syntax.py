"""Syntax errors of one file from its tree-sitter parse: the `lspHub.syntaxCheck` answer and the hub's fallback
diagnostics for languages without a running server.

tree-sitter marks what it could not parse with ERROR nodes (tokens it had to skip) and MISSING nodes (tokens it
invented to finish a construct). One mistake often yields nested ERROR nodes, so the report keeps one problem per
mistake:

- a MISSING node becomes "missing ';'" (or "missing identifier") at its zero-width position;
- an outermost ERROR node that holds an opening bracket it never closes becomes "'(' was never closed" on that
  bracket, and the ERROR nodes nested in it (consequences of the bracket) are dropped;
- otherwise the innermost ERROR nodes are reported: one skipped token as "unexpected 'else'", a skipped run of
  tokens as "syntax error near 'return x +'", with " in <construct>" naming the enclosing grammar node when there
  is one ("unexpected '=' in let_declaration", "syntax error in block near 'int x = 1'").

An ERROR spanning several lines is reported up to the end of its first line, so an editor does not paint half the
file red. Ranges are 0-based lines and UTF-16 columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsp_hub.index.languages import SUPPORTED_LANGUAGES, get_parser
from lsp_hub.index.model import Span
from lsp_hub.index.text import PositionConverter, decode

if TYPE_CHECKING:
    import tree_sitter

MAX_PROBLEMS = 100
_TOKEN_PREVIEW_CHARS = 24
_OPENING_BRACKETS = {"(": ")", "[": "]", "{": "}"}
_CLOSING_BRACKETS = {")": "(", "]": "[", "}": "{"}
_ROOT_TYPES = frozenset(("module", "program", "source_file", "translation_unit", "compilation_unit"))


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    span: Span
    message: str


def check_syntax(source: bytes, language: str, may_be_cpp: bool = False) -> list[SyntaxProblem]:
    """Syntax problems of `source` in document order, at most MAX_PROBLEMS; raises ValueError for an unsupported
    language, never for any content. `may_be_cpp`: C that may be C++ (a `.h`), see `parse_best`."""
    if language not in SUPPORTED_LANGUAGES:
        raise ValueError(f"unsupported language: {language!r}")
    tree, _grammar, errors = parse_best(source, language, may_be_cpp)
    if not errors:
        return []
    return _Checker(source).problems(tree.root_node)


def parse_best(source: bytes, language: str, may_be_cpp: bool = False) -> tuple[tree_sitter.Tree, str, int]:
    """`source` parsed with `language`'s grammar: (tree, grammar, count of errors). C that `may_be_cpp` (fmt's
    base.h, most C++ libraries' API: a `.h` is both languages') is read again with the C++ grammar when the C one
    finds errors, and that reading is kept when it finds fewer."""
    tree = get_parser(language).parse(source)
    errors = count_syntax_errors(tree.root_node) if tree.root_node.has_error else 0
    if errors and may_be_cpp and language == "c":
        as_cpp = get_parser("cpp").parse(source)
        cpp_errors = count_syntax_errors(as_cpp.root_node) if as_cpp.root_node.has_error else 0
        if cpp_errors < errors:
            return as_cpp, "cpp", cpp_errors
    return tree, language, errors


def count_syntax_errors(root: tree_sitter.Node) -> int:
    """Number of ERROR and MISSING nodes, visiting only subtrees that contain errors."""
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_missing:
            count += 1
            continue
        if node.is_error:
            count += 1
        # A leaf ERROR (an unexpected character) reports has_error False, hence the is_error test.
        stack.extend(child for child in node.children if child.has_error or child.is_error)
    return count


def lsp_range(span: Span) -> dict[str, dict[str, int]]:
    """A Span as an LSP Range object."""
    return {
        "start": {"line": span.start_line, "character": span.start_col},
        "end": {"line": span.end_line, "character": span.end_col},
    }


class _Checker:
    def __init__(self, source: bytes) -> None:
        self.source = source
        self.positions = PositionConverter(source)

    def problems(self, root: tree_sitter.Node) -> list[SyntaxProblem]:
        found: list[tuple[int, SyntaxProblem]] = []
        self._visit(root, found)
        found.sort(key=lambda entry: (entry[0], entry[1].span.start_line, entry[1].span.start_col))
        unique: list[SyntaxProblem] = []
        seen: set[tuple[int, int, str]] = set()
        for _start_byte, problem in found:
            key = (problem.span.start_line, problem.span.start_col, problem.message)
            if key not in seen:
                seen.add(key)
                unique.append(problem)
            if len(unique) >= MAX_PROBLEMS:
                break
        return unique

    def _visit(self, root: tree_sitter.Node, found: list[tuple[int, SyntaxProblem]]) -> None:
        """Walk only subtrees that contain errors, outermost ERROR nodes first."""
        stack = [root]
        while stack and len(found) < MAX_PROBLEMS * 4:
            node = stack.pop()
            if node.is_missing:
                found.append((node.start_byte, self._missing(node)))
                continue
            if node.is_error:
                self._report_error(node, found)
                continue
            stack.extend(reversed([child for child in node.children if child.has_error or child.is_error]))

    def _report_error(self, error: tree_sitter.Node, found: list[tuple[int, SyntaxProblem]]) -> None:
        unclosed = _unclosed_bracket(error)
        if unclosed is not None:
            found.append((unclosed.start_byte, SyntaxProblem(self.positions.span(unclosed),
                                                             f"'{unclosed.type}' was never closed")))
            self._report_missing_inside(error, found)
            return
        inner_errors = [child for child in error.children if child.has_error or child.is_error]
        if not inner_errors:
            found.append((error.start_byte, self._unexpected(error)))
            return
        for child in inner_errors:
            if child.is_missing:
                found.append((child.start_byte, self._missing(child)))
            elif child.is_error:
                self._report_error(child, found)
            else:
                before = len(found)
                self._visit(child, found)
                if len(found) == before:  # nested ERRORs explained nothing: report this one
                    found.append((error.start_byte, self._unexpected(error)))

    def _report_missing_inside(self, node: tree_sitter.Node, found: list[tuple[int, SyntaxProblem]]) -> None:
        stack = [child for child in node.children if child.has_error]
        while stack:
            current = stack.pop()
            if current.is_missing:
                found.append((current.start_byte, self._missing(current)))
            else:
                stack.extend(child for child in current.children if child.has_error)  # leaf ERRORs: no MISSING

    def _missing(self, node: tree_sitter.Node) -> SyntaxProblem:
        what = node.type if node.is_named else f"'{node.type}'"
        return SyntaxProblem(self.positions.span(node), f"missing {what}")

    def _unexpected(self, error: tree_sitter.Node) -> SyntaxProblem:
        """"unexpected 'else'" for a skipped token, "syntax error near 'return x +'" for a skipped run of them."""
        parent = error.parent
        context = ""
        if parent is not None and parent.type not in _ROOT_TYPES and not parent.is_error:
            context = f" in {parent.type}"
        text = _preview(decode(self.source[error.start_byte : min(error.end_byte, error.start_byte + 200)]))
        children = error.children
        if len(children) <= 1 and (not children or children[0].child_count == 0):
            message = f"unexpected '{text}'{context}" if text else f"unexpected input{context}"
        else:
            message = f"syntax error{context} near '{text}'"
        return SyntaxProblem(self._first_line_span(error), message)

    def _first_line_span(self, node: tree_sitter.Node) -> Span:
        span = self.positions.span(node)
        if span.end_line == span.start_line:
            return span
        start_byte = node.start_byte
        line_end = self.source.find(b"\n", start_byte)
        if line_end < 0:
            line_end = len(self.source)
        if line_end > start_byte and self.source[line_end - 1 : line_end] == b"\r":
            line_end -= 1
        start_column_bytes = node.start_point[1]
        end_column_bytes = start_column_bytes + (line_end - start_byte)
        return Span(span.start_line, span.start_col, span.start_line,
                    self.positions.column(line_end, end_column_bytes))


def _unclosed_bracket(error: tree_sitter.Node) -> tree_sitter.Node | None:
    """The first opening bracket among the ERROR node's own tokens that no later token closes."""
    open_brackets: list[tree_sitter.Node] = []
    for child in error.children:
        kind = child.type
        if child.child_count == 0 and not child.is_missing:
            if kind in _OPENING_BRACKETS:
                open_brackets.append(child)
            elif kind in _CLOSING_BRACKETS and open_brackets and open_brackets[-1].type == _CLOSING_BRACKETS[kind]:
                open_brackets.pop()
    return open_brackets[0] if open_brackets else None


def _preview(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _TOKEN_PREVIEW_CHARS:
        return text[: _TOKEN_PREVIEW_CHARS - 3] + "..."
    return text
