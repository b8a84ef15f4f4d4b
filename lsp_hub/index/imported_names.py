"""The names other files import from some files by name, and whether those files still provide them: what a write
breaks for certain, whatever a language server has had time to say.

`from .utils import make_str` in core.py fails at import once utils.py no longer has `make_str`, and so does
`import { price } from "./lib"` once lib.ts has no `price`. A verified write asks for the imports of the files it
writes before and after the write (`lspHub.dependents`, `lspHub.importedNames`); a name provided before and not
after is a break. The rule for "provided" errs towards yes (a star import or a module `__getattr__` may provide
anything), and before and after are judged by the same rule, so only what the write changed can show as a break.
Imports by name are of module-scoped languages (Python, TypeScript, JavaScript). In the others (C, Go, Java...) a
file uses a name another file defines without naming that file: there a use is judged, plain (`gcd(a, b)`) or
through an imported package (`util.Helper()`), by what it resolves to (`UseResolver`): to a written file before,
to no file at all after, is a break (`plain_uses`, `uses_now`). A use through an object (`x.price()`) is not
judged: what it means is a guess.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lsp_hub.index.graph import MODULE_SCOPED_LANGUAGES, module_path, use_resolver
from lsp_hub.index.graph_inputs import import_bindings, importers, resolved_imports
from lsp_hub.index.records import (
    D_CONTAINER,
    D_NAME,
    I_ALIASES,
    I_NAMES,
    R_COL,
    R_END_COL,
    R_END_LINE,
    R_LINE,
    R_NAME,
    R_RECEIVER,
)
from lsp_hub.index.workspace import Snapshot

MAX_IMPORTED_NAMES = 2000  # entries in one answer: a module imported everywhere still answers in milliseconds


@dataclass(frozen=True, slots=True)
class ImportedName:
    path: str  # the importing file
    line: int  # the import statement's span, 0-based
    column: int
    end_line: int
    end_column: int
    name: str  # as the imported file spells it
    source: str  # the imported (written) file
    provided: bool  # whether `source` provides `name` in this snapshot (a module: whether it is there)
    module: bool = False  # an import of the module `source` itself (`name` as written), not of a name in it
    dynamic: bool = False  # `source` has a module `__getattr__`, which may provide names it does not define
    via: str | None = None  # a use `via.name` through a module import, not an import of the name
    use: bool = False  # a use in a language without imports of names (`plain_uses`), at the use

    def as_json(self) -> dict[str, Any]:
        """1-based lines and columns, as a write's diagnostics give them."""
        entry: dict[str, Any] = {
            "path": self.path,
            "line": self.line + 1,
            "column": self.column + 1,
            "endLine": self.end_line + 1,
            "endColumn": self.end_column + 1,
            "name": self.name,
            "from": self.source,
            "provided": self.provided,
            "module": self.module,
            "dynamic": self.dynamic,
        }
        if self.via:
            entry["via"] = self.via
        if self.use:
            entry["use"] = True
        return entry


def importers_of(
    snapshot: Snapshot, files: Iterable[str], imported_by: Mapping[str, Iterable[str]] | None = None
) -> list[str]:
    """The files that import any of `files` (themselves left out), in path order; from `imported_by` (graph_inputs'
    `importers` of those files) when the caller has it."""
    written = set(files)
    by_target = imported_by if imported_by is not None else importers(snapshot, written)
    return sorted({source for sources in by_target.values() for source in sources} - written)


def imported_names(snapshot: Snapshot, files: Collection[str], importers: Iterable[str]) -> list[ImportedName]:
    """Each name that one of `importers` imports by name from one of `files`, with whether it is provided now; each
    import of one of `files` as a module (`import a.b`, `from a import b` naming the module b itself, `import * as b
    from "./b"`), with whether the file is still there; and each use of a name through such a module (`b.name`)."""
    written = set(files)
    resolved_of = resolved_imports(snapshot)
    found: list[ImportedName] = []
    for path in importers:
        record = snapshot.files.get(path)
        if record is None or record.language not in MODULE_SCOPED_LANGUAGES:
            continue
        modules: dict[str, str] = {}  # local name (or dotted module) -> the written file it means
        for raw, resolved in zip(record.imports, resolved_of.get(path, ()), strict=False):
            position = _position(raw[3])
            named = False
            for name, sources in resolved.names:
                for source in sources:
                    if source not in written or not name.isidentifier() or name not in raw[I_NAMES]:
                        continue
                    named = True
                    if _is_module_itself(source, name):  # `from pkg import utils`: the module utils.py
                        found.append(ImportedName(path, *position, name, source, source in snapshot.files, True))
                        modules[_local_name(raw, name)] = source
                    else:
                        found.append(_name_entry(snapshot, path, position, name, source))
            if not named:
                for source in resolved.files:
                    if source in written:
                        found.append(ImportedName(path, *position, raw[0], source, source in snapshot.files, True))
                        modules[_local_name(raw, "*", raw[0])] = source
        if modules:
            found.extend(_attribute_uses(snapshot, path, record.references, modules))
        if len(found) >= MAX_IMPORTED_NAMES:
            return found[:MAX_IMPORTED_NAMES]
    return found


def _name_entry(
    snapshot: Snapshot, path: str, position: tuple[int, int, int, int], name: str, source: str, via: str | None = None
) -> ImportedName:
    provided = provides(snapshot, source, name)
    dynamic = not provided and has_module_getattr(snapshot, source)
    return ImportedName(path, *position, name, source, provided, False, dynamic, via)


def _local_name(raw: tuple[Any, ...], imported: str, default: str | None = None) -> str:
    """The name a module import binds in the importing file: its alias (`import a.b as z`, `import * as z`, `from a
    import b as z`), else the name imported, else the dotted module (`import a.b` is used as `a.b.name`)."""
    for local, aliased in raw[I_ALIASES]:
        if aliased == imported:
            return str(local)
    return default if default is not None else imported


def _attribute_uses(
    snapshot: Snapshot, path: str, references: tuple[tuple[Any, ...], ...], modules: dict[str, str]
) -> list[ImportedName]:
    """The uses `module.name` in `path` of a name of a written module it imports."""
    found = []
    for reference in references:
        receiver = reference[R_RECEIVER]
        source = modules.get(receiver) if receiver is not None else None
        if source is not None and reference[R_NAME].isidentifier():
            position = _reference_position(reference)
            found.append(_name_entry(snapshot, path, position, reference[R_NAME], source, receiver))
    return found


def _position(span: tuple[int, int, int, int] | None) -> tuple[int, int, int, int]:
    """An import statement's span (0-based line, column, end line, end column); the file's start when unknown."""
    if span is None:
        return (0, 0, 0, 0)
    line, column, end_line, end_column = span
    return (line, column, end_line, end_column)


def _reference_position(reference: tuple[Any, ...]) -> tuple[int, int, int, int]:
    """A packed reference's span (0-based line, column, end line, end column: `records.unpack_reference`)."""
    return (reference[R_LINE], reference[R_COL], reference[R_END_LINE], reference[R_END_COL])


def _is_module_itself(source: str, name: str) -> bool:
    return module_path(source).rpartition("/")[2] == name


def provides(snapshot: Snapshot, path: str, name: str) -> bool:
    """Whether importing `name` from file `path` can succeed, by the index: the file defines it at its top level,
    an import of its binds it, or it may provide anything (a star import); in Python a package also provides its
    submodules. A module `__getattr__` is not counted (`has_module_getattr`): it mostly serves a few names, and
    whether this is one the index cannot tell."""
    record = snapshot.files.get(path)
    if record is None:
        return False
    python = record.language == "python"
    for definition in record.definitions:
        if definition[D_CONTAINER] is None and definition[D_NAME] == name:
            return True
    if name in import_bindings(snapshot).get(path, {}):
        return True
    for raw in record.imports:
        names = raw[I_NAMES]
        if name in names or "*" in names:
            return True
        if not python and not names and not raw[I_ALIASES]:  # `export * from "./a"` (or a bare `import "./a"`)
            return True
    if python and path.rpartition("/")[2] == "__init__.py":
        package = module_path(path)
        return any(f"{package}/{name}{suffix}" in snapshot.files for suffix in (".py", ".pyi", "/__init__.py"))
    return False


def has_module_getattr(snapshot: Snapshot, path: str) -> bool:
    """Whether a Python file defines a module `__getattr__` (PEP 562): names it lacks may still import from it."""
    record = snapshot.files.get(path)
    return (
        record is not None
        and record.language == "python"
        and any(d[D_NAME] == "__getattr__" and d[D_CONTAINER] is None for d in record.definitions)
    )


def answer_before(snapshot: Snapshot, files: Collection[str], importers: Collection[str]) -> dict[str, Any]:
    """Before a write: the imports of `files` by their `importers` (`importers_of`) and every dependent's plain
    uses of them (`_answer`)."""
    return _answer(snapshot, imported_names(snapshot, files, importers) + plain_uses(snapshot, files), importers)


def answer_after(
    snapshot: Snapshot, files: Collection[str], importers: Collection[str], uses: dict[str, list[str]]
) -> dict[str, Any]:
    """After it: the same `importers`' imports, and the `uses` ({path: names}) the answer before named."""
    return _answer(snapshot, imported_names(snapshot, files, importers) + uses_now(snapshot, uses), importers)


def _answer(snapshot: Snapshot, found: list[ImportedName], importers: Collection[str]) -> dict[str, Any]:
    """`importedNames` and `importerVersions`: each importer's content digest, whether it changed between two
    answers."""
    paths = sorted({entry.path for entry in found} | set(importers))
    result: dict[str, Any] = {
        "importedNames": [entry.as_json() for entry in found[:MAX_IMPORTED_NAMES]],
        "importerVersions": {path: snapshot.files[path].digest.hex() for path in paths if path in snapshot.files},
    }
    if len(found) >= MAX_IMPORTED_NAMES:
        result["importedNamesCapped"] = True  # an entry left out here is not one gone: only those given are judged
    return result


def plain_uses(snapshot: Snapshot, files: Collection[str]) -> list[ImportedName]:
    """In the files of languages without imports of names that use one of `files` (the reference graph's links
    into them), each name used plainly or through an imported package that resolves to one of `files`: at its
    first use."""
    from lsp_hub.index.ranking import reference_graph  # the graph is built for the dependents already

    written = set(files)
    incoming = reference_graph(snapshot).incoming
    users = sorted({source for target in written for source in incoming.get(target, ())} - written)
    resolver = use_resolver(snapshot)
    # Only a name a written file defines at its top level can resolve to it plainly: a header included by
    # thousands of files costs their few uses of its names, not every use they make.
    defined = {
        definition[D_NAME]
        for path in written
        if path in snapshot.files
        for definition in snapshot.files[path].definitions
        if definition[D_CONTAINER] is None
    }
    found: list[ImportedName] = []
    for path in users:
        record = snapshot.files.get(path)
        if record is None or record.language in MODULE_SCOPED_LANGUAGES:
            continue
        wanted: dict[tuple[str, str | None], tuple[str, bool]] = {}
        for name, receiver in _judged_uses(snapshot, path, defined):
            targets = [target for target in resolver.targets(path, name, receiver) if target in written]
            if targets:
                wanted[(name, receiver)] = (targets[0], True)
        found.extend(_at_first_use(record.references, path, wanted))
    return found[:MAX_IMPORTED_NAMES]


def uses_now(snapshot: Snapshot, uses: dict[str, list[str]]) -> list[ImportedName]:
    """For each file's names (as `plain_uses` found them before a write): whether each use still resolves to a
    file, provided when it does."""
    resolver = use_resolver(snapshot)
    found: list[ImportedName] = []
    for path, names in uses.items():
        record = snapshot.files.get(path)
        if record is None:
            continue
        wanted = {
            (name, receiver): ("", bool(resolver.targets(path, name, receiver)))
            for name, receiver in _judged_uses(snapshot, path, set(names))
        }
        found.extend(_at_first_use(record.references, path, wanted))
    return found


def _judged_uses(snapshot: Snapshot, path: str, names: set[str] | None) -> list[tuple[str, str | None]]:
    """The file's uses (name, receiver) of `names` (None: all) that are plain or through a name its imports bind to
    workspace files (Go's `util` in `util.F()`)."""
    bound = {local for local, files in import_bindings(snapshot).get(path, {}).items() if files}
    return [
        (name, receiver)
        for name, by_receiver in snapshot.files[path].reference_uses().items()
        if names is None or name in names
        for receiver in by_receiver
        if receiver is None or receiver in bound
    ]


def _at_first_use(
    references: tuple[tuple[Any, ...], ...], path: str, wanted: dict[tuple[str, str | None], tuple[str, bool]]
) -> list[ImportedName]:
    """An entry for each wanted (name, receiver), at its first reference: (written file, provided) each."""
    found = []
    for reference in references:
        key = (reference[R_NAME], reference[R_RECEIVER])
        judged = wanted.pop(key, None)
        if judged is not None:
            position = _reference_position(reference)
            found.append(ImportedName(path, *position, key[0], judged[0], judged[1], via=key[1], use=True))
    return found
