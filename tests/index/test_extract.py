"""Extraction of definitions, references, calls and imports, per language, from small inline sources."""

from __future__ import annotations

import dataclasses
import json
import pickle
import textwrap
from pathlib import Path

import pytest

from lsp_hub.index.extract import extract_file
from lsp_hub.index.languages import language_for_path
from lsp_hub.index.model import FileIndex
from lsp_hub.index.syntax_checkers import check

VALID_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "valid"


def extract(language: str, source: str, path: str = "x") -> FileIndex:
    return extract_file(path, textwrap.dedent(source).encode("utf-8"), language)


def definitions(result: FileIndex) -> set[tuple[str, str, str | None]]:
    return {(d.name, d.kind, d.container) for d in result.definitions}


def calls(result: FileIndex) -> set[tuple[str, str | None, str | None]]:
    return {(r.name, r.caller, r.receiver) for r in result.references if r.is_call}


def non_call_names(result: FileIndex) -> set[str]:
    return {r.name for r in result.references if not r.is_call}


def imports(result: FileIndex) -> list[tuple[str, tuple[str, ...], int]]:
    return [(i.module, i.names, i.level) for i in result.imports]


# --- Python ------------------------------------------------------------------------------------------------------

PYTHON_SOURCE = """\
    from ..pkg.mod import a, b as c
    from . import sibling
    import os.path, json as j
    from m import *

    MAX_RETRIES = 3
    _cache = {}

    @register
    class Service(Base):
        timeout = 5

        def start(self, port):
            self.bind(port)
            helper()

            def nested():
                inner_call()

        @property
        async def ready(self):
            return await Service.check()

    def helper():
        os.path.join("a")

    run()
    """


def test_python_definitions_with_kinds_and_containers() -> None:
    result = extract("python", PYTHON_SOURCE)
    assert definitions(result) == {
        ("MAX_RETRIES", "constant", None),
        ("_cache", "variable", None),
        ("Service", "class", None),
        ("timeout", "variable", "Service"),
        ("start", "method", "Service"),
        ("nested", "function", None),
        ("ready", "method", "Service"),
        ("helper", "function", None),
    }


def test_python_calls_with_caller_and_receiver() -> None:
    result = extract("python", PYTHON_SOURCE)
    assert calls(result) == {
        ("bind", "start", "self"),
        ("helper", "start", None),
        ("inner_call", "nested", None),
        ("check", "ready", "Service"),
        ("join", "helper", "os.path"),  # a chain of names is kept as written
        ("run", None, None),
        ("register", None, None),  # a decorator is called with what it decorates
        ("property", None, None),
    }
    assert "Base" in non_call_names(result) and "register" not in non_call_names(result)


def test_python_imports_with_levels_and_names() -> None:
    result = extract("python", PYTHON_SOURCE)
    assert imports(result) == [
        ("pkg.mod", ("a", "b"), 2),
        ("", ("sibling",), 1),
        ("os.path", (), 0),
        ("json", (), 0),
        ("m", ("*",), 0),
    ]
    first = result.imports[0]
    assert first.span is not None
    assert (first.span.start_line, first.span.start_col, first.span.end_line) == (0, 0, 0)


def test_python_spans_and_signatures() -> None:
    source = """\
        class A:
            def method(
                self,
                value: int = 1,
            ) -> str:
                \"\"\"Docstring.\"\"\"
                return str(value)
        """
    result = extract("python", source)
    method = next(d for d in result.definitions if d.name == "method")
    assert method.signature == "def method(self, value: int = 1) -> str:"
    assert (method.span.start_line, method.span.start_col) == (1, 4)
    assert (method.span.end_line, method.span.end_col) == (6, 25)
    assert (method.name_span.start_line, method.name_span.start_col, method.name_span.end_col) == (1, 8, 14)
    klass = next(d for d in result.definitions if d.name == "A")
    assert klass.signature == "class A:"


def test_a_signature_black_wrapped_without_a_trailing_comma_collapses_cleanly() -> None:
    """black wraps a long header as `def f(\n    a, b\n) -> T:` (no trailing comma when the parameters fit one line),
    and a TypeScript formatter does the same with generics: no space is left inside the brackets."""
    source = """\
        def complete(
            ctx: Context, incomplete: str
        ) -> Iterator[tuple[str, Command]]:
            pass


        def pair[
            T
        ](first: T) -> T:
            pass
        """
    result = extract("python", source)
    signatures = {d.name: d.signature for d in result.definitions}
    assert signatures["complete"] == "def complete(ctx: Context, incomplete: str) -> Iterator[tuple[str, Command]]:"
    assert signatures["pair"] == "def pair[T](first: T) -> T:"
    typescript = extract("typescript", "function keep<\n  T\n>(\n  value: T\n): T {\n  return value;\n}\n")
    assert typescript.definitions[0].signature == "function keep<T>(value: T): T"


def test_long_signatures_are_truncated() -> None:
    parameters = ", ".join(f"parameter_{index}: int" for index in range(40))
    result = extract("python", f"def long({parameters}):\n    pass\n")
    signature = result.definitions[0].signature
    assert signature.startswith("def long(parameter_0: int")
    assert signature.endswith("...")
    assert len(signature) <= 200
    # A header longer than the 1,000 bytes read is cut there, not reduced to its first line (`def wide(`).
    wrapped = ",\n".join(f"    parameter_{index}: Annotated[int, Meta({index})] = {index}" for index in range(60))
    wide = extract("python", f"def wide(\n{wrapped},\n):\n    pass\n").definitions[0].signature
    assert wide.startswith("def wide(parameter_0: Annotated[int, Meta(0)] = 0, parameter_1:") and wide.endswith("...")


def test_parameters_documented_in_their_annotations_show_their_names_and_types() -> None:
    """FastAPI writes each parameter's prose in `Annotated[T, Doc(\"\"\"...\"\"\")]`, hundreds of lines before the
    body: the signature reads `path: str`, past the first line, with other metadata kept as written."""
    prose = "\n".join(f"            Line {line} of the prose about this parameter." for line in range(60))
    source = f'''\
        def get(
            self,
            path: Annotated[
                str,
                Doc(
                    """
{prose}
                    """
                ),
            ],
            *,
            tags: Annotated[list[str] | None, Doc("Tags.")] = None,
            old: Annotated[int, Doc("Old."), deprecated("no")] = 0,
            query: Annotated[int, Query()] = 1,  # noqa: B008
        ) -> Callable[[Fn], Fn]:
            pass
        '''
    result = extract("python", source)
    signature = result.definitions[0].signature
    assert signature == (
        'def get(self, path: str, *, tags: list[str] | None = None, old: Annotated[int, deprecated("no")] = 0,'
        " query: Annotated[int, Query()] = 1) -> Callable[[Fn], Fn]:"
    )


def test_a_wrapped_signature_without_a_body_is_read_whole() -> None:
    """zod's outline showed `register<R extends core.$ZodRegistry>(` for an interface's method: a definition that
    is only a signature (TypeScript's interface members and abstract methods, Go's interface methods, Rust's trait
    methods) had its first line alone."""
    typescript = extract(
        "typescript",
        "interface Z {\n  register<R extends Registry>(\n    registry: R,\n    meta?: string\n  ): this;\n}\n"
        "abstract class A {\n  abstract run(\n    x: number\n  ): void;\n}\n",
    )
    signatures = {d.name: d.signature for d in typescript.definitions}
    assert signatures["register"] == "register<R extends Registry>(registry: R, meta?: string): this"
    assert signatures["run"] == "abstract run(x: number): void"
    go = extract("go", "package p\n\ntype Store interface {\n\tGet(\n\t\tkey string,\n\t) (string, error)\n}\n")
    assert {d.name: d.signature for d in go.definitions}["Get"] == "Get(key string) (string, error)"
    rust = extract(
        "rust", "trait Store {\n    fn get(\n        &self,\n        key: &str,\n    ) -> Option<String>;\n}\n"
    )
    assert {d.name: d.signature for d in rust.definitions}["get"] == "fn get(&self, key: &str) -> Option<String>;"


def test_a_comment_on_a_first_line_signature_is_left_out() -> None:
    """sinatra's map drew `class Error < StandardError # :nodoc:`, zod's `const $ZodType = /*@__PURE__*/ ...`."""
    ruby = extract("ruby", "module M\n  class Error < StandardError # :nodoc:\n  end\nend\n")
    assert {d.name: d.signature for d in ruby.definitions}["Error"] == "class Error < StandardError"
    typescript = extract("typescript", 'export const Z: C = /*@__PURE__*/ make("Z", (inst) => {\n  return 1;\n});\n')
    assert typescript.definitions[0].signature == 'const Z: C = make("Z", (inst) => {...})'


# --- TypeScript / TSX / JavaScript -------------------------------------------------------------------------------

TS_SOURCE = """\
    import Default, { alpha, beta as b } from "./lib/alpha";
    import * as ns from "../ns";
    import "./side-effect";
    export { gamma } from "./gamma";
    const legacy = require("./legacy");

    export interface Shape { area(): number }
    export type Id = string;
    export enum Color { Red }
    export const LIMIT = 10;

    @decorate()
    export class Circle extends Base implements Shape {
      area(): number {
        return this.compute(alpha(1));
      }
    }

    export const make = (r: number): Circle => new Circle(r);

    function main() {
      const c = make(2);
      c.area();
    }
    """


def test_typescript_definitions() -> None:
    result = extract("typescript", TS_SOURCE)
    assert definitions(result) >= {
        ("Shape", "interface", None),
        ("area", "method", "Shape"),
        ("Id", "type", None),
        ("Color", "type", None),
        ("LIMIT", "constant", None),
        ("Circle", "class", None),
        ("area", "method", "Circle"),
        ("make", "function", None),
        ("main", "function", None),
    }


@pytest.mark.parametrize("language", ["typescript", "tsx"])
def test_typescript_members_of_interfaces_and_type_aliases_and_class_fields_are_definitions(language: str) -> None:
    """tRPC's `DecorateQueryProcedure.queryFilter` (a member typed as a function) and every class field were missing
    from outlines; Python's, Java's and C#'s class-level fields were there. Members of an inline object type
    (a parameter's `{ inline: string }`) are not: nothing names that type."""
    source = """\
        interface Deco {
          queryFilter: (input: number) => string;
          name: string;
          method(x: number): void;
        }
        type Options = { verbose: boolean; log: (line: string) => void };
        export class Store {
          private items: Item[];
          count = 0;
          static readonly LIMIT = 5;
          handler = () => 1;
        }
        function run(options: { inline: string }) {}
        """
    found = definitions(extract(language, source))
    assert found >= {
        ("queryFilter", "method", "Deco"),
        ("name", "variable", "Deco"),
        ("method", "method", "Deco"),
        ("verbose", "variable", "Options"),
        ("log", "method", "Options"),
        ("items", "variable", "Store"),
        ("count", "variable", "Store"),
        ("LIMIT", "constant", "Store"),
        ("handler", "method", "Store"),
    }
    assert not {entry for entry in found if entry[0] == "inline"}


def test_javascript_class_fields_are_definitions() -> None:
    source = "class Store {\n  count = 0;\n  handler = () => 1;\n  static LIMIT = 3;\n}\n"
    assert definitions(extract("javascript", source)) >= {
        ("count", "variable", "Store"),
        ("handler", "method", "Store"),
        ("LIMIT", "constant", "Store"),
    }


def test_typescript_calls_and_type_references() -> None:
    result = extract("typescript", TS_SOURCE)
    assert calls(result) >= {
        ("compute", "area", "this"),
        ("alpha", "area", None),
        ("Circle", "make", None),
        ("make", "main", None),
        ("area", "main", "c"),
        ("decorate", None, None),
    }
    assert {"Shape", "Circle", "Base"} <= non_call_names(result)


def test_typescript_imports() -> None:
    result = extract("typescript", TS_SOURCE)
    assert imports(result) == [
        ("./lib/alpha", ("Default", "alpha", "beta"), 0),
        ("../ns", ("*",), 0),
        ("./side-effect", (), 0),
        ("./gamma", ("gamma",), 0),
        ("./legacy", (), 0),
    ]


def test_tsx_and_jsx_component_uses_are_calls() -> None:
    source = """\
        import { Button } from "./Button";
        export function Page<T>(props: { items: T[] }) {
          return <div><Button label="x" /><ui.Card>{props.items.length}</ui.Card></div>;
        }
        """
    tsx = extract("tsx", source)
    assert ("Page", "function", None) in definitions(tsx)
    assert {("Button", "Page", None), ("Card", "Page", "ui")} <= calls(tsx)
    assert "div" not in {r.name for r in tsx.references}
    jsx = extract("javascript", source.replace("<T>", "").replace(": { items: T[] }", ""))
    assert {("Button", "Page", None), ("Card", "Page", "ui")} <= calls(jsx)
    assert imports(jsx) == [("./Button", ("Button",), 0)]


def test_javascript_commonjs_and_classes() -> None:
    source = """\
        const fs = require("fs");
        const { join } = require("./paths");
        class Store extends EventEmitter {
          save() { fs.writeFileSync(join("a")); }
        }
        exports.load = function () { return new Store(); };
        module.exports.VERSION = "1";
        """
    result = extract("javascript", source)
    assert {("Store", "class", None), ("save", "method", "Store"), ("load", "function", None)} <= definitions(result)
    assert {("writeFileSync", "save", "fs"), ("join", "save", None), ("Store", "load", None)} <= calls(result)
    assert "EventEmitter" in non_call_names(result)
    assert imports(result) == [("fs", (), 0), ("./paths", ("join",), 0)]


@pytest.mark.parametrize("language", ["javascript", "typescript", "tsx"])
def test_a_require_binds_the_names_it_is_assigned_to(language: str) -> None:
    """CommonJS binds names as ES imports do: `var mime = require('mime-types')` is `import * as mime`, so a call
    `mime.lookup()` is known to be the package's, not a workspace method that happens to be called `lookup` (express's
    `View.lookup`); `var methods = require('./utils').methods` and `var { join } = require(...)` take names. A require
    whose value is used otherwise (`require('debug')('x')`) or not at all binds nothing."""
    source = """\
        var mime = require('mime-types')
        var View = require('./view');
        var methods = require('./utils').methods, resolve = require('node:path').resolve;
        const { join, dirname: dn } = require('node:fs');
        var debug = require('debug')('express:view');
        require('./side-effect');
        """
    result = extract(language, source)
    found = [(i.module, i.names, i.aliases) for i in result.imports]
    assert found == [
        ("mime-types", (), (("mime", "*"),)),
        ("./view", (), (("View", "*"),)),
        ("./utils", ("methods",), ()),
        ("node:path", ("resolve",), ()),
        ("node:fs", ("join", "dirname"), (("dn", "dirname"),)),
        ("debug", (), ()),
        ("./side-effect", (), ()),
    ]
    # imports, not definitions (as `import mime from` is none); `debug`, made by calling what was required, is one
    assert {definition.name for definition in result.definitions} == {"debug"}


@pytest.mark.parametrize("language", ["javascript", "typescript", "tsx"])
def test_functions_assigned_to_an_objects_or_prototypes_property_are_its_methods(language: str) -> None:
    """Node libraries written before classes (express, connect, mocha ...) define their methods by assignment:
    `View.prototype.render = function render() {}`, `app.render = function render() {}`. Each is a method of `View`
    or of `app` (as universal-ctags names them), so `View.render` and `app.render` can be asked for by name; the
    calls in its body have it as their caller. `exports.x = ...` and `module.exports.x = ...` define the module's
    own functions, as before."""
    source = """\
        var app = exports = module.exports = {};
        function View(name) { this.name = name; }
        View.prototype.render = function render(options, callback) { lookup(this.name); };
        View.prototype.lookup = (name) => name;
        app.render = function render(name, options) { var view = new View(name); view.render(options); };
        app.handle = function (req, res) { finalhandler(req, res); };
        req.get = req.header = function header(name) { lower(name); };
        exports.load = function load() { return app; };
        module.exports.parse = function () {};
        a.b.c = function deep() {};
        ns.Parser.prototype.parse = function () {};
        """
    found = definitions(extract(language, source))
    assert {
        ("render", "method", "View"),
        ("lookup", "method", "View"),
        ("render", "method", "app"),
        ("handle", "method", "app"),
        ("load", "function", None),
        ("parse", "function", None),
        ("c", "function", None),
        ("parse", "method", "Parser"),
        ("get", "method", "req"),
        ("header", "method", "req"),
    } <= found, found
    assert not {name for name, _kind, container in found if container == "prototype"}
    result = extract(language, source)
    assert {("lookup", "render", None), ("View", "render", None), ("finalhandler", "handle", None)} <= calls(result)
    assert ("lower", "header", None) in calls(result)


@pytest.mark.parametrize("language", ["javascript", "typescript", "tsx"])
def test_test_hooks_and_top_level_event_handlers_are_named_callers(language: str) -> None:
    """tRPC's `beforeEach(() => ...)` and a module's `process.on("exit", ...)` made their calls "(top level)", and
    trace took each such call for a module entry point. A handler a function registers stays part of it."""
    source = """\
        beforeEach(() => { connect("a"); });
        describe("app", () => {
          afterAll(async () => { connect("b"); });
          before("seed the db", () => { connect("c"); });
        });
        process.on("exit", () => { connect("d"); });
        window.addEventListener("load", function () { connect("e"); });
        export function serve(socket) {
          socket.on("data", (chunk) => { connect(chunk); });
        }
        """
    result = extract(language, source, "test/app.test.ts")
    connect_callers = [caller for name, caller, _receiver in sorted(calls(result), key=str) if name == "connect"]
    assert sorted(connect_callers) == sorted(
        ['beforeEach()', 'afterAll()', 'before("seed the db")', 'process.on("exit")',
         'window.addEventListener("load")', "serve"]
    )
    assert ("afterAll()", "function", None) in definitions(result)


def test_rspec_examples_and_hooks_are_named_callers() -> None:
    """rack's `it "..." do` blocks made every call of its specs "(top level)"."""
    source = """\
        describe "app" do
          before do
            connect("a")
          end
          it "connects" do
            connect("b")
          end
          it("braces") { connect("c") }
        end
        describe App do
          context "when closed" do
            specify { connect("d") }
          end
        end
        """
    result = extract("ruby", source, "spec/app_spec.rb")
    connect_callers = sorted(str(caller) for name, caller, _receiver in calls(result) if name == "connect")
    assert connect_callers == sorted(['before()', 'it("connects")', 'it("braces")', 'specify()'])
    names = {name for name, kind, _container in definitions(result) if kind == "function"}
    assert {'describe("app")', 'context("when closed")', 'it("connects")'} <= names


@pytest.mark.parametrize("language", ["javascript", "typescript", "tsx"])
def test_a_tests_call_is_a_function_named_with_its_title_and_the_caller_of_its_callback(language: str) -> None:
    """ava, jest, vitest, mocha, node:test and Deno tests are calls with a title and a callback: each is a function
    named as written (`it("adds")`), so the calls in its callback have a caller (else every one was `<module>`: an
    impact listed ky's tests as `<module> x89`) and the outline lists the tests. Such a name is no identifier, so no
    use of a name links to it; the callee itself (`it`) is still called from the module."""
    source = """\
        import test from "ava";
        import { add } from "../src/math";
        const base = 1;
        test("adds two", async t => {
          const sum = add(base, 2);
          t.is(sum, 3);
        });
        describe('math', () => {
          it(`works with ${base}`, function () { add(1, 1); });
          it.only(`   spreads
            lines`, () => add(2, 2));
        });
        test.serial("in turn", async () => { add(3, 3); }, 1000);
        Deno.test("deno", () => { add(4, 4); });
        other("not a test", () => { add(5, 5); });
        """
    result = extract(language, source, "test/math.test.ts")
    names = {name for name, kind, container in definitions(result) if kind == "function" and container is None}
    assert {
        'test("adds two")',
        'describe("math")',
        'it("works with ${base}")',
        'it.only("spreads lines")',
        'test.serial("in turn")',
        'Deno.test("deno")',
    } <= names
    assert not any(name.startswith('other("') for name in names)
    callers_of_add = sorted(r.caller or "<module>" for r in result.references if r.name == "add" and r.is_call)
    assert callers_of_add == sorted(
        [
            'test("adds two")',
            'it("works with ${base}")',
            'it.only("spreads lines")',
            'test.serial("in turn")',
            'Deno.test("deno")',
            "<module>",
        ]
    )
    assert ("test", None, None) in calls(result) and ("it", 'describe("math")', None) in calls(result)
    # The test's span is the whole call; its signature the call's first line.
    [adds] = [d for d in result.definitions if d.name == 'test("adds two")']
    assert (adds.span.start_line, adds.span.end_line) == (3, 6)
    assert adds.signature == 'test("adds two", async t => {...})'
    assert result.syntax_error_count == 0
    if language != "javascript":  # a variable of the callback is the test's own: its type is read in its scope
        assert ('test("adds two")', "sum", "add()") in result.local_types


# --- Go ------------------------------------------------------------------------------------------------------------


def test_go_symbols() -> None:
    source = """\
        package server

        import (
            "fmt"
            log "github.com/acme/log"
        )

        type Server[T any] struct{ name string }
        type Handler interface{ Serve() error }
        type ID = string
        const Version = "1"
        var defaultServer *Server[int]

        func New() *Server[int] { return &Server[int]{} }

        func (s *Server[T]) Start(port int) error {
            s.listen(port)
            fmt.Println(New())
            return nil
        }
        """
    result = extract("go", source)
    assert definitions(result) == {
        ("Server", "class", None),
        ("name", "field", "Server"),
        ("Handler", "interface", None),
        ("Serve", "method", "Handler"),
        ("ID", "type", None),
        ("Version", "constant", None),
        ("defaultServer", "variable", None),
        ("New", "function", None),
        ("Start", "method", "Server"),
    }
    assert {("listen", "Start", "s"), ("Println", "Start", "fmt"), ("New", "Start", None)} <= calls(result)
    assert imports(result) == [("fmt", (), 0), ("github.com/acme/log", (), 0)]
    start = next(d for d in result.definitions if d.name == "Start")
    assert start.signature == "func (s *Server[T]) Start(port int) error"
    server = next(d for d in result.definitions if d.name == "Server")
    assert server.signature.startswith("type Server[T any] struct")


# --- Rust ----------------------------------------------------------------------------------------------------------


def test_rust_symbols() -> None:
    source = """\
        use crate::config::{Config, loader::{self, load as load_config}};
        use std::io::*;
        mod util;
        mod inline { pub fn inside() {} }

        pub struct Parser<'a> { input: &'a str }
        pub trait Visit { fn visit(&self); }
        pub enum Token { Word }
        const LIMIT: usize = 3;

        impl<'a> Parser<'a> {
            pub fn new(input: &'a str) -> Self { Self::build(input) }
        }

        impl Visit for Parser<'_> {
            fn visit(&self) { self.step(); helper(); println!("x"); }
        }

        fn helper() -> Token { Token::Word }
        """
    result = extract("rust", source)
    assert definitions(result) == {
        ("inline", "module", None),
        ("inside", "function", "inline"),
        ("Parser", "class", None),
        ("input", "field", "Parser"),
        ("Visit", "interface", None),
        ("visit", "method", "Visit"),
        ("Token", "type", None),
        ("LIMIT", "constant", None),
        ("new", "method", "Parser"),
        ("visit", "method", "Parser"),
        ("helper", "function", None),
    }
    assert {
        ("build", "new", "Self"),
        ("step", "visit", "self"),
        ("helper", "visit", None),
        ("println", "visit", None),
    } <= calls(result)
    assert imports(result) == [
        ("crate::config::Config", ("Config",), 0),
        ("crate::config::loader", ("loader",), 0),
        ("crate::config::loader::load", ("load",), 0),
        ("std::io", ("*",), 0),
        ("self::util", (), 0),
    ]


def test_rust_calls_inside_a_macros_arguments() -> None:
    """fd: `assert_eq!(strip_current_dir(Path::new("./foo")), ...)` in its tests were no callers of
    strip_current_dir: tree-sitter leaves a macro's arguments as tokens. A name right before a `( ... )` group is a
    call there, with the name before a `.` or `::` as its receiver; an index (`items[0]`) or a block is none."""
    source = """\
        fn check(&self) {
            assert_eq!(strip_current_dir(Path::new("./foo")), self.expected(1));
            let all = vec![make(2), items[0], Config { depth: 1 }];
            println!("{}", state.render(&all));
        }
        """
    result = extract("rust", source)
    found = calls(result)
    assert {
        ("strip_current_dir", "check", None),
        ("new", "check", "Path"),
        ("expected", "check", "self"),
        ("make", "check", None),
        ("render", "check", "state"),
    } <= found
    assert not {name for name, _caller, _receiver in found} & {"items", "Config", "depth", "all"}


# --- Java ----------------------------------------------------------------------------------------------------------


def test_java_symbols() -> None:
    source = """\
        package com.acme;

        import java.util.List;
        import static java.util.Objects.requireNonNull;
        import com.acme.util.*;

        public class Service<T> extends Base implements Runnable {
            public static final int MAX_SIZE = 10;
            private final List<T> items;

            public Service(List<T> items) { this.items = requireNonNull(items); }

            @Override
            public void run() {
                items.forEach(item -> process(item));
                new Worker().start();
            }

            record Pair(int a, int b) {}
            interface Callback { void done(); }
            enum Mode { FAST, SLOW }
        }
        """
    result = extract("java", source)
    assert definitions(result) >= {
        ("Service", "class", None),
        ("MAX_SIZE", "constant", "Service"),
        ("items", "variable", "Service"),
        ("Service", "method", "Service"),
        ("run", "method", "Service"),
        ("Pair", "class", "Service"),
        ("Callback", "interface", "Service"),
        ("done", "method", "Callback"),
        ("Mode", "type", "Service"),
        ("FAST", "constant", "Mode"),
    }
    assert {
        ("requireNonNull", "Service", None),
        ("forEach", "run", "items"),
        ("process", "run", None),
        ("Worker", "run", None),
        ("start", "run", "?"),  # `new Worker().start()`: the receiver is an expression
    } <= calls(result)
    assert {"Base", "Runnable", "Override", "List"} <= non_call_names(result)
    assert imports(result) == [
        ("java.util.List", ("List",), 0),
        ("java.util.Objects.requireNonNull", ("requireNonNull",), 0),
        ("com.acme.util", ("*",), 0),
    ]


# --- C / C++ -------------------------------------------------------------------------------------------------------


def test_c_symbols_and_includes_keep_delimiters() -> None:
    source = """\
        #include "util.h"
        #include <stdio.h>
        #define MAX(a, b) ((a) > (b) ? (a) : (b))
        #define LIMIT 10
        typedef struct node { int value; } node_t;
        enum color { RED };
        int counter = 0;
        int add(int a, int b);
        static int *make(void) { return malloc(4); }
        int main(void) { printf("%d", add(1, 2)); list->push(1); return 0; }
        """
    result = extract("c", source)
    assert definitions(result) == {
        ("MAX", "function", None),
        ("LIMIT", "constant", None),
        ("node", "class", None),
        ("value", "field", "node"),
        ("node_t", "type", None),
        ("color", "type", None),
        ("RED", "constant", "color"),
        ("counter", "variable", None),
        ("add", "function", None),
        ("make", "function", None),
        ("main", "function", None),
    }
    assert {
        ("malloc", "make", None),
        ("printf", "main", None),
        ("add", "main", None),
        ("push", "main", "list"),
    } <= calls(result)
    assert imports(result) == [('"util.h"', (), 0), ("<stdio.h>", (), 0)]


def test_a_first_line_that_opens_a_bracket_reads_closed() -> None:
    """httpx's map showed `QueryParamTypes = Union[`; a test's `describe("math", () => {` left two brackets open.
    What the first line leaves open is closed after `...`, brackets inside strings not counted."""
    source = "QueryParamTypes = Union[\n    str,\n]\nPAIRS = dict(']', [\n    1,\n])\nDONE = (1,\n  2)\n"
    signatures = [found.signature for found in extract("python", source).definitions]
    assert signatures == ["QueryParamTypes = Union[...]", "PAIRS = dict(']', [...])", "DONE = (1,"]
    source = "type InternalOptions = Required<\n  A>;\nconst near = (a: number) => a <\n  3;\n"
    signatures = [found.signature for found in extract("typescript", source).definitions]
    assert signatures == ["type InternalOptions = Required<...>", "const near = (a: number) => a <"]


def test_a_comment_deep_inside_a_header_is_left_out() -> None:
    """hono's map showed `get var(): Readonly<// eslint-disable-next-line ... ContextVariableMap & ...>`: a comment
    inside a return type, deeper than the definition's children and grandchildren, stayed in the signature."""
    source = (
        "class Context {\n  get var(): Readonly<\n    // eslint-disable-next-line no-explicit-any\n"
        "    Map & Record<string, any>\n  > {\n    return this.v\n  }\n}\n"
    )
    [_context, getter] = extract("typescript", source).definitions
    assert getter.signature == "get var(): Readonly<Map & Record<string, any>>"


def test_a_typedef_of_a_struct_of_its_own_name_is_one_definition() -> None:
    """hiredis.h: `typedef struct redisReply {...} redisReply;` drew `typedef struct redisReply {` and `struct
    redisReply` both, in the map and the outline; an anonymous struct's typedef drew `typedef struct {` without the
    name it gives; a `#define`'s comment running on to the next lines was part of its signature."""
    source = """\
        #define NO_FREE 0x04  /* Don't automatically free the async
                               * objects */
        typedef struct redisReply {
            int type;
        } redisReply;
        typedef struct {
            int port;
        } redisOptions;
        typedef struct node_s {
            int value;
        } node_t;
        #define SET_TCP(opts, ip_) do { \\
            (opts)->ip = ip_; } while (0)
        """
    result = extract("c", source)
    found = {(found.name, found.kind, found.container): found.signature for found in result.definitions}
    assert found == {
        ("NO_FREE", "constant", None): "#define NO_FREE 0x04",
        ("redisReply", "class", None): "typedef struct redisReply {...}",
        ("redisOptions", "type", None): "typedef struct {...} redisOptions;",
        ("node_t", "type", None): "typedef struct node_s {...} node_t;",
        ("node_s", "class", None): "struct node_s",
        ("SET_TCP", "function", None): "#define SET_TCP(opts, ip_) do {...}",
        ("type", "field", "redisReply"): "int type;",  # a struct's fields, an anonymous one's its typedef's
        ("port", "field", "redisOptions"): "int port;",
        ("value", "field", "node_s"): "int value;",
    }


def test_a_headers_declarations_inside_its_include_guard_are_definitions() -> None:
    """Nearly every header wraps its API in `#ifndef X_H` (or `extern "C" {` in C++): the outline of
    examples/sample's math.h showed only its guard's `#define`, not `gcd` and `lcm`. A prototype's signature is
    the whole declaration, however it is wrapped."""
    source = """\
        #ifndef MATH_H
        #define MATH_H
        int gcd(int a, int b);
        #if defined(WIDE)
        long lcm(long a,
                 long b);
        #else
        int lcm(int a, int b);
        #endif
        extern int calls;
        #endif
        """
    result = extract("c", source)
    assert {("gcd", "function", None), ("lcm", "function", None), ("calls", "variable", None)} <= definitions(result)
    signatures = {d.signature for d in result.definitions if d.name == "lcm"}
    assert signatures == {"long lcm(long a, long b);", "int lcm(int a, int b);"}
    cpp = extract("cpp", 'extern "C" {\nint gcd(int a, int b);\n}\nnamespace m {\nint twice(int x);\n}\n')
    assert {("gcd", "function", None), ("twice", "function", "m")} <= definitions(cpp)
    local = extract("c", "int main(void) {\n#ifdef X\n  int helper(int);\n  int level = 1;\n#endif\n  return 0;\n}\n")
    assert definitions(local) == {("main", "function", None)}  # local declarations define nothing


def test_cpp_symbols() -> None:
    source = """\
        #include "shape.hpp"
        namespace geo {
        class Circle : public Shape {
        public:
            double area() const override { return compute(); }
            void scale(double f);
        };
        }
        void geo::Circle::scale(double f) { this->radius_ *= f; std::max(1, 2); }
        template <typename T> T twice(T x) { return x * 2; }
        auto lambda = [](int x) { return twice<int>(x); };
        """
    result = extract("cpp", source)
    assert definitions(result) >= {
        ("geo", "module", None),
        ("Circle", "class", "geo"),
        ("area", "method", "Circle"),
        ("scale", "method", "Circle"),
        ("twice", "function", None),
        ("lambda", "function", None),
    }
    assert {("compute", "area", None), ("max", "scale", "std"), ("twice", "lambda", None)} <= calls(result)
    assert "Shape" in non_call_names(result)
    assert imports(result) == [('"shape.hpp"', (), 0)]


# --- C# and Ruby ---------------------------------------------------------------------------------------------------


def test_csharp_symbols() -> None:
    source = """\
        using System;
        using static System.Math;
        using Map = System.Collections.Generic.Dictionary<string, int>;
        namespace Acme.Tools {
            public record Person(string Name);
            public class Service : BaseService, IDisposable {
                public const int Limit = 3;
                public int Count { get; set; }
                public async Task RunAsync() { await this.LoadAsync(); Helper(); var p = new Person("a"); }
                public void Dispose() {}
            }
            interface IRepo { void Save(); }
        }
        """
    result = extract("csharp", source)
    assert definitions(result) >= {
        ("Acme.Tools", "module", None),
        ("Person", "class", "Acme.Tools"),
        ("Service", "class", "Acme.Tools"),
        ("Limit", "constant", "Service"),
        ("Count", "variable", "Service"),
        ("RunAsync", "method", "Service"),
        ("Dispose", "method", "Service"),
        ("IRepo", "interface", "Acme.Tools"),
        ("Save", "method", "IRepo"),
    }
    assert {("LoadAsync", "RunAsync", "this"), ("Helper", "RunAsync", None), ("Person", "RunAsync", None)} <= calls(
        result
    )
    assert {"BaseService", "IDisposable"} <= non_call_names(result)
    assert imports(result) == [
        ("System", (), 0),
        ("System.Math", (), 0),
        ("System.Collections.Generic.Dictionary<string,int>", (), 0),
    ]


def test_ruby_symbols() -> None:
    source = """\
        require "json"
        require_relative "support/helper"
        module Billing
          RATE = 3
          def self.configure; end
          class Invoice < Base
            def total
              items.sum { |item| price(item) }
              compute
            end
            def self.build(**kw) = new(**kw)
          end
        end
        def top_level; Billing::Invoice.new; end
        """
    result = extract("ruby", source)
    assert definitions(result) == {
        ("Billing", "module", None),
        ("RATE", "constant", "Billing"),
        ("configure", "method", "Billing"),
        ("Invoice", "class", "Billing"),
        ("total", "method", "Invoice"),
        ("build", "method", "Invoice"),
        ("top_level", "function", None),
    }
    assert {
        ("sum", "total", "items"),
        ("price", "total", None),
        ("compute", "total", None),
        ("new", "build", None),
    } <= calls(result)
    assert "Base" in non_call_names(result)
    assert imports(result) == [("json", (), 0), ("./support/helper", (), 0)]


# --- positions, robustness -----------------------------------------------------------------------------------------


def test_columns_are_utf16_code_units_on_non_ascii_lines() -> None:
    # 'é' is 2 bytes in UTF-8 and 1 UTF-16 unit; '😀' is 4 bytes and 2 UTF-16 units.
    source = 's = "é😀"; target()\nplain()\n'
    result = extract_file("u.py", source.encode("utf-8"), "python")
    by_name = {r.name: r.span for r in result.references if r.is_call}
    utf16_column = len('s = "é😀"; '.encode("utf-16-le")) // 2
    assert utf16_column == 11
    assert (by_name["target"].start_col, by_name["target"].end_col) == (utf16_column, utf16_column + 6)
    assert (by_name["plain"].start_line, by_name["plain"].start_col) == (1, 0)


def test_definition_end_column_after_non_ascii_text() -> None:
    source = "def f():\n    return 'ü'\n"
    result = extract_file("u.py", source.encode("utf-8"), "python")
    definition = result.definitions[0]
    assert (definition.span.end_line, definition.span.end_col) == (1, 14)


def test_invalid_utf8_never_raises_and_names_are_replaced() -> None:
    source = b"def caf\xe9():\n    helper(\xff)\n\xfe\xfe\nclass Ok:\n    pass\n"
    result = extract_file("bad.py", source, "python")
    assert "Ok" in {d.name for d in result.definitions}
    assert result.syntax_error_count >= 1
    for definition in result.definitions:
        definition.name.encode("utf-8")  # always valid text
    json.dumps(dataclasses.asdict(result))


@pytest.mark.parametrize(
    "language", ["python", "typescript", "tsx", "javascript", "go", "rust", "java", "c", "cpp", "csharp", "ruby"]
)
def test_degenerate_inputs_never_raise(language: str) -> None:
    for source in (
        b"",
        b"\n",
        b"\x00\x01\x02",
        b"\xff" * 100,
        b"(((((",
        b"}" * 50,
        b"x" * 200_000,
        "é".encode() * 1000,
        b"\r\n\r\n",
        b'"unterminated',
    ):
        result = extract_file("f", source, language)
        assert result.language == language
        assert result.line_count == (0 if not source else source.count(b"\n") + (not source.endswith(b"\n")))


def test_empty_file() -> None:
    result = extract_file("empty.py", b"", "python")
    assert (result.definitions, result.references, result.imports) == ([], [], [])
    assert (result.line_count, result.syntax_error_count) == (0, 0)


def test_syntax_error_count_and_line_count() -> None:
    result = extract("python", "def f(:\n    pass\nx = (1,\n")
    assert result.syntax_error_count >= 2
    assert result.line_count == 3
    assert extract("python", "x = 1").line_count == 1


def test_crlf_line_endings_keep_columns() -> None:
    result = extract_file("w.py", b"import os\r\nos.getcwd()\r\n", "python")
    call = next(r for r in result.references if r.is_call)
    assert (call.span.start_line, call.span.start_col, call.receiver) == (1, 3, "os")
    assert result.line_count == 2


def test_path_is_stored_as_given() -> None:
    result = extract_file("pkg/sub/mod.py", b"x = 1\n", "python")
    assert (result.path, result.language) == ("pkg/sub/mod.py", "python")


def test_unsupported_language_raises_value_error() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        extract_file("x.cob", b"", "cobol")


@pytest.mark.parametrize("fixture", sorted(VALID_FIXTURES.iterdir()), ids=lambda path: path.name)
def test_valid_fixtures_extract_symbols_without_errors(fixture: Path) -> None:
    language = language_for_path(fixture.name)
    assert language is not None
    result = extract_file(fixture.name, fixture.read_bytes(), language)
    assert result.syntax_error_count == 0
    assert result.definitions, f"no definitions found in {fixture.name}"
    for definition in result.definitions:
        assert definition.signature and "\n" not in definition.signature
        assert definition.span.start_line <= definition.name_span.start_line <= definition.span.end_line


def test_results_survive_pickling_and_json() -> None:
    result = extract("python", PYTHON_SOURCE, path="pkg/service.py")
    restored = pickle.loads(pickle.dumps(result))
    assert restored == result
    assert restored.definitions[0].span == result.definitions[0].span
    encoded = json.loads(json.dumps(dataclasses.asdict(result)))
    assert encoded["definitions"][0]["span"]["start_line"] == result.definitions[0].span.start_line


def test_a_comment_between_header_and_body_is_not_part_of_the_signature() -> None:
    source = b"def label(item: Item) -> str:\n    # Type error: an int for a str.\n    return item.quantity\n"
    definition = extract_file("m.py", source, "python").definitions[0]
    assert definition.signature == "def label(item: Item) -> str:"


def test_callers_of_nested_functions_and_code_after_them() -> None:
    result = extract(
        "python",
        """\
        def outer():
            before()

            def inner():
                in_inner()

                def innermost():
                    deepest()
                after_innermost()

            class Local:
                def method(self):
                    in_method()
                in_class_body()

            after_inner()

        top_level()
        """,
    )
    assert calls(result) == {
        ("before", "outer", None),
        ("in_inner", "inner", None),
        ("deepest", "innermost", None),
        ("after_innermost", "inner", None),
        ("in_method", "method", None),
        ("in_class_body", "outer", None),
        ("after_inner", "outer", None),
        ("top_level", None, None),
    }


@pytest.mark.parametrize(
    ("language", "source", "expected"),
    [
        (
            "python",
            "def f():\n    self.cache.get(1)\n    make().run()\n    a . b . c()\n    items[0].pop()\n    plain()\n",
            {("get", "self.cache"), ("run", "?"), ("c", "a.b"), ("pop", "?"), ("plain", None)},
        ),
        (
            "typescript",
            "function f() { this.store.save(); api.v1.fetch(); get().then(); go(); }\n",
            {("save", "this.store"), ("fetch", "api.v1"), ("then", "?"), ("go", None)},
        ),
        (
            "rust",
            "fn f() { crate::util::helper(); Foo::new(); x.y.z(); }\n",
            {("helper", "crate::util"), ("new", "Foo"), ("z", "x.y")},
        ),
    ],
)
def test_receivers_are_a_name_a_chain_an_expression_or_none(
    language: str, source: str, expected: set[tuple[str, str | None]]
) -> None:
    result = extract_file("x", source.encode(), language)
    assert {(r.name, r.receiver) for r in result.references if r.is_call} >= expected


def test_qualified_base_classes_and_decorators_keep_their_receiver() -> None:
    result = extract(
        "python",
        """\
        @app.route("/")
        class View(models.Base):
            pass
        """,
    )
    non_calls = {(r.name, r.receiver) for r in result.references if not r.is_call}
    assert {("route", "app"), ("Base", "models")} <= non_calls | calls_with_receivers(result)


def calls_with_receivers(result: FileIndex) -> set[tuple[str, str | None]]:
    return {(r.name, r.receiver) for r in result.references if r.is_call}


def test_import_aliases() -> None:
    python = extract("python", "import os\nimport a.b as z\nfrom m import x, y as w\nfrom . import q as r\n")
    assert [(i.module, i.names, i.aliases) for i in python.imports] == [
        ("os", (), ()),
        ("a.b", (), (("z", "*"),)),
        ("m", ("x", "y"), (("w", "y"),)),
        ("", ("q",), (("r", "q"),)),
    ]
    ts = extract("typescript", "import D, { a, b as c } from './m';\nimport * as ns from './n';\n")
    assert [(i.module, i.names, i.aliases) for i in ts.imports] == [
        ("./m", ("D", "a", "b"), (("c", "b"),)),
        ("./n", ("*",), (("ns", "*"),)),
    ]


def test_rust_use_aliases() -> None:
    result = extract("rust", "use crate::util::helper as h;\nuse std::io::{self as sio, Read as _, Write};\n")
    assert [(i.module, i.names, i.aliases) for i in result.imports] == [
        ("crate::util::helper", ("helper",), (("h", "helper"),)),
        ("std::io", ("io",), (("sio", "io"),)),
        ("std::io::Read", ("Read",), ()),
        ("std::io::Write", ("Write",), ()),
    ]


def test_attribute_types_come_from_annotations_constructors_and_ts_fields() -> None:
    python = extract(
        "python",
        """\
        class A:
            def __init__(self):
                self.store: Store = make()
                self.cart = mod.Cart()
                self.made = factory()
                if ready:
                    self.deep = Deep()

        class B:
            def m(self):
                self.store = Other()
        """,
    )
    assert python.field_types == [
        ("A", "store", "Store"),
        ("A", "cart", "Cart"),
        ("A", "deep", "Deep"),
        ("B", "store", "Other"),
    ]
    ts = extract(
        "typescript",
        "class A { private store: Store; cart = new Cart();\n"
        "  constructor(private repo: Repo<T>, x: number) { this.items = new Items(); } }\n",
    )
    assert ts.field_types == [
        ("A", "store", "Store"),
        ("A", "cart", "Cart"),
        ("A", "repo", "Repo"),
        ("A", "items", "Items"),
    ]


def test_decorators_and_route_registrations_are_recorded() -> None:
    python = extract(
        "python",
        """\
        @app.route("/x", methods=["GET"])
        def index():
            pass

        class A:
            @property
            @functools.cache
            def p(self):
                pass

        @ click . command ()
        async def run():
            pass
        """,
    )
    assert python.decorators == [(1, "app.route"), (7, "property"), (7, "functools.cache"), (11, "click.command")]
    ts = extract(
        "typescript",
        'app.get("/users", auth, listUsers);\nrouter.post(`/x`, create);\n'
        'map.get("key", fallback);\napp.use(handler);\n',
    )
    assert ts.registrations == [("listUsers", "app.get"), ("create", "router.post")]
    assert extract("python", "x = 1\n").decorators == [] and ts.decorators == []


@pytest.mark.parametrize("language", ["javascript", "typescript", "tsx"])
def test_a_table_driven_test_is_named_with_its_title_too(language: str) -> None:
    """jest's and vitest's `it.each(table)("adds %i", fn)` and `it.each`tagged table`("...", fn)` (a call of a
    call): the test is `it.each("adds %i")`, not `<module>`, and the table is not part of its name."""
    source = """\
        describe.each([[1, 2]])("with %i", (a, b) => {
          it.each`a | b`("adds $a", ({ a }) => { add(a, b); });
        });
        test.only.each([1])("only %i", (n) => { add(n, n); });
        other.each([1])("no test", () => { add(0, 0); });
        """
    result = extract(language, source)
    names = {name for name, kind, _container in definitions(result) if kind == "function"}
    assert {'describe.each("with %i")', 'it.each("adds $a")', 'test.only.each("only %i")'} <= names, names
    assert not any("no test" in name for name in names)
    callers_of_add = sorted(r.caller or "<module>" for r in result.references if r.name == "add" and r.is_call)
    assert callers_of_add == ["<module>", 'it.each("adds $a")', 'test.only.each("only %i")']


def test_a_cpp_header_named_h_is_read_with_the_cpp_grammar() -> None:
    """fmt's include/fmt/base.h (a `.h`, so C to the walk): read as C, its class and template methods were lost and
    a function's locals became top-level definitions. A C file with errors is read again as C++, and the reading
    with fewer errors is kept; the record keeps the walk's language. A C header stays C."""
    source = """\\
        namespace fmt {
        template <typename Char> class basic_string_view {
         public:
          constexpr auto size() const noexcept -> size_t { return size_; }
        };
        inline auto parse_align(char c) -> int {
          auto next = c + 1;
          return next;
        }
        }  // namespace fmt
        """
    result = extract("c", source)
    assert result.language == "c"
    assert {(found.name, found.kind, found.container) for found in result.definitions} >= {
        ("fmt", "module", None), ("basic_string_view", "class", "fmt"), ("size", "method", "basic_string_view"),
        ("parse_align", "function", "fmt")}
    assert "next" not in {found.name for found in result.definitions}
    plain_c = extract("c", "struct list { int new; };\nint add(int a, int b);\n")
    assert {found.name for found in plain_c.definitions} == {"list", "new", "add"}  # `new`: a C struct's field


def test_a_name_the_parser_assumed_defines_nothing() -> None:
    """fmt's base.h has `enum : unsigned { type_mask = 0x7, ... }` (C++'s anonymous enum with an underlying type):
    read as C, the enum's name is a MISSING node of no text, and the extractor raised IndexError on it. The file's
    other definitions stay."""
    result = extract("c", "enum : unsigned {\n  type_mask = 7,\n};\nint f(void) { return 0; }\n")
    assert {(found.name, found.kind) for found in result.definitions} == {("type_mask", "constant"), ("f", "function")}


def test_a_cpp_header_named_h_passes_the_syntax_check() -> None:
    header = b"namespace fmt {\ntemplate <typename T> class view {\n public:\n  T value;\n};\n}\n"
    assert check(header, "c", "include/fmt/view.h").problems == []
    assert check(header, "c", "src/view.c").problems != []  # a .c file is C


def test_a_ruby_method_named_like_a_constant_is_called_on_its_receiver() -> None:
    """rack's `Request#params` is `self.GET.merge(self.POST)`: zoom listed `merge` alone as its calls, and
    `callers` of GET found nothing, since the method's name is a constant node to the grammar."""
    result = extract("ruby", "class R\n  def params\n    self.GET.merge(self.POST)\n  end\nend\n")
    assert [(found.name, found.receiver, found.is_call) for found in result.references] == [
        ("GET", "self", True), ("merge", "self.GET", True), ("POST", "self", True)]


def test_ruby_attribute_methods_are_definitions_and_autoload_is_an_import() -> None:
    """rack's `attr_reader :apps` made no method `apps` (no outline entry, nothing to go to), and `autoload
    :Builder, "rack/builder"`, how rack.rb loads its modules, was no import: lib/rack.rb imported nothing."""
    source = """\
        module Rack
          autoload :Builder, "rack/builder"
          class Request
            attr_reader :env, :params
            attr_accessor :body
          end
        end
        """
    result = extract("ruby", source, "lib/rack.rb")
    found = {(d.name, d.kind, d.container, d.name_span.start_col, d.signature) for d in result.definitions}
    assert {
        ("env", "method", "Request", 17, "attr_reader :env, :params"),
        ("params", "method", "Request", 23, "attr_reader :env, :params"),
        ("body", "method", "Request", 19, "attr_accessor :body"),
    } <= found
    assert [item.module for item in result.imports] == ["rack/builder"]


@pytest.mark.parametrize(
    ("language", "source"),
    [
        ("csharp", "class Account {\n  int low, high;\n  void Run() {}\n}\n"),
        ("java", "class Account {\n  int low, high;\n  void run() {}\n}\n"),
    ],
)
def test_every_name_of_one_field_declaration_belongs_to_the_class(language: str, source: str) -> None:
    """`int low, high;` is one declaration: its second name was taken to be inside its first, and lost its class."""
    found = definitions(extract(language, source))
    assert {(name, container) for name, kind, container in found if kind == "variable"} == {
        ("low", "Account"),
        ("high", "Account"),
    }
