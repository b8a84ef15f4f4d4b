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
