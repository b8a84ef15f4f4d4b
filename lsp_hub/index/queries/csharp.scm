; C# symbols for the lsp-hub index. Capture conventions are documented in lsp_hub/index/extract.py.

; --- definitions -------------------------------------------------------------------------------------------

(class_declaration
  name: (identifier) @name) @definition.class

(record_declaration
  name: (identifier) @name) @definition.class

(struct_declaration
  name: (identifier) @name) @definition.class

(interface_declaration
  name: (identifier) @name) @definition.interface

(enum_declaration
  name: (identifier) @name) @definition.type

(delegate_declaration
  name: (identifier) @name) @definition.type

(method_declaration
  name: (identifier) @name) @definition.method

(constructor_declaration
  name: (identifier) @name) @definition.method

(local_function_statement
  name: (identifier) @name) @definition.function

(property_declaration
  name: (identifier) @name) @definition.variable

(field_declaration
  (modifier) @_const
  (variable_declaration
    (variable_declarator
      name: (identifier) @name))
  (#eq? @_const "const")) @definition.constant

(field_declaration
  (variable_declaration
    (variable_declarator
      name: (identifier) @name))) @definition.variable

(enum_member_declaration
  name: (identifier) @name) @definition.constant

(namespace_declaration
  name: (_) @name) @definition.module

(file_scoped_namespace_declaration
  name: (_) @name) @definition.module

; --- references --------------------------------------------------------------------------------------------

(invocation_expression
  function: (identifier) @name) @reference.call

(invocation_expression
  function: (generic_name
    (identifier) @name)) @reference.call

(invocation_expression
  function: (member_access_expression
    expression: _ @receiver
    name: [
      (identifier) @name
      (generic_name (identifier) @name)
    ])) @reference.call

(object_creation_expression
  type: [
    (identifier) @name
    (generic_name (identifier) @name)
    (qualified_name qualifier: (_) @receiver name: (identifier) @name)
  ]) @reference.call

(base_list
  [
    (identifier) @name
    (generic_name (identifier) @name)
  ] @reference.class)

(attribute
  name: (identifier) @name) @reference.decorator

; --- imports -----------------------------------------------------------------------------------------------
; The last named child is the namespace/type: `using A = X.Y;` captures X.Y, not the alias.

(using_directive
  (_) @import.module .) @import

; --- decorators ----------------------------------------------------------------------------------------------
; `[HttpGet("users")]`, `[Fact]`: a method's attribute as written, without its arguments (`trace` reads route and
; test handlers from them).

(method_declaration
  (attribute_list
    (attribute
      name: (_) @decorator))) @decorated

; --- typed local variables ---------------------------------------------------------------------------------
; `Foo a = ...`, `System.IO.Stream s`, `List<Bar> items`, `foreach (Bar item in items)`: the declared type's last
; name; `var` (implicit_type) gives none, and the patterns after these read what it is made by.

(variable_declaration
  type: [
    (identifier) @type
    (qualified_name name: (identifier) @type)
    (generic_name . (identifier) @type)
  ]
  (variable_declarator name: (identifier) @name)) @local

(foreach_statement
  type: [
    (identifier) @type
    (qualified_name name: (identifier) @type)
    (generic_name . (identifier) @type)
  ]
  left: (identifier) @name) @local

; `var b = new Bar();`: the class made; `var c = Make();`, `var d = factory.Create();`: the method called, for its
; return type.
(variable_declaration
  type: (implicit_type)
  (variable_declarator
    name: (identifier) @name
    [
      (object_creation_expression
        type: [
          (identifier) @type
          (qualified_name name: (identifier) @type)
          (generic_name . (identifier) @type)
        ])
      (invocation_expression
        function: [
          (identifier) @type
          (member_access_expression name: (identifier) @type)
        ]) @made_by_call
    ])) @local
