; inherits: ecma, jsx
; JavaScript-only patterns (the JavaScript grammar also parses JSX, so .jsx files use it too).

(class
  name: (identifier) @name) @definition.class

(class_heritage
  (identifier) @name @reference.class)

(class_heritage
  (member_expression
    object: (_) @receiver
    property: (property_identifier) @name) @reference.class)

; --- decorators ----------------------------------------------------------------------------------------------
; A method's decorators as written, without their arguments (the JavaScript grammar keeps them in the method).

(method_definition
  decorator: (decorator
    [
      (identifier) @decorator
      (member_expression) @decorator
      (call_expression function: [(identifier) (member_expression)] @decorator)
    ])) @decorated

; --- class fields ------------------------------------------------------------------------------------------------
; A class's fields, as TypeScript's (`typescript.scm`); one holding a function is called as a method (`c.handler()`).

(field_definition
  property: (property_identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.method

(field_definition
  property: (property_identifier) @name) @definition.variable
