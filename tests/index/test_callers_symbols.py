"""Callers with import narrowing and depth; symbol search, outlines and definitions by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsp_hub.index.callers import find_callers, resolve_targets_at, resolve_targets_by_name
from lsp_hub.index.links import file_links
from lsp_hub.index.ranking import reference_graph
from lsp_hub.index.symbols import definition_locations, document_symbols, match_score, workspace_symbols
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex
from tests.index.index_helpers import write


def snapshot_of(root: Path) -> Snapshot:
    index = WorkspaceIndex(root, use_cache=False)
    index.build()
    return index.snapshot()


def caller_sites(result: dict[str, object]) -> list[tuple[str, str | None, int, int]]:
    callers = result["callers"]
    assert isinstance(callers, list)
    return sorted(
        (entry["location"]["uri"].rsplit("/", 2)[-2] + "/" + entry["location"]["uri"].rsplit("/", 1)[-1],
         entry["caller"], entry["location"]["range"]["start"]["line"], entry["depth"])
        for entry in callers
    )


def callers_named(snapshot: Snapshot, symbol: str) -> list[tuple[str | None, int]]:
    """(caller, line) of each call site of `symbol`, in the answer's order."""
    found = find_callers(snapshot, resolve_targets_by_name(snapshot, symbol))["callers"]
    return [(entry["caller"], entry["location"]["range"]["start"]["line"]) for entry in found]


def test_import_narrowing_keeps_callers_of_the_other_save_user_out(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    result = find_callers(snapshot, resolve_targets_by_name(snapshot, "storage.save_user"))
    assert result["symbol"] == "save_user"
    assert [d["uri"].endswith("/pyapp/storage.py") for d in result["definitions"]] == [True]
    # cli.py imports save_user from other.py, and other.archive calls its own: neither is a caller.
    assert caller_sites(result) == [("pyapp/service.py", "register", 19, 1), ("tests/test_storage.py",
                                                                              "test_round_trip", 5, 1)]
    assert result["complete"] is True
    other = find_callers(snapshot, resolve_targets_by_name(snapshot, "other.save_user"))
    assert caller_sites(other) == [("pyapp/cli.py", "main", 7, 1), ("pyapp/other.py", "archive", 6, 1)]


def test_depth_walks_callers_of_callers_without_cycles(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    result = find_callers(snapshot, resolve_targets_by_name(snapshot, "slugify"), depth=4)
    assert caller_sites(result) == [
        ("pyapp/service.py", "Registry.register_many", 9, 4),
        ("pyapp/service.py", "Registry.register_one", 13, 3),
        ("pyapp/service.py", "register", 19, 2),
        ("pyapp/storage.py", "save_user", 7, 1),
        ("tests/test_storage.py", "test_round_trip", 5, 2),
    ]
    bounded = find_callers(snapshot, resolve_targets_by_name(snapshot, "slugify"), depth=4, max_callers=2)
    assert len(bounded["callers"]) == 2 and bounded["complete"] is False


def test_methods_count_through_self_known_class_or_unique_name(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    # `self._users.get()` (a dict) is not UserCache.get; `_cache.get()` is, since `_cache = UserCache()`.
    get = find_callers(snapshot, resolve_targets_by_name(snapshot, "UserCache.get"))
    assert caller_sites(get) == [("pyapp/storage.py", "load_user", 13, 1)]
    register_one = find_callers(snapshot, resolve_targets_by_name(snapshot, "Registry.register_one"))
    assert caller_sites(register_one) == [("pyapp/service.py", "Registry.register_many", 9, 1)]
    go = snapshot_of(copy_repo("gomod"))
    assert caller_sites(find_callers(go, resolve_targets_by_name(go, "Cart.Add"))) == [
        ("cart/cart_test.go", "TestAdd", 6, 1), ("gomod/main.go", "main", 10, 1)
    ]


def test_callers_from_a_position_on_a_use_or_inside_a_function(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("tsapp"))
    # On `add` in cart.ts (a use imported through lib/index.ts): the definition in lib/math.ts.
    targets = resolve_targets_at(snapshot, "src/cart.ts", 10, 46)
    assert [(path, definition.name) for path, definition in targets] == [("src/lib/math.ts", "add")]
    result = find_callers(snapshot, targets)
    # The test's call in its callback has the test as its caller (`test("add")`), not the module.
    assert caller_sites(result) == [("lib/math.test.ts", 'test("add")', 3, 1), ("lib/math.ts", "multiply", 7, 1),
                                    ("src/cart.ts", "ShoppingCart.total", 10, 1)]
    inside = resolve_targets_at(snapshot, "src/cart.ts", 14, 4)  # in the body of describe(), on `return`
    assert [definition.name for _path, definition in inside] == ["describe"]


def test_definition_by_name_is_import_aware(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    # save_user() in cli.py (line 7) comes from other.py; in service.py (line 19) from storage.py.
    [cli_target] = definition_locations(snapshot, "pyapp/cli.py", 7, 6)
    assert cli_target["uri"].endswith("/pyapp/other.py") and cli_target["range"]["start"] == {"line": 0,
                                                                                             "character": 4}
    [service_target] = definition_locations(snapshot, "pyapp/service.py", 19, 12)
    assert service_target["uri"].endswith("/pyapp/storage.py")
    assert definition_locations(snapshot, "pyapp/service.py", 16, 20) == []  # `str`: a builtin


def test_document_symbols_nest_methods_under_classes(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    outline = document_symbols(snapshot, "pyapp/models.py")
    assert [(symbol["name"], symbol["kind"]) for symbol in outline] == [
        ("DEFAULT_ROLE", 14), ("User", 5), ("UserCache", 5), ("make_user", 12)
    ]
    cache = outline[2]
    assert [child["name"] for child in cache["children"]] == ["__init__", "get", "put"]
    assert cache["children"][1]["kind"] == 6
    assert cache["selectionRange"]["start"] == {"line": 14, "character": 6}


def test_workspace_symbol_fuzzy_matching_and_ranking(copy_repo: Callable[[str], Path]) -> None:
    snapshot = snapshot_of(copy_repo("pyapp"))
    assert [s["name"] for s in workspace_symbols(snapshot, "UserCache")][:1] == ["UserCache"]
    assert [s["name"] for s in workspace_symbols(snapshot, "UC")] == ["UserCache"]
    assert [s["name"] for s in workspace_symbols(snapshot, "user")][:2] == ["User", "UserCache"]
    names = [s["name"] for s in workspace_symbols(snapshot, "save")]
    assert names == ["save_user", "save_user"]
    register = workspace_symbols(snapshot, "register_one")[0]
    assert register["containerName"] == "Registry" and register["location"]["uri"].endswith("/service.py")
    assert match_score("gUN", "getUserName") > match_score("name", "getUserName") > 0
    assert match_score("xyz", "getUserName") == 0
    assert len(workspace_symbols(snapshot, "", limit=5)) == 5


def test_plain_names_chains_and_other_languages_never_reach_the_wrong_definition(tmp_path: Path) -> None:
    write(tmp_path, "store.py", "class TrustStore:\n    def list(self):\n        return []\n\n    def save(self):\n"
                                "        pass\n")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/mod.py", "def helper():\n    return 1\n")
    write(tmp_path, "other/mod2.py", "def helper():\n    return 2\n")
    write(tmp_path, "users.py", "import os.path\nimport pkg.mod\n\n\ndef names() -> list[str]:\n"
                                "    items = list(range(3))\n    os.path.join('a', 'b')\n    pkg.mod.helper()\n"
                                "    return items\n")
    write(tmp_path, "web/app.ts", "export class Logger {\n  save(): void {}\n}\n")
    write(tmp_path, "jobs.py", "def run(job):\n    job.save()\n")
    snapshot = snapshot_of(tmp_path)

    # `list[str]` and `list(...)` are the builtin, not TrustStore.list.
    assert find_callers(snapshot, resolve_targets_by_name(snapshot, "TrustStore.list"))["callers"] == []
    # `pkg.mod.helper()` after `import pkg.mod` is pkg/mod.py's helper, not other/mod2.py's.
    pkg_helper = find_callers(snapshot, resolve_targets_by_name(snapshot, "mod.helper"))
    assert [(entry["caller"], entry["location"]["range"]["start"]["line"]) for entry in pkg_helper["callers"]] == [
        ("names", 7)]
    assert find_callers(snapshot, resolve_targets_by_name(snapshot, "mod2.helper"))["callers"] == []
    # A Python `job.save()` may be TrustStore.save (one Python definition), never the TypeScript Logger.save.
    python_save = find_callers(snapshot, resolve_targets_by_name(snapshot, "TrustStore.save"))
    assert [entry["caller"] for entry in python_save["callers"]] == ["run"]
    assert find_callers(snapshot, resolve_targets_by_name(snapshot, "Logger.save"))["callers"] == []
    # The same rules shape the repo map's reference graph.
    graph = reference_graph(snapshot).graph
    assert not graph.has_edge("users.py", "store.py")  # builtin list
    assert graph.has_edge("users.py", "pkg/mod.py") and not graph.has_edge("users.py", "other/mod2.py")
    assert graph.has_edge("jobs.py", "store.py") and not graph.has_edge("jobs.py", "web/app.ts")


def test_a_script_without_imports_may_use_global_names_of_other_files(tmp_path: Path) -> None:
    write(tmp_path, "globals.ts", "function logLine(text: string): void {}\n")
    write(tmp_path, "script.ts", "function main() {\n  logLine('hi');\n}\n")
    write(tmp_path, "module.ts", "import { other } from './other';\nexport function run() {\n  logLine('x');\n}\n")
    write(tmp_path, "other.ts", "export function other() {}\n")
    snapshot = snapshot_of(tmp_path)
    result = find_callers(snapshot, resolve_targets_by_name(snapshot, "logLine"))
    # script.ts has no imports (a global script); module.ts imports, so an unimported name is not globals.ts's.
    assert [entry["caller"] for entry in result["callers"]] == ["main"]


def test_names_imported_under_another_name_lead_to_their_definition(tmp_path: Path) -> None:
    from lsp_hub.index.ranking import reference_graph
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/prices.py", "def round_price(value):\n    return value\n")
    write(tmp_path, "pkg/other.py", "def round_price(value):\n    return -value\n")
    write(tmp_path, "shop.py", "from pkg.prices import round_price as rp\nimport pkg.other as alt\n\n\n"
                               "def checkout(total):\n    return rp(total) + alt.round_price(total)\n")
    write(tmp_path, "web/format.ts", "export function formatPrice(value: number): string {\n  return '';\n}\n")
    write(tmp_path, "web/view.ts", "import { formatPrice as fp } from './format';\nimport * as fmt from './format';\n"
                                   "export function show() {\n  fp(1);\n  fmt.formatPrice(2);\n}\n")
    snapshot = snapshot_of(tmp_path)

    prices = find_callers(snapshot, resolve_targets_by_name(snapshot, "prices.round_price"))
    assert [(entry["caller"], entry["location"]["range"]["start"]["character"]) for entry in prices["callers"]] == [
        ("checkout", 11)]  # `rp(total)`
    other = find_callers(snapshot, resolve_targets_by_name(snapshot, "other.round_price"))
    assert [(entry["caller"], entry["location"]["range"]["start"]["character"]) for entry in other["callers"]] == [
        ("checkout", 27)]  # `alt.round_price(total)`
    ts = find_callers(snapshot, resolve_targets_by_name(snapshot, "formatPrice"))
    assert sorted(entry["location"]["range"]["start"]["line"] for entry in ts["callers"]) == [3, 4]

    # Definition by name from the alias, and the reference graph, follow the alias too.
    [location] = definition_locations(snapshot, "shop.py", 5, 12)
    assert location["uri"].endswith("/pkg/prices.py")
    graph = reference_graph(snapshot).graph
    assert graph.has_edge("shop.py", "pkg/prices.py") and graph.has_edge("shop.py", "pkg/other.py")
    assert graph.has_edge("web/view.ts", "web/format.ts")


def test_methods_called_on_an_object_made_outside_the_workspace_are_not_ours(tmp_path: Path) -> None:
    write(tmp_path, "notes.py", "class Notes:\n    def info(self, text):\n        return text\n")
    write(tmp_path, "service.py", "import logging\nfrom notes import Notes\n\nlog = logging.getLogger(__name__)\n"
                                  "notes = Notes()\n\n\ndef run():\n    log.info('started')\n    notes.info('x')\n")
    snapshot = snapshot_of(tmp_path)
    # `log` comes from logging, so `log.info` is not Notes.info; `notes` is a Notes, so `notes.info` is.
    result = find_callers(snapshot, resolve_targets_by_name(snapshot, "Notes.info"))
    assert [entry["location"]["range"]["start"]["line"] for entry in result["callers"]] == [9]
    assert reference_graph(snapshot).graph.has_edge("service.py", "notes.py")


def test_members_of_the_languages_own_globals_are_not_ours(tmp_path: Path) -> None:
    """express: `Object.create(...)` in lib/ linked to an example's `exports.create`, which then opened the map.
    A receiver naming a language's global (`Object`, `Array.prototype...`, Python's `dict`, Ruby's `File`, Java's
    `Integer`, C#'s `Math`) means no workspace definition, unless the workspace defines that name itself."""
    write(tmp_path, "examples/pets.js", "exports.create = function (req, res) {};\nexports.call = function () {};\n"
                                        "class Pets { create() {} }\n")
    write(tmp_path, "lib/response.js", "var res = Object.create(null);\nvar s = Array.prototype.slice.call(res);\n"
                                       "module.exports = res;\n")
    write(tmp_path, "lib/mine.js", "class Map { size() { return 1; } }\nvar m = Map.create();\n")
    write(tmp_path, "keys.py", "class Keys:\n    def fromkeys(self, names):\n        return names\n")
    write(tmp_path, "use.py", "from keys import Keys\n\nseen = dict.fromkeys(['a'])\n")
    write(tmp_path, "lib/files.rb", "class Store\n  def join(a)\n    a\n  end\nend\n")
    write(tmp_path, "lib/paths.rb", "def path\n  File.join('a', 'b')\nend\n")
    write(tmp_path, "src/Dates.java",
          "package x;\nclass Dates {\n  private static int parseInt(String s) { return 0; }\n}\n")
    write(tmp_path, "src/Use.java", "package x;\nclass Use {\n  int n() { return Integer.parseInt(\"1\"); }\n}\n")
    write(tmp_path, "src/Dates.cs", "class Dates {\n  static int Max(int a, int b) { return a; }\n}\n")
    write(tmp_path, "src/Use.cs", "using System;\nclass Use {\n  int N() { return Math.Max(1, 2); }\n}\n")
    snapshot = snapshot_of(tmp_path)
    links = file_links(snapshot)
    assert [link for link in links["lib/response.js"] if link[0] in ("create", "call")] == []
    assert [link for link in links["use.py"] if link[0] == "fromkeys"] == []
    assert [link for link in links["lib/paths.rb"] if link[0] == "join"] == []
    assert [link for link in links["src/Use.java"] if link[0] == "parseInt"] == []
    assert [link for link in links["src/Use.cs"] if link[0] == "Max"] == []
    # `Map` is the workspace's own class here: a member of it it does not define may be any class's `create`.
    assert ("create", 1, ("examples/pets.js",)) in links["lib/mine.js"]
    assert not reference_graph(snapshot).graph.has_edge("lib/response.js", "examples/pets.js")


def test_a_member_of_a_class_the_file_defines_is_the_files_own(tmp_path: Path) -> None:
    """requests: `InvalidJSONError.__init__(self, ...)` in exceptions.py, which defines that class and `__init__`,
    linked to the ten files defining an `__init__`, and each of their `__init__`s then took a line of the map. A
    member the file does not define may still be inherited from anywhere."""
    write(
        tmp_path,
        "pkg/errors.py",
        "class BaseError(IOError):\n    def __init__(self, *args):\n        super().__init__(*args)\n\n\n"
        "class JSONError(BaseError):\n    pass\n\n\nclass DecodeError(JSONError, ValueError):\n"
        "    def __init__(self, *args):\n        JSONError.__init__(self, *args)\n        JSONError.describe(self)\n",
    )
    write(tmp_path, "pkg/models.py", "class Model:\n    def __init__(self):\n        pass\n\n    def describe(self):\n"
                                     "        return 1\n")
    links = file_links(snapshot_of(tmp_path))
    assert [link for link in links["pkg/errors.py"] if link[0] == "__init__"] == []
    assert ("describe", 1, ("pkg/models.py",)) in links["pkg/errors.py"]


def test_a_default_export_renamed_by_a_barrel_file(tmp_path: Path) -> None:
    write(tmp_path, "src/components/Button.tsx",
          "export default function Button(props: { label: string }) {\n  return <button>{props.label}</button>;\n}\n")
    write(tmp_path, "src/components/index.ts", 'export { default as Button } from "./Button";\n')
    write(tmp_path, "src/App.tsx",
          'import { Button } from "./components";\n\nexport function App() {\n  return <Button label="ok" />;\n}\n')
    snapshot = snapshot_of(tmp_path)
    result = find_callers(snapshot, resolve_targets_by_name(snapshot, "Button"))
    assert [(entry["caller"], entry["location"]["range"]["start"]["line"]) for entry in result["callers"]] == [
        ("App", 3)]
    [location] = definition_locations(snapshot, "src/App.tsx", 3, 12)
    assert location["uri"].endswith("/src/components/Button.tsx")


def test_a_rust_use_under_another_name(tmp_path: Path) -> None:
    write(tmp_path, "Cargo.toml", '[package]\nname = "demo"\nversion = "0.1.0"\n')
    write(tmp_path, "src/util.rs", "pub fn helper() -> i32 {\n    1\n}\n")
    write(tmp_path, "src/other.rs", "pub fn helper() -> i32 {\n    2\n}\n")
    write(tmp_path, "src/main.rs", "mod util;\nmod other;\nuse crate::util::helper as h;\n\nfn main() {\n    h();\n}\n")
    snapshot = snapshot_of(tmp_path)
    util = find_callers(snapshot, resolve_targets_by_name(snapshot, "util.helper"))
    assert [(entry["caller"], entry["location"]["range"]["start"]["line"]) for entry in util["callers"]] == [
        ("main", 5)]
    assert find_callers(snapshot, resolve_targets_by_name(snapshot, "other.helper"))["callers"] == []


def test_calls_through_a_typed_attribute_reach_that_class(tmp_path: Path) -> None:
    write(tmp_path, "stores.py", "class DiskStore:\n    def save(self, item):\n        pass\n\n\n"
                                 "class MemoryStore:\n    def save(self, item):\n        pass\n")
    write(tmp_path, "service.py", "from stores import DiskStore, MemoryStore\n\n\nclass Service:\n"
                                  "    def __init__(self):\n        self.disk = DiskStore()\n"
                                  "        self.cache: MemoryStore = make_cache()\n\n"
                                  "    def run(self, item):\n        self.disk.save(item)\n"
                                  "        self.cache.save(item)\n")
    write(tmp_path, "web/app.ts", "import { Cart } from './cart';\nexport class App {\n"
                                  "  constructor(private cart: Cart) {}\n  go() { this.cart.total(); }\n}\n")
    write(tmp_path, "web/cart.ts", "export class Cart {\n  total(): number { return 1; }\n}\n")
    write(tmp_path, "web/order.ts", "export class Order {\n  total(): number { return 2; }\n}\n")
    snapshot = snapshot_of(tmp_path)

    def lines(symbol: str) -> list[int]:
        found = find_callers(snapshot, resolve_targets_by_name(snapshot, symbol))
        return [entry["location"]["range"]["start"]["line"] for entry in found["callers"]]

    # `save` and `total` are each defined twice: without the attribute's type neither call would count.
    assert lines("DiskStore.save") == [9]
    assert lines("MemoryStore.save") == [10]
    assert lines("Cart.total") == [3]
    assert lines("Order.total") == []


def test_a_receivers_class_comes_from_return_annotations_attribute_annotations_and_parameters(
        tmp_path: Path) -> None:
    # Two classes define `pay`: the name alone cannot tell which one a call means. `self.cashier = cashier` takes
    # the annotation of __init__'s parameter; Outlet inherits Shop.pay.
    write(tmp_path, "shop.py", "class Shop:\n    def pay(self):\n        ...\n\n\n"
                               "class Bank:\n    def pay(self):\n        ...\n\n\n"
                               "class Outlet(Shop):\n    pass\n\n\n"
                               "def make() -> Shop:\n    return Shop()\n\n\n"
                               "def open_bank() -> 'Bank':\n    return Bank()\n")
    write(tmp_path, "mall.py", "from shop import Bank, Outlet, Shop, make, open_bank\n\n\n"
                               "class Mall:\n    shop: Shop\n    bank: Bank\n\n"
                               "    def __init__(self, cashier: Outlet, teller: 'Bank'):\n"
                               "        self.cashier = cashier\n        self.teller = teller\n\n"
                               "    def visit(self):\n        self.shop.pay()\n        self.bank.pay()\n"
                               "        self.cashier.pay()\n        self.teller.pay()\n\n\n"
                               "def by_return():\n    s = make()\n    s.pay()\n    b = open_bank()\n    b.pay()\n\n\n"
                               "def by_attribute(m: Mall):\n    m.shop.pay()\n    m.bank.pay()\n\n\n"
                               "def by_parameter(s: Shop, b: Bank, o: Outlet):\n    s.pay()\n    b.pay()\n"
                               "    o.pay()\n\n\n"
                               "def by_annotation():\n    s: Shop = get()\n    s.pay()\n\n\n"
                               "def unknown(x):\n    x.pay()\n")
    snapshot = snapshot_of(tmp_path)
    shop_pay = resolve_targets_by_name(snapshot, "Shop.pay")
    bank_pay = resolve_targets_by_name(snapshot, "Bank.pay")
    assert [(caller, line) for _path, caller, line, _depth in caller_sites(find_callers(snapshot, shop_pay))] == [
        ("Mall.visit", 12), ("Mall.visit", 14), ("by_annotation", 38), ("by_attribute", 26), ("by_parameter", 31),
        ("by_parameter", 33), ("by_return", 20)]
    assert [(caller, line) for _path, caller, line, _depth in caller_sites(find_callers(snapshot, bank_pay))] == [
        ("Mall.visit", 13), ("Mall.visit", 15), ("by_attribute", 27), ("by_parameter", 32), ("by_return", 22)]


def test_functools_partial_counts_as_a_call_of_the_function_it_wraps(tmp_path: Path) -> None:
    write(tmp_path, "jobs.py", "import functools\nfrom functools import partial\n\n\n"
                               "def send(to, text):\n    ...\n\n\n"
                               "class Mailer:\n    def deliver(self, to):\n        ...\n\n\n"
                               "def schedule(mailer: Mailer):\n    later = functools.partial(send, 'ops')\n"
                               "    soon = partial(mailer.deliver, 'ops')\n    return later, soon\n")
    snapshot = snapshot_of(tmp_path)
    assert [(caller, line) for _path, caller, line, _depth in
            caller_sites(find_callers(snapshot, resolve_targets_by_name(snapshot, "send")))] == [("schedule", 14)]
    assert [(caller, line) for _path, caller, line, _depth in
            caller_sites(find_callers(snapshot, resolve_targets_by_name(snapshot, "Mailer.deliver")))] == [
        ("schedule", 15)]


# A class attribute `type`, used through `self`, and the builtin `type` called plainly beside it (as click's core.py).
OPTION_AND_CONTEXT = """\
class Option:
    type: object

    def convert(self, value):
        return self.type(value)


class Context:
    def copy(self):
        return type(self)()
"""


def test_a_plain_call_is_no_caller_of_a_class_attribute(tmp_path: Path) -> None:
    """Seen on click: `type(self)(...)` (the builtin) counted as a caller of the attribute `Option.type`. A plain
    name in Python never reaches a class's member, attribute or method; `self.type(...)` does."""
    write(tmp_path, "cli/core.py", OPTION_AND_CONTEXT)
    snapshot = snapshot_of(tmp_path)
    result = find_callers(snapshot, resolve_targets_by_name(snapshot, "Option.type"))
    assert caller_sites(result) == [("cli/core.py", "Option.convert", 4, 1)]


def test_the_index_definition_of_a_plain_name_is_no_class_attribute(tmp_path: Path) -> None:
    """The index's stand-in definition (no server answered) of `type` in `type(self)()` is the builtin: nothing in
    the workspace, not the attribute `Option.type`; of `self.type` it is that attribute."""
    write(tmp_path, "cli/core.py", OPTION_AND_CONTEXT)
    snapshot = snapshot_of(tmp_path)
    assert definition_locations(snapshot, "cli/core.py", 9, 16) == []
    [attribute] = definition_locations(snapshot, "cli/core.py", 4, 21)
    assert attribute["range"]["start"]["line"] == 1


def test_a_c_function_is_its_body_not_its_prototypes(tmp_path: Path) -> None:
    """A header declares what a .c file defines, and a .c file may declare its own functions before using them (as
    kilo.c does): the symbol is one, its body. `callers --symbol gcd` names one definition, and a call tree goes to
    the body, not to the prototype with the body as an alternative."""
    write(tmp_path, "math.h", "#ifndef MATH_H\n#define MATH_H\nint gcd(int a, int b);\n#endif\n")
    write(tmp_path, "math.c", '#include "math.h"\nint gcd(int a, int b) {\n  return b ? gcd(b, a % b) : a;\n}\n')
    write(tmp_path, "main.c", '#include "math.h"\nvoid report(void);\nint main(void) {\n  report();\n'
                              "  return gcd(4, 6);\n}\nvoid report(void) {\n}\n")
    snapshot = snapshot_of(tmp_path)
    [(path, definition)] = resolve_targets_by_name(snapshot, "gcd")
    assert (path, definition.span.start_line) == ("math.c", 1)
    sites = caller_sites(find_callers(snapshot, [(path, definition)]))
    assert [(where.rsplit("/", 1)[-1], caller, line) for where, caller, line, _ in sites] == [
        ("main.c", "main", 4), ("math.c", "gcd", 2)]
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    from lsp_hub.index import api

    calls = {call["name"]: call for call in api.call_tree(index, "main").to_json()["calls"]}
    assert calls["report"] == {"name": "report", "count": 1, "definition": "main.c:7"}
    assert calls["gcd"]["definition"] == "math.c:2" and "alternatives" not in calls["gcd"]
    [header] = api.outline(index, "math.h").to_json()["files"]
    outline = [entry["name"] for entry in header["symbols"]]
    assert "gcd" in outline  # the header's outline still shows its API


def test_a_prototype_of_the_c_library_is_no_workspace_definition(tmp_path: Path) -> None:
    """Bison's parser.c declares `void free (void *);` and `void *malloc (YYSIZE_T);`: jq's call tree of main sent
    its `free` calls there, and `impact src/parser.c` listed every file that frees memory. A workspace that defines
    one with a body still has it."""
    write(tmp_path, "parser.c", "#include <stddef.h>\nvoid *malloc (size_t);\nvoid free (void *);\n"
                                "int yyparse(void) {\n  free(malloc(1));\n  return 0;\n}\n")
    write(tmp_path, "main.c", "#include <stdlib.h>\nint yyparse(void);\nint main(void) {\n  free(NULL);\n"
                              "  return yyparse();\n}\n")
    write(tmp_path, "alloc/arena.c", "#include <stddef.h>\nvoid *calloc(size_t n, size_t size) {\n  return 0;\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert resolve_targets_by_name(snapshot, "free") == []
    assert resolve_targets_by_name(snapshot, "malloc") == []
    assert [path for path, _ in resolve_targets_by_name(snapshot, "calloc")] == ["alloc/arena.c"]
    assert [path for path, _ in resolve_targets_by_name(snapshot, "yyparse")] == ["parser.c"]


def test_a_class_names_the_methods_it_inherits(tmp_path: Path) -> None:
    """`Flask.route`: Flask defines no `route`, it inherits Scaffold's. Asked for by the class an agent has in hand,
    the nearest base's definition answers (not "unknown symbol"); an override in between wins, and a name no class
    in the line defines stays unknown."""
    write(
        tmp_path,
        "scaffold.py",
        "class Scaffold:\n    def route(self, rule):\n        pass\n\n    def get(self, rule):\n"
        "        return self.route(rule)\n",
    )
    write(
        tmp_path,
        "app.py",
        "from scaffold import Scaffold\n\n\nclass App(Scaffold):\n    def get(self, rule):\n        return rule\n\n\n"
        "class Flask(App):\n    pass\n",
    )
    snapshot = snapshot_of(tmp_path)
    found = resolve_targets_by_name(snapshot, "Flask.route")
    assert [(path, definition.container) for path, definition in found] == [("scaffold.py", "Scaffold")]
    found = resolve_targets_by_name(snapshot, "Flask.get")
    assert [(path, definition.container) for path, definition in found] == [("app.py", "App")]
    assert resolve_targets_by_name(snapshot, "Flask.post") == []


def test_a_variable_typed_self_is_its_methods_class(tmp_path: Path) -> None:
    """`mine: Self = self.copy()` (Python's typing.Self, Rust's `let other: Self = other.into();`): the class
    whose method it is, not a type named `Self` that the workspace does not have."""
    write(tmp_path, "shop.py", "from typing import Self\n\n\nclass Cart:\n    def total(self) -> int:\n"
          "        return 0\n\n    def merge(self, other: object) -> int:\n        mine: Self = self.copy()\n"
          "        return mine.total()\n\n    def copy(self) -> 'Cart':\n        return Cart()\n\n\n"
          "class Order:\n    def total(self) -> int:\n        return 1\n")
    snapshot = snapshot_of(tmp_path)
    assert callers_named(snapshot, "Cart.total") == [("Cart.merge", 9)]
    assert callers_named(snapshot, "Order.total") == []


def test_a_rust_variable_typed_in_its_function_decides_before_its_name(tmp_path: Path) -> None:
    """axum's `Router::merge`: `let other: Self = other.into(); other.into_inner()` is Router's, and so is
    `let router = Router::new(); router.route(..)`; the variable's name (`other`) does not make it `Other`'s. A
    trait's own method stays reachable from any typed variable."""
    write(tmp_path, "Cargo.toml", '[package]\nname = "web"\nversion = "0.1.0"\n')
    write(tmp_path, "src/lib.rs", "pub trait Layered {\n    fn layer(self) -> Self where Self: Sized { self }\n}\n\n"
          "pub struct Router;\n\nimpl Layered for Router {}\n\nimpl Router {\n"
          "    pub fn new() -> Self {\n        Router\n    }\n\n"
          "    pub fn route(self, path: &str) -> Self {\n        self\n    }\n\n"
          "    pub fn merge(self, other: Router) -> Self {\n        let other: Self = other.into();\n"
          "        other.route(\"/\")\n    }\n}\n\npub struct Other;\n\nimpl Other {\n"
          "    pub fn route(self, path: &str) -> Self {\n        self\n    }\n}\n\n"
          "pub fn app() -> Router {\n    let router = Router::new();\n    router.layer().route(\"/a\");\n"
          "    let second = Router::new();\n    second.layer()\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert callers_named(snapshot, "Router.route") == [("Router.merge", 19)]
    assert callers_named(snapshot, "Other.route") == []
    assert ("app", 33) in callers_named(snapshot, "Layered.layer")


def test_a_java_or_csharp_variable_s_declared_type_decides_which_class_s_method(tmp_path: Path) -> None:
    """gson's `JsonObject original = new JsonObject(); original.deepCopy()`: five classes define deepCopy, and the
    index found no caller of JsonObject.deepCopy. A declared local (`var` with `new` or a method's return type too),
    a `for` variable and a parameter type the receiver in Java and C#; a base class's variable reaches the base's
    own method, not an override (as the servers' call hierarchies answer)."""
    write(tmp_path, "src/JsonElement.java", "package g;\n\npublic abstract class JsonElement {\n"
          "  public abstract JsonElement deepCopy();\n}\n")
    write(tmp_path, "src/JsonObject.java", "package g;\n\npublic final class JsonObject extends JsonElement {\n"
          "  @Override\n  public JsonObject deepCopy() {\n    return new JsonObject();\n  }\n\n"
          "  public static JsonObject parse(String text) {\n    return new JsonObject();\n  }\n}\n")
    write(tmp_path, "src/JsonArray.java", "package g;\n\nimport java.util.List;\n\n"
          "public final class JsonArray extends JsonElement {\n  @Override\n  public JsonArray deepCopy() {\n"
          "    return new JsonArray();\n  }\n\n"
          "  public void copyAll(List<JsonArray> arrays, final JsonObject other) {\n"
          "    JsonObject original = new JsonObject();\n    original.deepCopy();\n"
          "    var parsed = JsonObject.parse(\"{}\");\n    parsed.deepCopy();\n    other.deepCopy();\n"
          "    for (JsonArray array : arrays) {\n      array.deepCopy();\n    }\n"
          "    JsonElement element = original;\n    element.deepCopy();\n  }\n}\n")
    write(tmp_path, "src/Holder.java", "package g;\n\nclass Holder {\n  private final JsonObject held;\n\n"
          "  void copy() {\n    this.held.deepCopy();\n  }\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert callers_named(snapshot, "JsonObject.deepCopy") == [("Holder.copy", 6), ("JsonArray.copyAll", 12),
                                                              ("JsonArray.copyAll", 14), ("JsonArray.copyAll", 15)]
    assert callers_named(snapshot, "JsonArray.deepCopy") == [("JsonArray.copyAll", 17)]
    assert callers_named(snapshot, "JsonElement.deepCopy") == [("JsonArray.copyAll", 20)]
    write(tmp_path, "Shop/Cart.cs", "namespace Shop;\n\npublic class Cart : Basket, ICart\n{\n"
          "    public int Total() { return 0; }\n}\n\npublic class Order\n{\n    public int Total() { return 1; }\n\n"
          "    public int Sum(Cart cart)\n    {\n        var order = new Order();\n        Cart other = cart;\n"
          "        return cart.Total() + order.Total() + other.Total();\n    }\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert callers_named(snapshot, "Cart.Total") == [("Order.Sum", 15), ("Order.Sum", 15)]
    assert callers_named(snapshot, "Order.Total") == [("Order.Sum", 15)]


def test_a_cpp_variable_or_parameter_s_declared_type_decides_which_class_s_method(tmp_path: Path) -> None:
    """C++ as Java: `Writer* b = new Writer(); b->write()` and `void use(const Writer& w)` call Writer::write, not
    Reader::write, though both classes define it; a base named after `:` is a base (`class Pen : public Writer`)."""
    write(tmp_path, "io.hpp", "class Writer {\n public:\n  void write(int x);\n};\n\n"
          "class Reader {\n public:\n  void write(int x);\n};\n\nclass Pen : public Writer {};\n")
    write(tmp_path, "use.cpp", "#include \"io.hpp\"\n\nvoid use(const Writer& w, Reader* r) {\n"
          "  Writer* b = new Writer();\n  b->write(1);\n  w.write(2);\n  r->write(3);\n"
          "  for (Pen& pen : pens) {\n    pen.write(4);\n  }\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert callers_named(snapshot, "Writer.write") == [("use", 4), ("use", 5), ("use", 8)]
    assert callers_named(snapshot, "Reader.write") == [("use", 6)]


def test_a_go_receiver_parameter_or_named_result_is_typed_by_its_signature(tmp_path: Path) -> None:
    """cobra's `func (c *Command) ExecuteC()` calls `c.Name()`: with Name defined on several types, the call was no
    caller of Command.Name (and zoom resolved `c.Root` only by its name). The receiver, a parameter and a named
    result are typed by the signature; a method promoted from an embedded struct (gin's Engine embeds
    RouterGroup) is reached through it."""
    write(tmp_path, "go.mod", "module example.com/cli\n\ngo 1.21\n")
    write(tmp_path, "command.go", "package cli\n\ntype Group struct{}\n\n"
          "func (g *Group) Name() string { return \"\" }\n\nfunc (g *Group) Handle() {}\n\n"
          "type Command struct {\n\tGroup\n\tuse string\n}\n\n"
          "func (c *Command) Name() string { return c.use }\n\n"
          "func (c *Command) Run(other *Group) (root *Command) {\n\tc.Name()\n\tother.Name()\n"
          "\troot.Name()\n\tc.Handle()\n\treturn c\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert callers_named(snapshot, "Command.Name") == [("Command.Run", 16), ("Command.Run", 18)]
    assert callers_named(snapshot, "Group.Name") == [("Command.Run", 17)]
    assert callers_named(snapshot, "Group.Handle") == [("Command.Run", 19)]
    # gin's tests: `c, _ := CreateTestContext(w)` (the first result's type), `var e *Engine`, and a handler's
    # parameter (`func(c *Context) { c.JSON(...) }`); JSON is defined on two types.
    write(tmp_path, "context.go", "package cli\n\ntype Context struct{}\n\nfunc (c *Context) JSON() {}\n\n"
          "type Error struct{}\n\nfunc (e *Error) JSON() {}\n\n"
          "func CreateTestContext(w int) (c *Context, r *Command) {\n\treturn nil, nil\n}\n\n"
          "func Handle(path string, handler func(*Context)) {}\n")
    write(tmp_path, "context_test.go", "package cli\n\nfunc TestJSON() {\n\tc, _ := CreateTestContext(1)\n"
          "\tc.JSON()\n\tvar e *Error\n\te.JSON()\n}\n\nfunc TestHandler() {\n"
          "\tHandle(\"/\", func(c *Context) {\n\t\tc.JSON()\n\t})\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert callers_named(snapshot, "Context.JSON") == [("TestJSON", 4), ("TestHandler", 11)]
    assert callers_named(snapshot, "Error.JSON") == [("TestJSON", 6)]
    # A struct's field typed in its declaration: `h.owner.Name()` is Group's.
    write(tmp_path, "holder.go", "package cli\n\ntype Holder struct {\n\towner *Group\n}\n\n"
          "func (h *Holder) Use() {\n\th.owner.Name()\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert callers_named(snapshot, "Group.Name") == [("Command.Run", 17), ("Holder.Use", 7)]
    assert ("Holder.Use", 7) not in callers_named(snapshot, "Command.Name")


def test_a_caller_defined_in_another_function_says_which(tmp_path: Path) -> None:
    """fastapi: `serialize_response`'s caller read `app`, a closure in `get_request_handler` that alone reads like
    the application. A caller in another function's body carries `callerIn`; a method or top-level one does not."""
    write(tmp_path, "routing.py", "def serialize(value):\n    return value\n\n\ndef get_request_handler():\n"
          "    def app(request):\n        return serialize(request)\n    return app\n\n\nclass Route:\n"
          "    def handle(self, value):\n        return serialize(value)\n")
    snapshot = snapshot_of(tmp_path)
    found = find_callers(snapshot, resolve_targets_by_name(snapshot, "serialize"))["callers"]
    assert [(entry["caller"], entry.get("callerIn")) for entry in found] == [
        ("app", "get_request_handler"), ("Route.handle", None)]


def test_a_constructor_s_callers_are_its_class_s_instantiations(tmp_path: Path) -> None:
    """rich's `callers --symbol Console.__init__` found nothing, though `Console(...)` is called 390 times; the
    same for TypeScript's `constructor` and `new Cart()`. A subclass's `super().__init__()` still counts."""
    write(tmp_path, "shop/__init__.py", "")
    write(tmp_path, "shop/cart.py", "class Cart:\n    def __init__(self, items):\n        self.items = items\n\n\n"
          "class BigCart(Cart):\n    def __init__(self):\n        super().__init__([])\n\n\n"
          "def cart_type():\n    return Cart\n")
    write(tmp_path, "shop/app.py", "from shop.cart import Cart\n\n\ndef checkout():\n    return Cart([1])\n\n\n"
          "def ignored(cart: Cart):\n    return cart\n")
    write(tmp_path, "web/cart.ts", "export class Cart {\n  constructor(readonly items: number[]) {}\n}\n")
    write(tmp_path, "web/main.ts", 'import { Cart } from "./cart";\n\nexport function start() {\n'
          "  return new Cart([]);\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert sorted(callers_named(snapshot, "Cart.__init__")) == [("BigCart.__init__", 7), ("checkout", 4)]
    result = find_callers(snapshot, resolve_targets_by_name(snapshot, "Cart.__init__"))
    assert result["symbol"] == "Cart.__init__" and len(result["definitions"]) == 1  # the class is searched, not named
    assert callers_named(snapshot, "Cart.constructor") == [("start", 3)]


def test_super_in_a_call_tree_is_the_base_s_method_not_the_method_itself(tmp_path: Path) -> None:
    """rich's `call-tree --symbol SpinnerColumn.__init__` showed `super.__init__ -> progress.py:576 (recursive)`,
    the method itself; the base's `__init__` is what runs. A base outside the workspace leaves it unresolved."""
    write(tmp_path, "columns.py", "import threading\n\n\nclass Column:\n    def __init__(self, width):\n"
          "        self.width = width\n\n\nclass Spinner(Column):\n    def __init__(self):\n"
          "        super().__init__(1)\n\n\nclass Refresh(threading.Thread):\n    def __init__(self):\n"
          "        super().__init__(daemon=True)\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    from lsp_hub.index import api

    [call] = api.call_tree(index, "Spinner.__init__").to_json()["calls"]
    assert call["definition"] == "columns.py:5", call
    outside = api.call_tree(index, "Refresh.__init__").to_json()
    assert not any("definition" in call for call in outside.get("calls", [])), outside  # threading.Thread's


def test_a_bare_python_decorator_is_a_call_of_it(tmp_path: Path) -> None:
    """`@rich_repr` over a class calls rich_repr(cls): rich's `callers --symbol rich_repr` found only the one
    `@rich_repr()` and missed three bare uses. A Java annotation is still no call."""
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/repr.py", "def rich_repr(cls=None):\n    return cls\n")
    write(tmp_path, "pkg/layout.py", "from pkg.repr import rich_repr\n\n\n@rich_repr\nclass Layout:\n    pass\n\n\n"
          "@rich_repr()\nclass Style:\n    pass\n\n\nclass Box:\n    @rich_repr\n    def inner(self):\n"
          "        pass\n")
    write(tmp_path, "src/Marker.java", "public @interface Marker {}\n")
    write(tmp_path, "src/Use.java", "public class Use {\n  @Marker\n  void run() {}\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert sorted(line for _caller, line in callers_named(snapshot, "rich_repr")) == [3, 8, 14]
    assert callers_named(snapshot, "Marker") == []


def test_ruby_calls_without_parentheses_are_told_from_local_variables(tmp_path: Path) -> None:
    """rack's multipart parser calls `handle_mime_head` as a `when` branch's value and `params = make_params`:
    neither was a call, and its state machine had no callers. A local (`params = {}`, a parameter) is no call."""
    write(tmp_path, "lib/parser.rb", "class Parser\n  def run(params)\n    case @state\n    when :head\n"
          "      handle_mime_head\n    end\n    built = make_params\n    built[:a] ||= make_params\n"
          "    params\n  end\n\n  def handle_mime_head\n  end\n\n  def make_params\n    {}\n  end\n\n"
          "  def params\n    made = {}\n    made\n  end\nend\n")
    snapshot = snapshot_of(tmp_path)
    assert callers_named(snapshot, "Parser.handle_mime_head") == [("Parser.run", 4)]
    assert sorted(callers_named(snapshot, "Parser.make_params")) == [("Parser.run", 6), ("Parser.run", 7)]
    assert callers_named(snapshot, "Parser.params") == []  # `params` in run is its parameter
    from lsp_hub.index.extract import extract_file

    result = extract_file("x.rb", (tmp_path / "lib/parser.rb").read_bytes(), "ruby")
    assert "made" not in {reference.name for reference in result.references if reference.is_call}


def test_a_name_exported_both_as_itself_and_renamed_keeps_both_names(tmp_path: Path) -> None:
    """tRPC's barrel: `export { getErrorShape, getErrorShape as getTRPCErrorShape } from ...`. The extractor kept
    `getErrorShape` once, with its alias, so the barrel bound only the second name: the seven calls in ws.ts, which
    import the first name from the barrel, were no callers. Python's `from m import a, a as b` alike."""
    write(tmp_path, "package.json", '{"name": "x"}\n')
    write(tmp_path, "core/error.ts", "export function getErrorShape(a: number) {\n  return a;\n}\n")
    write(tmp_path, "server/index.ts", 'export { getErrorShape, getErrorShape as getTRPCErrorShape } from '
                                       '"../core/error";\n')
    write(tmp_path, "adapters/ws.ts", 'import { getErrorShape } from "../server";\n\nexport function handle() {\n'
                                      "  return getErrorShape(1);\n}\n")
    write(tmp_path, "adapters/http.ts", 'import { getTRPCErrorShape } from "../server";\n\n'
                                        "export function other() {\n  return getTRPCErrorShape(2);\n}\n")
    write(tmp_path, "py/__init__.py", "")
    write(tmp_path, "py/util.py", "def helper():\n    pass\n")
    write(tmp_path, "py/api.py", "from py.util import helper, helper as assist\n\n\ndef run():\n    helper()\n"
                                 "    assist()\n")
    snapshot = snapshot_of(tmp_path)
    # http.ts's call through the second name, which the barrel gave it, counts too.
    assert sorted(callers_named(snapshot, "getErrorShape")) == [("handle", 3), ("other", 3)]
    assert sorted(callers_named(snapshot, "helper")) == [("run", 4), ("run", 5)]


def test_a_name_a_barrel_renamed_leads_to_its_definition(tmp_path: Path) -> None:
    """tRPC's `getTRPCErrorShape`: `export { getErrorShape as getTRPCErrorShape } from '../../core'` in the package's
    barrel, where core.ts only `export * from './error/getErrorShape'`. localLink.ts's call, through the name the
    barrel gave it, was no caller, the definition by name was not found and the graph had no edge: nothing defines
    `getTRPCErrorShape`. Through a second barrel, under an alias of the importer's own, and by a Python package's
    `from .core import a as b` alike; a file calling its own `getTRPCErrorShape` is no caller."""
    write(tmp_path, "package.json", '{"name": "x"}\n')
    write(tmp_path, "server/error/shape.ts", "export function getErrorShape(a: number) {\n  return a;\n}\n")
    write(tmp_path, "server/core.ts", "export * from './error/shape';\n")
    write(tmp_path, "server/index.ts", "export { getErrorShape as getTRPCErrorShape } from './core';\n")
    write(tmp_path, "server/public.ts", "export * from './index';\n")
    write(tmp_path, "client/local.ts", "import { getTRPCErrorShape } from '../server';\n\n"
                                       "export function localLink() {\n  return getTRPCErrorShape(1);\n}\n")
    write(tmp_path, "client/aliased.ts", "import { getTRPCErrorShape as shape } from '../server/public';\n\n"
                                         "export function viaAlias() {\n  return shape(2);\n}\n")
    write(tmp_path, "client/own.ts", "function getTRPCErrorShape(a: number) {\n  return a;\n}\n\n"
                                     "export function mine() {\n  return getTRPCErrorShape(3);\n}\n")
    write(tmp_path, "py/__init__.py", "from .core import compute as evaluate\n")
    write(tmp_path, "py/core.py", "def compute(x):\n    return x\n")
    write(tmp_path, "main.py", "from py import evaluate\nimport py\n\n\ndef run():\n    evaluate(1)\n"
                               "    py.evaluate(2)\n")
    snapshot = snapshot_of(tmp_path)

    assert sorted(callers_named(snapshot, "getErrorShape")) == [("localLink", 3), ("viaAlias", 3)]
    assert sorted(callers_named(snapshot, "compute")) == [("run", 5), ("run", 6)]
    [location] = definition_locations(snapshot, "client/local.ts", 3, 10)
    assert location["uri"].endswith("/server/error/shape.ts")
    [location] = definition_locations(snapshot, "main.py", 5, 4)
    assert location["uri"].endswith("/py/core.py")
    links = file_links(snapshot)
    assert ("getErrorShape", 1, ("server/error/shape.ts",)) in links["client/local.ts"]
    assert links["main.py"] == (("compute", 1, ("py/core.py",)),) * 2  # `evaluate(1)` and `py.evaluate(2)`
    graph = reference_graph(snapshot).graph
    assert graph.has_edge("client/aliased.ts", "server/error/shape.ts") and graph.has_edge("main.py", "py/core.py")
    assert not graph.has_edge("client/own.ts", "server/error/shape.ts")


def test_a_method_call_on_an_unknown_object_never_means_a_module_s_own_function(tmp_path: Path) -> None:
    """tRPC's router.ts has a private top-level `once`; eight files calling Node's `res.once('close', ...)` were
    listed by `impact` as using it (the graph linked them, though `callers` did not). In Python and TS/JS a call on
    an object reaches a member, never another module's top-level function (a module's own names come through its
    import: `lib.once()` after `import * as lib`)."""
    from lsp_hub.index import api

    write(tmp_path, "package.json", '{"name": "x"}\n')
    write(tmp_path, "src/router.ts", "function once(fn: () => void) {\n  return fn;\n}\n\n"
          "export function createRouter() {\n  return once(() => {});\n}\n")
    write(tmp_path, "src/server.ts", 'import { createRouter } from "./router";\n\nexport function serve(res: any) {\n'
          "  res.once('close', () => {});\n  return createRouter();\n}\n")
    write(tmp_path, "src/lib.ts", 'import * as router from "./router";\n\nexport function again() {\n'
          "  return router.createRouter();\n}\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    files = {entry["path"]: entry for entry in api.impact(index, "src/router.ts").to_json()["files"]}
    assert "once" not in str(files["src/server.ts"]), files["src/server.ts"]
    assert "src/lib.ts" in files


def test_a_call_through_a_qualified_constant_reaches_its_module_s_method(tmp_path: Path) -> None:
    """rack: `Rack::Utils.parse_query(...)` (20 calls in its specs) did not count for Utils.parse_query, since two
    other classes define `parse_query`; and `--symbol Rack::Utils.escape` split at `::` and found nothing."""
    write(tmp_path, "lib/rack/utils.rb", "module Rack\n  module Utils\n    def parse_query(qs)\n      qs\n    end\n"
          "\n    def escape(s)\n      s\n    end\n  end\nend\n")
    write(tmp_path, "lib/rack/query_parser.rb", "module Rack\n  class QueryParser\n    def parse_query(qs)\n"
          "      qs\n    end\n  end\nend\n")
    write(tmp_path, "lib/rack/request.rb", "module Rack\n  class Request\n    def parse_query(qs)\n      qs\n"
          "    end\n  end\nend\n")
    write(tmp_path, "test/spec_utils.rb", "def check\n  Rack::Utils.parse_query('a=b')\n"
                                          "  Rack::Utils.escape('x')\nend\n")
    snapshot = snapshot_of(tmp_path)
    assert callers_named(snapshot, "Utils.parse_query") == [("check", 1)]
    assert callers_named(snapshot, "QueryParser.parse_query") == []
    assert callers_named(snapshot, "Rack::Utils.escape") == [("check", 2)]


def test_a_package_qualified_symbol_means_the_package_s_own_module(tmp_path: Path) -> None:
    """rich: `trace --symbol rich.print` was ambiguous between rich/__init__.py's print and rich/jupyter.py's,
    though `rich.jupyter.print` names the second: a module named by the qualifier itself comes first."""
    write(tmp_path, "rich/__init__.py", "def print(*objects):\n    pass\n")
    write(tmp_path, "rich/jupyter.py", "def print(*objects):\n    pass\n")
    snapshot = snapshot_of(tmp_path)
    assert [path for path, _ in resolve_targets_by_name(snapshot, "rich.print")] == ["rich/__init__.py"]
    assert [path for path, _ in resolve_targets_by_name(snapshot, "rich.jupyter.print")] == ["rich/jupyter.py"]
    assert [path for path, _ in resolve_targets_by_name(snapshot, "jupyter.print")] == ["rich/jupyter.py"]
