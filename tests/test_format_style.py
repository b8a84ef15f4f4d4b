"""lsp_hub.agents.format_style: a project's formatting options (editorconfig, prettier, inference) and which lines
a write changed. Pure: files in a temporary directory, no servers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from lsp_hub.agents.changed_lines import (
    LineBlock,
    block_range,
    changed_blocks,
    changes_outside,
    edits_overlap,
    text_lines,
)
from lsp_hub.agents.format_style import (
    editorconfig_glob_matches,
    editorconfig_properties,
    infer_indentation,
    project_style,
)

TWO_SPACES = "export function f(a: number): number {\n  if (a) {\n    return 1;\n  }\n  return 2;\n}\n"
FOUR_SPACES = "def f(a):\n    if a:\n        return 1\n    return 2\n"
TABS = "func f() {\n\tif a {\n\t\treturn\n\t}\n}\n"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ================================================================================================ editorconfig globs
@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("*", "a.ts", True),
        ("*", "src/deep/a.ts", True),  # no `/`: the name in any directory
        ("*.ts", "src/a.ts", True),
        ("*.ts", "src/a.tsx", False),
        ("*.{ts,tsx}", "src/a.tsx", True),
        ("*.{ts,tsx}", "src/a.js", False),
        ("{package.json,*.yml}", "package.json", True),
        ("{package.json,*.yml}", "ci/build.yml", True),
        ("*.{js,{ts,tsx}}", "a.tsx", True),  # nested braces
        ("src/*.ts", "src/a.ts", True),
        ("src/*.ts", "src/lib/a.ts", False),  # `*` stops at `/`
        ("src/**.ts", "src/lib/a.ts", True),  # `**` does not
        ("/src/**/*.ts", "src/lib/a.ts", True),
        ("lib/**", "src/lib/a.ts", False),  # with a `/`: relative to the .editorconfig
        ("a?.py", "ab.py", True),
        ("a?.py", "a/.py", False),
        ("[abc].py", "b.py", True),
        ("[!abc].py", "b.py", False),
        ("[!abc].py", "d.py", True),
        ("file{1..3}.txt", "file2.txt", True),
        ("file{1..3}.txt", "file4.txt", False),
        ("{single}.py", "{single}.py", True),  # one alternative: literal braces
        ("Makefile", "sub/Makefile", True),
        (r"\*.py", "*.py", True),
        (r"\*.py", "a.py", False),
    ],
)
def test_editorconfig_globs(glob: str, path: str, matches: bool) -> None:
    assert editorconfig_glob_matches(glob, path) is matches


def test_nearer_editorconfig_wins_and_root_true_stops_the_walk(tmp_path: Path) -> None:
    root = tmp_path / "project"
    _write(tmp_path / ".editorconfig", "root = true\n[*]\nindent_size = 8\ntrim_trailing_whitespace = true\n")
    _write(
        root / ".editorconfig", "# the project\n[*]\nindent_style = space\nindent_size = 4\n[*.ts]\nindent_size = 2\n"
    )
    _write(root / "web" / ".editorconfig", "[*.ts]\ninsert_final_newline = true\n[lib/**]\nindent_style = tab\n")
    source = root / "web" / "src" / "a.ts"
    properties, used = editorconfig_properties(source, root)
    # Above the workspace root is not read; later sections and nearer files override.
    assert properties == {"indent_style": "space", "indent_size": "2", "insert_final_newline": "true"}
    assert used == [root / ".editorconfig", root / "web" / ".editorconfig"]
    assert editorconfig_properties(root / "web" / "lib" / "x.ts", root)[0]["indent_style"] == "tab"

    _write(root / "web" / ".editorconfig", "root = true\n[*.ts]\nindent_size = 3\n")
    properties, used = editorconfig_properties(source, root)
    assert properties == {"indent_size": "3"} and used == [root / "web" / ".editorconfig"]


def test_editorconfig_becomes_lsp_options(tmp_path: Path) -> None:
    _write(
        tmp_path / ".editorconfig",
        "root = true\n\n[*]\nindent_style = space\nindent_size = 2\n"
        "trim_trailing_whitespace = true\ninsert_final_newline = true\n"
        "[*.go]\nindent_style = tab\ntab_width = 8\n"
        "[*.md]\ntrim_trailing_whitespace = unset\n",
    )
    style = project_style(tmp_path / "src" / "a.ts", tmp_path, FOUR_SPACES)  # the file's own text loses
    assert style.lsp_options() == {
        "tabSize": 2,
        "insertSpaces": True,
        "trimTrailingWhitespace": True,
        "insertFinalNewline": True,
        "trimFinalNewlines": True,
    }
    assert style.source == "editorconfig" and style.config_files == (str(tmp_path / ".editorconfig"),)
    go = project_style(tmp_path / "main.go", tmp_path, None)
    assert (go.insert_spaces, go.tab_size, go.source) == (False, 8, "editorconfig")
    assert "trimTrailingWhitespace" not in project_style(tmp_path / "README.md", tmp_path, None).lsp_options()


def test_editorconfig_that_says_only_spaces_leaves_the_width_to_the_file(tmp_path: Path) -> None:
    _write(tmp_path / ".editorconfig", "root = true\n[*]\nindent_style = space\n")
    style = project_style(tmp_path / "a.ts", tmp_path, TWO_SPACES)
    assert (style.insert_spaces, style.tab_size, style.source) == (True, 2, "editorconfig+inferred")


def test_indent_size_tab_uses_tab_width(tmp_path: Path) -> None:
    _write(tmp_path / ".editorconfig", "root = true\n[*]\nindent_style = tab\nindent_size = tab\ntab_width = 3\n")
    style = project_style(tmp_path / "a.c", tmp_path, None)
    assert (style.insert_spaces, style.tab_size) == (False, 3)


# ================================================================================================ prettier
def test_prettier_configuration_for_the_files_prettier_formats(tmp_path: Path) -> None:
    _write(tmp_path / ".prettierrc", json.dumps({"tabWidth": 3, "semi": False}))
    style = project_style(tmp_path / "src" / "a.ts", tmp_path, FOUR_SPACES)
    assert (style.tab_size, style.insert_spaces, style.source) == (3, True, "prettier")
    assert style.config_files == (str(tmp_path / ".prettierrc"),)
    # Python is not prettier's: the file's own indentation.
    assert project_style(tmp_path / "a.py", tmp_path, FOUR_SPACES).source == "inferred"


def test_prettier_defaults_yaml_and_package_json(tmp_path: Path) -> None:
    _write(tmp_path / ".prettierrc", "# yaml\nsingleQuote: true\n")  # no tabWidth: prettier's default, 2
    assert project_style(tmp_path / "a.ts", tmp_path, FOUR_SPACES).tab_size == 2
    _write(tmp_path / "web" / "package.json", json.dumps({"name": "web", "prettier": {"useTabs": True}}))
    style = project_style(tmp_path / "web" / "a.tsx", tmp_path, TWO_SPACES)  # the nearer configuration
    assert (style.insert_spaces, style.source) == (False, "prettier")
    _write(tmp_path / "web" / "package.json", json.dumps({"name": "web"}))  # no "prettier" key: look further up
    assert project_style(tmp_path / "web" / "a.tsx", tmp_path, TWO_SPACES).config_files == (
        str(tmp_path / ".prettierrc"),
    )
    _write(tmp_path / "web" / "package.json", json.dumps({"prettier": "@company/prettier-config"}))
    assert project_style(tmp_path / "web" / "a.tsx", tmp_path, TWO_SPACES).source == "inferred"  # not followed


def test_editorconfig_comes_before_prettier(tmp_path: Path) -> None:
    _write(tmp_path / ".prettierrc.json", json.dumps({"tabWidth": 8}))
    _write(tmp_path / ".editorconfig", "[*.ts]\nindent_size = 2\nindent_style = space\n")
    assert project_style(tmp_path / "a.ts", tmp_path, None).source == "editorconfig"


# ================================================================================================ inference
def test_inference_on_two_space_four_space_and_tab_files() -> None:
    assert infer_indentation(TWO_SPACES) == (True, 2)
    assert infer_indentation(FOUR_SPACES) == (True, 4)
    assert infer_indentation(TABS) == (False, 4)
    assert infer_indentation("a = 1\nb = 2\n") is None
    jsdoc = "class A {\n  /**\n   * A comment's lines.\n   * More.\n   */\n  f() {\n    return 1;\n  }\n}\n"
    assert infer_indentation(jsdoc) == (True, 2)
    assert infer_indentation(TWO_SPACES.replace("\n", "\r\n")) == (True, 2)


def test_inferred_and_default_styles(tmp_path: Path) -> None:
    style = project_style(tmp_path / "a.ts", tmp_path, TWO_SPACES)
    assert style.lsp_options() == {"tabSize": 2, "insertSpaces": True} and style.source == "inferred"
    tabs = project_style(tmp_path / "a.go", tmp_path, TABS)
    assert (tabs.insert_spaces, tabs.tab_size, tabs.source) == (False, 4, "inferred")
    flat = project_style(tmp_path / "a.ts", tmp_path, "export const a = 1;\n")
    assert flat.lsp_options() == {"tabSize": 4, "insertSpaces": True} and flat.source == "default"


def test_a_new_file_takes_the_indentation_of_its_siblings(tmp_path: Path) -> None:
    _write(tmp_path / "src" / "a.ts", TWO_SPACES)
    _write(tmp_path / "src" / "b.py", FOUR_SPACES)
    style = project_style(tmp_path / "src" / "new.ts", tmp_path, None)
    assert (style.tab_size, style.source, style.config_files) == (2, "inferred", (str(tmp_path / "src" / "a.ts"),))
    assert project_style(tmp_path / "src" / "new.rs", tmp_path, None).source == "default"


# ================================================================================================ changed lines
def test_changed_blocks_are_lines_of_the_new_text() -> None:
    old = "a\nb\nc\nd\ne\n"
    assert changed_blocks(old, old) == []
    assert changed_blocks(old, "a\nB\nc\nd\ne\n") == [LineBlock(1, 2)]
    assert changed_blocks(old, "a\nb\nx\ny\nc\nd\nE\n") == [LineBlock(2, 4), LineBlock(6, 7)]
    assert changed_blocks(old, "a\nd\ne\n") == [LineBlock(1, 1)]  # removed lines: an empty block where they were
    assert changed_blocks("a\r\nb\r\n", "a\r\nc\r\n") == [LineBlock(1, 2)]


def test_changes_outside_the_blocks() -> None:
    text = "a\nb\nc\nd\n"
    assert not changes_outside(text, text, [])
    assert not changes_outside(text, "a\nB\nc\nd\n", [LineBlock(1, 2)])
    assert not changes_outside(text, "a\nB\nB2\nc\nd\n", [LineBlock(1, 2)])
    assert not changes_outside(text, "a\nb\nnew\nc\nd\n", [LineBlock(1, 2)])  # inserted at the block's edge
    assert changes_outside(text, "A\nB\nc\nd\n", [LineBlock(1, 2)])
    assert changes_outside(text, "a\nB\nc\nD\n", [LineBlock(1, 2)])
    assert changes_outside(text, "a\nb\nc\nd\nnew\n", [LineBlock(1, 2)])
    assert changes_outside(text, "a\nb\nc\nd", [LineBlock(1, 2)])  # the final newline is a line's end too
    assert changes_outside(text, text + "e\n", [])  # nothing may be added where nothing changed
    assert changes_outside("", "\n", []) and not changes_outside("", "\n", [LineBlock(0, 0)])
    assert not changes_outside(text, "a\nb\nc\nnew\nd\n", [LineBlock(3, 3)])  # where lines were removed
    # Any alignment that keeps the untouched lines will do: the block's `b` removed, not the untouched one.
    assert not changes_outside("b\nb\nc\n", "b\nc\n", [LineBlock(0, 1)])


def test_large_texts_are_compared_in_linear_time() -> None:
    function = "export function f{i}(a: number): number {{\n  if (a) {{\n    return {i};\n  }}\n\n  return 2;\n}}\n\n"
    old = "".join(function.format(i=i) for i in range(5000))  # 40,000 lines, most of them repeated
    new = old.replace("return 17;", "return 18;\n    // x", 1)
    started = time.perf_counter()
    blocks = changed_blocks(old, new)
    assert blocks == [LineBlock(138, 140)]
    assert not changes_outside(new, new.replace("    // x", "    //  x"), blocks)
    assert changes_outside(new, new.replace("  ", "    "), blocks)  # re-indented: every line
    rewritten = new.replace("  ", "    ").replace("return 2;", "return 3;")
    assert len(changed_blocks(new, rewritten)) == 10000
    # difflib alone took minutes on the re-indented text.
    assert time.perf_counter() - started < 5


def test_lines_ranges_and_overlaps() -> None:
    assert text_lines("a\r\nb\rc\nd") == ["a\r\n", "b\r", "c\n", "d"]
    assert text_lines("") == []
    assert block_range(LineBlock(1, 3), "a\nb\nc😀\nd\n") == {
        "start": {"line": 1, "character": 0},
        "end": {"line": 2, "character": 3},
    }

    def edit(start: tuple[int, int], end: tuple[int, int]) -> dict[str, object]:
        return {
            "range": {"start": {"line": start[0], "character": start[1]}, "end": {"line": end[0], "character": end[1]}},
            "newText": "x",
        }

    assert not edits_overlap([edit((0, 0), (0, 2)), edit((0, 2), (1, 0)), edit((3, 0), (3, 0))])
    assert edits_overlap([edit((0, 0), (1, 2)), edit((1, 0), (1, 1))])
    assert edits_overlap([edit((2, 0), (2, 0)), edit((2, 0), (2, 0))])
