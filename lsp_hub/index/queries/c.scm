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

; Prototypes (headers declare the API the .c files define): at file level, inside an include guard or any other
; `#if`, in C++'s `extern "C" {` and namespaces. One inside a function body is a local declaration, which the
; extractor leaves out (a parent pattern cannot say "not in a function").
(declaration
  declarator: [
    (function_declarator declarator: (identifier) @name)
    (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
  ]) @definition.function

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

; File-level variables, also those inside a file-level `#ifndef` guard or `#if` (`extern int count;` in a header).
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

(translation_unit (preproc_ifdef
  (declaration
    declarator: [
      (identifier) @name
      (init_declarator declarator: (identifier) @name)
      (init_declarator declarator: (pointer_declarator declarator: (identifier) @name))
      (init_declarator declarator: (array_declarator declarator: (identifier) @name))
      (init_declarator declarator: (pointer_declarator declarator: (array_declarator declarator: (identifier) @name)))
      (array_declarator declarator: (identifier) @name)
    ]) @definition.variable))

(translation_unit (preproc_if
  (declaration
    declarator: [
      (identifier) @name
      (init_declarator declarator: (identifier) @name)
      (init_declarator declarator: (pointer_declarator declarator: (identifier) @name))
      (init_declarator declarator: (array_declarator declarator: (identifier) @name))
      (init_declarator declarator: (pointer_declarator declarator: (array_declarator declarator: (identifier) @name)))
      (array_declarator declarator: (identifier) @name)
    ]) @definition.variable))

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
