; Java symbols for the lsp-hub index. Capture conventions are documented in lsp_hub/index/extract.py.

; --- definitions -------------------------------------------------------------------------------------------

(class_declaration
  name: (identifier) @name) @definition.class

(record_declaration
  name: (identifier) @name) @definition.class

(interface_declaration
  name: (identifier) @name) @definition.interface

(annotation_type_declaration
  name: (identifier) @name) @definition.interface

(enum_declaration
  name: (identifier) @name) @definition.type

(method_declaration
  name: (identifier) @name) @definition.method

(constructor_declaration
  name: (identifier) @name) @definition.method

(compact_constructor_declaration
  name: (identifier) @name) @definition.method

; Fields; `static final` UPPER_CASE ones become constants.
(field_declaration
  declarator: (variable_declarator
    name: (identifier) @name)) @definition.variable

(enum_constant
  name: (identifier) @name) @definition.constant

; --- references --------------------------------------------------------------------------------------------

(method_invocation
  name: (identifier) @name
  !object) @reference.call

(method_invocation
  object: (_) @receiver
  name: (identifier) @name) @reference.call

(object_creation_expression
  type: [
    (type_identifier) @name
    (generic_type (type_identifier) @name)
    (scoped_type_identifier . (_) @receiver (type_identifier) @name .)
  ]) @reference.call

(method_reference
  .
  (_) @receiver
  (identifier) @name .) @reference.call

(type_identifier) @name @reference.type

(marker_annotation
  name: (identifier) @name) @reference.decorator

(annotation
  name: (identifier) @name) @reference.decorator

; --- imports -----------------------------------------------------------------------------------------------

(import_declaration
  [(scoped_identifier) (identifier)] @import.module) @import

(import_declaration
  [(scoped_identifier) (identifier)] @import.module
  (asterisk) @import.name) @import

; --- decorators ----------------------------------------------------------------------------------------------
; `@GetMapping("/users")`, `@Test`: a method's annotation as written, without its arguments (`trace` reads route
; and test handlers from them).

(method_declaration
  (modifiers
    [
      (annotation name: (_) @decorator)
      (marker_annotation name: (_) @decorator)
    ])) @decorated

; --- typed local variables ---------------------------------------------------------------------------------
; `JsonObject copy = ...`, `final Map.Entry<K, V> entry = ...`, `for (JsonElement element : items)`: the declared
; type's last name; `var` gives none (the patterns after these read what it is made by).

(local_variable_declaration
  type: [
    (type_identifier) @type
    (scoped_type_identifier (type_identifier) @type .)
    (generic_type . [(type_identifier) @type (scoped_type_identifier (type_identifier) @type .)])
  ]
  declarator: (variable_declarator name: (identifier) @name)
  (#not-eq? @type "var")) @local

(enhanced_for_statement
  type: [
    (type_identifier) @type
    (scoped_type_identifier (type_identifier) @type .)
    (generic_type . [(type_identifier) @type (scoped_type_identifier (type_identifier) @type .)])
  ]
  name: (identifier) @name
  (#not-eq? @type "var")) @local

; `var copy = new JsonObject();`: the class made.
(local_variable_declaration
  type: (type_identifier) @_var
  declarator: (variable_declarator
    name: (identifier) @name
    value: (object_creation_expression
      type: [
        (type_identifier) @type
        (scoped_type_identifier (type_identifier) @type .)
        (generic_type . [(type_identifier) @type (scoped_type_identifier (type_identifier) @type .)])
      ]))
  (#eq? @_var "var")) @local

; `var copy = original.deepCopy();`, `var gson = Gson.create();`: the method called, for its return type.
(local_variable_declaration
  type: (type_identifier) @_var
  declarator: (variable_declarator
    name: (identifier) @name
    value: (method_invocation name: (identifier) @type) @made_by_call)
  (#eq? @_var "var")) @local
