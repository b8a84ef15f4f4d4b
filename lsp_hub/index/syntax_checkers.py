"""Syntax checks by each language's own parser where one is at hand, tree-sitter elsewhere and as the fallback.

- Python: CPython's own `compile()` in the hub's interpreter, which is the verdict `python` itself would give
  (including the compiler's errors, such as 'return' outside function). It reports only the first error.
- TypeScript, TSX, JavaScript, JSX: TypeScript's parser (`ts.createSourceFile` and its parse diagnostics, what
  `tsc` reports as syntactic errors), in a node helper process (`typescript_helper.py`), when the hub said where
  TypeScript and node are (`SyntaxCheckers.typescript`).
- JSON: Python's `json`; JSON with comments and trailing commas for tsconfig*.json, jsconfig*.json, .vscode/*.json
  and *.jsonc, as TypeScript and VS Code read them.
- Every other language, and any of the above whose parser is missing, fails or is late: tree-sitter
  (`syntax.check_syntax`), with `fallbackReason` saying why.

Every answer names its `checker` ("cpython-3.11", "typescript-5.9.3", "json" or "tree-sitter"). Ranges are 0-based
lines counted by '\\n' (as the index counts them) and UTF-16 columns.
"""

from __future__ import annotations

import io
import json
import posixpath
import re
import sys
import threading
import tokenize
import warnings
from dataclasses import dataclass
from typing import Any

from lsp_hub.index.languages import SUPPORTED_LANGUAGES, language_for_path
from lsp_hub.index.model import Span
from lsp_hub.index.syntax import SyntaxProblem, check_syntax, lsp_range
from lsp_hub.index.text import decode, utf16_length
from lsp_hub.index.typescript_helper import TypeScriptRuntime, TypeScriptUnavailable, helper_for

CPYTHON_CHECKER = f"cpython-{sys.version_info.major}.{sys.version_info.minor}"
JSON_CHECKER = "json"
TREE_SITTER_CHECKER = "tree-sitter"

# Languages only the syntax check knows (the index does not extract symbols from them).
JSON_LANGUAGES = frozenset(("json", "jsonc"))
SYNTAX_LANGUAGES = SUPPORTED_LANGUAGES | JSON_LANGUAGES

# The index's language and the file's extension -> TypeScript's ScriptKind, as ts_syntax.js names them.
_TYPESCRIPT_KINDS = {"typescript": "ts", "tsx": "tsx", "javascript": "js"}
_JSONC_NAME = re.compile(r"^(tsconfig|jsconfig)(\..*)?\.json$|\.jsonc$", re.IGNORECASE)


def syntax_language_for_path(path: str) -> str | None:
    """The language the syntax check judges a file as: the index's language, else "json" or "jsonc"."""
    language = language_for_path(path)
    if language is not None:
        return language
    normalized = path.replace("\\", "/")
    name = posixpath.basename(normalized).lower()
    if _JSONC_NAME.search(name) or (name.endswith(".json") and
                                    posixpath.basename(posixpath.dirname(normalized)) == ".vscode"):
        return "jsonc"
    if name.endswith(".json") and name != ".json":
        return "json"
    return None


@dataclass(frozen=True, slots=True)
class SyntaxCheckers:
    """What the hub tells the index about the parsers it may run. Python and JSON need nothing from outside; for
    TypeScript the hub finds node and a TypeScript it trusts (`typescript`), or says why there is none."""

    typescript: TypeScriptRuntime | None = None
    typescript_missing: str = "no TypeScript was given to the index"

    def describe(self) -> dict[str, Any]:
        """For status: which checker each family of languages gets."""
        typescript: dict[str, Any]
        if self.typescript is None:
            typescript = {"checker": TREE_SITTER_CHECKER, "reason": self.typescript_missing}
        else:
            typescript = {"checker": self.typescript.checker_name, "typescript": self.typescript.typescript,
                          "node": self.typescript.node}
            helper = helper_for(self.typescript)
            typescript["pid"] = helper.pid
            typescript["starts"] = helper.starts
        return {"python": {"checker": CPYTHON_CHECKER}, "typescript": typescript, "json": {"checker": JSON_CHECKER}}


NO_EXTERNAL_CHECKERS = SyntaxCheckers()


@dataclass(frozen=True, slots=True)
class SyntaxVerdict:
    problems: list[SyntaxProblem]
    checker: str
    fallback_reason: str | None = None  # why tree-sitter judged instead of the language's own parser


def check(source: bytes, language: str, path: str = "", checkers: SyntaxCheckers = NO_EXTERNAL_CHECKERS
          ) -> SyntaxVerdict:
    """Judge `source` with the best parser at hand for `language` (one of SYNTAX_LANGUAGES)."""
    if language == "python":
        try:
            return SyntaxVerdict(python_problems(source, path), CPYTHON_CHECKER)
        except (RecursionError, MemoryError) as error:  # nesting deeper than CPython's compiler goes
            return _tree_sitter(source, language, f"CPython's compiler gave up: {type(error).__name__}")
    if language in JSON_LANGUAGES:
        return SyntaxVerdict(json_problems(source, allow_comments=language == "jsonc"), JSON_CHECKER)
    if language in _TYPESCRIPT_KINDS:
        if checkers.typescript is None:
            return _tree_sitter(source, language, checkers.typescript_missing)
        try:
            return SyntaxVerdict(typescript_problems(source, language, path, checkers.typescript),
                                 checkers.typescript.checker_name)
        except TypeScriptUnavailable as error:
            return _tree_sitter(source, language, str(error))
    # A header may be C++ (a `.h` is both languages'); a `.c` file is C.
    return SyntaxVerdict(check_syntax(source, language, may_be_cpp=path.lower().endswith(".h")), TREE_SITTER_CHECKER)


def _tree_sitter(source: bytes, language: str, reason: str) -> SyntaxVerdict:
    if language not in SUPPORTED_LANGUAGES:  # no grammar to fall back on
        return SyntaxVerdict([], TREE_SITTER_CHECKER, reason)
    return SyntaxVerdict(check_syntax(source, language), TREE_SITTER_CHECKER, reason)


def syntax_check_result(source: bytes | None, language: str | None, path: str = "",
                        checkers: SyntaxCheckers = NO_EXTERNAL_CHECKERS) -> dict[str, Any]:
    """The `lspHub.syntaxCheck` result: `{ok, checked, language, checker, errors: [{range, message}], reason?,
    fallbackReason?}`, ranges as LSP ranges. Unknown languages give `checked: False, reason:
    "unsupported_language"`; no text at all gives `checked: False, reason: "no_text"`."""
    if language is None or language not in SYNTAX_LANGUAGES:
        return {"ok": True, "checked": False, "language": language, "errors": [], "reason": "unsupported_language"}
    if source is None:
        return {"ok": True, "checked": False, "language": language, "errors": [], "reason": "no_text"}
    verdict = check(source, language, path, checkers)
    result: dict[str, Any] = {
        "ok": not verdict.problems,
        "checked": True,
        "language": language,
        "checker": verdict.checker,
        "errors": [{"range": lsp_range(problem.span), "message": problem.message} for problem in verdict.problems],
    }
    if verdict.fallback_reason is not None:
        result["fallbackReason"] = verdict.fallback_reason
    return result


# --- Python -----------------------------------------------------------------------------------------------------

# compile() warns (SyntaxWarning, DeprecationWarning for invalid escapes) through the process-wide warnings
# filters, which catch_warnings swaps without regard for other threads; checks take turns here. compile() holds the
# GIL throughout, so the lock costs no parallelism.
_compile_lock = threading.Lock()


def python_problems(source: bytes, path: str = "") -> list[SyntaxProblem]:
    """CPython's verdict on `source`: the first error `compile()` raises, or none.

    The whole compile (not only `ast.PyCF_ONLY_AST`) is run: the compiler's own errors ('return' outside function,
    'nonlocal' at module level) are syntax errors to `python` too, and on a 2,000-line file it costs no more than
    building the AST objects. The text is decoded as `python` would decode the file (a coding declaration, a BOM),
    then compiled as a str: CPython gives columns in characters for a str but in bytes for bytes. Bytes it cannot
    decode are compiled as they are, so the error is CPython's own."""
    text = _python_text(source)
    try:
        with _compile_lock, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text if text is not None else source, path or "<unknown>", "exec", dont_inherit=True)
    except SyntaxError as error:  # IndentationError and TabError included
        lines = (text if text is not None else decode(source)).split("\n")
        offset, end_offset = error.offset, error.end_offset
        if text is None and error.lineno is not None:  # byte offsets: count the characters before them instead
            line_bytes = source.split(b"\n")[min(error.lineno, len(lines)) - 1]
            offset = None if offset is None else len(decode(line_bytes[: max(offset - 1, 0)])) + 1
            end_offset = None if end_offset is None else len(decode(line_bytes[: max(end_offset - 1, 0)])) + 1
        return [_python_problem(lines, source, error.msg or str(error), error.lineno, offset, error.end_lineno,
                                end_offset)]
    except ValueError as error:  # "source code string cannot contain null bytes" (a ValueError up to 3.11.3)
        return [_python_problem(decode(source).split("\n"), source, str(error), None, None, None, None)]
    return []


def _python_text(source: bytes) -> str | None:
    """`source` decoded as CPython decodes a file (PEP 263 declaration, else UTF-8; a BOM dropped), or None."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None


def _python_problem(lines: list[str], source: bytes, message: str, line: int | None, offset: int | None,
                    end_line: int | None, end_offset: int | None) -> SyntaxProblem:
    """A CPython error as a problem; CPython's lines are 1-based, its offsets 1-based characters of the line."""
    if line is None:
        null = source.find(b"\0")
        if null >= 0:  # the null byte is the error: point at it
            line = source.count(b"\n", 0, null) + 1
            offset = len(decode(source[source.rfind(b"\n", 0, null) + 1 : null])) + 1
        else:
            line, offset = 1, 1
    line_index = min(max(line - 1, 0), len(lines) - 1)
    text = lines[line_index].rstrip("\r")
    start_char = min(max((offset or 1) - 1, 0), len(text))
    if end_line == line and end_offset is not None and end_offset - 1 > start_char:
        end_char = min(end_offset - 1, len(text))
    else:  # no end, or one on a later line: mark one character, as an editor cannot paint half the file red
        end_char = min(start_char + 1, len(text))
    start = utf16_length(text[:start_char])
    end = start + utf16_length(text[start_char:end_char])
    return SyntaxProblem(Span(line_index, start, line_index, end), message)


# --- JSON -------------------------------------------------------------------------------------------------------

# The pieces of JSON text that can hide a comment's or comma's look-alike: strings (complete or not) and comments.
_JSONC_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"?|//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/)?|,', re.DOTALL)
_CLOSERS_AFTER = re.compile(r"\s*[}\]]")


class _NotStandardJson(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotStandardJson(name)  # Python's json takes NaN and Infinity; JSON has neither


def json_problems(source: bytes, *, allow_comments: bool = False) -> list[SyntaxProblem]:
    """The first error of Python's JSON parser, at its line and column. With `allow_comments` (JSONC), comments and
    trailing commas are blanked out first, position for position, and a document of nothing else is valid."""
    text = decode(source)
    if text.startswith("\ufeff"):
        text = " " + text[1:]  # a BOM: editors write it, parsers skip it
    if allow_comments:
        text, unterminated = _blank_comments_and_trailing_commas(text)
        if unterminated is not None:
            return [_json_problem(text, unterminated, "Unterminated comment")]
        if not text.strip():
            return []
    try:
        json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        return [_json_problem(text, error.pos, error.msg)]
    except _NotStandardJson as error:
        position = _constant_position(text, str(error))
        return [_json_problem(text, position, f"{error} is not a JSON value")]
    except RecursionError:
        return [_json_problem(text, 0, "Nested too deeply")]
    return []


def _blank_comments_and_trailing_commas(text: str) -> tuple[str, int | None]:
    """`text` with comments and trailing commas replaced by spaces (line breaks kept), and the offset of an
    unterminated block comment, if any."""
    pieces: list[str] = []
    last = 0
    unterminated: int | None = None
    for match in _JSONC_TOKENS.finditer(text):
        token = match.group()
        if token.startswith("//") or token.startswith("/*"):
            if (token.startswith("/*") and not token.endswith("*/")) or token == "/*/":
                unterminated = match.start() if unterminated is None else unterminated
            blank = re.sub(r"[^\n]", " ", token)
        elif token == "," and _CLOSERS_AFTER.match(_without_comments(text, match.end())):
            blank = " "
        else:
            continue
        pieces.append(text[last : match.start()])
        pieces.append(blank)
        last = match.end()
    pieces.append(text[last:])
    return "".join(pieces), unterminated


def _without_comments(text: str, start: int) -> str:
    """The text after `start` with leading whitespace and comments skipped (enough to see what follows a comma)."""
    position = start
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if text.startswith("//", position):
            end = text.find("\n", position)
            position = len(text) if end < 0 else end
        elif text.startswith("/*", position):
            end = text.find("*/", position + 2)
            position = len(text) if end < 0 else end + 2
        else:
            return text[position : position + 1]


def _constant_position(text: str, name: str) -> int:
    """Where the first NaN/Infinity outside a string is (Python's json does not say)."""
    word = re.escape(name.lstrip("-"))
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|-?(?<![\w.])' + word + r"\b", text):
        if not match.group().startswith('"'):
            return match.start()
    return 0


def _json_problem(text: str, position: int, message: str) -> SyntaxProblem:
    line = text.count("\n", 0, position)
    line_start = text.rfind("\n", 0, position) + 1
    line_end = text.find("\n", position)
    line_end = len(text) if line_end < 0 else line_end
    start = utf16_length(text[line_start:position])
    end = start + (utf16_length(text[position : position + 1]) if position < line_end else 0)
    return SyntaxProblem(Span(line, start, line, end), message)


# --- TypeScript -------------------------------------------------------------------------------------------------


def typescript_kind(language: str, path: str) -> str:
    """TypeScript's ScriptKind for a file (ts, tsx, js or jsx), as ts_syntax.js names them."""
    kind = _TYPESCRIPT_KINDS[language]
    if kind == "js" and path.lower().endswith(".jsx"):
        return "jsx"
    return kind


def typescript_problems(source: bytes, language: str, path: str, runtime: TypeScriptRuntime) -> list[SyntaxProblem]:
    """TypeScript's parse diagnostics of `source`; raises TypeScriptUnavailable when its parser cannot answer."""
    text = decode(source)
    file_name = posixpath.basename(path.replace("\\", "/")) or "file.ts"
    diagnostics = helper_for(runtime).check(text, file_name, typescript_kind(language, path))
    if not diagnostics:
        return []
    offsets = _Utf16Lines(text)
    problems = []
    for diagnostic in diagnostics:
        start_line, start_column = offsets.position(diagnostic.start)
        end_line, end_column = offsets.position(diagnostic.start + diagnostic.length)
        if end_line != start_line:  # cut at the end of the first line, as the other checkers do
            end_line, end_column = start_line, offsets.line_length(start_line)
        problems.append(SyntaxProblem(Span(start_line, start_column, end_line, end_column), diagnostic.message))
    return problems


class _Utf16Lines:
    """UTF-16 offsets of a text (as JavaScript counts them) to (line, UTF-16 column), lines split at '\\n' only."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.starts: list[int] = []
        total = 0
        for line in self.lines:
            self.starts.append(total)
            total += utf16_length(line) + 1

    def position(self, offset: int) -> tuple[int, int]:
        low, high = 0, len(self.starts) - 1
        while low < high:  # the last line starting at or before the offset
            middle = (low + high + 1) // 2
            if self.starts[middle] <= offset:
                low = middle
            else:
                high = middle - 1
        return low, min(offset - self.starts[low], self.line_length(low))

    def line_length(self, line: int) -> int:
        return utf16_length(self.lines[line].rstrip("\r"))
