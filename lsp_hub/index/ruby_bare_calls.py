"""Ruby's calls without parentheses or receiver: `handle_mime_head`, `params = make_params`.

tree-sitter-ruby cannot tell such a call from a local variable (Ruby decides by whether the name was assigned
before, in the same method), so it parses both as an `identifier`. This pass decides as Ruby does: an identifier
in a value position is a local when its scope bound the name before it (a parameter, an assignment, a block's
parameter, `rescue => e`, `for x in`), else a call of a method on `self`. A method body is its own scope; blocks
see their method's locals (their own parameters are counted as the method's, a slight over-approximation).
"""

from __future__ import annotations

import tree_sitter

from lsp_hub.index.languages import get_language

# Identifiers that bind a local, that name something rather than being a value, and the scopes locals live in:
# matched in one query, so that no identifier's parents are asked for in Python (that doubled Ruby's extraction).
_QUERY = """
(assignment left: (identifier) @bind)
(operator_assignment left: (identifier) @bind)
(left_assignment_list (identifier) @bind)
(method_parameters (identifier) @bind)
(lambda_parameters (identifier) @bind)
(block_parameters (identifier) @bind)
(destructured_parameter (identifier) @bind)
(optional_parameter name: (identifier) @bind)
(keyword_parameter name: (identifier) @bind)
(splat_parameter name: (identifier) @bind)
(hash_splat_parameter name: (identifier) @bind)
(block_parameter name: (identifier) @bind)
(exception_variable (identifier) @bind)
(for pattern: (identifier) @bind)
(method name: (identifier) @named)
(singleton_method name: (identifier) @named)
(call method: (identifier) @named)
(alias (identifier) @named)
(undef (identifier) @named)
[(method) (singleton_method) (class) (singleton_class) (module)] @scope
(identifier) @value
"""

_query: tree_sitter.Query | None = None


def _compiled() -> tree_sitter.Query:
    global _query
    if _query is None:
        _query = tree_sitter.Query(get_language("ruby"), _QUERY)
    return _query


def bare_identifiers(root: tree_sitter.Node, text: bytes) -> tuple[list[tree_sitter.Node], set[int]]:
    """(the identifiers that are calls, the start bytes of those that are locals' uses), in value positions."""
    captures = tree_sitter.QueryCursor(_compiled()).captures(root)
    binders = {node.start_byte: node for node in captures.get("bind", ())}
    named = {node.start_byte for node in captures.get("named", ())}
    # Every identifier and scope by position, outer scopes first at the same byte; a sweep keeps the open scopes.
    events = [(node.start_byte, -node.end_byte, 0, node) for node in captures.get("scope", ())]
    events.extend((node.start_byte, -node.end_byte, 1, node) for node in captures.get("value", ()))
    events.sort(key=lambda event: event[:3])
    open_scopes: list[tuple[int, int]] = [(0, 1 << 62)]  # (start, end): the file's own scope at the bottom
    first_bound: dict[tuple[int, bytes], int] = {}  # (scope, name) -> where the scope first binds it
    values: list[tuple[tree_sitter.Node, int, bytes]] = []
    for start, negative_end, event, node in events:
        while open_scopes[-1][1] <= start:
            open_scopes.pop()
        if event == 0:
            open_scopes.append((start, -negative_end))
            continue
        if start in named:
            continue
        scope = open_scopes[-1][0]
        name = text[start:-negative_end]
        if start in binders:
            key = (scope, name)
            if key not in first_bound:
                first_bound[key] = start
        else:
            values.append((node, scope, name))
    calls: list[tree_sitter.Node] = []
    local_uses: set[int] = set()
    for node, scope, name in values:
        bound = first_bound.get((scope, name))
        if bound is not None and bound < node.start_byte:
            local_uses.add(node.start_byte)
        else:
            calls.append(node)
    return calls, local_uses
