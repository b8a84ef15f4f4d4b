; Rust symbols for the lsp-hub index. Capture conventions are documented in lsp_hub/index/extract.py.

; --- definitions -------------------------------------------------------------------------------------------

(function_item
  name: (identifier) @name) @definition.function

; Trait method declarations without a body.
(function_signature_item
  name: (identifier) @name) @definition.function

(struct_item
  name: (type_identifier) @name) @definition.class

(union_item
  name: (type_identifier) @name) @definition.class

(enum_item
  name: (type_identifier) @name) @definition.type

(trait_item
  name: (type_identifier) @name) @definition.interface

(type_item
  name: (type_identifier) @name) @definition.type

(const_item
  name: (identifier) @name) @definition.constant

(static_item
  name: (identifier) @name) @definition.variable

; Inline modules define a module; `mod x;` without a body is an import (below).
(mod_item
  name: (identifier) @name
  body: (declaration_list)) @definition.module

(macro_definition
  name: (identifier) @name) @definition.function

; `impl Type` and `impl Trait for Type` blocks: functions inside are methods of Type.
(impl_item
  type: [
    (type_identifier) @name
    (generic_type type: (type_identifier) @name)
    (scoped_type_identifier name: (type_identifier) @name)
    (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
  ]) @scope.class

; --- references --------------------------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (field_expression
    value: (_) @receiver
    field: (field_identifier) @name)) @reference.call

(call_expression
  function: (scoped_identifier
    path: (_) @receiver
    name: (identifier) @name)) @reference.call

(call_expression
  function: (generic_function
    function: (identifier) @name)) @reference.call

(call_expression
  function: (generic_function
    function: (scoped_identifier
      path: (_) @receiver
      name: (identifier) @name))) @reference.call

(call_expression
  function: (generic_function
    function: (field_expression
      value: (_) @receiver
      field: (field_identifier) @name))) @reference.call

(macro_invocation
  macro: (identifier) @name) @reference.call

; Calls inside a macro's arguments (`assert_eq!(parse(x), ...)`, `vec![make(1)]`), which tree-sitter leaves as
; tokens: a name right before a `( ... )` group, after `receiver.` or `Path::` when there is one. A chain's receiver
; is its last name.
(token_tree
  (identifier) @name
  .
  (token_tree) @_arguments
  (#match? @_arguments "^[(]")) @reference.call

(token_tree
  [(identifier) (self)] @receiver
  .
  "."
  .
  (identifier) @name
  .
  (token_tree) @_arguments
  (#match? @_arguments "^[(]")) @reference.call

(token_tree
  (identifier) @receiver
  .
  "::"
  .
  (identifier) @name
  .
  (token_tree) @_arguments
  (#match? @_arguments "^[(]")) @reference.call

(type_identifier) @name @reference.type

; `fmt::Debug`, `io::Result<()>`: the type of a module, named with its path (std's, through `use std::fmt`).
(scoped_type_identifier
  path: (_) @receiver
  name: (type_identifier) @name) @reference.type

; Struct literals `Point { x, y }` construct a type.
(struct_expression
  name: (type_identifier) @name) @reference.call

; --- variable types ----------------------------------------------------------------------------------------
; `let other: Self = other.into();`, `let router: Router<S> = ...`: the annotation's type.

(let_declaration
  pattern: (identifier) @name
  type: [
    (type_identifier) @type
    (scoped_type_identifier name: (type_identifier) @type)
    (generic_type type: [
      (type_identifier) @type
      (scoped_type_identifier name: (type_identifier) @type)
    ])
  ]) @local

; `let app = Router::new();`, `let client = make_client();`: the callee as written.
(let_declaration
  pattern: (identifier) @name
  !type
  value: (call_expression
    function: [(identifier) (scoped_identifier)] @type) @made_by_call) @local

; --- imports -----------------------------------------------------------------------------------------------

(use_declaration
  argument: (_) @import.module) @import

(mod_item
  name: (identifier) @import.module
  !body) @import
