"""Navigation commands of the index (issue #24): outline, zoom, symbols, and how they refuse bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_hub.index import api
from lsp_hub.index.graph_inputs import name_tables
from lsp_hub.index.links import file_links
from lsp_hub.index.navigation.common import AmbiguousSymbol, NavigationError
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.index_helpers import write

SHOP = '''\
from .store import Store


class Cart:
    """A cart."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, item: str) -> None:
        self.items.append(item)
        Store().save(item)

    def total(self) -> int:
        def helper() -> int:
            return 1
        return len(self.items) + helper()


def checkout(cart: Cart) -> int:
    cart.add("x")
    cart.add("y")
    return cart.total()
'''

STORE = '''\
class Store:
    def save(self, item: str) -> None:
        print(item)


def save(item: str) -> None:
    Store().save(item)
'''


@pytest.fixture
def shop(tmp_path: Path) -> WorkspaceIndex:
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "shop/cart.py", SHOP)
    write(tmp_path, "shop/store.py", STORE)
    write(tmp_path, "tests/test_cart.py", "from shop.cart import Cart, checkout\n\n\ndef test_checkout() -> None:\n"
                                          "    assert checkout(Cart()) == 3\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    return index


def test_outline_of_a_file_is_a_tree_without_locals(shop: WorkspaceIndex) -> None:
    result = api.outline(shop, "shop/cart.py")
    data = result.to_json()
    [cart, checkout] = [entry for entry in data["files"][0]["symbols"] if entry["kind"] != "variable"]
    assert (cart["name"], cart["kind"], cart["lines"]) == ("Cart", "class", [4, 17])
    assert [child["name"] for child in cart["children"]] == ["__init__", "add", "total"]
    total = cart["children"][2]
    assert "children" not in total  # `helper` is a local of `total`
    assert checkout["signature"] == "def checkout(cart: Cart) -> int:"
    assert data["complete"] is True
    text = result.to_text()
    assert "  4-17 class Cart:" in text and "    10-12 def add(self, item: str) -> None:" in text


def test_a_tests_outline_nests_its_tests_and_leaves_their_locals_out(tmp_path: Path) -> None:
    """The outline hid the `it("...")` tests in a `describe`, which the map, `symbols` and `zoom` see (named by
    their call, they are no function's locals); a function inside a test's body is a local, in the outline and
    in the name tables (no other file can name it)."""
    write(tmp_path, "math.test.js", 'describe("math", () => {\n  function setup() { return 1; }\n'
          '  it("adds", () => {\n    function local() { return 0; }\n    expect(local() + setup()).toBe(1);\n  });\n'
          '});\n')
    write(tmp_path, "other.js", "setup();\nlocal();\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    [describe] = api.outline(index, "math.test.js").to_json()["files"][0]["symbols"]
    assert describe["name"] == 'describe("math")'
    assert [child["name"] for child in describe["children"]] == ['it("adds")']
    definers = name_tables(index.snapshot()).definers
    assert "setup" not in definers and "local" not in definers and 'it("adds")' in definers


def test_a_decorated_python_definition_is_shown_from_its_first_decorator(tmp_path: Path) -> None:
    """A zoom of rate() showed `def rate(kind)` without the `@staticmethod` above it, which says why it has no
    `self`; the outline drew a property's getter and setter as two plain methods of one name."""
    write(tmp_path, "m.py", "import functools\n\n\nclass Account:\n    @property\n    def balance(self) -> int:\n"
          "        return 1\n\n    @balance.setter\n    def balance(self, value: int) -> None:\n        pass\n\n"
          "    @functools.lru_cache(\n        maxsize=None,\n    )\n    @staticmethod\n"
          "    def rate(kind: str) -> float:\n        return 0.1\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    [account] = api.outline(index, "m.py").to_json()["files"][0]["symbols"]
    members = [(child["name"], child["lines"], child.get("decorators")) for child in account["children"]]
    assert members == [
        ("balance", [5, 7], ["property"]),
        ("balance", [9, 11], ["balance.setter"]),
        ("rate", [13, 18], ["functools.lru_cache", "staticmethod"]),
    ]
    drawn = "    13-18 @functools.lru_cache @staticmethod def rate(kind: str) -> float:"
    assert drawn in api.outline(index, "m.py").to_text()
    zoomed = api.zoom(index, "Account.rate").to_json()
    assert zoomed["lines"] == [13, 18] and zoomed["line"] == 17
    assert zoomed["source"].startswith("    @functools.lru_cache(\n")
    text = api.zoom(index, "Account.rate").to_text()
    assert "13      @functools.lru_cache(" in text and "16      @staticmethod" in text
    assert "calls: (none)" in text  # the decorators run where they are written, not in rate()


def test_a_structs_fields_are_in_its_outline_and_in_no_name_table(tmp_path: Path) -> None:
    """gin's `type Context struct {...}` was drawn without its fields (Python's, Java's and TypeScript's classes
    showed theirs). Go's, Rust's and C's fields are now its children in the outline and LSP Field symbols; they stay
    out of the name tables, the graphs and the map: in Go, `x.Key` on any struct with a `Key` linked caddy's map to
    every such struct. A plain name a file uses is not its field's either."""
    write(tmp_path, "go.mod", "module example.com/app\n\ngo 1.22\n")
    write(tmp_path, "config.go", "package app\n\ntype Config struct {\n\tName string\n\tA, B int\n\tsync.Mutex\n}\n\n"
                                 "func (c *Config) Load() string {\n\treturn c.Name\n}\n")
    write(tmp_path, "point.c", "struct point {\n  int x;\n  char *label;\n  int vals[4];\n  void (*cb)(int);\n};\n"
                               "int x(void) { return 0; }\n")
    write(tmp_path, "use.c", "int y(void) { return x(); }\n")
    write(tmp_path, "s.rs", "pub struct S {\n    pub a: i32,\n    b: String,\n}\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()

    def children(path: str) -> list[tuple[str, str, list[int]]]:
        [struct] = [entry for entry in api.outline(index, path).to_json()["files"][0]["symbols"]
                    if entry["kind"] == "class"]
        return [(child["name"], child["kind"], child["lines"]) for child in struct["children"]]

    assert children("config.go") == [
        ("Name", "field", [4, 4]), ("A", "field", [5, 5]), ("B", "field", [5, 5]), ("Mutex", "field", [6, 6])
    ]  # an embedded field is named by its type
    assert [name for name, _kind, _lines in children("point.c")] == ["x", "label", "vals", "cb"]
    assert children("s.rs") == [("a", "field", [2, 2]), ("b", "field", [3, 3])]
    drawn = api.outline(index, "config.go").to_text()
    assert "\n    4 Name string\n    5 A, B int\n    6 sync.Mutex\n  9-11 func" in drawn  # one line for `A, B int`
    definers = name_tables(index.snapshot()).definers
    assert not {"Name", "A", "Mutex", "label", "cb", "a", "b"} & set(definers)
    assert definers["x"] == ("point.c",)  # the function: use.c's call of x() still links to it
    assert ("x", 1, ("point.c",)) in file_links(index.snapshot())["use.c"]
    symbols = {entry["name"]: entry["kind"] for entry in api.symbols(index, "label").to_json()["symbols"]}
    assert symbols.get("label") == "field"
    zoomed = api.zoom(index, "Config.Name").to_json()  # found in the files that define its struct
    assert (zoomed["kind"], zoomed["lines"], zoomed["source"]) == ("field", [4, 4], "\tName string")
    assert "calls" not in api.zoom(index, "Config.Name").to_text()


def test_an_outline_says_a_file_is_generated(tmp_path: Path) -> None:
    """An agent reading Bison's parser.c before an edit learns that the edit belongs in the grammar."""
    bison = "/* A Bison parser, made by GNU Bison 3.8.2.  */\n"
    write(tmp_path, "src/parser.c", bison + "\nint yyparse(void) { return 0; }\n")
    write(tmp_path, "src/main.c", "int main(void) { return 0; }\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    generated = api.outline(index, "src/parser.c")
    assert generated.to_json()["files"][0]["generatedBy"] == "/* A Bison parser, made by GNU Bison 3.8.2.  */"
    assert generated.to_text().startswith("src/parser.c (3 lines; generated: /* A Bison parser")
    assert "generatedBy" not in api.outline(index, "src/main.c").to_json()["files"][0]


def test_outline_of_a_directory_lists_top_level_definitions_and_caps(shop: WorkspaceIndex) -> None:
    result = api.outline(shop, "shop", limit=3)
    data = result.to_json()
    assert [outline["path"] for outline in data["files"]] == ["shop/__init__.py", "shop/cart.py", "shop/store.py"]
    assert data["complete"] is False and "capped at 3" in data["reason"]
    assert "... 1 more definitions" in result.to_text()
    everything = api.outline(shop, ".", limit=0).to_json()
    assert everything["complete"] is True and len(everything["files"]) == 4


def test_paths_outside_the_workspace_are_refused(shop: WorkspaceIndex, tmp_path: Path) -> None:
    with pytest.raises(NavigationError, match="outside the workspace"):
        api.outline(shop, "../elsewhere.py")
    with pytest.raises(NavigationError, match="outside the workspace"):
        api.outline(shop, "/etc/passwd")
    with pytest.raises(NavigationError, match="does not exist"):
        api.outline(shop, "shop/missing.py")


def test_zoom_shows_numbered_source_calls_and_callers(shop: WorkspaceIndex) -> None:
    result = api.zoom(shop, "Cart.add")
    data = result.to_json()
    assert data["path"] == "shop/cart.py" and data["lines"] == [10, 12]
    assert data["source"].splitlines()[0] == "    def add(self, item: str) -> None:"
    calls = {call["name"]: call for call in data["calls"]}
    assert calls["(...).save"]["definition"] == "shop/store.py:2"  # on an expression: `Store().save(item)`
    assert calls["Store"]["definition"] == "shop/store.py:1"
    assert data["calledBy"] == [{"caller": "checkout", "path": "shop/cart.py", "line": 21, "count": 2}]
    text = result.to_text()
    assert "10      def add(self, item: str) -> None:" in text
    assert "checkout x2 (shop/cart.py:21)" in text


def test_zoom_by_position_and_member_menu_for_a_long_class(shop: WorkspaceIndex, tmp_path: Path) -> None:
    assert api.zoom(shop, "shop/cart.py:21:5").to_json()["name"] == "checkout"
    methods = "".join(f"    def m{number}(self) -> int:\n" + "        x = 1\n" * 3 + "        return x\n"
                      for number in range(40))
    write(tmp_path, "big.py", "class Big:\n" + methods)
    shop.update_file(tmp_path / "big.py")
    data = api.zoom(shop, "Big").to_json()
    assert "source" not in data
    assert len(data["members"]) == 40 and data["members"][0] == {"line": 2, "signature": "def m0(self) -> int:"}


def test_zoom_into_an_overloaded_method_shows_every_overload(shop: WorkspaceIndex, tmp_path: Path) -> None:
    """gson's `zoom --symbol JsonObject.addProperty` showed the last of its four overloads alone, as if it were the
    method. Each overload's source is shown, the calls of all of them and their callers, and the overloads listed."""
    write(tmp_path, "src/Json.java", "class Json {\n  void add(String key, Object value) {\n    put(key);\n  }\n\n"
          "  void put(String key) {\n  }\n\n  void add(String key, String value) {\n    put(key);\n    check(key);\n"
          "  }\n\n  void check(String key) {\n  }\n\n  void use() {\n    add(\"a\", \"b\");\n  }\n}\n")
    shop.update_file(tmp_path / "src/Json.java")
    result = api.zoom(shop, "Json.add")
    data = result.to_json()
    assert data["line"] == 2 and data["lines"] == [2, 12]
    assert [overload["lines"] for overload in data["overloads"]] == [[2, 4], [9, 12]]
    assert data["overloads"][1]["signature"] == "void add(String key, String value)"
    assert data["source"].splitlines() == ["  void add(String key, Object value) {", "    put(key);", "  }",
                                           "  void add(String key, String value) {", "    put(key);",
                                           "    check(key);", "  }"]
    assert [(call["name"], call["count"]) for call in data["calls"]] == [("put", 2), ("check", 1)]
    assert [group["caller"] for group in data["calledBy"]] == ["Json.use"]
    text = result.to_text()
    assert text.startswith("method Json.add (2 overloads)  src/Json.java:2-12")
    assert " 9    void add(String key, String value) {" in text
    assert "overloads" not in api.zoom(shop, "Json.put").to_json()
    # gson's `zoom --symbol JsonElement` was "ambiguous": the class and its constructor share the name.
    write(tmp_path, "src/Node.java", "class Node {\n  Node() {\n  }\n\n  Node(int size) {\n  }\n}\n")
    shop.update_file(tmp_path / "src/Node.java")
    assert api.zoom(shop, "Node").to_json()["kind"] == "class"
    constructors = api.zoom(shop, "Node.Node").to_json()
    assert constructors["kind"] == "method" and len(constructors["overloads"]) == 2


def test_ambiguous_and_unknown_symbols_answer_one_line(shop: WorkspaceIndex) -> None:
    with pytest.raises(AmbiguousSymbol) as raised:
        api.zoom(shop, "save")
    assert len(raised.value.candidates) == 2
    message = str(raised.value)
    assert "\n" not in message and "shop/store.py:2" in message and "shop/store.py:6" in message
    assert api.zoom(shop, "Store.save").to_json()["line"] == 2
    assert api.zoom(shop, "store.save").to_json()["line"] == 6
    with pytest.raises(NavigationError, match=r"unknown symbol 'Nowhere\.save'") as unknown:
        api.zoom(shop, "Nowhere.save")
    # the name exists elsewhere: where, so that the next question can name it (flask's `App.make_response` is
    # Flask's); one line still
    message = str(unknown.value)
    assert "'save' is defined as Store.save (shop/store.py:2), save (shop/store.py:6)" in message, message
    assert "\n" not in message
    with pytest.raises(NavigationError) as nowhere:
        api.zoom(shop, "Cart.nothing_like_it")
    assert "defined as" not in str(nowhere.value)


def test_a_test_double_of_the_same_name_does_not_make_a_symbol_ambiguous(shop: WorkspaceIndex, tmp_path: Path) -> None:
    """express's test/app.render.js defines its own `View.prototype.render`: `View.render` answered "ambiguous"
    though one definition is the code's and the other a test's stand-in. The one outside tests answers; two outside
    tests are still ambiguous, and a test's own symbol is reached through its file."""
    write(tmp_path, "tests/test_store.py", "class Store:\n    def save(self, item: str) -> None:\n        pass\n")
    shop.update_file(tmp_path / "tests/test_store.py")
    assert (api.zoom(shop, "Store.save").to_json()["path"], api.zoom(shop, "Store.save").to_json()["line"]) == (
        "shop/store.py",
        2,
    )
    with pytest.raises(AmbiguousSymbol):
        api.zoom(shop, "save")
    assert api.zoom(shop, "tests/test_store.py:2:9").to_json()["path"] == "tests/test_store.py"


@pytest.mark.parametrize(("query", "first"), [
    ("Cart", "Cart"),  # exact
    ("chec", "checkout"),  # prefix
    ("cart", "Cart"),  # case-insensitive exact
    ("eckou", "checkout"),  # substring
    ("test_ch", "test_checkout"),  # snake_case pieces
])
def test_symbols_rank_exact_prefix_pieces_substring(shop: WorkspaceIndex, query: str, first: str) -> None:
    data = api.symbols(shop, query).to_json()
    assert data["symbols"][0]["name"] == first


def test_symbols_camel_case_pieces_kind_container_and_cap(tmp_path: Path) -> None:
    write(tmp_path, "a.ts", "export class UserCache {\n  getUserName(): string { return ''; }\n}\n"
                            "export function useCart() {}\nexport const userCount = 1;\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    found = api.symbols(index, "gUsNa").to_json()["symbols"]
    assert found == [{"name": "getUserName", "kind": "method", "path": "a.ts", "line": 2, "container": "UserCache"}]
    assert [entry["name"] for entry in api.symbols(index, "UC").to_json()["symbols"]] == ["UserCache", "useCart"]
    capped = api.symbols(index, "u", limit=1)
    assert capped.to_json()["omitted"] == 2 and "... 2 more symbols" in capped.to_text()
    assert "userCount" in {entry["name"] for entry in api.symbols(index, "u", include_variables=True)
                           .to_json()["symbols"]}
    assert "no definition matches 'zzz'" in api.symbols(index, "zzz").to_text()



def test_equal_matches_list_the_projects_code_then_tests_and_examples_then_locals(tmp_path: Path) -> None:
    """fastapi: `symbols websocket` and the definitions a task names listed `docs_src/` tutorials before `fastapi/`
    (path order), and a test's nested `def dependency` beside the library's."""
    write(tmp_path, "docs_src/tutorial.py", "def websocket():\n    pass\n")
    write(tmp_path, "tests/test_ws.py", "def test_ws():\n    def websocket():\n        pass\n")
    write(tmp_path, "zapp/core.py", "def websocket():\n    pass\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    expected = ["zapp/core.py", "docs_src/tutorial.py", "tests/test_ws.py"]
    assert [entry["path"] for entry in api.symbols(index, "websocket").to_json()["symbols"]] == expected
    named = api.context(index, "a timeout on the websocket").to_json()["definitions"]
    assert [entry["path"] for entry in named] == expected

def test_a_definition_named_twice_in_a_task_is_listed_once(tmp_path: Path) -> None:
    """tRPC: "subscription.stop handling" names `subscription.stop` and so `stop`; no class `subscription` defines
    it, and each `stop` was listed twice."""
    write(tmp_path, "client/utils.py", "class Backoff:\n    def stop(self):\n        pass\n")
    write(tmp_path, "server/app.py", "def stop():\n    pass\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    named = api.context(index, "subscription.stop handling").to_json()["definitions"]
    places = [(entry["path"], entry["line"]) for entry in named]
    assert sorted(places) == [("client/utils.py", 2), ("server/app.py", 1)], named


def test_an_index_still_building_answers_incomplete(tmp_path: Path) -> None:
    write(tmp_path, "a.py", "def f() -> None:\n    pass\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)  # never built: empty, not ready
    data = api.symbols(index, "f").to_json()
    assert data["complete"] is False and "index still building" in data["reason"]


def test_callers_mark_the_definitions_in_test_files(shop: WorkspaceIndex, tmp_path: Path) -> None:
    """What the query client needs to choose the code's definition over a test's stand-in (`inTests`)."""
    write(tmp_path, "tests/test_store.py", "class Store:\n    def save(self, item: str) -> None:\n        pass\n")
    shop.update_file(tmp_path / "tests/test_store.py")
    found = api.callers(shop, {"symbol": "Store.save"})["definitions"]
    assert sorted((entry["uri"].rsplit("/", 2)[-2], entry["inTests"]) for entry in found) == [
        ("shop", False),
        ("tests", True),
    ]


def test_a_file_in_a_directory_the_walk_leaves_out_says_so(tmp_path: Path) -> None:
    """tRPC's packages/server/src/vendor/*.ts and examples/.test/: `outline` said "not a source file the index
    knows (no indexed language)" of plain TypeScript files."""
    write(tmp_path, "src/vendor/unpromise.ts", "export function wrap() {}\n")
    write(tmp_path, "examples/.test/app.ts", "export function app() {}\n")
    write(tmp_path, "src/main.ts", "export function main() {}\n")
    write(tmp_path, "notes.txt", "plain\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    with pytest.raises(NavigationError, match=r"inside src/vendor, a directory the index leaves out \(vendored"):
        api.outline(index, "src/vendor/unpromise.ts")
    with pytest.raises(NavigationError, match=r"inside examples/\.test, a hidden directory"):
        api.outline(index, "examples/.test/app.ts")
    with pytest.raises(NavigationError, match="no indexed language"):
        api.outline(index, "notes.txt")


def test_a_relative_import_of_an_unindexed_file_is_unresolved_not_external(tmp_path: Path) -> None:
    """tRPC's parser.ts imports `../vendor/standard-schema-v1/error` (a vendored directory the walk leaves out);
    `imports` listed it as external, as if it were a package."""
    write(tmp_path, "src/vendor/error.ts", "export class SchemaError {}\n")
    write(tmp_path, "src/core/parser.ts", 'import { SchemaError } from "../vendor/error";\nimport { z } from "zod";\n'
          'import { gone } from "./missing";\n\nexport const parse = () => new SchemaError();\n')
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    result = api.imports(index, "src/core/parser.ts", direction="down")
    data = result.to_json()
    assert data["external"] == ["zod"], data
    assert data["unresolved"] == ["../vendor/error", "./missing"], data
    assert "unresolved" in result.to_text()
