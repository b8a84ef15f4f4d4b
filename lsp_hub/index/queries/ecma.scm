; Patterns shared by JavaScript, TypeScript and TSX (node names common to the three grammars).
; Not a language of its own: javascript.scm, typescript.scm and tsx.scm inherit it.

; --- definitions -------------------------------------------------------------------------------------------

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(class_declaration
  name: (_) @name) @definition.class

(method_definition
  name: (_) @name) @definition.method

; `const f = () => ...` and `var f = function () {}` define functions wherever they appear.
(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

; Other top-level variables (exported or not); UPPER_CASE ones become constants. A `require(...)` is an import,
; as `import x from` is, not a definition: in express, `var express = require('../')` gave `express` 98 definitions
; (past the graph's limit of 64) and `View` one in each file that requires it.
(program
  (lexical_declaration
    (variable_declarator
      name: (identifier) @name
      value: (_)? @_value)) @definition.variable
  (#not-match? @_value "^require[ \t]*[(][^()]*[)]([.][A-Za-z_$][A-Za-z0-9_$]*)?$"))

(program
  (variable_declaration
    (variable_declarator
      name: (identifier) @name
      value: (_)? @_value)) @definition.variable
  (#not-match? @_value "^require[ \t]*[(][^()]*[)]([.][A-Za-z_$][A-Za-z0-9_$]*)?$"))

(program
  (export_statement
    declaration: (lexical_declaration
      (variable_declarator
        name: (identifier) @name
        value: (_)? @_value)) @definition.variable)
  (#not-match? @_value "^require[ \t]*[(][^()]*[)]([.][A-Za-z_$][A-Za-z0-9_$]*)?$"))

; `exports.name = function () {}` and `module.exports.name = ...` (CommonJS): the module's own functions; so is
; `a.b.name = ...`, whose container no name here can stand for.
(assignment_expression
  left: (member_expression
    object: (identifier) @_exports
    property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)]
  (#eq? @_exports "exports")) @definition.function

(assignment_expression
  left: (member_expression
    object: (member_expression
      property: (property_identifier) @_owner)
    property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)]
  (#not-eq? @_owner "prototype")) @definition.function

; `View.prototype.render = function render() {}` and `app.render = function render() {}`: a method of `View`, of
; `app` (how Node libraries written before classes define them; universal-ctags names them so too).
(assignment_expression
  left: (member_expression
    object: (member_expression
      object: [(identifier) (member_expression)] @container
      property: (property_identifier) @_prototype)
    property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)]
  (#eq? @_prototype "prototype")) @definition.function

(assignment_expression
  left: (member_expression
    object: (identifier) @container
    property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)]
  (#not-any-of? @container "exports" "module")) @definition.function

; `req.get = req.header = function header(name) {}`: both names are methods of `req`.
(assignment_expression
  left: (member_expression
    object: (identifier) @container
    property: (property_identifier) @name)
  right: (assignment_expression
    right: [(arrow_function) (function_expression)])
  (#not-any-of? @container "exports" "module")) @definition.function

; --- references --------------------------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (member_expression
    object: (_) @receiver
    property: (property_identifier) @name)) @reference.call

; `this.#delay()`: a private method (`#delay`, named with its `#` as its definition is).
(call_expression
  function: (member_expression
    object: (_) @receiver
    property: (private_property_identifier) @name)) @reference.call

(new_expression
  constructor: (identifier) @name) @reference.call

(new_expression
  constructor: (member_expression
    object: (_) @receiver
    property: (property_identifier) @name)) @reference.call

; --- attribute types ---------------------------------------------------------------------------------------

(assignment_expression
  left: (member_expression
    object: (this)
    property: (property_identifier) @name)
  right: (new_expression
    constructor: [
      (identifier) @type
      (member_expression property: (property_identifier) @type)
    ])) @field

; --- imports -----------------------------------------------------------------------------------------------

(import_statement
  source: (string (string_fragment) @import.module)) @import

(import_statement
  (import_clause
    (identifier) @import.name)
  source: (string (string_fragment) @import.module)) @import

(import_statement
  (import_clause
    (named_imports
      (import_specifier
        name: (_) @import.name
        !alias)))
  source: (string (string_fragment) @import.module)) @import

(import_statement
  (import_clause
    (named_imports
      (import_specifier
        name: (_) @import.name
        alias: (_) @import.alias)))
  source: (string (string_fragment) @import.module)) @import

(import_statement
  (import_clause
    (namespace_import
      (identifier) @import.alias) @import.name)
  source: (string (string_fragment) @import.module)) @import

(export_statement
  source: (string (string_fragment) @import.module)) @import

(export_statement
  (export_clause
    (export_specifier
      name: (_) @import.name
      !alias))
  source: (string (string_fragment) @import.module)) @import

; `export { default as Button } from './Button'`: the barrel file binds Button to that module's default.
(export_statement
  (export_clause
    (export_specifier
      name: (_) @import.name
      alias: (_) @import.alias))
  source: (string (string_fragment) @import.module)) @import

(call_expression
  function: (identifier) @_require
  arguments: (arguments
    .
    (string (string_fragment) @import.module))
  (#eq? @_require "require")) @import

; What a require binds (its `@import` is the require call itself, so these join the match above):
; `var mime = require('mime-types')` is `import * as mime`,
(variable_declarator
  name: (identifier) @import.alias
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments
      .
      (string (string_fragment) @import.module))) @import
  (#eq? @_require "require"))

; `var methods = require('./utils').methods` takes `methods`,
(variable_declarator
  name: (identifier) @import.alias
  value: (member_expression
    object: (call_expression
      function: (identifier) @_require
      arguments: (arguments
        .
        (string (string_fragment) @import.module))) @import
    property: (property_identifier) @import.name)
  (#eq? @_require "require"))

; and `const { join, dirname: dn } = require('node:path')` takes `join` and `dirname` (as `dn`).
(variable_declarator
  name: (object_pattern
    (shorthand_property_identifier_pattern) @import.name)
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments
      .
      (string (string_fragment) @import.module))) @import
  (#eq? @_require "require"))

(variable_declarator
  name: (object_pattern
    (pair_pattern
      key: (property_identifier) @import.name
      value: (identifier) @import.alias))
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments
      .
      (string (string_fragment) @import.module))) @import
  (#eq? @_require "require"))

(call_expression
  function: (import)
  arguments: (arguments
    .
    (string (string_fragment) @import.module))) @import

; --- registrations -------------------------------------------------------------------------------------------
; `app.get("/users", listUsers)`, `router.post('/x', auth, create)`: a named handler registered for a path (the
; first argument a string starting with `/`, the handler the last; `map.get("k", fallback)` is no registration).

(call_expression
  function: (member_expression
    object: (_)
    property: (property_identifier)) @registrar
  arguments: (arguments
    .
    [(string) (template_string)] @_path
    (identifier) @handler
    .)
  (#match? @_path "^.[/*]")) @registration

; --- tests ---------------------------------------------------------------------------------------------------
; `test('adds', async t => {...})`, `it(...)`, `describe(...)`, `test.serial(...)`, `Deno.test(...)`: a function
; named `it("adds")`, the caller of what its callback calls (ava, jest, vitest, mocha, node:test, Deno).

(call_expression
  function: [
    (identifier) @_callee
    (member_expression object: (identifier) @_callee)
  ]
  arguments: (arguments
    .
    [(string) (template_string)] @test.title
    [(arrow_function) (function_expression)] @test.body)
  (#match? @_callee "^(test|it|describe|suite|context|bench|Deno)$")) @test

; `beforeEach(() => {...})`, `afterAll(async () => ...)`: a test's set-up or tear-down, named `beforeEach()`; mocha's
; `before("db", () => ...)` is named `before("db")`.
(call_expression
  function: (identifier) @test.callee
  arguments: (arguments
    .
    [(arrow_function) (function_expression)] @test.body)
  (#match? @test.callee "^(before|after|beforeEach|afterEach|beforeAll|afterAll)$")) @test

(call_expression
  function: (identifier) @test.callee
  arguments: (arguments
    .
    [(string) (template_string)] @test.title
    [(arrow_function) (function_expression)] @test.body)
  (#match? @test.callee "^(before|after|beforeEach|afterEach|beforeAll|afterAll)$")) @test

; `process.on("exit", () => {...})`, `window.addEventListener("load", ...)` at a module's top level: an anonymous
; event handler, named `process.on("exit")` (the handler the last argument); its calls were "(top level)". One a
; function registers stays part of that function, the caller of what its handler calls, as before.
(program
  (expression_statement
    (call_expression
      function: (member_expression
        object: (_)
        property: (property_identifier) @_verb) @test.callee
      arguments: (arguments
        .
        [(string) (template_string)] @test.title
        [(arrow_function) (function_expression)] @test.body
        .)
      (#match? @_verb "^(on|once|addEventListener|addListener|prependListener)$")) @test))

; `app.get("/users", auth, (req, res) => {...})`: an anonymous route handler (express, koa, fastify, hono), named
; `app.get("/users")` the same way (a path starting with `/` or `*`, the handler the last argument).
(call_expression
  function: (member_expression
    object: (_)
    property: (property_identifier) @_verb) @test.callee
  arguments: (arguments
    .
    [(string) (template_string)] @test.title
    [(arrow_function) (function_expression)] @test.body
    .)
  (#match? @test.title "^.[/*]")
  (#match? @_verb "^(get|post|put|delete|patch|head|options|all)$")) @test

; `it.each(table)("adds %i", fn)`, `test.only.each`table`(...)`: a table-driven test, named `it.each("adds %i")`.
(call_expression
  function: (call_expression
    function: (member_expression
      object: [
        (identifier) @_callee
        (member_expression object: (identifier) @_callee)
      ]
      property: (property_identifier) @_each) @test.callee)
  arguments: (arguments
    .
    [(string) (template_string)] @test.title
    [(arrow_function) (function_expression)] @test.body)
  (#match? @_callee "^(test|it|describe|suite|context|bench|Deno)$")
  (#eq? @_each "each")) @test

; --- variable types ----------------------------------------------------------------------------------------
; `const cart = new Cart()` (in a function or at module level): calls through the variable (`cart.add()`) use it.

(variable_declarator
  name: (identifier) @name
  value: (new_expression
    constructor: [
      (identifier) @type
      (member_expression property: (property_identifier) @type)
    ])) @local

; `const text = "a,b"`, `let parts = []`: a literal's built-in type (`text.split()` is String's, never a workspace
; `Text`'s). Not an object literal: the methods it defines are the variable's own.
(variable_declarator
  name: (identifier) @name
  value: [(string) (template_string) (array)] @type @literal) @local
