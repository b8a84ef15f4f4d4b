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

; `header = (name, value) => {...}` in a class body: a field holding a function is called as a method (`c.header()`).
(public_field_definition
  name: (property_identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.method

; An interface's or object type alias's members and a class's fields: what an outline of the type shows, as Python's,
; Java's and C#'s class-level fields are. A member typed as a function is called as a method (`procedure.queryFilter()`).
; Members of inline object types (`(options: { a: string })`) are no definition: nothing names their type.
(interface_body
  (property_signature
    name: (property_identifier) @name
    type: (type_annotation (function_type))) @definition.method)

(interface_body
  (property_signature
    name: (property_identifier) @name) @definition.variable)

(type_alias_declaration
  value: (object_type
    (property_signature
      name: (property_identifier) @name
      type: (type_annotation (function_type))) @definition.method))

(type_alias_declaration
  value: (object_type
    (property_signature
      name: (property_identifier) @name) @definition.variable))

(public_field_definition
  name: (property_identifier) @name) @definition.variable

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

; --- attribute types ---------------------------------------------------------------------------------------

; `private store: IndexStore;`, `cart = new Cart();` and `constructor(private repo: Repo)`.
(public_field_definition
  name: (property_identifier) @name
  type: (type_annotation
    [
      (type_identifier) @type
      (generic_type name: (type_identifier) @type)
    ])) @field

(public_field_definition
  name: (property_identifier) @name
  !type
  value: (new_expression
    constructor: (identifier) @type)) @field

(required_parameter
  (accessibility_modifier)
  pattern: (identifier) @name
  type: (type_annotation
    [
      (type_identifier) @type
      (generic_type name: (type_identifier) @type)
    ])) @field

; `const cart: Cart = ...`: the variable's annotated type.
(variable_declarator
  name: (identifier) @name
  type: (type_annotation
    [
      (type_identifier) @type
      (generic_type name: (type_identifier) @type)
    ])) @local

; `(c: Context) => c.text()`, `function f(cart?: Cart)`: a parameter's annotated type, a variable of the function
; (an anonymous function's parameters count for the named function around it); `c: any` says it is no class.
(required_parameter
  pattern: (identifier) @name
  type: (type_annotation
    [
      (type_identifier) @type
      (generic_type name: (type_identifier) @type)
      (predefined_type) @type
    ])) @local

(optional_parameter
  pattern: (identifier) @name
  type: (type_annotation
    [
      (type_identifier) @type
      (generic_type name: (type_identifier) @type)
      (predefined_type) @type
    ])) @local

; `const res = await client.posts.$get()`, `const client = hc(...)`: the callee as written, resolved at query time
; (an annotation, `const c: Cart = make()`, says more).
(variable_declarator
  name: (identifier) @name
  !type
  value: [
    (call_expression function: [(identifier) (member_expression)] @type)
    (await_expression (call_expression function: [(identifier) (member_expression)] @type))
  ] @made_by_call) @local

; --- decorators ----------------------------------------------------------------------------------------------
; NestJS's `@Get(':id')`, Angular's `@HostListener('click')`: a method's decorators as written, without their
; arguments (`trace` reads route handlers from them). TypeScript's grammar puts them before the method in the class
; body, as its siblings; the method is the first definition after them.

(class_body
  (decorator
    [
      (identifier) @decorator
      (member_expression) @decorator
      (call_expression function: [(identifier) (member_expression)] @decorator)
    ])
  .
  (decorator)*
  .
  (method_definition) @decorated)
