"""Symbol queries answered from the index when no language server can: fuzzy workspace symbol search, the outline
of one file, definitions by name (import aware), and the lookups behind them (what is at a position).

Results use LSP shapes as plain dicts: `SymbolInformation`, `DocumentSymbol`, `Location`, 0-based UTF-16 positions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lsp_hub.index.graph import MODULE_SCOPED_LANGUAGES, language_family, use_resolver
from lsp_hub.index.graph_inputs import name_tables
from lsp_hub.index.model import Definition, FileIndex, Reference, Span
from lsp_hub.index.records import D_KIND, D_NAME, local_names
from lsp_hub.index.workspace import Snapshot, file_uri

# LSP SymbolKind numbers.
LSP_FIELD = 8
LSP_SYMBOL_KINDS = {
    "module": 2,
    "class": 5,
    "method": 6,
    "function": 12,
    "variable": 13,
    "constant": 14,
    "interface": 11,
    "type": 5,
    "field": LSP_FIELD,
}
LSP_NAMESPACE = 3
DEFAULT_SYMBOL_LIMIT = 100
_HUMP = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+|[A-Z]")
_QUERY_PIECE = re.compile(r"[A-Z][a-z0-9]*|[a-z0-9]+")
FUNCTION_KINDS = frozenset(("function", "method"))


def lsp_range(span: Span) -> dict[str, dict[str, int]]:
    return {
        "start": {"line": span.start_line, "character": span.start_col},
        "end": {"line": span.end_line, "character": span.end_col},
    }


def location(snapshot: Snapshot, path: str, span: Span) -> dict[str, Any]:
    return {"uri": file_uri(snapshot.root, path), "range": lsp_range(span)}


def lsp_symbol_kind(definition: Definition, language: str) -> int:
    if definition.kind == "module" and language == "csharp":
        return LSP_NAMESPACE
    if definition.kind == "variable" and definition.container is not None:
        return LSP_FIELD
    return LSP_SYMBOL_KINDS.get(definition.kind, 13)


def qualified_name(definition: Definition) -> str:
    return f"{definition.container}.{definition.name}" if definition.container else definition.name


def _contains(span: Span, line: int, character: int) -> bool:
    if line < span.start_line or line > span.end_line:
        return False
    if line == span.start_line and character < span.start_col:
        return False
    return not (line == span.end_line and character > span.end_col)


def _span_size(span: Span) -> tuple[int, int]:
    return (span.end_line - span.start_line, span.end_col - span.start_col)


# --- what is at a position ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SymbolAt:
    name: str
    definition: Definition | None  # the position is on this definition's name
    reference: Reference | None  # the position is on this reference


def symbol_at(file_index: FileIndex, line: int, character: int) -> SymbolAt | None:
    for definition in file_index.definitions:
        if _contains(definition.name_span, line, character):
            return SymbolAt(definition.name, definition, None)
    for reference in file_index.references:
        if _contains(reference.span, line, character):
            return SymbolAt(reference.name, None, reference)
    return None


def enclosing_definition(
    file_index: FileIndex, span: Span, kinds: Iterable[str] = FUNCTION_KINDS, exclude: Definition | None = None
) -> Definition | None:
    """The innermost definition of one of `kinds` whose range contains `span`'s start (other than `exclude`)."""
    wanted = frozenset(kinds)
    best: Definition | None = None
    for definition in file_index.definitions:
        if (
            definition.kind in wanted
            and definition is not exclude
            and _contains(definition.span, span.start_line, span.start_col)
            and (best is None or _span_size(definition.span) < _span_size(best.span))
        ):
            best = definition
    return best


def _local_definers(snapshot: Snapshot) -> dict[str, list[str]]:
    """name -> the files defining it in a function's body: made once per snapshot, when first asked."""

    def build(built: Snapshot) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for path in sorted(built.files):
            for name in local_names(built.files[path]):
                found.setdefault(name, []).append(path)
        return found

    table: dict[str, list[str]] = snapshot.derived("local_definers", build)
    return table


def definitions_named(
    snapshot: Snapshot, name: str, files: Iterable[str] | None = None
) -> list[tuple[str, Definition]]:
    """(path, definition) for every definition called `name`, in the given files or the whole workspace (kept per
    snapshot: callers and type inference ask for the same names thousands of times)."""
    if files is None:
        cache: dict[str, tuple[tuple[str, Definition], ...]] = snapshot.derived("definitions_named", lambda _s: {})
        cached = cache.get(name)
        if cached is None:
            # A name only functions' bodies define (the tables leave those out) is still found, by its files.
            definers = name_tables(snapshot).definers.get(name, ()) or _local_definers(snapshot).get(name, ())
            cached = cache[name] = tuple(definitions_named(snapshot, name, definers))
        return list(cached)
    found: list[tuple[str, Definition]] = []
    prototypes: list[tuple[str, Definition]] = []
    for path in files:
        record = snapshot.files.get(path)
        if record is None or name not in record.defined_names():
            continue
        for definition in record.outline().definitions:
            if definition.name == name:
                found.append((path, definition))
                if language_family(record.language) == "c" and _prototype(definition):
                    prototypes.append((path, definition))
    if prototypes and len(prototypes) < len(found):
        # A C function's prototypes (in its header, or before its first use) and its body are one symbol: the body.
        found = [entry for entry in found if entry not in prototypes]
    return found


def _prototype(definition: Definition) -> bool:
    """A C or C++ function declared and not defined here (its signature is the whole declaration, `;` included)."""
    return definition.kind in ("function", "method") and definition.signature.endswith(";")


MEMBER_OWNER_KINDS = frozenset(("class", "interface", "enum", "struct"))  # what a plain name cannot reach into


def member_of_a_class(snapshot: Snapshot, path: str, definition: Definition) -> bool:
    """Whether `definition` is a member of a class-like definition of its file (a method, an attribute): what a
    plain name in Python or TypeScript never means, unlike a function of a TypeScript namespace."""
    container = definition.container
    if container is None:
        return False
    cache: dict[tuple[str, str], bool] = snapshot.derived("class_members", lambda _s: {})  # callers ask per site
    found = cache.get((path, container))
    if found is None:
        owners = definitions_named(snapshot, container, (path,))
        found = cache[path, container] = any(owner.kind in MEMBER_OWNER_KINDS for _, owner in owners)
    return found


def plain_name_can_mean(snapshot: Snapshot, language: str, path: str, definition: Definition) -> bool:
    """Whether a name used without a receiver in a file of `language` may mean `definition` (of `path`): in
    Python and TypeScript never a class's member (`type(self)` is not `Option.type`), elsewhere any definition."""
    return language not in MODULE_SCOPED_LANGUAGES or not member_of_a_class(snapshot, path, definition)


def definition_targets(snapshot: Snapshot, path: str, line: int, character: int) -> list[tuple[str, Definition]]:
    """The definitions the name at a position refers to, narrowed by the file's imports and the language's scoping
    (an empty list when the name is not indexed or comes from outside the workspace)."""
    record = snapshot.files.get(path)
    if record is None:
        return []
    file_index = record.file_index()
    found = symbol_at(file_index, line, character)
    if found is None:
        return []
    if found.definition is not None:
        return [(path, found.definition)]
    assert found.reference is not None
    receiver = found.reference.receiver
    resolver = use_resolver(snapshot)
    targets = resolver.targets(path, found.name, receiver)
    results = definitions_named(snapshot, resolver.imported_name(path, found.name, receiver), targets)
    if receiver is None:
        results = [entry for entry in results if plain_name_can_mean(snapshot, record.language, *entry)]
    if receiver in ("self", "this", "cls") and results:
        caller = enclosing_definition(file_index, found.reference.span)
        if caller is not None and caller.container is not None:
            same_class = [entry for entry in results if entry[1].container == caller.container]
            results = same_class or results
    return results


def definition_locations(snapshot: Snapshot, path: str, line: int, character: int) -> list[dict[str, Any]]:
    """`textDocument/definition` by name: Locations of the definitions the name at the position refers to."""
    return [
        location(snapshot, target, definition.name_span)
        for target, definition in definition_targets(snapshot, path, line, character)
    ]


# --- outline and search -----------------------------------------------------------------------------------------


def document_symbols(snapshot: Snapshot, path: str) -> list[dict[str, Any]]:
    """`textDocument/documentSymbol` as hierarchical DocumentSymbols (nested by range containment)."""
    record = snapshot.files.get(path)
    if record is None:
        return []
    file_index = record.outline()
    ordered = sorted(
        file_index.definitions, key=lambda d: (d.span.start_line, d.span.start_col, -d.span.end_line, -d.span.end_col)
    )
    roots: list[dict[str, Any]] = []
    stack: list[tuple[Span, dict[str, Any]]] = []
    for definition in ordered:
        symbol: dict[str, Any] = {
            "name": definition.name,
            "kind": lsp_symbol_kind(definition, file_index.language),
            "range": lsp_range(definition.span),
            "selectionRange": lsp_range(definition.name_span),
            "detail": definition.signature,
            "children": [],
        }
        while stack and not _contains(stack[-1][0], definition.span.start_line, definition.span.start_col):
            stack.pop()
        (stack[-1][1]["children"] if stack else roots).append(symbol)
        stack.append((definition.span, symbol))
    return roots


def _humps(name: str) -> list[str]:
    """Word starts of an identifier: `parseHTTPRequest` -> parse, HTTP, Request; `user_cache` -> user, cache."""
    return [part for chunk in name.split("_") for part in _HUMP.findall(chunk)]


def match_score(query: str, name: str) -> int:
    """How well `name` matches a workspace-symbol query: 0 for no match, higher for better matches."""
    if not query:
        return 1
    if name == query:
        return 100
    lower_name, lower_query = name.lower(), query.lower()
    if lower_name == lower_query:
        return 90
    if name.startswith(query):
        return 80
    if lower_name.startswith(lower_query):
        return 70
    if _hump_match(query, name):
        return 60
    if lower_query in lower_name:
        return 50
    return 0


def _hump_match(query: str, name: str) -> bool:
    """camelCase-hump matching: each piece of the query starts a successive word of the name (`UC` or `usCa` for
    UserCache, `gUN` for getUserName, `us_ca` for user_cache)."""
    words = [word.lower() for word in _humps(name)]
    if "_" in query or (any(c.isupper() for c in query) and any(c.islower() for c in query)):
        pieces = [piece.lower() for piece in _QUERY_PIECE.findall(query)]
    else:
        pieces = list(query.lower())  # `UC`, `uc`: one letter per word
    if len(pieces) < 2 or not words:
        return False

    def match(piece_index: int, word_index: int) -> bool:
        if piece_index == len(pieces):
            return True
        for index in range(word_index, len(words)):
            if words[index].startswith(pieces[piece_index]) and match(piece_index + 1, index + 1):
                return True
        return False

    return match(0, 0)


_KIND_ORDER = {
    "class": 0,
    "interface": 0,
    "type": 1,
    "function": 1,
    "method": 2,
    "module": 3,
    "constant": 3,
    "variable": 4,
    "field": 4,
}


def workspace_symbols(snapshot: Snapshot, query: str, limit: int = DEFAULT_SYMBOL_LIMIT) -> list[dict[str, Any]]:
    """`workspace/symbol`: SymbolInformation dicts ranked by match quality, then kind, shorter names, path."""
    query = query.strip()
    scored: list[tuple[int, int, int, str, str, int]] = []
    names_seen: dict[str, int] = {}
    for path, record in snapshot.files.items():
        for position, packed in enumerate(record.definitions):
            name = packed[D_NAME]
            score = names_seen.get(name)
            if score is None:
                score = names_seen[name] = match_score(query, name)
            if score:
                kind_order = _KIND_ORDER.get(packed[D_KIND], 5)
                scored.append((-score, kind_order, len(name), name, path, position))
    scored.sort()
    results: list[dict[str, Any]] = []
    for _score, _kind, _length, _name, path, position in scored[:limit]:
        record = snapshot.files[path]
        definition = record.outline().definitions[position]
        symbol: dict[str, Any] = {
            "name": definition.name,
            "kind": lsp_symbol_kind(definition, record.language),
            "location": location(snapshot, path, definition.name_span),
        }
        if definition.container is not None:
            symbol["containerName"] = definition.container
        results.append(symbol)
    return results


def has_parameter(signature: str, name: str) -> bool:
    """Whether a function's signature has a parameter of this name (`def f(app, *, b=1)`, `(c: Context) =>`)."""
    return re.search(rf"[(,]\s*\*{{0,2}}{re.escape(name)}\s*[:=,)?]", signature) is not None
