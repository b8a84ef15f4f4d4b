; JSX elements: `<Widget />` uses the component Widget like a call. Lower-case names are HTML tags.
; Not a language of its own: javascript.scm and tsx.scm inherit it.

(jsx_opening_element
  name: (identifier) @name
  (#match? @name "^[A-Z]")) @reference.call

(jsx_self_closing_element
  name: (identifier) @name
  (#match? @name "^[A-Z]")) @reference.call

(jsx_opening_element
  name: (member_expression
    object: (identifier) @receiver
    property: (property_identifier) @name)) @reference.call

(jsx_self_closing_element
  name: (member_expression
    object: (identifier) @receiver
    property: (property_identifier) @name)) @reference.call
