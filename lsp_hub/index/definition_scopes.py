"""Which definitions lie in a function's body: a closure, a local class and its methods. No other file can name
them, so the map and outline leave them out and the name tables do not count them as definers (`records.D_LOCAL`).

A test or route callback named by its call (`it("adds")` in `describe("math")`, `app.get("/users")`) is never
local: the test framework names it, and `zoom`, `call-tree` and `trace` find it by that name. What else its body
holds is local, as in any function (`function setup()` in a `describe`). The outline follows the same rule
(`is_local`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsp_hub.index.file_kinds import is_named_callback

BODY_KINDS = frozenset(("function", "method"))  # whose body makes what it holds local


def local_flags(definitions: Sequence[Sequence[Any]]) -> list[bool]:
    """Per packed definition (name, kind, start line, start column, end line, end column, ...; in document order),
    whether it is local: in a function's or method's body (`is_local`)."""
    flags: list[bool] = []
    open_ends: list[tuple[int, int]] = []  # the ends of the functions around the current definition, innermost last
    for definition in definitions:
        start = (definition[2], definition[3])
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        flags.append(is_local(definition[0], bool(open_ends)))
        if definition[1] in BODY_KINDS:
            open_ends.append((definition[4], definition[5]))
    return flags


def is_local(name: str, inside_body: bool) -> bool:
    """Whether a definition named `name` that lies in a function's or method's body (`inside_body`) is local."""
    return inside_body and not is_named_callback(name)
