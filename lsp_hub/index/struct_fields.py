"""A struct's fields (Go, Rust, C, C++): read from the body of each struct the tags query found, for the outline.

They are definitions that no name table holds (`records.OUTLINE_ONLY`): in Go, `x.Key` on any struct with a `Key`
field linked caddy's map to every such struct. Read here rather than by query patterns, which are matched against
every node of every file: the three patterns C's declarator forms need cost 3.7% of a C parse (callgrind, 200 of
hiredis' files), Go's one 2.0%. Only the struct's own fields: a nested anonymous struct's are its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import tree_sitter

STRUCT_LANGUAGES = frozenset(("go", "rust", "c", "cpp"))
_STRUCT_NODES = frozenset(
    (
        "struct_specifier",  # C, C++
        "union_specifier",
        "class_specifier",  # C++
        "type_definition",  # C's `typedef struct {...} name;`: the struct is its `type`
        "type_spec",  # Go's `type Name struct {...}`: the struct_type is its `type`
        "struct_item",  # Rust
        "union_item",
    )
)
_INNER_STRUCTS = frozenset(("struct_type", "struct_specifier", "union_specifier", "class_specifier"))
# C declarators around a field's name: `*name`, `name[4]`, `(*name)(int)`. A C++ member function's declaration is a
# function_declarator around the name itself: no field.
_WRAPPERS = frozenset(("pointer_declarator", "array_declarator", "parenthesized_declarator", "attributed_declarator"))


def struct_fields(definition_nodes: Iterable[tree_sitter.Node]) -> Iterator[tuple[tree_sitter.Node, tree_sitter.Node]]:
    """(field declaration, field name) for each named field of the structs among `definition_nodes`; the names of
    one declaration (`A, B int`, `int low, high;`) share it."""
    for node in definition_nodes:
        if node.type not in _STRUCT_NODES:
            continue
        body = _body(node)
        if body is None:
            continue
        for declaration in body.named_children:
            if declaration.type != "field_declaration":
                continue
            for name in _names(declaration):
                yield declaration, name


def _body(node: tree_sitter.Node) -> tree_sitter.Node | None:
    body = node.child_by_field_name("body")
    if body is None:
        inner = node.child_by_field_name("type")
        if inner is None or inner.type not in _INNER_STRUCTS:
            return None
        body = inner.child_by_field_name("body")
        if body is None:  # Go's struct_type holds its list without a field name
            body = next((child for child in inner.named_children if child.type == "field_declaration_list"), None)
    return body if body is not None and body.type == "field_declaration_list" else None


def _names(declaration: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    names = declaration.children_by_field_name("name")  # Go, Rust
    for name in names:
        if name.type == "field_identifier":
            yield name
    if not names and declaration.child_by_field_name("declarator") is None:
        embedded = _embedded_type_name(declaration.child_by_field_name("type"))
        if embedded is not None:  # Go's `sync.Mutex`, `*Engine`: the field is named by its type
            yield embedded
    for declarator in declaration.children_by_field_name("declarator"):  # C, C++
        while True:
            if declarator.type == "function_declarator":
                inner = declarator.child_by_field_name("declarator")
                if inner is None or inner.type != "parenthesized_declarator":
                    break  # a member function's declaration
                declarator = inner
            elif declarator.type in _WRAPPERS:
                inner = declarator.child_by_field_name("declarator") or next(iter(declarator.named_children), None)
                if inner is None:
                    break
                declarator = inner
            else:
                break
        if declarator.type == "field_identifier":
            yield declarator


def _embedded_type_name(node: tree_sitter.Node | None) -> tree_sitter.Node | None:
    """The type name of a Go embedded field (`Engine`, `*Engine`, `sync.Mutex`, `List[T]`)."""
    while node is not None and node.type in ("pointer_type", "qualified_type", "generic_type"):
        if node.type == "qualified_type":
            node = node.child_by_field_name("name")
        elif node.type == "generic_type":
            node = node.child_by_field_name("type")
        else:
            node = next(iter(node.named_children), None)
    return node if node is not None and node.type == "type_identifier" else None
