"""Supported languages, extension mapping, grammar loading and that every tags query compiles."""

from __future__ import annotations

import threading

import pytest
import tree_sitter

from lsp_hub.index.extract import get_query, query_source
from lsp_hub.index.languages import SUPPORTED_LANGUAGES, get_language, get_parser, language_for_path

EXPECTED_LANGUAGES = {
    "python",
    "typescript",
    "tsx",
    "javascript",
    "go",
    "rust",
    "java",
    "c",
    "cpp",
    "csharp",
    "ruby",
}


def test_supported_languages_are_the_documented_set() -> None:
    assert set(SUPPORTED_LANGUAGES) == EXPECTED_LANGUAGES


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"),
        ("stubs/x.pyi", "python"),
        ("src/app.ts", "typescript"),
        ("src/app.mts", "typescript"),
        ("src/app.cts", "typescript"),
        ("src/App.tsx", "tsx"),
        ("src/app.js", "javascript"),
        ("src/app.mjs", "javascript"),
        ("src/app.cjs", "javascript"),
        ("src/App.jsx", "javascript"),
        ("main.go", "go"),
        ("src/lib.rs", "rust"),
        ("A.java", "java"),
        ("x.c", "c"),
        ("x.h", "c"),
        ("x.cc", "cpp"),
        ("x.cpp", "cpp"),
        ("x.cxx", "cpp"),
        ("x.hpp", "cpp"),
        ("x.hh", "cpp"),
        ("x.hxx", "cpp"),
        ("Program.cs", "csharp"),
        ("lib/x.rb", "ruby"),
        ("UPPER.PY", "python"),
        ("windows\\style\\path.go", "go"),
    ],
)
def test_language_for_path(path: str, language: str) -> None:
    assert language_for_path(path) == language


@pytest.mark.parametrize("path", ["README.md", "Makefile", ".py", "x.pyc", "archive.tar.gz", "noext", "dir.py/file"])
def test_language_for_path_rejects_other_files(path: str) -> None:
    assert language_for_path(path) is None


@pytest.mark.parametrize("language", sorted(EXPECTED_LANGUAGES))
def test_grammar_loads_and_parsers_are_cached(language: str) -> None:
    assert isinstance(get_language(language), tree_sitter.Language)
    parser = get_parser(language)
    assert parser is get_parser(language)
    tree = parser.parse(b"")
    assert tree.root_node is not None


@pytest.mark.parametrize("language", sorted(EXPECTED_LANGUAGES))
def test_tags_query_compiles_and_uses_known_captures(language: str) -> None:
    query = get_query(language)
    assert query.pattern_count > 0
    names = {query.capture_name(index) for index in range(query.capture_count)}
    allowed_prefixes = ("definition.", "reference.", "scope.", "import", "_")
    allowed_exact = {
        "name",
        "receiver",
        "container",
        "field",
        "type",
        "local",
        "made_by_call",
        "literal",
        "parameter",
        "decorator",
        "decorated",
        "registration",
        "registrar",
        "handler",
        "test",
        "test.title",
        "test.callee",
        "test.body",
    }
    unknown = {name for name in names if name not in allowed_exact and not name.startswith(allowed_prefixes)}
    assert not unknown, f"{language}: undocumented captures {unknown}"
    assert any(name.startswith("definition.") for name in names)
    assert any(name == "reference.call" for name in names)
    assert "import.module" in names


def test_inherited_query_files_are_included_once() -> None:
    tsx = query_source("tsx")
    # tsx inherits typescript and jsx; typescript inherits ecma: each file's text appears once.
    assert tsx.count("; inherits: ecma") == 1
    assert tsx.count("(jsx_self_closing_element") == 2
    assert "(jsx_self_closing_element" not in query_source("typescript")


def test_each_thread_gets_its_own_parser() -> None:
    main_parser = get_parser("python")
    seen: list[tree_sitter.Parser] = []
    worker = threading.Thread(target=lambda: seen.append(get_parser("python")))
    worker.start()
    worker.join()
    assert seen and seen[0] is not main_parser
    assert get_parser("python") is main_parser


def test_unsupported_language_is_rejected() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        get_parser("cobol")
