"""How each language's import statements become `Import`s: the module as written, normalised, with the names and
aliases taken from it. `extract.py` finds the statements with the tags queries; this turns their text into records.

Module text per language (`Import.module`):
- Python: dotted module without the leading dots, which go into `level` (`from ..a.b import c` -> "a.b", level 2,
  names ("c",); `from . import x` -> "", level 1, names ("x",)); `import a.b as z` -> "a.b". Wildcard name "*".
- TypeScript/JavaScript: the string as written ("./x", "react"), from `import ... from`, `export ... from`,
  `require("...")` and `import("...")`. Names are the imported names as the module exports them (`a` for
  `{a as b}`), the local name for a default import, "*" for a namespace import.
- Go: the import path. Java: the full name (`a.b.C`), names ("C",); `a.b.*` -> "a.b", names ("*",).
- Rust: one Import per leaf of a use tree, full path (`use crate::a::{b, c}` -> "crate::a::b" and "crate::a::c",
  names the leaf, `self` leaves give the parent path, globs give names ("*",)); `mod x;` -> "self::x".
- C/C++: the include target WITH its delimiters: `"util.h"` (a quoted include, resolvable in the workspace) or
  `<stdio.h>` (a system include).
- C#: the namespace or type of a using directive. Ruby: `require 'x'` -> "x"; `require_relative 'x'` -> "./x".
"""

from __future__ import annotations

import re

_SPACE_RUN = re.compile(r"\s+")
_RUST_PUNCTUATION_SPACE = re.compile(r"\s*([{},:])\s*")


def squeeze(text: str) -> str:
    """The text without any whitespace (`a . b` -> `a.b`)."""
    return _SPACE_RUN.sub("", text)


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        return text[1:-1]
    return text


_Aliases = tuple[tuple[str, str], ...]


def interpret_import(
    language: str, statement_type: str, module_text: str, names: list[str], relative: bool, aliases: _Aliases
) -> list[tuple[str, tuple[str, ...], int, _Aliases]]:
    """(module, names, level, aliases) for one import statement/module pair, normalised per language. Rust aliases
    come from the use tree's text; the other languages' from the query's `@import.alias` captures (`aliases`)."""
    if language == "rust":
        if statement_type == "mod_item":
            return [("self::" + module_text.strip(), (), 0, ())]
        return [
            (path, (leaf,), 0, ((alias, leaf),) if alias else ())
            for path, leaf, alias in _expand_rust_use(_normalise_rust_use(module_text))
        ]
    return [
        (module, imported, level, aliases)
        for module, imported, level in _interpret_plain_import(language, module_text, names, relative)
    ]


def _interpret_plain_import(
    language: str, module_text: str, names: list[str], relative: bool
) -> list[tuple[str, tuple[str, ...], int]]:
    if language == "python":
        module = squeeze(module_text)
        stripped = module.lstrip(".")
        level = len(module) - len(stripped)
        clean_names = tuple(squeeze(name) if name != "*" else name for name in names)
        return [(stripped, clean_names, level)]
    if language in ("typescript", "tsx", "javascript"):
        ecma_names = tuple("*" if name.startswith("*") else _unquote(name) for name in names)
        return [(_unquote(module_text.strip()), ecma_names, 0)]
    if language == "go":
        return [(_unquote(module_text.strip()), (), 0)]
    if language == "java":
        module = squeeze(module_text)
        if "*" in names:
            return [(module, ("*",), 0)]
        return [(module, (module.rsplit(".", 1)[-1],), 0)]
    if language in ("c", "cpp"):
        return [(module_text.strip(), (), 0)]
    if language == "csharp":
        return [(squeeze(module_text), (), 0)]
    if language == "ruby":
        module = module_text
        if relative and not module.startswith((".", "/")):
            module = "./" + module
        return [(module, (), 0)]
    return [(module_text.strip(), tuple(names), 0)]


def _normalise_rust_use(text: str) -> str:
    """Drop whitespace around `::`, braces and commas, keep single spaces elsewhere (`a as b`)."""
    return _SPACE_RUN.sub(" ", _RUST_PUNCTUATION_SPACE.sub(r"\1", text)).strip()


def _expand_rust_use(tree: str) -> list[tuple[str, str, str]]:
    """Leaves of a Rust use tree as (full path, leaf name, alias or ""): `a::{b, c::{d, self}}` -> a::b, a::c::d,
    a::c.

    `x as y` keeps the path of x, with alias y; a glob gives (parent path, "*", "")."""
    results: list[tuple[str, str, str]] = []

    def split_top_level(text: str) -> list[str]:
        parts: list[str] = []
        current: list[str] = []
        depth = 0
        for char in text:
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
            if char == "," and depth == 0:
                parts.append("".join(current))
                current = []
            else:
                current.append(char)
        parts.append("".join(current))
        return [part for part in parts if part]

    def join(prefix: str, path: str) -> str:
        return f"{prefix}::{path}" if prefix and path else prefix or path

    def walk(prefix: str, text: str, depth: int) -> None:
        if depth > 20:
            return
        brace = text.find("{")
        if brace >= 0 and text.endswith("}"):
            head = text[:brace].removesuffix("::")
            for part in split_top_level(text[brace + 1 : -1]):
                walk(join(prefix, head), part, depth + 1)
            return
        path, _, alias = (part.strip() for part in text.partition(" as "))
        if alias == "_":
            alias = ""  # `use Trait as _` binds no name
        if path == "self":
            results.append((prefix, prefix.rsplit("::", 1)[-1], alias))
        elif path == "*" or path.endswith("::*"):
            results.append((join(prefix, path.removesuffix("*").removesuffix("::")), "*", ""))
        else:
            full = join(prefix, path)
            results.append((full, full.rsplit("::", 1)[-1], alias))

    walk("", tree, 0)
    return results
