; C symbols for the lsp-hub index; cpp.scm inherits these. Capture conventions are documented in
; lsp_hub/index/extract.py.

; --- definitions -------------------------------------------------------------------------------------------

(function_definition
  declarator: (function_declarator
    declarator: (identifier) @name)) @definition.function

; `int *f(void) {...}` and C++ `T &f()`: the function declarator sits one or two levels down.
(function_definition
  declarator: (_
    declarator: (function_declarator
      declarator: (identifier) @name))) @definition.function

(function_definition
  declarator: (_
    declarator: (_
      declarator: (function_declarator
        declarator: (identifier) @name)))) @definition.function

; Prototypes at file level (headers declare the API the .c files define).
(translation_unit
  (declaration
    declarator: [
      (function_declarator declarator: (identifier) @name)
      (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    ]) @definition.function)

(struct_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.class

(union_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.class

(enum_specifier
  name: (type_identifier) @name
  body: (enumerator_list)) @definition.type

(type_definition
  declarator: (type_identifier) @name) @definition.type

(type_definition
  declarator: (pointer_declarator
    declarator: (type_identifier) @name)) @definition.type

(enumerator
  name: (identifier) @name) @definition.constant

(preproc_def
  name: (identifier) @name) @definition.constant

(preproc_function_def
  name: (identifier) @name) @definition.function

(translation_unit
  (declaration
    declarator: [
      (identifier) @name
      (init_declarator declarator: (identifier) @name)
      (init_declarator declarator: (pointer_declarator declarator: (identifier) @name))
      (init_declarator declarator: (array_declarator declarator: (identifier) @name))
      (init_declarator declarator: (pointer_declarator declarator: (array_declarator declarator: (identifier) @name)))
      (array_declarator declarator: (identifier) @name)
    ]) @definition.variable)

; --- references --------------------------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (field_expression
    argument: (_) @receiver
    field: (field_identifier) @name)) @reference.call

(type_identifier) @name @reference.type

; --- imports -----------------------------------------------------------------------------------------------
; The module keeps its delimiters: "util.h" (workspace include) or <stdio.h> (system include).

(preproc_include
  path: [(string_literal) (system_lib_string)] @import.module) @import
