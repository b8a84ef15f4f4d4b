"""Text search through ripgrep and structural search through ast-grep (issue #24): the same matches as the
engines' own command lines, each with its enclosing definition."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lsp_hub.index import api
from lsp_hub.index.navigation.common import NavigationError
from lsp_hub.index.navigation.text_search import ripgrep_binary
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.index_helpers import write

CART = '''\
class Cart:
    def add(self, item):
        self.items.get(item)
        return lookup.get(item, None)


def total(cart):
    # TODO: total the cart
    return sum(cart.items.get(key) for key in cart.items)
'''


@pytest.fixture
def tree(tmp_path: Path) -> WorkspaceIndex:
    write(tmp_path, "shop/cart.py", CART)
    write(tmp_path, "shop/util.py", "def helper():\n    return {}.get('todo')  # TODO later\n")
    write(tmp_path, "notes.txt", "TODO: a text file is searched too\n")
    write(tmp_path, "build/generated.py", "# TODO generated\n")
    write(tmp_path, ".gitignore", "build/\nsecret.py\n")
    write(tmp_path, "secret.py", "# TODO ignored\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    return index


def _ripgrep_own(root: Path, *arguments: str) -> set[tuple[str, int, int]]:
    """(path, line, column) of every match as ripgrep's own JSON output gives them (no lsp-hub flags)."""
    binary = ripgrep_binary()
    assert binary is not None
    output = subprocess.run([str(binary), "--json", *arguments], cwd=root, capture_output=True, check=False).stdout
    found = set()
    for line in output.splitlines():
        event = json.loads(line)
        if event["type"] == "match":
            data = event["data"]
            for submatch in data["submatches"][:1]:
                found.add((data["path"]["text"].removeprefix("./"), data["line_number"], submatch["start"] + 1))
    return found


def _ours(result: dict[str, object]) -> set[tuple[str, int, int]]:
    return {(entry["path"], match["line"], match["column"])  # type: ignore[index]
            for entry in result["files"] for match in entry["matches"]}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("pattern", "regex", "ignore_case", "rg_arguments"), [
    ("TODO", False, False, ("-F", "-s", "TODO")),
    (".get(", False, False, ("-F", "-s", ".get(")),
    ("todo", False, True, ("-F", "-i", "todo")),
    (r"\.get\(\w+\)", True, False, ("-s", r"\.get\(\w+\)")),
    (r"^def \w+", True, False, ("-s", r"^def \w+")),
])
def test_search_finds_what_ripgrep_finds(tree: WorkspaceIndex, pattern: str, regex: bool, ignore_case: bool,
                                         rg_arguments: tuple[str, ...]) -> None:
    result = api.search(tree, pattern, regex=regex, ignore_case=ignore_case, limit=0).to_json()
    assert _ours(result) == _ripgrep_own(tree.root, *rg_arguments)
    assert result["complete"] is True and result["totalMatches"] == len(_ours(result))
    paths = {entry["path"] for entry in result["files"]}
    assert "secret.py" not in paths and "build/generated.py" not in paths  # .gitignored


def test_matches_carry_their_enclosing_definition_and_cap(tree: WorkspaceIndex) -> None:
    result = api.search(tree, ".get(", limit=2)
    data = result.to_json()
    symbols = {(entry["path"], match["line"]): match.get("symbol") for entry in data["files"]
               for match in entry["matches"]}
    assert len(symbols) == 2 and data["totalMatches"] == 4 and data["complete"] is False
    everything = api.search(tree, ".get(", limit=0).to_json()
    symbols = {(entry["path"], match["line"]): match.get("symbol") for entry in everything["files"]
               for match in entry["matches"]}
    assert symbols == {("shop/cart.py", 3): "Cart.add", ("shop/cart.py", 4): "Cart.add",
                       ("shop/cart.py", 9): "total", ("shop/util.py", 2): "helper"}
    assert "... 2 more matches" in result.to_text()
    assert "no match for 'nowhere-at-all'" in api.search(tree, "nowhere-at-all").to_text()


def test_search_never_runs_an_rg_from_the_workspace_or_path(tree: WorkspaceIndex, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    planted = write(tmp_path, "bin/rg", "#!/bin/sh\necho planted > /dev/stderr; exit 2\n")
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", f"{planted.parent}{os.pathsep}{os.environ['PATH']}")
    binary = ripgrep_binary()
    assert binary is not None and not binary.is_relative_to(tree.root)
    assert api.search(tree, "TODO").to_json()["totalMatches"] == 3


def test_a_bad_regex_is_one_clear_line(tree: WorkspaceIndex) -> None:
    with pytest.raises(NavigationError, match="search failed") as raised:
        api.search(tree, "(unclosed", regex=True)
    assert "\n" not in str(raised.value)


@pytest.mark.skipif(shutil.which("ast-grep") is None, reason="ast-grep-cli (a dev dependency) is not installed")
@pytest.mark.parametrize(("pattern", "language"), [("$A.get($B)", "python"), ("$A.get($$$)", "python"),
                                                   ("def $F($$$): $$$BODY", "python")])
def test_structural_search_finds_what_the_ast_grep_cli_finds(tree: WorkspaceIndex, pattern: str,
                                                             language: str) -> None:
    output = subprocess.run(["ast-grep", "run", "--pattern", pattern, "--lang", language, "--json=compact", "."],
                            cwd=tree.root, capture_output=True, check=True).stdout
    theirs = {(match["file"].removeprefix("./"), match["range"]["start"]["line"] + 1,
               match["range"]["start"]["column"] + 1) for match in json.loads(output)}
    result = api.structural_search(tree, pattern, language, limit=0).to_json()
    assert _ours(result) == theirs and theirs
    assert result["complete"] is True


def test_structural_matches_name_their_definition_and_refuse_unknown_languages(tree: WorkspaceIndex) -> None:
    result = api.structural_search(tree, "$A.get($B, None)", "py").to_json()
    assert [(entry["path"], [(match["line"], match.get("symbol")) for match in entry["matches"]])
            for entry in result["files"]] == [("shop/cart.py", [(4, "Cart.add")])]
    with pytest.raises(NavigationError, match="not one structural search knows"):
        api.structural_search(tree, "$A", "klingon")


def test_a_c_call_pattern_matches_calls_inside_expressions(tmp_path: Path) -> None:
    """tree-sitter-c reads `jv_free($A)` alone as a declaration, so ast-grep matched nothing in jq; `jv_free($A);`
    matched statements only, never the call in `if (jvp_refcnt_dec(...))`. A C or C++ pattern that is an expression
    is matched as one."""
    write(tmp_path, "jv.c", "void jv_free(jv x);\nint f(jv x) {\n  jv_free(x);\n  if (jvp_refcnt_dec(x.u.ptr)) {\n"
                            "    jv_free(x);\n  }\n  return jv_free(x) + 1;\n}\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    lines = {match["line"] for entry in api.structural_search(index, "jv_free($A)", "c").to_json()["files"]
             for match in entry["matches"]}
    assert lines == {3, 5, 7}
    [decrement] = api.structural_search(index, "jvp_refcnt_dec($$$A)", "c").to_json()["files"][0]["matches"]
    assert decrement["line"] == 4 and decrement["symbol"] == "f"
    statements = api.structural_search(index, "jv_free($A);", "c").to_json()["files"][0]["matches"]
    assert [match["line"] for match in statements] == [3, 5]  # a statement pattern stays a statement pattern


def test_structural_counts_after_an_early_stop_say_they_are_lower_bounds(tree: WorkspaceIndex) -> None:
    """Files are searched until `limit` matches are found: rich's '... 1 more matches (0 more files)' with 55 files
    left unsearched read as a total."""
    write(tree.root, "shop/more.py", "def other(d):\n    return d.get(1) or d.get(2)\n")
    tree.build()
    result = api.structural_search(tree, "$A.get($B)", "python", limit=1)
    assert result.to_json()["countedAll"] is False
    text = result.to_text()
    assert "at least" in text and "not searched" in text, text
    assert api.structural_search(tree, "$A.get($B)", "python", limit=0).to_json()["countedAll"] is True
