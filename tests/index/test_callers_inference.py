"""Callers through inheritance, class members and annotations (issue 27 point 4): `super()` calls, a subclass
calling an inherited method on `self`, a receiver made by a subclass's constructor (decorators like `@app.route`
included), TypeScript bases named with type arguments, class fields holding functions, and TypeScript receivers
typed by a parameter's annotation."""

from __future__ import annotations

from pathlib import Path

from lsp_hub.index import api
from lsp_hub.index.callers import find_callers, resolve_targets_by_name
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex
from tests.index.index_helpers import write


def snapshot_of(root: Path) -> Snapshot:
    index = WorkspaceIndex(root, use_cache=False)
    index.build()
    return index.snapshot()


def sites(snapshot: Snapshot, symbol: str) -> list[tuple[str, str | None, int]]:
    found = find_callers(snapshot, resolve_targets_by_name(snapshot, symbol))
    return sorted(
        (
            (entry["location"]["uri"].rsplit("/", 1)[-1], entry["caller"], entry["location"]["range"]["start"]["line"])
            for entry in found["callers"]
        ),
        key=lambda site: (site[0], site[1] or "", site[2]),
    )


def test_super_calls_reach_the_base_and_self_calls_the_nearest_definition(tmp_path: Path) -> None:
    write(tmp_path, "base.py", "class Store:\n    def save(self):\n        ...\n\n    def close(self):\n        ...\n")
    write(
        tmp_path,
        "disk.py",
        "from base import Store\n\n\nclass Disk(Store):\n    def save(self):\n"
        "        super().save()\n        self.close()\n\n    def flush(self):\n"
        "        self.save()\n",
    )
    snapshot = snapshot_of(tmp_path)
    # `super().save()` in Disk.save is Store.save; `self.save()` in Disk.flush is Disk's own save, not Store's.
    assert sites(snapshot, "Store.save") == [("disk.py", "Disk.save", 5)]
    assert sites(snapshot, "Disk.save") == [("disk.py", "Disk.flush", 9)]
    # `self.close()` in a subclass reaches the inherited method.
    assert sites(snapshot, "Store.close") == [("disk.py", "Disk.save", 6)]


def test_a_subclass_instance_reaches_inherited_methods_decorators_too(tmp_path: Path) -> None:
    # `route` is defined twice (the name alone decides nothing); App inherits Scaffold's, Other has its own.
    write(
        tmp_path,
        "scaffold.py",
        "class Scaffold:\n    def route(self, rule):\n        ...\n\n\n"
        "class App(Scaffold):\n    pass\n\n\n"
        "class Other(Scaffold):\n    def route(self, rule):\n        ...\n",
    )
    write(
        tmp_path,
        "site.py",
        "from scaffold import App, Other\n\napp = App()\nother = Other()\n\n\n"
        "@app.route('/')\ndef index():\n    ...\n\n\n"
        "def wire():\n    other.route('/x')\n",
    )
    snapshot = snapshot_of(tmp_path)
    assert sites(snapshot, "Scaffold.route") == [("site.py", None, 6)]
    assert sites(snapshot, "Other.route") == [("site.py", "wire", 12)]


def test_typescript_bases_with_type_parameters_and_super(tmp_path: Path) -> None:
    write(
        tmp_path,
        "src/base.ts",
        "export class Base<E extends object = {}> {\n  send(): void {}\n}\nexport class Twin {\n  send(): void {}\n}\n",
    )
    write(
        tmp_path,
        "src/app.ts",
        "import { Base } from './base'\n\n"
        "export class App<\n  E extends object = {},\n> extends Base<E> {\n"
        "  go() {\n    this.send()\n  }\n  send(): void {\n    super.send()\n  }\n}\n"
        "export class Plain<E extends object> extends Base<E> {\n"
        "  run() {\n    this.send()\n  }\n}\n",
    )
    snapshot = snapshot_of(tmp_path)
    # App overrides send: its own `this.send()` is App.send; Plain inherits Base's.
    assert sites(snapshot, "Base.send") == [("app.ts", "App.send", 9), ("app.ts", "Plain.run", 14)]
    assert sites(snapshot, "App.send") == [("app.ts", "App.go", 6)]
    assert sites(snapshot, "Twin.send") == []


def test_a_typescript_class_field_holding_a_function_is_a_method(tmp_path: Path) -> None:
    write(
        tmp_path,
        "src/context.ts",
        "export class Context {\n  header = (name: string): void => {}\n"
        "  json: Responder = function (value) { return value }\n"
        "  reply() {\n    this.header('x')\n  }\n}\n",
    )
    write(tmp_path, "src/request.ts", "export class Request {\n  header(name: string) {}\n}\n")
    write(
        tmp_path,
        "src/use.ts",
        "import { Context } from './context'\n\nconst context = new Context()\ncontext.header('y')\ncontext.json(1)\n",
    )
    snapshot = snapshot_of(tmp_path)
    assert sites(snapshot, "Context.header") == [("context.ts", "Context.reply", 4), ("use.ts", None, 3)]
    assert sites(snapshot, "Context.json") == [("use.ts", None, 4)]
    assert sites(snapshot, "Request.header") == []


def test_a_typescript_receiver_typed_by_a_parameter_annotation(tmp_path: Path) -> None:
    # `text` is defined three times; an anonymous handler's parameter and a named function's say which.
    write(
        tmp_path,
        "src/context.ts",
        "export class Context {\n  text = (t: string) => t\n  req: HonoRequest\n}\n"
        "export class HonoRequest {\n  text(): string { return '' }\n"
        "  header(n: string) {}\n}\n"
        "export interface ClientResponse {\n  text(): string\n}\n",
    )
    write(
        tmp_path,
        "src/use.ts",
        "import { Context } from './context'\nconst app = { get(p: string, h: any) {} }\n"
        "app.get('/', (c: Context) => c.text('x'))\n"
        "export function handler(c: Context, r?: Response) {\n  c.req.header('a')\n"
        "  r.text()\n  return c.text('y')\n}\n",
    )
    snapshot = snapshot_of(tmp_path)
    # the anonymous handler is named by its route (`app.get("/")`)
    assert sites(snapshot, "Context.text") == [("use.ts", 'app.get("/")', 2), ("use.ts", "handler", 6)]
    # `c.req` is a HonoRequest by Context's field; `r` is a Response, which the workspace does not define.
    assert sites(snapshot, "HonoRequest.header") == [("use.ts", "handler", 4)]
    assert sites(snapshot, "HonoRequest.text") == []
    assert sites(snapshot, "ClientResponse.text") == []


def test_a_module_function_is_reached_through_its_module_not_through_an_object(tmp_path: Path) -> None:
    write(
        tmp_path,
        "src/hooks.ts",
        "export function use(x: number) { return x }\nexport function other() { return use(1) }\n",
    )
    write(
        tmp_path,
        "src/main.ts",
        "import * as hooks from './hooks'\n\nfunction wire() {\n"
        "  const app = makeApp()\n  app.use(1)\n  hooks.use(2)\n}\n",
    )
    snapshot = snapshot_of(tmp_path)
    # `use` is the only definition of its name, but `app.use()` is a method of whatever `app` is.
    assert sites(snapshot, "use") == [("hooks.ts", "other", 1), ("main.ts", "wire", 5)]


def test_an_untyped_typescript_parameter_takes_the_type_its_name_is_annotated_with_nearly_always(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        "src/context.ts",
        "export class Context {\n  text(t: string) { return t }\n}\n"
        "export class Response {\n  text() { return '' }\n}\n",
    )
    typed = "".join(f"export const h{n} = (c: Context) => c.text('{n}')\n" for n in range(10))
    write(tmp_path, "src/typed.ts", "import { Context } from './context'\n" + typed)
    write(
        tmp_path,
        "src/app.ts",
        "const app = makeApp()\napp.get('/', (c) => c.text('hi'))\napp.get('/r', (r) => r.text())\n"
        "function other() {\n  app.get('/a', (c: any) => c.text('any'))\n}\n",
    )
    snapshot = snapshot_of(tmp_path)
    # `c: any` says what `c` is there: no class of the workspace.
    assert [line for file, _caller, line in sites(snapshot, "Context.text") if file == "app.ts"] == [1]
    assert sites(snapshot, "Response.text") == []
    # Four annotations are too few to make a convention.
    (tmp_path / "src/typed.ts").write_text(
        "import { Context } from './context'\n" + "".join(typed.splitlines(True)[:4])
    )
    assert ("app.ts", None, 1) not in sites(snapshot_of(tmp_path), "Context.text")


def test_a_query_may_ask_for_more_callers_than_the_default_bound(tmp_path: Path) -> None:
    write(tmp_path, "lib.py", "def ping():\n    ...\n")
    write(tmp_path, "many.py", "from lib import ping\n\n\ndef run():\n" + "    ping()\n" * 510)
    snapshot = snapshot_of(tmp_path)
    bounded = find_callers(snapshot, resolve_targets_by_name(snapshot, "ping"))
    assert len(bounded["callers"]) == 500 and bounded["complete"] is False
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    answer = api.callers(index, {"symbol": "ping", "limit": 1000})
    assert len(answer["callers"]) == 510 and answer["complete"] is True
    index.close()


def test_a_typescript_getter_types_the_attribute_it_reads(tmp_path: Path) -> None:
    write(
        tmp_path,
        "src/context.ts",
        "export class HonoRequest {\n  header(name: string) {}\n}\n"
        "export class Headers {\n  header(name: string) {}\n}\n"
        "export class Context {\n  get req(): HonoRequest<string> { return new HonoRequest() }\n}\n",
    )
    write(tmp_path, "src/use.ts", "export function handler(c: Context) {\n  return c.req.header('a')\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert sites(snapshot, "HonoRequest.header") == [("use.ts", "handler", 1)]
    assert sites(snapshot, "Headers.header") == []


def test_a_closure_reads_the_variables_of_the_function_around_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        "scaffold.py",
        "class Scaffold:\n    def route(self, rule):\n        ...\n\n\n"
        "class Other:\n    def route(self, rule):\n        ...\n\n\nclass App(Scaffold):\n    pass\n",
    )
    write(
        tmp_path,
        "test_app.py",
        "from scaffold import App\n\n\ndef test_one(client):\n    app = App()\n\n"
        "    def later():\n        app.route('/x')\n\n    return later\n",
    )
    snapshot = snapshot_of(tmp_path)
    assert sites(snapshot, "Scaffold.route") == [("test_app.py", "later", 7)]
    assert sites(snapshot, "Other.route") == []


def test_a_functions_own_variable_stands_against_an_import_made_in_another_function(tmp_path: Path) -> None:
    write(
        tmp_path,
        "scaffold.py",
        "class Scaffold:\n    def route(self, rule):\n        ...\n\n\n"
        "class Other:\n    def route(self, rule):\n        ...\n",
    )
    write(tmp_path, "blueprintapp.py", "from scaffold import Other\n\napp = Other()\n")
    write(
        tmp_path,
        "test_app.py",
        "from scaffold import Scaffold\n\n\ndef test_own():\n    app = Scaffold()\n"
        "    app.route('/')\n\n\ndef test_imported():\n    from blueprintapp import app\n"
        "    app.route('/x')\n",
    )
    snapshot = snapshot_of(tmp_path)
    # `app` is bound to blueprintapp's for the whole file; test_own's `app` is its own Scaffold.
    assert sites(snapshot, "Scaffold.route") == [("test_app.py", "test_own", 5)]


def test_a_pytest_fixture_parameter_has_the_type_its_fixture_holds(tmp_path: Path) -> None:
    # `route` is defined twice: only the fixture's type says which one `app.route` calls.
    write(
        tmp_path,
        "src/web.py",
        "class Scaffold:\n    def route(self, rule):\n        ...\n\n\n"
        "class Flask(Scaffold):\n    pass\n\n\n"
        "class Router:\n    def route(self, rule):\n        ...\n",
    )
    write(
        tmp_path,
        "tests/conftest.py",
        "import pytest\nfrom web import Flask, Router\n\n\n@pytest.fixture\ndef app():\n    app = Flask()\n"
        "    return app\n\n\n@pytest.fixture\ndef router() -> Router:\n    return Router()\n",
    )
    write(
        tmp_path,
        "tests/unit/test_web.py",
        "def test_index(app, router):\n    @app.route('/')\n    def index():\n        ...\n\n"
        "    router.route('/x')\n\n\n"
        "def helper(app):\n    app.route('/y')\n",
    )
    snapshot = snapshot_of(tmp_path)
    # A test's parameter takes its fixture's type (the fixture's own variable, or its return annotation), from a
    # conftest.py above the test; `helper` is no test or fixture: its `app` is nobody's.
    assert sites(snapshot, "Scaffold.route") == [("test_web.py", "test_index", 1)]
    assert sites(snapshot, "Router.route") == [("test_web.py", "test_index", 5)]


def test_a_fixture_parameter_stands_against_an_import_and_reaches_the_nearest_override(tmp_path: Path) -> None:
    write(
        tmp_path,
        "src/web.py",
        "class Scaffold:\n    def add_url_rule(self, rule):\n        ...\n\n"
        "    def register(self, bp):\n        ...\n\n\n"
        "class App(Scaffold):\n    def add_url_rule(self, rule):\n        ...\n\n\n"
        "class Flask(App):\n    pass\n\n\n"
        "class Blueprint(Scaffold):\n    def register(self, bp):\n        ...\n",
    )
    write(tmp_path, "tests/apps/app.py", "from web import Flask\n\napp = Flask()\n")
    write(
        tmp_path,
        "tests/conftest.py",
        "import pytest\nfrom web import Flask\n\n\n@pytest.fixture\ndef app():\n    app = Flask()\n    return app\n",
    )
    # Another test imports an `app`: the resolver binds `app` to that module in the whole file.
    write(
        tmp_path,
        "tests/test_blueprints.py",
        "def test_register(app):\n    app.register(None)\n    app.add_url_rule('/')\n\n\n"
        "def test_imported():\n    from apps.app import app\n\n    assert app\n",
    )
    snapshot = snapshot_of(tmp_path)
    assert sites(snapshot, "Scaffold.register") == [("test_blueprints.py", "test_register", 1)]
    # A Flask's add_url_rule is App's override, not Scaffold's.
    assert sites(snapshot, "App.add_url_rule") == [("test_blueprints.py", "test_register", 2)]
    assert sites(snapshot, "Scaffold.add_url_rule") == []


def test_an_imported_instance_an_untyped_inner_parameter_and_a_typed_attribute(tmp_path: Path) -> None:
    write(
        tmp_path,
        "web.py",
        "class Scaffold:\n    def add_url_rule(self, rule):\n        ...\n\n"
        "    def route(self, rule):\n        ...\n\n\n"
        "class App(Scaffold):\n    def add_url_rule(self, rule):\n        ...\n\n\n"
        "class Blueprint(Scaffold):\n    def route(self, rule):\n        ...\n\n\n"
        "class State:\n    def __init__(self, app: App):\n        self.app = app\n\n"
        "    def add(self):\n        self.app.add_url_rule('/')\n",
    )
    write(tmp_path, "site/__init__.py", "from web import App\n\napp = App()\n")
    # `app` imported from the package that makes it; an inner function's untyped `app` is not the outer one.
    write(
        tmp_path,
        "site/views.py",
        "from site import app\n\n\n@app.route('/')\ndef index():\n    ...\n\n\n"
        "def wire():\n    def inner(app):\n        app.route('/x')\n",
    )
    snapshot = snapshot_of(tmp_path)
    assert sites(snapshot, "Scaffold.route") == [("views.py", None, 3)]
    # `self.app` typed App by its method's parameter: App's override, not Scaffold's.
    assert sites(snapshot, "Scaffold.add_url_rule") == []
    assert sites(snapshot, "App.add_url_rule") == [("web.py", "State.add", 23)]


CLIENT_TS = """export const hc = <T>(base: string, options?: Options) => createProxy(base) as unknown as Client<T>
type Options = { parse?: (request: RawRequest) => void }
export interface RawRequest {
  json(): Promise<unknown>
}
export type Client<T> = T extends object ? { [K in keyof T]: Request<T[K]> } : never
type Request<E> = { [M in keyof E]: () => Promise<Answer<E[M]>> }
type Answer<E> = E extends { output: infer O } ? ClientResponse<O> : never
export interface ClientResponse<T> {
  json(): Promise<T>
}
export class Context {
  json(value: unknown): Response {
    return new Response()
  }
}
"""


def test_a_typed_clients_response_through_generic_aliases_in_each_tests_callback(tmp_path: Path) -> None:
    write(tmp_path, "src/client.ts", CLIENT_TS)
    write(
        tmp_path,
        "src/client.test.ts",
        "import { hc } from './client'\n\n"
        "describe('client', () => {\n"
        "  it('answers', async () => {\n"
        "    const client = hc<typeof app>('http://localhost')\n"
        "    const res = await client.posts.$get()\n"
        "    expect(await res.json()).toEqual({})\n"
        "  })\n"
        "  it('requests', async () => {\n"
        "    const res = await app.request('/')\n"
        "    expect(await res.json()).toEqual({})\n"
        "  })\n"
        "})\n",
    )
    snapshot = snapshot_of(tmp_path)
    # `res` of the first callback is the client's response: a call on the client gives what its aliases promise
    # (ClientResponse, not the RawRequest its options name); the second callback's `res` is another variable.
    assert sites(snapshot, "ClientResponse.json") == [("client.test.ts", 'it("answers")', 6)]
    assert sites(snapshot, "Context.json") == []
    assert sites(snapshot, "RawRequest.json") == []


def test_a_go_variable_made_by_an_outside_package_reaches_no_workspace_method(tmp_path: Path) -> None:
    """cobra: `t := template.New("top")` then `t.Execute(w, data)` counted as a call of `Command.Execute`, and
    `tmpFile.Name()` after `os.CreateTemp` as one of `Command.Name` (8 of cobra's 1,179 call sites). A variable made
    by a workspace function's call still may be anything."""
    write(tmp_path, "go.mod", "module example.com/app\n\ngo 1.22\n")
    write(
        tmp_path,
        "cmd/command.go",
        "package cmd\n\ntype Command struct{}\n\nfunc (c *Command) Execute() error {\n"
        "\treturn nil\n}\n\nfunc New() *Command {\n\treturn &Command{}\n}\n",
    )
    write(
        tmp_path,
        "render/render.go",
        'package render\n\nimport (\n\t"os"\n\t"text/template"\n\n'
        '\t"example.com/app/cmd"\n)\n\nfunc Render() {\n\tt := template.New("top")\n\tt.Execute(os.Stdout, nil)\n'
        "\tc := cmd.New()\n\tc.Execute()\n}\n",
    )
    snapshot = snapshot_of(tmp_path)
    assert sites(snapshot, "Command.Execute") == [("render.go", "Render", 13)]


def test_commonjs_methods_by_assignment_and_the_packages_a_require_binds(tmp_path: Path) -> None:
    """express: `View.prototype.lookup = function lookup()` is `View.lookup` and `app.render = function render()`
    is `app.render`, so both can be asked for; `mime.lookup()` after `var mime = require('mime-types')` is the
    package's, not a call of `View.lookup` (it was one: a require bound no name)."""
    write(tmp_path, "package.json", '{"name": "app"}\n')
    write(
        tmp_path,
        "lib/view.js",
        "module.exports = View;\nfunction View(name) { this.name = name; }\n"
        "View.prototype.lookup = function lookup(name) {\n  return name;\n};\n",
    )
    write(
        tmp_path,
        "lib/utils.js",
        "var mime = require('mime-types');\n"
        "exports.normalizeType = function (type) {\n  return mime.lookup(type);\n};\n",
    )
    write(
        tmp_path,
        "lib/application.js",
        "var View = require('./view');\nvar app = exports = module.exports = {};\n"
        "app.render = function render(name) {\n  var view = new View(name);\n  return view.lookup(name);\n};\n",
    )
    write(
        tmp_path,
        "lib/response.js",
        "var res = module.exports = {};\n"
        "res.render = function render(view) {\n  var app = this.app;\n  app.render(view);\n};\n",
    )
    snapshot = snapshot_of(tmp_path)
    assert sites(snapshot, "View.lookup") == [("application.js", "app.render", 4)]
    assert sites(snapshot, "app.render") == [("response.js", "res.render", 3)]


def test_a_receiver_made_by_either_side_of_or_or_a_conditional_has_that_type(tmp_path: Path) -> None:
    """rich writes `self.console = console or get_console()`, `... if console is not None else get_console()`
    and `c = Console(stderr=True) if console is None else console`: `callers --symbol Console.print` missed nine
    such sites. Another class's `print` on a plain variable stays out."""
    write(tmp_path, "rich/__init__.py", "")
    write(
        tmp_path,
        "rich/console.py",
        "class Console:\n    def print(self, text):\n        pass\n\n\n"
        "def get_console() -> Console:\n    return Console()\n",
    )
    write(tmp_path, "rich/printer.py", "class Printer:\n    def print(self, text):\n        pass\n")
    write(
        tmp_path,
        "rich/live.py",
        "from typing import Optional\n\nfrom rich.console import Console, get_console\n\n\n"
        "class Live:\n    def __init__(self, console: Optional[Console] = None):\n"
        "        self.console = console or get_console()\n\n    def stop(self):\n"
        "        self.console.print('a')\n\n\nclass Prompt:\n"
        "    def __init__(self, console: Optional[Console] = None):\n"
        "        self.console = console if console is not None else get_console()\n\n    def ask(self):\n"
        "        self.console.print('b')\n\n\ndef show(console=None, file=None):\n"
        "    shown = Console() if console is None else console\n    shown.print('c')\n"
        "    written = get_console() if file is None else Console()\n    written.print('d')\n"
        "    other = console or make()\n    other.print('e')\n",
    )
    snapshot = snapshot_of(tmp_path)
    assert sites(snapshot, "Console.print") == [
        ("live.py", "Live.stop", 10),
        ("live.py", "Prompt.ask", 18),
        ("live.py", "show", 23),
        ("live.py", "show", 25),
    ]


def test_a_variable_typed_or_given_a_literal_is_no_class_its_name_matches(tmp_path: Path) -> None:
    """rich: `text.split()` on a string counted as a call of `Text.split`, because a receiver named like a class
    meant that class before anything else was asked. An annotation (`text: str`) or a literal (`text = "a,b"`,
    `parts = []`) now decides first; a variable made by a workspace class, or that nothing types, keeps its name's
    meaning. A literal also ends the one-definition guess (`parts.append()` is no workspace `Bag.append`)."""
    write(tmp_path, "text.py", "class Text:\n    def split(self, sep):\n        return [self]\n\n\n"
                               "class Bag:\n    def append(self, item):\n        pass\n")
    write(tmp_path, "use.py", "from text import Text\n\n\ndef annotated(text: str):\n    return text.split(',')\n\n\n"
                              "def literal():\n    text = 'a,b'\n    parts = []\n    parts.append(text)\n"
                              "    return text.split(',')\n\n\n"
                              "def made():\n    text = Text()\n    return text.split(',')\n\n\n"
                              "def untyped(text):\n    return text.split(',')\n")
    write(tmp_path, "web/text.ts", "export class Text {\n  split(sep: string): Text[] {\n    return [this];\n  }\n}\n")
    write(tmp_path, "web/use.ts", "import { Text } from './text';\n\nexport function literal() {\n"
                                  "  const text = `a,b`;\n  return text.split(',');\n}\n\n"
                                  "export function typed(text: string) {\n  return text.split(',');\n}\n\n"
                                  "export function made() {\n  const text = new Text();\n"
                                  "  return text.split(',');\n}\n")
    snapshot = snapshot_of(tmp_path)
    python = [site for site in sites(snapshot, "text.Text.split") if site[0] == "use.py"]
    assert python == [("use.py", "made", 16), ("use.py", "untyped", 20)]
    assert sites(snapshot, "Bag.append") == []
    targets = [target for target in resolve_targets_by_name(snapshot, "Text.split") if target[0] == "web/text.ts"]
    found = find_callers(snapshot, targets)["callers"]
    assert [entry["caller"] for entry in found if entry["location"]["uri"].endswith("/use.ts")] == ["made"]


def test_the_methods_of_an_object_literal_belong_to_its_variable(tmp_path: Path) -> None:
    """`export const api = { get(path) {...} }`: its methods had no container, so `api.get()` (a member call) reached
    no definition and `callers` of them found nothing. The variable holding the object is their container now."""
    write(tmp_path, "web/api.ts", "export const api = {\n  get(path: string) {\n    return path;\n  },\n"
                                  "  post(path: string) {\n    return path;\n  },\n};\n")
    write(tmp_path, "web/use.ts", "import { api } from './api';\n\nexport function load() {\n"
                                  "  return api.get('/x');\n}\n")
    snapshot = snapshot_of(tmp_path)
    assert [(definition.container, definition.kind) for _path, definition in resolve_targets_by_name(
        snapshot, "api.get")] == [("api", "method")]
    assert sites(snapshot, "api.get") == [("use.ts", "load", 3)]
    assert sites(snapshot, "api.post") == []


def test_tests_of_one_title_in_two_describes_keep_their_variables_apart(tmp_path: Path) -> None:
    """hono's types.test.ts has four `test('merge responses from 1 middleware', ...)`, one per `describe`: their
    variables were one test's, so each `app` made every other test's `res` ambiguous, and 148 calls of
    `res.json()` on a typed client's response were no callers (index-alone recall 0.946 against
    typescript-language-server; 0.993 now)."""
    write(tmp_path, "src/client.ts", CLIENT_TS)
    write(
        tmp_path,
        "src/client.test.ts",
        "import { hc } from './client'\nconst other = (x: string) => x\n\n"
        "describe('a', () => {\n  test('same', async () => {\n    const client = hc<typeof app>('http://localhost')\n"
        "    const res = await client.posts.$get()\n    expect(await res.json()).toEqual({})\n  })\n})\n"
        "describe('b', () => {\n  test('same', async () => {\n    const client = other<typeof app>('http://x')\n"
        "    const res = await client.posts.$get()\n    expect(await res.json()).toEqual({})\n  })\n})\n",
    )
    snapshot = snapshot_of(tmp_path)
    assert sites(snapshot, "ClientResponse.json") == [("client.test.ts", 'test("same")', 7)]
