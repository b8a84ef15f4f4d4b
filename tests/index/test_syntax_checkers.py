"""Syntax by the language's own parser: CPython, TypeScript (a node helper), JSON/JSONC; tree-sitter as fallback."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_hub.config import resolve
from lsp_hub.index.syntax import check_syntax
from lsp_hub.index.syntax_checkers import (
    CPYTHON_CHECKER,
    SyntaxCheckers,
    syntax_check_result,
    syntax_language_for_path,
)
from lsp_hub.index.typescript_helper import TypeScriptHelper, TypeScriptRuntime, TypeScriptUnavailable
from lsp_hub.proxy.syntax_parsers import syntax_checkers_for
from tests.conftest import find_required_binary, running_under_ci


def errors(result: dict) -> list[tuple[int, int, int, str]]:
    return [(e["range"]["start"]["line"], e["range"]["start"]["character"], e["range"]["end"]["character"],
             e["message"]) for e in result["errors"]]


# --- Python -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(:\n    pass\n", [(0, 6, 7, "invalid syntax")]),
        ("if x\n    y = 1\n", [(0, 4, 4, "expected ':'")]),
        ("x = (1,\ny = 2\n", [(0, 4, 5, "'(' was never closed")]),
        ("  x = 1\n", [(0, 1, 2, "unexpected indent")]),
        ("if x:\ny = 1\n", [(1, 0, 1, "expected an indented block after 'if' statement on line 1")]),
        ("if x:\n\ty = 1\n        z = 2\n", [(2, 0, 1, "inconsistent use of tabs and spaces in indentation")]),
        ("return 1\n", [(0, 0, 8, "'return' outside function")]),  # the compiler's error, not the parser's
        ("s = '😀' + (1 +\n", [(0, 11, 12, "'(' was never closed")]),  # UTF-16: the emoji is two units
        ("x = 1\ny = 'a\0b'\n", [(1, 6, 7, "source code string cannot contain null bytes")]),
        # Latin-1 as declared; the column counts characters, not bytes.
        ("# -*- coding: latin-1 -*-\ns = 'é'; f(:\n".encode("latin-1").decode("utf-8", "surrogateescape"),
         [(1, 11, 12, "invalid syntax")]),
        ("s = '\udcff' + (\n", [(0, 8, 9, "(unicode error) 'utf-8' codec can't decode byte 0xff in position 0: "
                                          "invalid start byte")]),
    ],
)
def test_python_errors_are_cpythons_own(source: str, expected: list[tuple[int, int, int, str]]) -> None:
    result = syntax_check_result(source.encode("utf-8", "surrogateescape"), "python", "m.py")
    assert result["checker"] == CPYTHON_CHECKER == "cpython-3.11"
    assert result["ok"] is False and errors(result) == expected


def test_python_syntax_warnings_are_not_printed(capfd: pytest.CaptureFixture[str]) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # what -W error would do: a SyntaxWarning must still not become an error
        result = syntax_check_result(b"assert (1, 'never fails')\nx = '\\d'\nif x is 1: pass\n", "python")
    assert result["ok"] is True
    assert capfd.readouterr().err == ""


def test_a_python_file_tree_sitter_accepts_is_judged_by_cpython() -> None:
    source = b"def f():\n    x = 1\n    global x\n"  # valid to tree-sitter, an error to the compiler
    assert check_syntax(source, "python") == []
    assert errors(syntax_check_result(source, "python")) == [
        (2, 4, 12, "name 'x' is assigned to before global declaration")]


# --- JSON -------------------------------------------------------------------------------------------------------


def test_json_errors_have_the_parsers_message_and_position() -> None:
    result = syntax_check_result(b'{\n  "a": 1,\n  "b": [1, 2,]\n}\n', "json", "package.json")
    assert result["checker"] == "json"
    assert errors(result) == [(2, 13, 14, "Expecting value")]
    assert errors(syntax_check_result(b'{"\xc3\xa9": NaN}', "json")) == [(0, 6, 7, "NaN is not a JSON value")]
    assert syntax_check_result(b'\xef\xbb\xbf{"a": [true, null]}\n', "json")["ok"] is True


def test_jsonc_allows_comments_and_trailing_commas_where_tools_do() -> None:
    tsconfig = (b'// the project\n{\n  "compilerOptions": {\n    /* strict, "as ever", */ "strict": true,\n'
                b'    "paths": {"@/*": ["src/*",],},\n  },\n}\n')
    for name in ("tsconfig.json", "tsconfig.build.json", "jsconfig.json", "proj/.vscode/settings.json", "a.jsonc"):
        assert syntax_language_for_path(name) == "jsonc", name
        result = syntax_check_result(tsconfig, "jsonc", name)
        assert (result["ok"], result["language"], result["checker"]) == (True, "jsonc", "json")
    assert syntax_language_for_path("package.json") == "json"
    assert syntax_check_result(tsconfig, "json", "package.json")["ok"] is False
    # A comment marker inside a string is text, and a missing comma is still an error.
    assert syntax_check_result(b'{"url": "http://x//y", "glob": "a/*b"}', "jsonc")["ok"] is True
    assert errors(syntax_check_result(b'{\n  "a": 1 // one\n  "b": 2\n}', "jsonc")) == [
        (2, 2, 3, "Expecting ',' delimiter")]
    assert errors(syntax_check_result(b'{"a": 1} /* open', "jsonc")) == [(0, 9, 10, "Unterminated comment")]


# --- TypeScript -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def typescript(tmp_path_factory: pytest.TempPathFactory) -> SyntaxCheckers:
    """The TypeScript the hub would use for an untrusted workspace with nothing of its own (`make setup` installs
    it beside typescript-language-server): required, so these tests fail under CI rather than skip."""
    find_required_binary("node")
    checkers = syntax_checkers_for(tmp_path_factory.mktemp("empty"), trusted=False)
    if checkers.typescript is None:
        message = f"TypeScript not found: {checkers.typescript_missing}; run `make setup` and `. scripts/env.sh`"
        if running_under_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return checkers


def test_typescript_rejects_what_tree_sitter_accepts(typescript: SyntaxCheckers) -> None:
    source = b"function f() {\n  return 1;\n}\nlet y = f(,);\nlet z = 08.5;\n"
    assert check_syntax(source, "typescript") == []
    result = syntax_check_result(source, "typescript", "src/a.ts", typescript)
    assert result["checker"] == "typescript-" + typescript.typescript.version  # type: ignore[union-attr]
    assert errors(result) == [(3, 10, 11, "Argument expression expected."),
                              (4, 8, 12, "Decimals with leading zeros are not allowed.")]


def test_a_valid_file_tree_sitter_flags_is_judged_valid(typescript: SyntaxCheckers) -> None:
    source = b"const _null = null;\nexport { _null as null };\n"  # zod's regexes.js does this
    assert check_syntax(source, "javascript") != []
    result = syntax_check_result(source, "javascript", "regexes.js", typescript)
    assert (result["ok"], result["checker"]) == (True, typescript.typescript.checker_name)  # type: ignore[union-attr]


def test_typescript_kinds_and_utf16_columns(typescript: SyntaxCheckers) -> None:
    assert syntax_check_result(b"const a = <div>{1}</div>;\n", "tsx", "a.tsx", typescript)["ok"] is True
    assert syntax_check_result(b"const a = <div>{1}</div>;\n", "typescript", "a.ts", typescript)["ok"] is False
    assert syntax_check_result(b"const a = <b>{1}</b>;\n", "javascript", "a.jsx", typescript)["ok"] is True
    broken = syntax_check_result('const s = "é😀"; f(;\n'.encode(), "typescript", "a.ts", typescript)
    assert errors(broken) == [(0, 19, 20, "')' expected.")]


def test_no_node_or_no_typescript_falls_back_to_tree_sitter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    node = find_required_binary("node")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.setattr(resolve, "hub_tool_directories", lambda: ())  # only PATH: no TypeScript of lsp-hub's own
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    no_node = syntax_checkers_for(workspace, trusted=False)
    assert no_node.typescript is None and "node not found" in no_node.typescript_missing
    result = syntax_check_result(b"let x = ;\n", "typescript", "a.ts", no_node)
    assert result["checker"] == "tree-sitter" and result["ok"] is False
    assert "node not found" in result["fallbackReason"]

    node_only = tmp_path / "node-only"
    node_only.mkdir()
    (node_only / "node").symlink_to(node)
    monkeypatch.setenv("PATH", str(node_only))
    no_typescript = syntax_checkers_for(workspace, trusted=False)
    assert no_typescript.typescript is None and "no TypeScript found" in no_typescript.typescript_missing
    assert syntax_check_result(b"x\n", "typescript", "a.ts", no_typescript)["fallbackReason"].startswith(
        "no TypeScript found")


def _fake_typescript(directory: Path, version: str, body: str = "") -> Path:
    library = directory / "node_modules" / "typescript" / "lib" / "typescript.js"
    library.parent.mkdir(parents=True)
    (library.parent.parent / "package.json").write_text(json.dumps({"name": "typescript", "version": version}))
    library.write_text(body or "module.exports = {};\n")
    return library


def test_a_workspaces_own_typescript_only_when_trusted(tmp_path: Path) -> None:
    find_required_binary("node")
    workspace = tmp_path / "project"
    own = _fake_typescript(workspace, "9.9.9-own")
    trusted = syntax_checkers_for(workspace, trusted=True)
    assert trusted.typescript is not None and trusted.typescript.typescript == str(own.resolve())
    assert trusted.typescript.checker_name == "typescript-9.9.9-own"
    untrusted = syntax_checkers_for(workspace, trusted=False)
    assert untrusted.typescript is None or untrusted.typescript.version != "9.9.9-own"


HANGING_TYPESCRIPT = """
module.exports = {
  version: "0.0.0-hangs", ScriptKind: {TS: 3, TSX: 4, JS: 1, JSX: 2}, ScriptTarget: {Latest: 99},
  flattenDiagnosticMessageText: (text) => text,
  createSourceFile(name, text) {
    if (text.includes("hang")) for (;;) {}
    return {parseDiagnostics: text.includes("bad") ? [{start: 0, length: 1, code: 1, messageText: "bad"}] : []};
  },
};
"""


@pytest.fixture
def fake_helper(tmp_path: Path) -> Iterator[TypeScriptHelper]:
    library = _fake_typescript(tmp_path, "0.0.0-hangs", HANGING_TYPESCRIPT)
    helper = TypeScriptHelper(TypeScriptRuntime(find_required_binary("node"), str(library), "0.0.0-hangs"),
                              check_timeout=0.5)
    yield helper
    helper.close()


def test_the_helper_is_started_again_after_it_is_killed(fake_helper: TypeScriptHelper) -> None:
    assert fake_helper.check("bad", "a.ts", "ts")[0].message == "bad"
    first = fake_helper.pid
    assert first is not None and fake_helper.starts == 1
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while fake_helper.pid == first and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake_helper.check("fine", "a.ts", "ts") == []
    assert fake_helper.starts == 2 and fake_helper.pid not in (None, first)


def test_a_helper_that_misses_its_deadline_is_ended_and_the_check_falls_back(fake_helper: TypeScriptHelper) -> None:
    assert fake_helper.check("fine", "a.ts", "ts") == []
    stuck = fake_helper.pid
    started = time.monotonic()
    with pytest.raises(TypeScriptUnavailable, match=r"did not answer within 0\.5 s"):
        fake_helper.check("hang", "a.ts", "ts")
    assert time.monotonic() - started < 3
    assert stuck is not None and not _alive(stuck)
    assert fake_helper.check("bad", "a.ts", "ts")[0].message == "bad"  # a fresh process answers
    assert fake_helper.starts == 2


def test_a_typescript_that_cannot_load_falls_back_with_the_reason(tmp_path: Path) -> None:
    library = _fake_typescript(tmp_path, "1.0.0", "throw new Error('broken install');\n")
    runtime = TypeScriptRuntime(find_required_binary("node"), str(library), "1.0.0")
    result = syntax_check_result(b"let x = ;\n", "typescript", "a.ts", SyntaxCheckers(runtime))
    assert result["checker"] == "tree-sitter" and result["ok"] is False
    assert "could not start" in result["fallbackReason"] and "broken install" in result["fallbackReason"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie awaiting its parent's wait() counts as gone.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ")[-1][0] != "Z"


def test_the_syntax_verb_uses_the_same_checkers(typescript: SyntaxCheckers, tmp_path: Path) -> None:
    import io

    from lsp_hub.cli import _cli_syntax_checkers
    from lsp_hub.index.cli import index_cli_main

    broken = tmp_path / "a.ts"
    broken.write_text("function f() {\n  return 1;\n}\nlet y = f(,);\n")
    out = io.StringIO()
    assert index_cli_main(["syntax", str(broken)], out, syntax_checkers_for=_cli_syntax_checkers) == 1
    assert out.getvalue() == (f"{broken}:4:11: Argument expression expected.\n"
                              f"(checked by {typescript.typescript.checker_name})\n")  # type: ignore[union-attr]
    out = io.StringIO()
    # Without the hub's finder the library is given no TypeScript: tree-sitter judges, and accepts this file.
    assert index_cli_main(["syntax", str(broken), "--json"], out) == 0
    assert json.loads(out.getvalue())["checker"] == "tree-sitter"
