"""Syntax problems: precise positions, readable messages, no cascades, and none on valid files."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_hub.index.languages import language_for_path
from lsp_hub.index.syntax import MAX_PROBLEMS, SyntaxProblem, check_syntax
from lsp_hub.index.syntax_checkers import syntax_check_result

VALID_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "valid"


def problems(language: str, source: str) -> list[tuple[int, int, str]]:
    return [(p.span.start_line, p.span.start_col, p.message) for p in check_syntax(source.encode(), language)]


@pytest.mark.parametrize(
    ("language", "source", "expected"),
    [
        ("python", "def f(:\n    pass\n", [(0, 6, "missing ')'")]),
        ("python", "x = (1, 2\ny = 3\n", [(0, 4, "'(' was never closed")]),
        ("python", "if x:\n    pass\nelse\n    pass\n", [(2, 0, "unexpected 'else'")]),
        ("python", "print(1 +)\n", [(0, 8, "unexpected '+' in argument_list")]),
        ("typescript", "function f( { return 1; }\n", [(0, 10, "'(' was never closed")]),
        ("typescript", "const x = ;\n", [(0, 8, "unexpected '=' in lexical_declaration")]),
        ("go", "package main\n\nfunc main() {\n\tx := \n}\n", [(3, 5, "missing identifier")]),
        ("go", "package main\nfunc f( {}\n", [(1, 7, "missing ')'")]),
        ("rust", "fn main() {\n    let x = 1\n}\n", [(1, 13, "missing ';'")]),
        ("rust", "fn main() { let x = ; }\n", [(0, 18, "unexpected '=' in let_declaration")]),
        ("c", "int main(void) {\n  return 0\n}\n", [(1, 10, "missing ';'")]),
        ("c", "int f( { }\n", [(0, 5, "'(' was never closed")]),
        ("java", "class A {\n  void f() { int x = 1 }\n}\n", [(1, 22, "missing ';'")]),
        ("java", "class A { void f( { } }\n", [(0, 17, "missing ')'")]),
        ("cpp", "int main() { return 0 }\n", [(0, 21, "missing ';'")]),
        ("ruby", "class A\n", [(0, 7, "missing 'end'")]),
        ("ruby", "class A\n  def f\n  end\n", [(0, 0, "syntax error near 'class A def f end'")]),
        ("csharp", "class A { void F() { int x = 1 } }\n", [(0, 21, "syntax error in block near 'int x = 1'")]),
        ("tsx", "const a = <div>{1</div>;\n", [(0, 15, "'{' was never closed")]),
    ],
)
def test_errors_are_located_and_described(language: str, source: str, expected: list[tuple[int, int, str]]) -> None:
    assert problems(language, source) == expected


def test_missing_node_has_zero_width_and_error_covers_the_token() -> None:
    [missing] = check_syntax(b"def f(:\n    pass\n", "python")
    assert (missing.span.start_line, missing.span.start_col) == (missing.span.end_line, missing.span.end_col)
    [unexpected] = check_syntax(b"if x:\n    pass\nelse\n    pass\n", "python")
    assert (unexpected.span.start_col, unexpected.span.end_col) == (0, 4)


def test_multi_line_error_is_cut_at_the_end_of_its_first_line() -> None:
    found = check_syntax(b"def f(x):\n  return x +\n", "python")
    assert found
    for problem in found:
        assert problem.span.start_line == problem.span.end_line


def test_columns_are_utf16_on_non_ascii_lines() -> None:
    # 'é' is one UTF-16 unit but two UTF-8 bytes; '😀' is two UTF-16 units and four bytes.
    [problem] = check_syntax('s = "é😀"; f(:\n'.encode(), "python")
    assert problem.message == "'(' was never closed"
    column = len('s = "é😀"; f'.encode("utf-16-le")) // 2
    assert column == 12
    assert (problem.span.start_col, problem.span.end_col) == (column, column + 1)


def test_nested_errors_are_not_reported_as_a_cascade() -> None:
    found = problems("typescript", "function f( { return 1; }\n")
    assert len(found) == 1


def test_each_separate_mistake_is_reported() -> None:
    found = problems("python", "def a(:\n    pass\n\ndef b(:\n    pass\n")
    assert [(line, message) for line, _column, message in found] == [(0, "missing ')'"), (3, "missing ')'")]


def test_problem_count_is_capped() -> None:
    source = "".join(f"def f{index}(:\n    pass\n" for index in range(MAX_PROBLEMS + 50))
    assert len(check_syntax(source.encode(), "python")) == MAX_PROBLEMS


@pytest.mark.parametrize("source", [b"", b"\xff\xfe\x00", b"x" * 100_000 + b"(", b"\x00" * 10, b"\"" * 999])
def test_never_raises_on_odd_input(source: bytes) -> None:
    for language in ("python", "go", "c", "ruby"):
        result = check_syntax(source, language)
        assert all(isinstance(problem, SyntaxProblem) and problem.message for problem in result)


def test_invalid_utf8_is_reported_with_replacement_characters() -> None:
    found = check_syntax(b"x = 1\n\xff\xfe = 2\n", "python")
    assert found
    assert found[0].span.start_line == 1


@pytest.mark.parametrize("fixture", sorted(VALID_FIXTURES.iterdir()), ids=lambda path: path.name)
def test_no_errors_on_valid_files(fixture: Path) -> None:
    language = language_for_path(fixture.name)
    assert language is not None, fixture.name
    assert check_syntax(fixture.read_bytes(), language) == []


def test_valid_fixtures_cover_every_supported_language() -> None:
    covered = {language_for_path(path.name) for path in VALID_FIXTURES.iterdir()}
    assert covered == {"python", "typescript", "tsx", "javascript", "go", "rust", "java", "c", "cpp", "csharp",
                       "ruby"}


def test_check_result_shape_with_errors() -> None:
    result = syntax_check_result(b"fn main() { let x = ; }\n", "rust")
    assert result == {
        "ok": False,
        "checked": True,
        "language": "rust",
        "checker": "tree-sitter",
        "errors": [
            {
                "range": {"start": {"line": 0, "character": 18}, "end": {"line": 0, "character": 19}},
                "message": "unexpected '=' in let_declaration",
            }
        ],
    }


def test_check_result_shape_when_valid() -> None:
    assert syntax_check_result(b"x = 1\n", "python") == {"ok": True, "checked": True, "language": "python",
                                                           "checker": "cpython-3.11", "errors": []}


@pytest.mark.parametrize("language", [None, "markdown", "cobol"])
def test_unsupported_language_is_not_checked(language: str | None) -> None:
    result = syntax_check_result(b"anything (", language)
    assert result["ok"] is True
    assert result["checked"] is False
    assert result["reason"] == "unsupported_language"
    assert result["errors"] == []


def test_missing_text_is_not_checked() -> None:
    result = syntax_check_result(None, "python")
    assert (result["ok"], result["checked"], result["reason"]) == (True, False, "no_text")


def test_check_syntax_rejects_unsupported_language() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        check_syntax(b"", "cobol")
