; Go symbols for the lsp-hub index. Capture conventions are documented in lsp_hub/index/extract.py.

; --- definitions -------------------------------------------------------------------------------------------

(function_declaration
  name: (identifier) @name) @definition.function

; Methods: the receiver's type is the container (`func (s *Server[T]) Start()` -> Server).
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @container
        (pointer_type (type_identifier) @container)
        (generic_type type: (type_identifier) @container)
        (pointer_type (generic_type type: (type_identifier) @container))
      ]))
  name: (field_identifier) @name) @definition.method

(type_spec
  name: (type_identifier) @name
  type: (struct_type)) @definition.class

(type_spec
  name: (type_identifier) @name
  type: (interface_type)) @definition.interface

(type_spec
  name: (type_identifier) @name
  type: [
    (type_identifier) (qualified_type) (generic_type) (pointer_type) (slice_type) (array_type) (map_type)
    (channel_type) (function_type)
  ]) @definition.type

(type_alias
  name: (type_identifier) @name) @definition.type

; Interface methods (containers come from the enclosing interface type).
(method_elem
  name: (field_identifier) @name) @definition.method

(source_file
  (const_declaration
    (const_spec
      name: (identifier) @name) @definition.constant))

(source_file
  (var_declaration
    (var_spec
      name: (identifier) @name) @definition.variable))

(source_file
  (var_declaration
    (var_spec_list
      (var_spec
        name: (identifier) @name) @definition.variable)))

; --- references --------------------------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (selector_expression
    operand: (_) @receiver
    field: (field_identifier) @name)) @reference.call

; Generic instantiation calls: `Map[int](xs)`.
(call_expression
  function: (index_expression
    operand: (identifier) @name)) @reference.call

(type_identifier) @name @reference.type

; `pkg.Type`: the same name as above, with its receiver (a receiver wins over none at one position).
(qualified_type
  package: (_) @receiver
  name: (type_identifier) @name) @reference.type

; --- imports -----------------------------------------------------------------------------------------------

(import_spec
  path: (interpreted_string_literal
    (interpreted_string_literal_content) @import.module)) @import

(import_spec
  path: (raw_string_literal) @import.module) @import

; --- variable types ----------------------------------------------------------------------------------------
; `t := template.New("top")`, `c := NewCmd()`: the callee as written. A call through `t` then reaches no workspace
; method when the callee is an outside package's (`t.Execute()` is not `Command.Execute`).

(short_var_declaration
  left: (expression_list . (identifier) @name)
  right: (expression_list
    . (call_expression function: [(identifier) (selector_expression)] @type) @made_by_call)) @local

; `var e *Engine`, `var w http.ResponseWriter`: the declared type's name.
(var_spec
  name: (identifier) @name
  type: [
    (type_identifier) @type
    (qualified_type name: (type_identifier) @type)
    (pointer_type [(type_identifier) @type (qualified_type name: (type_identifier) @type)])
  ]) @local

; A function literal's parameters (gin's handlers: `r.GET("/", func(c *Context) { c.JSON(...) })`), kept in the
; named function around it.
(func_literal
  parameters: (parameter_list
    (parameter_declaration
      name: (identifier) @name
      type: [
        (type_identifier) @type
        (qualified_type name: (type_identifier) @type)
        (pointer_type [(type_identifier) @type (qualified_type name: (type_identifier) @type)])
      ]))) @local

; --- registrations -------------------------------------------------------------------------------------------
; `http.HandleFunc("/users", listUsers)`, gin's `r.GET("/users", listUsers)`: a named handler registered for a path
; (the first argument a string starting with `/`, the handler the last).

(call_expression
  function: (selector_expression
    field: (field_identifier)) @registrar
  arguments: (argument_list
    .
    [(interpreted_string_literal) (raw_string_literal)] @_path
    (identifier) @handler
    .)
  (#match? @_path "^.[/*]")) @registration
