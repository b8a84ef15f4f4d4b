"""Every use of a definition across the workspace, and a language server's references completed with them.

A server answers `textDocument/references` only for the files it analyses (basedpyright with `[tool.pyright]
include = ["src"]` knows nothing of `tests/`); the index holds every file. A use counts for a definition as a call
counts in `callers.find_callers` (`_CallJudge`: the same import, scoping and receiver rules), over every reference
the extractor records (calls, decorators, base classes, annotations), plus the name in the import statements that
bind it (`from m import name`), plus, in Python files that use the name, its other reads found by the tokenizer
(`handlers = [name]`, `name.attribute`). It is a floor, not the truth: the server's answer stands wherever it has
one.

`cover_server_locations` is the merge: the server's locations first (origin `server`, or `both` when the index has
the site too); the index's sites only in files where the server listed nothing (origin `index`), and those files
named as `uncovered`. In a file the server analysed, its answer is taken as the truth there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lsp_hub.index.callers import ORIGIN_BOTH, ORIGIN_INDEX, ORIGIN_SERVER, _CallJudge, _range_key, _same_site, _Target
from lsp_hub.index.graph import alias_users, import_bindings, language_family, name_tables
from lsp_hub.index.model import Definition, Span
from lsp_hub.index.records import I_NAMES, R_NAME, unpack_reference
from lsp_hub.index.symbols import definitions_named, enclosing_definition, location, qualified_name
from lsp_hub.index.workspace import Snapshot

MAX_SITES = 5000  # a name used more often than this is not one a rename from this answer should trust

KIND_DEFINITION, KIND_CALL, KIND_USE, KIND_IMPORT = "definition", "call", "use", "import"

TextOf = Callable[[str], str | None]  # workspace-relative path -> the file's text as the servers see it


def find_references(snapshot: Snapshot, targets: list[tuple[str, Definition]], include_declaration: bool,
                    text_of: TextOf) -> dict[str, Any]:
    """`{symbol, definitions, references: [{location, kind, name}], complete}`: the uses of already resolved
    targets (`name`: as written there, another for a use through an alias: `b` after `import a as b`).
    `text_of` gives a file's text, read only for files whose import statements bind the name (the extractor keeps
    an import's statement span, not its names' positions)."""
    judge = _CallJudge(snapshot)
    tables = name_tables(snapshot)
    sites: list[dict[str, Any]] = []
    seen: set[tuple[str, int, int]] = set()
    truncated = False

    def add(path: str, span: Span, kind: str, written: str) -> bool:
        nonlocal truncated
        key = (path, span.start_line, span.start_col)
        if key in seen:
            return True
        if len(sites) >= MAX_SITES:
            truncated = True
            return False
        seen.add(key)
        sites.append({"location": location(snapshot, path, span), "kind": kind, "name": written})
        return True

    for path, definition in targets:
        target = _Target(path, definition)
        name = definition.name
        family = language_family(snapshot.files[path].language)
        definition_count = sum(1 for other, _definition in definitions_named(snapshot, name)
                               if language_family(snapshot.files[other].language) == family)
        if include_declaration:
            add(path, definition.name_span, KIND_DEFINITION, name)
        uses = [(source, name) for source in tables.referencers.get(name, ())]
        uses.extend(alias_users(snapshot).get(name, ()))
        for source, used_name in uses:
            record = snapshot.files[source]
            outline = record.outline()
            for packed in record.references:
                if packed[R_NAME] != used_name:
                    continue
                reference = unpack_reference(packed)
                if used_name != name and reference.receiver is not None:
                    continue  # `x.other` is not the alias
                caller = enclosing_definition(outline, reference.span)
                if judge.counts(source, outline, used_name, reference.receiver, caller, target, definition_count) \
                        and not add(source, reference.span, KIND_CALL if reference.is_call else KIND_USE, used_name):
                    break
        for source, span in _import_sites(snapshot, judge, target, text_of):
            if not add(source, span, KIND_IMPORT, name):
                break
        # Files that import the name but record no use of it (`run_command.make_context(...)`) are read too.
        importers = [(source, local) for source, local in _local_names(snapshot, name).items()]
        for source, span, written in _python_name_uses(snapshot, judge, target, uses + importers, text_of):
            if not add(source, span, KIND_USE, written):
                break
    completeness = snapshot.completeness()
    if truncated:
        completeness["complete"] = False
        completeness["truncated"] = f"stopped after {MAX_SITES} references"
    sites.sort(key=lambda site: _range_key(site["location"]))
    return {
        "symbol": qualified_name(targets[0][1]) if targets else None,
        "definitions": [location(snapshot, path, definition.name_span) for path, definition in targets],
        "references": sites,
        **completeness,
    }


def agreed_targets(snapshot: Snapshot, targets: list[tuple[str, Definition]],
                   server_locations: list[dict[str, Any]], include_declaration: bool) -> list[tuple[str, Definition]]:
    """The index's definitions for a position that a server's (non-empty) references answer agrees on: those it
    lists (with the declaration asked for), else none, since the server resolved another symbol (`x.save()` may
    mean any `save` to the index, one to the server). Without the declaration there is nothing to compare: only a
    single definition is trusted. Sites of the wrong symbol would be renamed with the right one."""
    if not include_declaration:
        return targets if len(targets) == 1 else []
    return [(path, definition) for path, definition in targets
            if any(_same_site(location(snapshot, path, definition.name_span), entry) for entry in server_locations
                   if isinstance(entry, dict) and isinstance(entry.get("uri"), str) and "range" in entry)]


def _import_sites(snapshot: Snapshot, judge: _CallJudge, target: _Target, text_of: TextOf) -> list[tuple[str, Span]]:
    """Where import statements name the target (`from m import name`, `from m import name as other`, `import {
    name } from`), in the files whose import of the name leads to the target's file (through re-exports)."""
    name = target.definition.name
    found: list[tuple[str, Span]] = []
    for source, local in sorted(_local_names(snapshot, name).items()):
        if source == target.path:
            continue
        if target.path not in judge.resolver.targets(source, local, None):
            continue
        record = snapshot.files[source]
        statements = {raw[3] for raw in record.imports if name in raw[I_NAMES] and raw[3] is not None}
        if not statements:
            continue
        text = text_of(source)
        if text is None:
            continue
        lines = text.split("\n")
        for statement in sorted(statements):
            found.extend((source, span) for span in _name_in_statement(lines, statement, name, record.language))
    return found


def _python_name_uses(snapshot: Snapshot, judge: _CallJudge, target: _Target, uses: list[tuple[str, str]],
                      text_of: TextOf) -> list[tuple[str, Span, str]]:
    """The uses the extractor does not record, in the Python files that use the name: the name read but not
    called (`raises(Error, find_app, x)`, `run_command.make_context(...)`, `handlers = [name]`), found by
    Python's tokenizer (so never in a string or a comment). A bare name counts in a file whose import of it leads
    to the target and that does not define the name itself; `module.name` counts where the resolver says that
    module leads to the target. A keyword argument's name (`f(name=1)`) is not a use."""
    import io
    import tokenize

    name = target.definition.name
    found: list[tuple[str, Span, str]] = []
    for source, used_name in sorted(set(uses)):
        record = snapshot.files[source]
        if record.language != "python" or source == target.path:
            continue
        bare_counts = used_name not in record.defined_names() and \
            target.path in judge.resolver.targets(source, used_name, None)
        # Imported modules (or classes) through which `name` leads to the target: `flask` in `flask.url_for`.
        module_receivers = {local for local, bound in judge.resolver.bindings.get(source, {}).items()
                            if bound and used_name == name
                            and target.path in judge.resolver.targets(source, name, local)}
        if not bare_counts and not module_receivers:
            continue  # nothing in this file can mean the target: not worth tokenizing (a common name has hundreds)
        text = text_of(source)
        if text is None:
            continue
        try:
            tokens = [token for token in tokenize.generate_tokens(io.StringIO(text).readline)
                      if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                                            tokenize.DEDENT)]
        except (tokenize.TokenError, SyntaxError, IndentationError):
            continue  # a file Python cannot tokenize: its recorded uses stand alone
        lines = text.split("\n")
        depth = 0
        for position, token in enumerate(tokens):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth = max(0, depth - 1)
            if token.type != tokenize.NAME or token.string != used_name:
                continue
            before = tokens[position - 1] if position else None
            after = tokens[position + 1] if position + 1 < len(tokens) else None
            if depth and after is not None and after.string == "=":
                continue  # `f(name=...)`: a keyword argument of the call
            if before is not None and before.string == ".":
                receiver = tokens[position - 2] if position >= 2 else None
                chained = position >= 3 and tokens[position - 3].string == "."  # `app.json.name`: not a module's
                if receiver is None or chained or receiver.string not in module_receivers:
                    continue  # an attribute of something that does not lead to the target
            elif not bare_counts or (before is not None and before.string in ("def", "class", "import", "as")):
                continue
            line, column = token.start[0] - 1, token.start[1]
            utf16_column = _utf16(lines[line], column) if line < len(lines) else column
            found.append((source, Span(line, utf16_column, line, utf16_column + _utf16_length(used_name)),
                          used_name))
    return found


def _local_names(snapshot: Snapshot, name: str) -> dict[str, str]:
    """Importing file -> the local name its import of `name` binds (`name`, or the alias)."""
    local_names: dict[str, str] = {}
    for source, bound in import_bindings(snapshot).items():
        if name in bound:
            local_names[source] = name
    for source, local in alias_users(snapshot).get(name, ()):
        local_names.setdefault(source, local)
    return local_names


_STRING = re.compile(r"""'[^'\n]*'|"[^"\n]*"|`[^`\n]*`""")


def _name_in_statement(lines: list[str], statement: tuple[int, int, int, int], name: str,
                       language: str) -> list[Span]:
    """The spans (UTF-16 columns) where `name` stands as a whole identifier in an import statement: after Python's
    `import` keyword (`from name import name` names the module first), outside string literals (a TS/JS module
    path)."""
    start_line, start_col, end_line, end_col = statement
    if start_line >= len(lines):
        return []
    pieces: list[tuple[int, int, str]] = []  # (line, UTF-16 column of the piece's start, text)
    for line_number in range(start_line, min(end_line, len(lines) - 1) + 1):
        line = lines[line_number]
        begin = _character(line, start_col) if line_number == start_line else 0
        end = _character(line, end_col) if line_number == end_line else len(line)
        pieces.append((line_number, begin, line[begin:end]))
    pattern = re.compile(rf"(?<![\w.$]){re.escape(name)}(?![\w$])")
    seen_import_keyword = language != "python"
    spans: list[Span] = []
    for line_number, begin, text in pieces:
        blanked = _STRING.sub(lambda match: " " * len(match.group()), text)
        offset = 0
        if not seen_import_keyword:
            keyword = re.search(r"\bimport\b", blanked)
            if keyword is None:
                continue
            seen_import_keyword = True
            offset = keyword.end()
        for match in pattern.finditer(blanked, offset):
            line = lines[line_number]
            column = _utf16(line, begin + match.start())
            spans.append(Span(line_number, column, line_number, column + _utf16_length(name)))
    return spans


def _character(line: str, utf16_column: int) -> int:
    if line.isascii():
        return min(utf16_column, len(line))
    return len(line.encode("utf-16-le")[: 2 * utf16_column].decode("utf-16-le", "ignore"))


def _utf16(line: str, character: int) -> int:
    return character if line.isascii() else _utf16_length(line[:character])


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


# --- a server's references completed ------------------------------------------------------------------------


def cover_server_locations(index_sites: list[dict[str, Any]],
                           server_locations: list[dict[str, Any]] | None) -> dict[str, Any]:
    """`{locations: [{uri, range, origin}], uncovered: [uri]}`: a server's Locations (None: no server answered)
    completed with the index's sites (`{location, kind, name}`) in the files the server listed nothing in (those
    keep `name`, what a rename would find written there).

    A server location is `both` when the index has a site there too (same line, overlapping ranges), else
    `server`; in a file the server listed anything in, the index adds nothing (the server analysed that file, and
    its answer is more precise than names and imports). The files where only the index found uses are `uncovered`:
    the server does not analyse them (or the index is wrong there). Sorted by file and position; pure."""
    server_locations = [entry for entry in server_locations or []
                        if isinstance(entry, dict) and isinstance(entry.get("uri"), str) and "range" in entry]
    server_files = {entry["uri"] for entry in server_locations}
    index_by_file: dict[str, list[dict[str, Any]]] = {}
    for site in index_sites:
        index_by_file.setdefault(site["location"]["uri"], []).append(site)
    merged: list[dict[str, Any]] = []
    listed: set[tuple[str, int, int, int, int]] = set()
    for entry in server_locations:
        key = _range_key(entry)
        if key in listed:
            continue
        listed.add(key)
        confirmed = any(_same_site(site["location"], entry) for site in index_by_file.get(entry["uri"], ()))
        merged.append({"uri": entry["uri"], "range": entry["range"],
                       "origin": ORIGIN_BOTH if confirmed else ORIGIN_SERVER})
    uncovered = sorted(uri for uri in index_by_file if uri not in server_files)
    for uri in uncovered:
        for site in index_by_file[uri]:
            merged.append({"uri": uri, "range": site["location"]["range"], "origin": ORIGIN_INDEX,
                           "name": site["name"]})
    merged.sort(key=_range_key)
    return {"locations": merged, "uncovered": uncovered}
