; inherits: c
; C++ symbols on top of the C patterns.

; Member functions defined in a class body become methods via nesting; out-of-line `Foo::bar` definitions name
; their class in @container. (`ns::f` for a namespace function reads the same and is also called a method.)
(function_definition
  declarator: (function_declarator
    declarator: [(field_identifier) (destructor_name) (operator_name)] @name)) @definition.function

(function_definition
  declarator: (_
    declarator: (function_declarator
      declarator: [(field_identifier) (operator_name)] @name))) @definition.function

(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      scope: (_) @container
      name: [(identifier) (destructor_name) (operator_name)] @name))) @definition.function

(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      name: (qualified_identifier
        scope: (_) @container
        name: [(identifier) (destructor_name) (operator_name)] @name)))) @definition.function

(function_definition
  declarator: (_
    declarator: (function_declarator
      declarator: (qualified_identifier
        scope: (_) @container
        name: [(identifier) (operator_name)] @name)))) @definition.function

; Member function declarations inside a class body.
(field_declaration
  declarator: (function_declarator
    declarator: [(field_identifier) (destructor_name) (operator_name)] @name)) @definition.function

(class_specifier
  name: (type_identifier) @name
  body: (field_declaration_list)) @definition.class

(class_specifier
  name: (template_type
    name: (type_identifier) @name)
  body: (field_declaration_list)) @definition.class

(struct_specifier
  name: (template_type
    name: (type_identifier) @name)
  body: (field_declaration_list)) @definition.class

(alias_declaration
  name: (type_identifier) @name) @definition.type

(concept_definition
  name: (identifier) @name) @definition.type

(namespace_definition
  name: [(namespace_identifier) (nested_namespace_specifier)] @name) @definition.module

; `auto f = [](...) {...};` at namespace level.
(declaration
  declarator: (init_declarator
    declarator: (identifier) @name
    value: (lambda_expression))) @definition.function

; --- references --------------------------------------------------------------------------------------------

(call_expression
  function: (qualified_identifier
    scope: (_) @receiver
    name: (identifier) @name)) @reference.call

(call_expression
  function: (template_function
    name: (identifier) @name)) @reference.call

(call_expression
  function: (qualified_identifier
    scope: (_) @receiver
    name: (template_function
      name: (identifier) @name))) @reference.call

(call_expression
  function: (field_expression
    argument: (_) @receiver
    field: (template_method
      name: (field_identifier) @name))) @reference.call

(new_expression
  type: (type_identifier) @name) @reference.call

(namespace_identifier) @name @reference.module

; --- typed local variables ---------------------------------------------------------------------------------
; `Writer a;`, `Writer* b = new Writer();`, `const ns::Writer& c = a;`, `for (Writer& w : writers)`: the declared
; type's name (`auto` gives none). The declarator is taken whole and its name found by the extractor: spelled out
; here (pointer, reference, initialized), the patterns took a third longer to compile.

(declaration
  type: [(type_identifier) (qualified_identifier) (template_type)] @type
  declarator: (_) @name) @local

(for_range_loop
  type: [(type_identifier) (qualified_identifier) (template_type)] @type
  declarator: (_) @name) @local
