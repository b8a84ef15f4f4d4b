"""The names other files import from a file by name, and whether the file still provides them: the certain breaks
a write reports in other files without waiting for a language server (`imported_names.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_hub.index import api
from lsp_hub.index.imported_names import imported_names, importers_of
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.index_helpers import write

UTILS = "def make_str(value):\n    return str(value)\n\n\ndef echo(text):\n    print(text)\n"
CORE = "from .utils import make_str, echo\n\n\ndef run():\n    echo(make_str(1))\n"
LAZY = "def later():\n    from pkg.utils import make_str as text\n    return text(2)\n"
LIB_TS = "export function price(amount: number): number {\n  return amount * 2;\n}\n"
ONE_TS = 'import { price } from "./lib";\n\nexport const one = price(1);\n'


@pytest.fixture
def index(tmp_path: Path) -> WorkspaceIndex:
    write(tmp_path, "pyproject.toml", "[project]\nname = 'pkg'\n")
    write(tmp_path, "pkg/__init__.py", "from . import utils\n")
    write(tmp_path, "pkg/utils.py", UTILS)
    write(tmp_path, "pkg/core.py", CORE)
    write(tmp_path, "pkg/lazy.py", LAZY)
    write(tmp_path, "pkg/impl.py", "def make_str(value):\n    return repr(value)\n")
    write(tmp_path, "web/lib.ts", LIB_TS)
    write(tmp_path, "web/one.ts", ONE_TS)
    write(tmp_path, "web/impl.ts", "export function price(amount: number): number {\n  return amount;\n}\n")
    built = WorkspaceIndex(tmp_path, use_cache=False)
    built.build()
    return built


def provided_after(index: WorkspaceIndex, written: str, text: str | None) -> dict[tuple[str, str], bool]:
    """(importer, name) -> provided, for the imports of `written` found before the write, judged after it."""
    importers = importers_of(index.snapshot(), [written])
    before = imported_names(index.snapshot(), [written], importers)
    assert before and all(entry.provided for entry in before), before
    if text is None:
        (index.root / written).unlink()
        index.update_file(written)
    else:
        index.update_file(written, text)
    after = imported_names(index.snapshot(), [written], importers)
    return {(entry.path, entry.name): entry.provided for entry in after}


def test_a_renamed_function_is_no_longer_provided_to_the_files_importing_it(index: WorkspaceIndex) -> None:
    after = provided_after(index, "pkg/utils.py", UTILS.replace("def make_str(", "def make_string("))
    assert after == {("pkg/core.py", "make_str"): False, ("pkg/core.py", "echo"): True,
                     ("pkg/lazy.py", "make_str"): False,  # an import inside a function counts: it fails when run
                     ("pkg/__init__.py", "utils"): True}  # the module itself: still there


def test_a_name_still_provided_another_way_is_no_break(index: WorkspaceIndex) -> None:
    moved = "from pkg.impl import make_str\n\n\ndef echo(text):\n    print(text)\n"
    assert set(provided_after(index, "pkg/utils.py", moved).values()) == {True}


def test_a_module_that_may_provide_anything_is_taken_to_provide_it(index: WorkspaceIndex) -> None:
    starred = "from pkg.impl import *\n\n\ndef echo(text):\n    print(text)\n"
    assert set(provided_after(index, "pkg/utils.py", starred).values()) == {True}


def test_a_module_getattr_makes_a_missing_name_uncertain(index: WorkspaceIndex) -> None:
    """click's utils.py has one for deprecated names: it serves a few names, not every missing one."""
    shim = "def echo(text):\n    print(text)\n\n\ndef __getattr__(name):\n    raise AttributeError(name)\n"
    importers = importers_of(index.snapshot(), ["pkg/utils.py"])
    index.update_file("pkg/utils.py", shim)
    found = imported_names(index.snapshot(), ["pkg/utils.py"], importers)
    assert {(entry.path, entry.name, entry.provided, entry.dynamic) for entry in found if not entry.module} == {
        ("pkg/core.py", "make_str", False, True), ("pkg/core.py", "echo", True, False),
        ("pkg/lazy.py", "make_str", False, True)}


def test_a_removed_file_is_imported_by_no_one_after(index: WorkspaceIndex) -> None:
    """Its importers' imports resolve to nothing: the write judges a name found before and gone after, in an
    importer that did not change, as broken (tests/test_write_dependents_baseline.py)."""
    importers = api.imported_names(index, {"files": ["pkg/utils.py"]})["importerVersions"]
    assert set(importers) == {"pkg/__init__.py", "pkg/core.py", "pkg/lazy.py"}
    assert provided_after(index, "pkg/utils.py", None) == {}
    after = api.imported_names(index, {"files": ["pkg/utils.py"], "importers": sorted(importers)})
    assert after["importerVersions"] == importers  # the importers themselves did not change


def test_imports_of_the_module_itself_hold_while_the_file_is_there(index: WorkspaceIndex) -> None:
    write(index.root, "pkg/cli.py", "import pkg.utils\n")
    index.update_file("pkg/cli.py")
    snapshot = index.snapshot()
    found = imported_names(snapshot, ["pkg/utils.py"], importers_of(snapshot, ["pkg/utils.py"]))
    modules = {(entry.path, entry.name, entry.provided) for entry in found if entry.module}
    assert modules == {("pkg/__init__.py", "utils", True), ("pkg/cli.py", "pkg.utils", True)}
    moved = UTILS.replace("def make_str(", "def make_string(")
    assert provided_after(index, "pkg/utils.py", moved)[("pkg/cli.py", "pkg.utils")] is True


def test_typescript_named_imports_and_reexports(index: WorkspaceIndex) -> None:
    assert provided_after(index, "web/lib.ts", LIB_TS.replace("price", "cost")) == {("web/one.ts", "price"): False}
    index.update_file("web/lib.ts", LIB_TS)
    assert provided_after(index, "web/lib.ts", 'export * from "./impl";\n') == {("web/one.ts", "price"): True}


def test_the_commands_answer_with_one_based_positions(index: WorkspaceIndex) -> None:
    before = api.dependents(index, {"files": ["pkg/utils.py"]})["importedNames"]
    assert {"path": "pkg/core.py", "line": 1, "column": 1, "endLine": 1, "endColumn": 34, "name": "make_str",
            "from": "pkg/utils.py", "provided": True, "module": False, "dynamic": False} in before
    index.update_file("pkg/utils.py", UTILS.replace("def make_str(", "def make_string("))
    after = api.imported_names(index, {"files": ["pkg/utils.py"], "importers": ["pkg/lazy.py"]})
    assert after["importedNames"] == [{"path": "pkg/lazy.py", "line": 2, "column": 5, "endLine": 2,
                                       "endColumn": 43, "name": "make_str", "from": "pkg/utils.py", "provided": False,
                                       "module": False, "dynamic": False}]
    assert after["complete"] is True
    with pytest.raises(ValueError, match="importedNames needs files"):
        api.imported_names(index, {"files": []})


def test_uses_through_a_module_import_are_judged_at_the_use(index: WorkspaceIndex) -> None:
    write(index.root, "pkg/cli.py", "import pkg.utils\nfrom pkg import utils as u\n\nu.echo(pkg.utils.make_str(1))\n")
    write(index.root, "web/two.ts", 'import * as lib from "./lib";\n\nexport const two = lib.price(2);\n')
    index.update_file("pkg/cli.py")
    index.update_file("web/two.ts")
    uses = {(entry.path, entry.line, entry.column, entry.via, entry.name)
            for entry in imported_names(index.snapshot(), ["pkg/utils.py", "web/lib.ts"], ["pkg/cli.py", "web/two.ts"])
            if entry.via}
    assert uses == {("pkg/cli.py", 3, 2, "u", "echo"), ("pkg/cli.py", 3, 17, "pkg.utils", "make_str"),
                    ("web/two.ts", 2, 23, "lib", "price")}
    after = provided_after(index, "pkg/utils.py", UTILS.replace("def make_str(", "def make_string("))
    assert after[("pkg/cli.py", "make_str")] is False and after[("pkg/cli.py", "echo")] is True
    assert provided_after(index, "web/lib.ts", LIB_TS.replace("price", "cost"))[("web/two.ts", "price")] is False


def test_in_c_and_go_a_use_that_resolves_to_nothing_after_the_write_is_judged(tmp_path: Path) -> None:
    """No imports of names there: `gcd(a, b)` in main.c means whichever file defines gcd; Go's `Helper()` any file
    of its package, and `pkg.Helper()` one of the imported package's."""
    write(tmp_path, "native/math.c", "int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }\n")
    write(tmp_path, "native/math.h", "int gcd(int a, int b);\n")
    write(tmp_path, "native/main.c", '#include "math.h"\nint main(void) { return gcd(4, 6); }\n')
    write(tmp_path, "go.mod", "module example.com/m\n\ngo 1.21\n")
    write(tmp_path, "pkg/a.go", "package pkg\n\nfunc Helper() int { return 1 }\n")
    write(tmp_path, "pkg/b.go", "package pkg\n\nfunc Twice() int { return Helper() * 2 }\n")
    write(tmp_path, "cmd/main.go", 'package main\n\nimport "example.com/m/pkg"\n\nfunc main() { pkg.Helper() }\n')
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    before = api.dependents(index, {"files": ["pkg/a.go"]})
    uses = {(entry["path"], entry["line"], entry["column"], entry.get("via"), entry["name"]): entry["provided"]
            for entry in before["importedNames"] if entry.get("use")}
    assert uses == {("pkg/b.go", 3, 27, None, "Helper"): True, ("cmd/main.go", 5, 19, "pkg", "Helper"): True}
    index.update_file("pkg/a.go", "package pkg\n\nfunc Helped() int { return 1 }\n")
    after = api.imported_names(index, {"files": ["pkg/a.go"], "importers": ["cmd/main.go", "pkg/b.go"],
                                       "uses": {"pkg/b.go": ["Helper"], "cmd/main.go": ["Helper"]}})
    assert {(entry["path"], entry["provided"]) for entry in after["importedNames"]} == {
        ("pkg/b.go", False), ("cmd/main.go", False)}
    # C: gcd renamed in math.c and math.h at once (one write) leaves main.c's call meaning nothing.
    both = ["native/math.c", "native/math.h"]
    [c_use] = [entry for entry in api.dependents(index, {"files": both})["importedNames"] if entry.get("use")]
    assert (c_use["path"], c_use["line"], c_use["name"], c_use["provided"]) == ("native/main.c", 2, "gcd", True)
    index.update_file("native/math.c", "int gcd2(int a, int b) { return b ? gcd2(b, a % b) : a; }\n")
    assert api.imported_names(index, {"files": both, "importers": [], "uses": {"native/main.c": ["gcd"]}})[
        "importedNames"][0]["provided"] is True  # math.h still declares it: a link error is not judged
    index.update_file("native/math.h", "int gcd2(int a, int b);\n")
    assert api.imported_names(index, {"files": both, "importers": [], "uses": {"native/main.c": ["gcd"]}})[
        "importedNames"][0]["provided"] is False
