"""The names other files import from some files by name, and whether those files still provide them: what a write
breaks for certain, whatever a language server has had time to say.

`from .utils import make_str` in core.py fails at import once utils.py no longer has `make_str`, and so does
`import { price } from "./lib"` once lib.ts has no `price`. A verified write asks for the imports of the files it
writes before and after the write (`lspHub.dependents`, `lspHub.importedNames`); a name provided before and not
after is a break. The rule for "provided" errs towards yes (a star import or a module `__getattr__` may provide
anything), and before and after are judged by the same rule, so only what the write changed can show as a break.
Module-scoped languages only (Python, TypeScript, JavaScript): elsewhere an import names a package or a header.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from lsp_hub.index.graph import MODULE_SCOPED_LANGUAGES, module_path
from lsp_hub.index.graph_inputs import import_bindings, import_graph, resolved_imports
from lsp_hub.index.records import D_CONTAINER, D_NAME, I_ALIASES, I_NAMES, R_COL, R_LINE, R_NAME, R_RECEIVER
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


def importers_of(snapshot: Snapshot, files: Iterable[str]) -> list[str]:
    """The files that import any of `files` (themselves left out), in path order."""
    written = set(files)
    graph = import_graph(snapshot)
    found = {source for target in written if target in graph for source in graph.predecessors(target)}
    return sorted(found - written)


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
            position = (reference[R_LINE], reference[R_COL], reference[3], reference[4])
            found.append(_name_entry(snapshot, path, position, reference[R_NAME], source, receiver))
    return found


def _position(span: tuple[int, int, int, int] | None) -> tuple[int, int, int, int]:
    """An import statement's span (0-based line, column, end line, end column); the file's start when unknown."""
    if span is None:
        return (0, 0, 0, 0)
    line, column, end_line, end_column = span
    return (line, column, end_line, end_column)


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
