"""impact, context, call_tree and trace (issue #24): what depends on a symbol, a task's context block, calls down
and call paths up from entry points."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_hub.index import api
from lsp_hub.index.navigation.common import NavigationError
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.index_helpers import write

STORE = """\
import json


class Store:
    def save(self, item: str) -> None:
        write_line(json.dumps(item))


class CachedStore(Store):
    def save(self, item: str) -> None:
        super().save(item)


def write_line(text: str) -> None:
    print(text)
"""

CART = """\
from shop.store import Store


class Cart:
    def __init__(self) -> None:
        self.store = Store()

    def add(self, item: str) -> None:
        self.store.save(item)


def checkout(cart: Cart) -> None:
    cart.add("x")
"""


@pytest.fixture
def shop(tmp_path: Path) -> WorkspaceIndex:
    write(tmp_path, "shop/__init__.py", "from shop.store import Store\n")
    write(tmp_path, "shop/store.py", STORE)
    write(tmp_path, "shop/cart.py", CART)
    write(
        tmp_path,
        "shop/cli.py",
        "from shop.cart import Cart, checkout\n\n\ndef main() -> None:\n"
        "    checkout(Cart())\n\n\nif __name__ == '__main__':\n    main()\n",
    )
    write(
        tmp_path,
        "tests/test_cart.py",
        "from shop.cart import Cart, checkout\n\n\ndef test_checkout() -> None:\n    checkout(Cart())\n",
    )
    write(tmp_path, "pyproject.toml", '[project]\nname = "shop"\n\n[project.scripts]\nshop = "shop.cli:main"\n')
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    return index


def test_impact_of_a_method_lists_callers_overrides_and_tests_apart(shop: WorkspaceIndex) -> None:
    # Callers to depth 2 are Cart.add and checkout; the test calling checkout is at depth 3. No test within the
    # depth asked: tests are looked for deeper (an agent asks what to run), files stay to the depth.
    near = api.impact(shop, "Store.save")
    near_data = near.to_json()
    assert near_data["tests"] == [
        {"path": "tests/test_cart.py", "reasons": ["calls it through its callers (depth 3): test_checkout"]}
    ]
    assert (near_data["depth"], near_data["testsDepth"]) == (2, 4)
    assert "shop/cli.py" not in {entry["path"] for entry in near_data["files"]}  # main is at depth 3
    assert "tests (none within depth 2; within depth 4):\n  tests/test_cart.py:" in near.to_text()
    shallow = api.impact(shop, "Store.save", depth=1).to_json()
    assert [entry["path"] for entry in shallow["tests"]] == ["tests/test_cart.py"]
    assert {entry["path"] for entry in shallow["files"]} == {"shop/cart.py", "shop/store.py"}
    # Nothing calls CachedStore.save: no test within depth 4, and the answer says how deep it looked.
    lonely = api.impact(shop, "CachedStore.save")
    assert lonely.to_json()["tests"] == [] and lonely.to_json()["testsDepth"] == 4
    assert "tests: (no test reaches it within depth 4)" in lonely.to_text()
    result = api.impact(shop, "Store.save", depth=3)
    data = result.to_json()
    reasons = {entry["path"]: entry["reasons"] for entry in data["files"]}
    assert "called by Cart.add" in reasons["shop/cart.py"]
    assert "calls it through its callers (depth 2): checkout" in reasons["shop/cart.py"]
    assert "CachedStore.save overrides Store.save" in reasons["shop/store.py"]
    assert [entry["path"] for entry in data["tests"]] == ["tests/test_cart.py"]
    assert data["tests"][0]["reasons"] == ["calls it through its callers (depth 3): test_checkout"]
    assert data["complete"] is True
    assert (data["depth"], data["testsDepth"]) == (3, 3)
    assert "tests:\n  tests/test_cart.py:" in result.to_text()


def test_impact_of_a_class_and_of_a_file(shop: WorkspaceIndex) -> None:
    reasons = {entry["path"]: entry["reasons"] for entry in api.impact(shop, "Store").to_json()["files"]}
    assert "re-exports Store" in reasons["shop/__init__.py"]
    assert "imports Store" in reasons["shop/cart.py"]
    assert "CachedStore subclasses Store" in reasons["shop/store.py"]
    by_file = api.impact(shop, "shop/cart.py").to_json()
    assert {entry["path"] for entry in by_file["files"]} == {"shop/cli.py"}
    assert [entry["path"] for entry in by_file["tests"]] == ["tests/test_cart.py"]
    assert by_file["testsDepth"] == 2
    # The store's file: its importers to depth 2 hold no test; the test imports it through shop/cart.py.
    store_file = api.impact(shop, "shop/store.py", depth=1).to_json()
    assert store_file["tests"] == [{"path": "tests/test_cart.py", "reasons": ["imports it through 1 other file"]}]
    assert store_file["testsDepth"] == 4
    with pytest.raises(NavigationError, match="unknown symbol"):
        api.impact(shop, "Nothing.here")


def test_call_tree_collapses_calls_outside_the_workspace(shop: WorkspaceIndex) -> None:
    result = api.call_tree(shop, "checkout")
    data = result.to_json()
    [add] = data["calls"]
    assert add["name"] == "cart.add" and add["definition"] == "shop/cart.py:8"
    [save] = add["calls"]
    assert save["name"] == "self.store.save" and save["definition"] == "shop/store.py:5"
    assert save["calls"][0]["definition"] == "shop/store.py:14"  # write_line, depth 3: not expanded further
    assert "calls" not in save["calls"][0]
    assert save["unresolved"] == ["json.dumps"]
    assert "+ 1 calls outside the workspace or unresolved: json.dumps" in result.to_text()
    listed = api.call_tree(shop, "Store.save", include_unresolved=True).to_json()
    assert {call["name"] for call in listed["calls"]} == {"write_line", "json.dumps"}
    with pytest.raises(NavigationError, match="depth must be between 1 and 8"):
        api.call_tree(shop, "checkout", depth=0)


def test_trace_reaches_a_function_called_from_a_test_through_another_module(shop: WorkspaceIndex) -> None:
    result = api.trace(shop, "Store.save")
    data = result.to_json()
    chains = [(path["entry"], [hop["symbol"] for hop in path["calls"]]) for path in data["paths"]]
    assert ("test", ["test_checkout", "checkout", "Cart.add", "Store.save"]) in chains
    assert ("console script shop", ["main", "checkout", "Cart.add", "Store.save"]) in chains
    assert ("__main__", ["<module shop/cli.py>", "main", "checkout", "Cart.add", "Store.save"]) in chains
    lengths = [len(path["calls"]) for path in data["paths"]]
    assert lengths == sorted(lengths)  # shortest first
    assert "[test] test_checkout (tests/test_cart.py:4) -> checkout (shop/cart.py:12)" in result.to_text()
    # A library's way in: public, and called from tests alone (or from nothing) as far as the index sees.
    assert ("api", ["CachedStore.save", "Store.save"]) in chains
    assert not [chain for entry, chain in chains if entry == "api" and chain[0] in ("Cart.add", "checkout")]
    capped = api.trace(shop, "Store.save", limit=1).to_json()
    assert len(capped["paths"]) == 1 and capped["complete"] is False and capped["omitted"] == len(chains) - 1


WEB = """\
from flask import Flask
import click
import pytest

from shop.cart import Cart, checkout

app = Flask(__name__)


@app.route("/checkout", methods=["POST"])
def checkout_view():
    checkout(Cart())


@click.command()
@click.option("--dry-run", is_flag=True)
def checkout_command(dry_run):
    checkout(Cart())


@app.task
def nightly():
    checkout(Cart())


@pytest.fixture
def paid_cart():
    checkout(Cart())


@staticmethod
def decorated_but_no_entry():
    checkout(Cart())
"""


def test_a_typescript_test_is_named_by_its_title_in_trace_and_impact(tmp_path: Path) -> None:
    """A jest/vitest/ava test is a call with a callback: trace starts at the test (`it("adds")`, an entry of kind
    test) and impact names it, where both said `<module>` of the test file."""
    write(tmp_path, "package.json", '{"name": "calc"}\n')
    write(tmp_path, "src/math.ts", "export function add(a: number, b: number): number {\n  return a + b;\n}\n\n"
          "export function total(items: number[]): number {\n  return items.reduce(add, 0) + add(0, 0);\n}\n")
    write(tmp_path, "test/math.test.ts", "import { add, total } from '../src/math';\n\n"
          "describe('math', () => {\n  it('adds', () => {\n    expect(add(1, 2)).toBe(total([3]));\n  });\n"
          "  it('totals', () => {\n    expect(total([1])).toBe(1);\n  });\n});\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    paths = api.trace(index, "add").to_json()["paths"]
    starts = {(path["entry"], path["calls"][0]["symbol"]) for path in paths}
    assert {("test", 'it("adds")'), ("test", 'it("totals")')} <= starts
    tests = api.impact(index, "add").to_json()["tests"]
    assert tests[0]["path"] == "test/math.test.ts"
    assert tests[0]["reasons"][0] == 'called by it("adds")'
    # it("adds") calls add through total too: named once, at its shallowest depth.
    assert 'calls it through its callers (depth 2): it("totals")' in tests[0]["reasons"]
    # What a test calls is what its callback calls, not the call `it(...)` that makes it.
    tree = api.call_tree(index, 'it("adds")').to_text()
    assert "add -> src/math.ts:1" in tree and "it ->" not in tree and " it," not in tree
    assert "describe" not in {call["name"] for call in api.zoom(index, 'describe("math")').to_json()["calls"]}
    # A test spelling a name ranks after the definition of that name in a symbol search (a function's kind would
    # have put it before a method).
    write(tmp_path, "src/cmd.ts", "export class Command {\n  parseOptions(argv: string[]) { return argv; }\n}\n")
    write(tmp_path, "test/cmd.test.ts", "import { Command } from '../src/cmd';\n\n"
          "describe('Command.parseOptions()', () => {\n  it('parses', () => new Command().parseOptions([]));\n});\n")
    index.build()
    found = [match["name"] for match in api.symbols(index, "parse options").to_json()["symbols"]]
    assert found == ["parseOptions", 'describe("Command.parseOptions()")']
    # Its name is one symbol, dots and all.
    assert api.zoom(index, 'describe("Command.parseOptions()")').to_json()["name"] == (
        'describe("Command.parseOptions()")'
    )


def test_trace_starts_at_hooks_as_tests_and_at_top_level_event_handlers_as_events(tmp_path: Path) -> None:
    """`beforeEach(() => ...)` and `process.on("exit", ...)` were "[module]" entry points of their files."""
    write(tmp_path, "package.json", '{"name": "srv"}\n')
    write(tmp_path, "src/db.ts", "export function connect(url: string): string {\n  return url;\n}\n")
    write(tmp_path, "src/main.ts", "import { connect } from './db';\n\n"
          "process.on('exit', () => {\n  connect('x');\n});\n")
    write(tmp_path, "test/db.test.ts", "import { connect } from '../src/db';\n\n"
          "beforeEach(() => {\n  connect('y');\n});\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    starts = {(path["entry"], path["calls"][0]["symbol"]) for path in api.trace(index, "connect").to_json()["paths"]}
    assert {("event", 'process.on("exit")'), ("test", "beforeEach()")} <= starts
    assert not {entry for entry, _symbol in starts if entry == "module"}


def test_the_test_callees_are_those_the_extractor_matches() -> None:
    from lsp_hub.index.extract import query_source
    from lsp_hub.index.file_kinds import RUBY_TEST_CALLEES, RUBY_TEST_HOOKS, TEST_CALLEES, TEST_HOOKS

    assert f'"^({"|".join(TEST_CALLEES)})$"' in query_source("typescript")
    assert f'"^({"|".join(TEST_HOOKS)})$"' in query_source("typescript")
    assert f'"^({"|".join(RUBY_TEST_CALLEES)})$"' in query_source("ruby")
    assert f'"^({"|".join(RUBY_TEST_HOOKS)})$"' in query_source("ruby")


def test_trace_starts_at_route_command_and_task_handlers(shop: WorkspaceIndex, tmp_path: Path) -> None:
    write(tmp_path, "shop/web.py", WEB)
    write(
        tmp_path,
        "web/server.ts",
        'import { total } from "./prices";\n\nconst app = express();\n'
        'app.get("/total", showTotal);\nmap.get("k", notARoute);\n\n'
        "function showTotal(req, res) {\n  res.send(total());\n}\n\n"
        "function notARoute() {\n  return total();\n}\n",
    )
    write(tmp_path, "web/prices.ts", "export function total(): number {\n  return 1;\n}\n")
    write(tmp_path, "web/cli.js", 'const { total } = require("./prices");\nconsole.log(total());\n')
    write(tmp_path, "package.json", '{"name": "@shop/web", "bin": {"shop-total": "./web/cli.js"}}')
    shop.build()
    chains = {path["calls"][0]["symbol"]: path["entry"] for path in api.trace(shop, "checkout").to_json()["paths"]}
    assert chains["checkout_view"] == "route"
    assert chains["checkout_command"] == "command"
    assert chains["nightly"] == "task"
    assert chains["paid_cart"] == "test"
    # No decorator of its makes it an entry; public and called by nothing, it is where other code would come in.
    assert chains["decorated_but_no_entry"] == "api"
    result = api.trace(shop, "total")
    ts_chains = {path["calls"][0]["symbol"]: path["entry"] for path in result.to_json()["paths"]}
    assert ts_chains["showTotal"] == "route" and "notARoute" not in ts_chains
    assert ts_chains["<module web/cli.js>"] == "bin shop-total"
    assert "[route] showTotal (web/server.ts:7) -> total (web/prices.ts:1)" in result.to_text()


def test_trace_marks_a_librarys_public_functions_that_only_tests_call(tmp_path: Path) -> None:
    # zlib/ sorts after tests/: the breadth-first order alone would list the test first.
    write(tmp_path, "zlib/api.py", "from zlib.core import send\n\n\ndef get(url):\n    return send(url)\n\n\n"
                                   "def _private_get(url):\n    return send(url)\n")
    write(tmp_path, "zlib/core.py", "def send(url):\n    return url\n")
    write(tmp_path, "tests/test_api.py", "from zlib.api import get\n\n\ndef test_get():\n    assert get('x')\n")
    write(tmp_path, "tests/test_core.py", "from zlib.core import send\n\n\ndef test_send():\n    send('x')\n")
    write(tmp_path, "web/prices.ts", "export function total(): number {\n  return base();\n}\n\n"
                                     "function base(): number {\n  return 1;\n}\n\n"
                                     "export class Basket {\n  sum(): number {\n    return base();\n  }\n"
                                     "  private inner(): number {\n    return base();\n  }\n}\n")
    write(tmp_path, "web/prices.test.ts", 'import { total } from "./prices";\n\ntotal();\n')
    index = WorkspaceIndex(tmp_path)
    index.build()
    chains = [(path["entry"], [hop["symbol"] for hop in path["calls"]])
              for path in api.trace(index, "send").to_json()["paths"]]
    # Called by a test alone, public: where a library's users come in; listed before a test of the same length.
    assert chains[:2] == [("api", ["get", "send"]), ("test", ["test_send", "send"])]
    assert ("test", ["test_get", "get", "send"]) in chains
    assert not [chain for entry, chain in chains if entry == "api" and chain[0] == "_private_get"]
    ts_chains = {path["calls"][0]["symbol"]: path["entry"] for path in api.trace(index, "base").to_json()["paths"]}
    # Exported and not private; a test file's top level is a test.
    assert ts_chains == {"total": "api", "Basket.sum": "api", "<module web/prices.test.ts>": "test"}
    assert "[api] get (zlib/api.py:4) -> send (zlib/core.py:1)" in api.trace(index, "send").to_text()
    index.close()


def test_context_block_within_budget(shop: WorkspaceIndex) -> None:
    result = api.context(shop, "Make Cart.add retry when Store.save fails", ["shop/cart.py"])
    data = result.to_json()
    assert [entry["name"] for entry in data["definitions"]][:2] == ["Cart.add", "Store.save"]
    assert data["targets"] == [
        {"path": "shop/cart.py", "imports": ["shop/store.py"], "importedBy": ["shop/cli.py", "tests/test_cart.py"]}
    ]
    assert any(entry["path"] == "shop/store.py" for entry in data["relevantFiles"])
    assert data["complete"] is True and data["bytes"] <= 8000
    small = api.context(shop, "Make Cart.add retry when Store.save fails", ["shop/cart.py"], budget=250)
    assert len(small.to_text().encode()) <= 250 + 60 and small.to_json()["complete"] is False
    assert len(small.to_json()["definitions"]) + len(small.to_json()["relevantFiles"]) < len(data["definitions"]) + len(
        data["relevantFiles"]
    )
    summary = api.context(shop).to_json()
    assert "repoMap" in summary and "shop/store.py" in summary["repoMap"]
    with pytest.raises(NavigationError, match="outside the workspace"):
        api.context(shop, "x", ["/etc/hosts"])


def test_context_shows_a_name_the_descriptions_words_spell(tmp_path: Path) -> None:
    """starlette: "GZip middleware should not compress server sent events" showed the functions named `middleware`
    and not `GZipMiddleware`, which its words spell. A name written as code comes first, then what several words
    spell, then a plain word that happens to be a name."""
    write(tmp_path, "web/gzip.py", "class GZipMiddleware:\n    pass\n")
    write(tmp_path, "web/app.py", "def middleware(kind):\n    return kind\n\n\ndef send_events():\n    return []\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    try:
        index.build()
        names = [entry["name"] for entry in api.context(index, "GZip middleware should not send_events").to_json()[
            "definitions"]]
    finally:
        index.close()
    assert names == ["send_events", "GZipMiddleware", "middleware"]


def test_impact_of_a_go_file_ranks_its_users_before_importers_of_its_package(tmp_path: Path) -> None:
    """A Go import takes in the whole package: an importer using none of a file's names depends on its package, not
    on it, and comes after the files that use its names (the same package's among them, which import nothing)."""
    write(tmp_path, "go.mod", "module example.com/shop\n\ngo 1.22\n")
    write(tmp_path, "lib/args.go", "package lib\n\nfunc ExactArgs(n int) int {\n\treturn n\n}\n")
    write(tmp_path, "lib/command.go", "package lib\n\ntype Command struct{}\n\nfunc Run(c Command) int {\n"
          "\treturn ExactArgs(1)\n}\n")
    write(tmp_path, "doc/docs.go", 'package doc\n\nimport "example.com/shop/lib"\n\n'
          "func Render(c lib.Command) {}\n")
    write(tmp_path, "app/main.go", 'package main\n\nimport "example.com/shop/lib"\n\n'
          "func main() {\n\tlib.ExactArgs(2)\n}\n")
    write(tmp_path, "doc/docs_test.go", 'package doc\n\nimport (\n\t"testing"\n\n\t"example.com/shop/lib"\n)\n\n'
          "func TestRender(t *testing.T) {\n\tRender(lib.Command{})\n}\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    data = api.impact(index, "lib/args.go").to_json()
    reasons = {entry["path"]: entry["reasons"] for entry in data["files"]}
    assert [entry["path"] for entry in data["files"]] == ["app/main.go", "lib/command.go", "doc/docs.go"]
    assert reasons["app/main.go"] == ["imports the package of lib/args.go", "uses ExactArgs"]
    assert reasons["lib/command.go"] == ["uses ExactArgs"]
    assert reasons["doc/docs.go"] == ["imports the package of lib/args.go"]
    assert data["tests"] == [{"path": "doc/docs_test.go", "reasons": ["imports the package of lib/args.go"]}]
    # A symbol's impact: the files and tests that use it, not every test importing its package.
    command = api.impact(index, "Command").to_json()
    assert command["files"] == [{"path": "doc/docs.go", "reasons": ["uses Command"]}]
    assert command["tests"] == [{"path": "doc/docs_test.go", "reasons": ["uses Command"]}]
    assert api.impact(index, "ExactArgs").to_json()["tests"] == []
    # Of the package's other file, an importer using its names ranks by them.
    other = {entry["path"]: entry["reasons"] for entry in api.impact(index, "lib/command.go").to_json()["files"]}
    assert other["doc/docs.go"] == ["imports the package of lib/command.go", "uses Command"]


def test_an_anonymous_route_handler_is_named_by_its_path(tmp_path: Path) -> None:
    """express, koa, fastify, hono: `app.get("/users", (req, res) => {...})` registers a handler with no name, so
    its calls had the caller `<module>` and trace started at the module. The handler is a function named
    `app.get("/users")` (middleware between the path and it allowed), an entry of kind route; `map.get("k", () =>
    ...)` is no route. Its name is one symbol, and what it calls is what its callback calls."""
    write(tmp_path, "package.json", '{"name": "shop"}\n')
    write(tmp_path, "src/users.js", "exports.list = function list() {\n  return [];\n};\n")
    write(
        tmp_path,
        "src/app.js",
        "var users = require('./users');\nvar app = express();\n\n"
        "app.get('/users', auth, function (req, res) {\n  res.send(users.list());\n});\n\n"
        "router.post(`/users/:id`, async (req, res) => {\n  res.json(users.list());\n});\n\n"
        "cache.get('key', () => users.list());\n",
    )
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    result = api.trace(index, "list")
    starts = {(path["entry"], path["calls"][0]["symbol"]) for path in result.to_json()["paths"]}
    assert {("route", 'app.get("/users")'), ("route", 'router.post("/users/:id")')} <= starts, starts
    assert not any(symbol.startswith("cache.get") for _entry, symbol in starts)
    zoomed = api.zoom(index, 'app.get("/users")').to_json()
    assert zoomed["name"] == 'app.get("/users")'
    assert {call["name"] for call in zoomed["calls"]} == {"res.send", "users.list"}
    # express's own tests make an app in each test: a route inside a test's callback stays the test's, so trace
    # starts at the test (`[test] it("lists")`), not at a route of the test file
    write(
        tmp_path,
        "test/app.test.js",
        "var users = require('../src/users');\n\ndescribe('app', function () {\n"
        "  it('lists', function () {\n    var app = express();\n"
        "    app.get('/', function (req, res) {\n      res.send(users.list());\n    });\n  });\n});\n",
    )
    index.build()
    starts = {(path["entry"], path["calls"][0]["symbol"]) for path in api.trace(index, "list").to_json()["paths"]}
    assert ("test", 'it("lists")') in starts and ("route", 'app.get("/")') not in starts, starts


def test_trace_starts_at_spring_handlers_junit_tests_and_public_java_methods(tmp_path: Path) -> None:
    """A Spring application's controller methods are called by the framework, not by code: trace of a service
    method found "none" (Java annotations were not read, and no Java method counted as public). `@GetMapping` and
    its kin make a route, JUnit's `@Test` a test. A `public` Java method nothing calls is no `api` entry: Java's
    callers go by name alone, and gson's `JsonReader.beginArray` (overridden, so called by nothing the index sees)
    came before the tests that reach `peek`."""
    write(
        tmp_path,
        "src/main/java/app/UserController.java",
        "package app;\n\n@RestController\npublic class UserController {\n"
        "  private final UserService service = new UserService();\n\n"
        '  @GetMapping("/users")\n  public String list() {\n    return service.names();\n  }\n}\n',
    )
    write(
        tmp_path,
        "src/main/java/app/UserService.java",
        "package app;\n\npublic class UserService {\n  public String names() {\n    return helper();\n  }\n\n"
        '  private String helper() {\n    return "a";\n  }\n\n  public String all() {\n    return names();\n  }\n}\n',
    )
    write(
        tmp_path,
        "src/test/java/app/UserServiceTest.java",
        "package app;\n\nclass UserServiceTest {\n  @Test\n  void returnsNames() {\n"
        "    new UserService().names();\n  }\n}\n",
    )
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    starts = {
        (path["entry"], path["calls"][0]["symbol"]) for path in api.trace(index, "UserService.names").to_json()["paths"]
    }
    assert {("route", "UserController.list"), ("test", "UserServiceTest.returnsNames")} <= starts, starts
    assert not any(entry == "api" for entry, _symbol in starts), starts


def test_trace_starts_at_go_handlers_registered_for_a_path(tmp_path: Path) -> None:
    """net/http's `http.HandleFunc("/users", listUsers)`, gin's `r.GET("/users", listUsers)`, echo's and chi's
    alike: the handler is a route entry, as `app.get("/users", listUsers)` is in TS/JS. A call with no path first
    (`m.Get("k", f)`) registers nothing."""
    write(tmp_path, "go.mod", "module example.com/app\n\ngo 1.22\n")
    write(
        tmp_path,
        "main.go",
        'package main\n\nimport "net/http"\n\nfunc main() {\n\thttp.HandleFunc("/users", listUsers)\n'
        '\tr.GET("/health", health)\n\tm.Get("k", notARoute)\n}\n\n'
        "func listUsers(w http.ResponseWriter, r *http.Request) {\n\tnames()\n}\n\n"
        "func health(c *Context) {\n\tnames()\n}\n\nfunc notARoute() {\n\tnames()\n}\n\n"
        "func names() []string {\n\treturn nil\n}\n",
    )
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    starts = {(path["entry"], path["calls"][0]["symbol"]) for path in api.trace(index, "names").to_json()["paths"]}
    assert {("route", "listUsers"), ("route", "health")} <= starts, starts
    assert ("route", "notARoute") not in starts, starts


def test_trace_starts_at_aspnet_actions_and_xunit_tests(tmp_path: Path) -> None:
    """ASP.NET's `[HttpGet("users")]` actions and xUnit's `[Fact]`, NUnit's `[Test]`, MSTest's `[TestMethod]`: entries
    as Spring's and JUnit's annotations are in Java; `[Authorize]` beside them marks nothing."""
    write(
        tmp_path,
        "Api/UsersController.cs",
        "namespace Api;\n\npublic class UsersController {\n  [HttpGet(\"users\")]\n  [Authorize]\n"
        "  public string List() {\n    return Store.Names();\n  }\n\n  [Authorize]\n"
        "  public string Hidden() {\n    return Store.Names();\n  }\n}\n\n"
        "public static class Store {\n  public static string Names() {\n    return \"\";\n  }\n}\n",
    )
    write(
        tmp_path,
        "Tests/StoreTests.cs",
        "namespace Tests;\n\npublic class StoreTests {\n  [Fact]\n  public void ListsNames() {\n"
        "    Api.Store.Names();\n  }\n}\n",
    )
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    paths = api.trace(index, "Store.Names").to_json()["paths"]
    starts = {(path["entry"], path["calls"][0]["symbol"]) for path in paths}
    assert {("route", "UsersController.List"), ("test", "StoreTests.ListsNames")} <= starts, starts
    assert not any(symbol == "UsersController.Hidden" and entry in ("route", "test") for entry, symbol in starts)


def test_trace_starts_at_nestjs_handlers_in_typescript_and_javascript(tmp_path: Path) -> None:
    """NestJS's `@Get(':id')` above a controller's method (TypeScript's grammar makes the decorators the method's
    siblings in the class body, so none was read), its `@MessagePattern` and `@Cron` handlers, and the same
    decorators in Babel-compiled JavaScript (where the grammar keeps them in the method). `@UseGuards` beside a
    route marks nothing; a method without decorators is no route."""
    write(tmp_path, "package.json", '{"name": "cats"}\n')
    write(
        tmp_path,
        "src/cats.controller.ts",
        "import { CatsService } from './cats.service';\n\n@Controller('cats')\nexport class CatsController {\n"
        "  constructor(private readonly cats: CatsService) {}\n\n  @UseGuards(AuthGuard)\n  @Get(':id')\n"
        "  findOne(id: string) {\n    return this.cats.find(id);\n  }\n\n  @MessagePattern('cat.created')\n"
        "  created() {\n    return this.cats.find('x');\n  }\n\n  @Cron('0 * * * *')\n  sweep() {\n"
        "    return this.cats.find('y');\n  }\n\n  @UseGuards(AuthGuard)\n  guarded() {\n"
        "    return this.cats.find('z');\n  }\n}\n",
    )
    write(
        tmp_path,
        "src/dogs.controller.js",
        "import { lookup } from './lookup';\n\nexport class DogsController {\n  @Post()\n"
        "  create() {\n    return lookup('d');\n  }\n}\n",
    )
    write(
        tmp_path,
        "src/cats.service.ts",
        "import { lookup } from './lookup';\n\nexport class CatsService {\n  find(id: string) {\n"
        "    return lookup(id);\n  }\n}\n",
    )
    write(tmp_path, "src/lookup.ts", "export function lookup(id: string) {\n  return id;\n}\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    starts = {(path["entry"], path["calls"][0]["symbol"]) for path in api.trace(index, "lookup").to_json()["paths"]}
    assert {
        ("route", "CatsController.findOne"),
        ("route", "CatsController.created"),
        ("task", "CatsController.sweep"),
        ("route", "DogsController.create"),
    } <= starts, starts
    assert not any(symbol == "CatsController.guarded" and entry != "api" for entry, symbol in starts), starts


def test_a_c_call_outside_any_function_is_no_module_entry_point(tmp_path: Path) -> None:
    """jq: Bison's parser.c hides `yyerror`'s body behind a macro the parser could not read, and `trace` listed
    `[module] <module src/parser.c>` as an entry point; C runs nothing at load. Such a call is "unplaced"."""
    write(tmp_path, "src/locfile.c", "int locfile_locate(int x) {\n  return x;\n}\n")
    write(tmp_path, "src/parser.c", "#define FAIL(loc, msg) \\\n  do { } while (0)\nFAIL(a, b) /*YYERROR*/;\n"
          "void yyerror(int loc) {\n  locfile_locate(loc);\n}\n" "locfile_locate(3);\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    entries = {path["entry"] for path in api.trace(index, "locfile_locate").to_json()["paths"]}
    assert "module" not in entries and "__main__" not in entries, entries
    assert "unplaced" in entries, entries
