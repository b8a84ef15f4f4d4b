; inherits: ecma
; TypeScript-only patterns; tsx.scm adds JSX on top of these.

(abstract_class_declaration
  name: (type_identifier) @name) @definition.class

(interface_declaration
  name: (type_identifier) @name) @definition.interface

(type_alias_declaration
  name: (type_identifier) @name) @definition.type

(enum_declaration
  name: (identifier) @name) @definition.type

(internal_module
  name: (_) @name) @definition.module

(function_signature
  name: (identifier) @name) @definition.function

(method_signature
  name: (_) @name) @definition.method

(abstract_method_signature
  name: (_) @name) @definition.method

; Types named in annotations, heritage clauses, generics and `satisfies`.
(type_identifier) @name @reference.type

; `ns.Type`: the same name as above, with its receiver (a receiver wins over none at one position).
(nested_type_identifier
  module: (_) @receiver
  name: (type_identifier) @name) @reference.type

(extends_clause
  value: (identifier) @name @reference.class)

(extends_clause
  value: (member_expression
    object: (_) @receiver
    property: (property_identifier) @name) @reference.class)
