; Python symbols for the lsp-hub index. Capture conventions are documented in lsp_hub/index/extract.py.

; --- definitions -------------------------------------------------------------------------------------------

(class_definition
  name: (identifier) @name) @definition.class

; A def directly inside a class body becomes a method in extract.py.
(function_definition
  name: (identifier) @name) @definition.function

; Module-level and class-level assignments; UPPER_CASE names become constants in extract.py.
(module
  (assignment
    left: (identifier) @name) @definition.variable)

(class_definition
  body: (block
    (assignment
      left: (identifier) @name) @definition.variable))

(module
  (type_alias_statement
    left: (type
      [
        (identifier) @name
        (generic_type (identifier) @name)
      ])) @definition.type)

; --- references --------------------------------------------------------------------------------------------

(call
  function: (identifier) @name) @reference.call

(call
  function: (attribute
    object: (_) @receiver
    attribute: (identifier) @name)) @reference.call

; `functools.partial(f, ...)`, `partial(obj.method, ...)`: f is called through the partial object; counted as a call
; where the partial is made.
(call
  function: [
    (identifier) @_partial
    (attribute attribute: (identifier) @_partial)
  ]
  arguments: (argument_list . (identifier) @name)
  (#eq? @_partial "partial")) @reference.call

(call
  function: [
    (identifier) @_partial
    (attribute attribute: (identifier) @_partial)
  ]
  arguments: (argument_list .
    (attribute
      object: (_) @receiver
      attribute: (identifier) @name))
  (#eq? @_partial "partial")) @reference.call

; Base classes and type annotations name classes and functions without calling them. A decorator is called: `@name`
; over a definition runs name(definition) (`@name(...)` is a call anyway).
(class_definition
  superclasses: (argument_list
    (identifier) @name @reference.class))

(class_definition
  superclasses: (argument_list
    (attribute
      object: (_) @receiver
      attribute: (identifier) @name) @reference.class))

(decorator
  (identifier) @name @reference.call)

(decorator
  (attribute
    object: (_) @receiver
    attribute: (identifier) @name) @reference.call)

(type
  (identifier) @name @reference.type)

(type
  (generic_type
    (identifier) @name @reference.type))

; --- attribute types ---------------------------------------------------------------------------------------

(assignment
  left: (attribute
    object: (identifier) @_self
    attribute: (identifier) @name)
  type: (type
    [
      (identifier) @type
      (generic_type (identifier) @type)
      (attribute attribute: (identifier) @type)
      (binary_operator
        left: [
          (identifier) @type
          (attribute attribute: (identifier) @type)
        ]
        right: (none))
    ])
  (#eq? @_self "self")) @field

; `self.store = IndexStore(...)`: a class is called by its CapWords name (a lower-case call is a factory).
(assignment
  left: (attribute
    object: (identifier) @_self
    attribute: (identifier) @name)
  !type
  right: (call
    function: [
      (identifier) @type
      (attribute attribute: (identifier) @type)
    ])
  (#eq? @_self "self")
  (#match? @type "^[A-Z]")) @field

; `self.host = host`: the attribute has the type the method's parameter is annotated with (looked up at query time).
(assignment
  left: (attribute
    object: (identifier) @_self
    attribute: (identifier) @name)
  !type
  right: (identifier) @type @parameter
  (#eq? @_self "self")) @field

; `self.console = console or get_console()`, `self.console = console if console is not None else get_console()`:
; the parameter's type (rich's way of defaulting an optional argument).
(assignment
  left: (attribute
    object: (identifier) @_self
    attribute: (identifier) @name)
  !type
  right: [
    (boolean_operator left: (identifier) @type @parameter)
    (conditional_expression . (identifier) @type @parameter)
  ]
  (#eq? @_self "self")) @field

; The same defaults made by a class: `self.theme = theme or Theme()`, `Theme() if theme is None else theme`.
(assignment
  left: (attribute
    object: (identifier) @_self
    attribute: (identifier) @name)
  !type
  right: [
    (boolean_operator
      right: (call function: [(identifier) @type (attribute attribute: (identifier) @type)]))
    (conditional_expression
      . (call function: [(identifier) @type (attribute attribute: (identifier) @type)]))
    (conditional_expression
      (call function: [(identifier) @type (attribute attribute: (identifier) @type)]) .)
  ]
  (#eq? @_self "self")
  (#match? @type "^[A-Z]")) @field

; --- variable types -----------------------------------------------------------------------------------------
; `s: Shop = ...` and `s = make()` / `s = Shop()` (in a function or at module level): calls through the variable
; (`s.pay()`) use its type, or the callee's class or return annotation, found at query time.

(assignment
  left: (identifier) @name
  type: (type
    [
      (identifier) @type
      (attribute attribute: (identifier) @type)
      (generic_type (identifier) @type)
      (binary_operator
        left: [
          (identifier) @type
          (attribute attribute: (identifier) @type)
        ]
        right: (none))
    ])) @local

(assignment
  left: (identifier) @name
  !type
  right: (call
    function: [
      (identifier)
      (attribute)
    ] @type) @made_by_call) @local

; `shown = Console() if console is None else console`, `c = console or get_console()`: what either call makes.
(assignment
  left: (identifier) @name
  !type
  right: [
    (boolean_operator right: (call function: [(identifier) (attribute)] @type) @made_by_call)
    (conditional_expression . (call function: [(identifier) (attribute)] @type) @made_by_call)
    (conditional_expression (call function: [(identifier) (attribute)] @type) @made_by_call .)
  ]) @local

; --- imports -----------------------------------------------------------------------------------------------

(import_statement
  name: (dotted_name) @import.module) @import

(import_statement
  name: (aliased_import
    name: (dotted_name) @import.module
    alias: (identifier) @import.alias)) @import

(import_from_statement
  module_name: (_) @import.module
  name: (dotted_name) @import.name) @import

(import_from_statement
  module_name: (_) @import.module
  name: (aliased_import
    name: (dotted_name) @import.name
    alias: (identifier) @import.alias)) @import

(import_from_statement
  module_name: (_) @import.module
  (wildcard_import) @import.name) @import

; --- decorators ----------------------------------------------------------------------------------------------
; `@app.route("/")`, `@click.command()`, `@pytest.fixture`: the decorator as written, without its arguments.

(decorated_definition
  (decorator
    [(identifier) (attribute)] @decorator)
  definition: (_) @decorated)

(decorated_definition
  (decorator
    (call
      function: [(identifier) (attribute)] @decorator))
  definition: (_) @decorated)

; `text = "a,b"`, `parts = []`: a literal's built-in type (`text.split()` is str's, never a workspace `Text`'s).
(assignment
  left: (identifier) @name
  !type
  right: [(string) (list) (dictionary)] @type @literal) @local
