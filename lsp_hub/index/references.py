"""Every use of a definition across the workspace, and a language server's references completed with them.

A server answers `textDocument/references` only for the files it analyses (basedpyright with `[tool.pyright]
include = ["src"]` knows nothing of `tests/`); the index holds every file. A use counts for a definition as a call
counts in `callers.find_callers` (`call_judge.CallJudge`: the same import, scoping and receiver rules), over every
reference the extractor records (calls, decorators, base classes, annotations), plus the name in the import
statements that bind it (`from m import name`), plus, in Python files that use the name, its other reads found by
the tokenizer (`handlers = [name]`, `name.attribute`). It is a floor, not the truth: the server's answer stands
wherever it has one.

`cover_server_locations` is the merge: the server's locations first (origin `server`, or `both` when the index has
the site too); the index's sites only in files where the server listed nothing (origin `index`), and those files
named as `uncovered`. In a file the server analysed, its answer is taken as the truth there.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import Any

from lsp_hub.index.call_judge import CallJudge, CallTarget
from lsp_hub.index.callers import ORIGIN_BOTH, ORIGIN_INDEX, ORIGIN_SERVER, _range_key, _same_site
from lsp_hub.index.graph import language_family
from lsp_hub.index.graph_inputs import alias_users, import_bindings
from lsp_hub.index.model import Definition, FileIndex, Reference, Span
from lsp_hub.index.records import I_NAMES, R_NAME, unpack_reference
from lsp_hub.index.reexports import name_users
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
    judge = CallJudge(snapshot)
    reads = _FileReads(snapshot, judge, text_of)
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
        target = CallTarget(path, definition)
        name = definition.name
        family = language_family(snapshot.files[path].language)
        definition_count = sum(1 for other, _definition in definitions_named(snapshot, name)
                               if language_family(snapshot.files[other].language) == family)
        if include_declaration:
            add(path, definition.name_span, KIND_DEFINITION, name)
        uses, exported_as = name_users(snapshot, name)
        for source, used_name in uses:
            outline = reads.outline(source)
            for reference, caller in reads.references(source, used_name):
                if used_name != name and reference.receiver is not None and (source, used_name) not in exported_as:
                    continue  # `x.other` is not the alias
                if judge.counts(source, outline, used_name, reference.receiver, caller, target, definition_count) \
                        and not add(source, reference.span, KIND_CALL if reference.is_call else KIND_USE, used_name):
                    break
        for source, span in _import_sites(snapshot, reads, target):
            if not add(source, span, KIND_IMPORT, name):
                break
        # Files that import the name but record no use of it (`run_command.make_context(...)`) are read too.
        importers = [(source, local) for source, local in _local_names(snapshot, name).items()]
        for source, span, written in _python_name_uses(snapshot, reads, target, uses + importers):
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


class _FileReads:
    """What one query reads of each file, once for all its targets (a common name has dozens of definitions, and
    the same files use them all): references by name with their enclosing function, outlines, texts, and where
    the resolver says a use leads."""

    def __init__(self, snapshot: Snapshot, judge: CallJudge, text_of: TextOf) -> None:
        self.snapshot = snapshot
        self.resolver = judge.resolver
        self._text_of = text_of
        self._outlines: dict[str, FileIndex] = {}
        self._references: dict[str, dict[str, list[tuple[Any, ...]]]] = {}  # packed, by name
        self._enclosed: dict[tuple[str, str], list[tuple[Reference, Definition | None]]] = {}
        self._texts: dict[str, str | None] = {}
        self._python: dict[str, _PythonText | None] = {}
        self._targets: dict[tuple[str, str, str | None], tuple[str, ...]] = {}

    def outline(self, source: str) -> FileIndex:
        outline = self._outlines.get(source)
        if outline is None:
            outline = self._outlines[source] = self.snapshot.files[source].outline()
        return outline

    def references(self, source: str, name: str) -> list[tuple[Reference, Definition | None]]:
        """The file's references of `name` (decoded once per file), each with its enclosing function."""
        key = (source, name)
        found = self._enclosed.get(key)
        if found is None:
            by_name = self._references.get(source)
            if by_name is None:
                by_name = self._references[source] = {}
                for packed in self.snapshot.files[source].references:
                    by_name.setdefault(packed[R_NAME], []).append(packed)  # objects only for the names asked
            outline = self.outline(source)
            references = [unpack_reference(packed) for packed in by_name.get(name, ())]
            found = self._enclosed[key] = [(reference, enclosing_definition(outline, reference.span))
                                           for reference in references]
        return found

    def targets(self, source: str, name: str, receiver: str | None) -> tuple[str, ...]:
        key = (source, name, receiver)
        found = self._targets.get(key)
        if found is None:
            found = self._targets[key] = self.resolver.targets(source, name, receiver)
        return found

    def text(self, source: str) -> str | None:
        if source not in self._texts:
            self._texts[source] = self._text_of(source)
        return self._texts[source]

    def python(self, source: str) -> _PythonText | None:
        if source not in self._python:
            text = self.text(source)
            self._python[source] = _PythonText(text) if text is not None else None
        return self._python[source]


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


def _import_sites(snapshot: Snapshot, reads: _FileReads, target: CallTarget) -> list[tuple[str, Span]]:
    """Where import statements name the target (`from m import name`, `from m import name as other`, `import {
    name } from`), in the files whose import of the name leads to the target's file (through re-exports)."""
    name = target.definition.name
    found: list[tuple[str, Span]] = []
    for source, local in sorted(_local_names(snapshot, name).items()):
        if source == target.path:
            continue
        if target.path not in reads.targets(source, local, None):
            continue
        record = snapshot.files[source]
        statements = {raw[3] for raw in record.imports if name in raw[I_NAMES] and raw[3] is not None}
        if not statements:
            continue
        text = reads.text(source)
        if text is None:
            continue
        lines = text.split("\n")
        for statement in sorted(statements):
            found.extend((source, span) for span in _name_in_statement(lines, statement, name, record.language))
    return found


def _python_name_uses(snapshot: Snapshot, reads: _FileReads, target: CallTarget,
                      uses: list[tuple[str, str]]) -> list[tuple[str, Span, str]]:
    """The uses the extractor does not record, in the Python files that use the name: the name read but not
    called (`raises(Error, find_app, x)`, `run_command.make_context(...)`, `handlers = [name]`), never in a string
    or a comment (`_PythonText`). A bare name counts in a file whose import of it leads to the target and that does
    not define the name itself; `module.name` counts where the resolver says that module leads to the target. A
    keyword argument's name (`f(name=1)`) and a def, class or alias name are not uses."""
    name = target.definition.name
    found: list[tuple[str, Span, str]] = []
    for source, used_name in sorted(set(uses)):
        record = snapshot.files[source]
        if record.language != "python" or source == target.path:
            continue
        bare_counts = used_name not in record.defined_names() and \
            target.path in reads.targets(source, used_name, None)
        # Imported modules (or classes) through which `name` leads to the target: `flask` in `flask.url_for`.
        bindings = reads.resolver.bindings.get(source, {})
        through_imports = used_name == name and any(
            bound and target.path in reads.targets(source, name, local) for local, bound in bindings.items())
        if not bare_counts and not through_imports:
            continue  # nothing in this file can mean the target: not worth reading (a common name has hundreds)
        python = reads.python(source)
        if python is None:
            continue
        text = python.text
        for offset in python.occurrences(used_name):
            before = text[max(0, offset - 200):offset]
            after = text[offset + len(used_name):offset + len(used_name) + 3].lstrip(" \t")
            if _KEYWORD_ARGUMENT.search(before) and after.startswith("=") and not after.startswith("=="):
                continue  # `f(name=...)`, `f(a, name=...)`: a keyword argument of the call
            attribute = _ATTRIBUTE_OF.search(before)
            if attribute is not None:
                if attribute.group("receiver") is None:
                    continue  # an attribute of an expression (`make().name`, `items[0].name`)
                receiver = re.sub(r"\s+", "", attribute.group("receiver"))
                bound_by_import = bindings.get(receiver) or bindings.get(receiver.split(".", 1)[0])  # `import a.b`
                if not through_imports or not bound_by_import or \
                        target.path not in reads.targets(source, name, receiver):
                    continue  # `x.name` of something no import leads from to the target (`app.json.name`)
            elif not bare_counts or _DECLARING.search(before):
                continue
            line, column = python.position(offset)
            found.append((source, Span(line, column, line, column + _utf16_length(used_name)), used_name))
    return found


_KEYWORD_ARGUMENT = re.compile(r"[(,]\s*\Z")
# `receiver.` right before the name: `flask.`, `pkg.core.` (an expression such as `f().` has no receiver here).
_ATTRIBUTE_OF = re.compile(r"(?<![\w$.])(?P<receiver>[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\.\s*\Z|\.\s*\Z")
_DECLARING = re.compile(r"\b(?:def|class|import|as)\s+\Z")
# What is not code in Python: comments, and strings (triple-quoted ones across lines; any prefix). A name inside
# an f-string's braces is skipped with the string: a use missed, never a string renamed.
_PYTHON_NOT_CODE = re.compile(
    r"#[^\n]*"
    r"|[rRbBuUfF]{0,2}(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''"
    r"|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')", re.S)


class _PythonText:
    """A Python file's text: which offsets are not code, and offsets as (line, UTF-16 column). One regular
    expression pass in C: Python's tokenizer took 9 s for the 84 files that use `Thread` in the standard library."""

    def __init__(self, text: str) -> None:
        self.text = text
        spans = [(match.start(), match.end()) for match in _PYTHON_NOT_CODE.finditer(text)]
        self._starts = [start for start, _end in spans]
        self._ends = [end for _start, end in spans]
        self._line_starts = [0, *(match.end() for match in re.finditer("\n", text))]

    def skipped(self, offset: int) -> bool:
        index = bisect.bisect_right(self._starts, offset) - 1
        return index >= 0 and offset < self._ends[index]

    def occurrences(self, name: str) -> list[int]:
        """The offsets where `name` stands as a whole identifier in code."""
        if name not in self.text:
            return []
        return [match.start() for match in re.finditer(rf"(?<![\w$]){re.escape(name)}(?!\w)", self.text)
                if not self.skipped(match.start())]

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, offset) - 1
        start = self._line_starts[line]
        return line, _utf16(self.text[start:offset], offset - start)


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
