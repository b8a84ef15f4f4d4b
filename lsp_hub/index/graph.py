"""Which files a use of a name may mean (`UseResolver`): by the language's scoping (module-scoped, package-scoped,
or every file of its family) and the file's imports, re-exports followed (`reexports.py`). `links.py` turns every
file's uses into its links, `ranking.py` the links into the ranked reference graph. What the resolver reads (name
tables, resolved imports) is `graph_inputs.py`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from lsp_hub.index.graph_inputs import (
    import_bindings,
    import_renames,
    name_tables,
    resolved_imports,
)
from lsp_hub.index.model import COMPLEX_RECEIVER
from lsp_hub.index.records import (
    D_CONTAINER,
    D_KIND,
    D_LOCAL,
    D_NAME,
    D_SIGNATURE,
    FileRecord,
    local_names,
)
from lsp_hub.index.reexports import defines, name_origins, renamed_origin, star_imported
from lsp_hub.index.workspace import Snapshot

Link = tuple[str, int, tuple[str, ...]]  # (name used, uses, target files): `links.py`
FileLinks = tuple[Link, ...]  # a file's links (`links.py`); its row (`rows.py`) is made from them

SELF_RECEIVERS = frozenset(("self", "this", "cls", "super", "Self"))
_TYPE_KINDS = frozenset(("class", "interface", "type"))
# `name = callee(`, `name: T = callee(`, `const name = callee(`, `let name = new callee(`: a variable made by a call.
_MADE_BY_CALL = re.compile(r"(?:(?:const|let|var)\s+)?[\w$]+\s*(?::[^=]*)?=\s*(?:new\s+)?([\w$.]+)\s*\(")
# Languages whose files can use each other's names; every other language only its own.
_LANGUAGE_FAMILIES = {"typescript": "ecma", "tsx": "ecma", "javascript": "ecma", "c": "c", "cpp": "c"}


def language_family(language: str) -> str:
    return _LANGUAGE_FAMILIES.get(language, language)


# Languages whose plain (receiver-less) names come only from the file itself, its imports, or builtins.
MODULE_SCOPED_LANGUAGES = frozenset(("python", "typescript", "tsx", "javascript"))
# Languages whose plain names also come from the other files of the same directory (a Go or Java package).
PACKAGE_SCOPED_LANGUAGES = frozenset(("go", "java"))
# Receivers naming a language's own globals: express's `Object.create(...)` linked to an example's `exports.create`.
# Imported modules need no list (an import from outside binds nothing in the workspace); these are never imported.
_RUNTIME_GLOBALS = {
    "ecma": (
        "Object Array JSON Math Promise Reflect Number String Boolean Date Symbol Buffer Error Intl Map Set WeakMap "
        "WeakSet Proxy RegExp BigInt Atomics console process window document globalThis navigator"
    ),
    "python": "str bytes int float dict list set frozenset tuple object type bool complex bytearray",
    "ruby": (
        "File Dir Hash Array String Integer Float Kernel Time IO Struct Object Class Module Process Thread Math "
        "Regexp Symbol Comparable Enumerable ENV STDOUT STDERR STDIN"
    ),
    # java.lang's, never imported: gson's `Integer.parseInt` reached two private `parseInt`s, which came into its map
    "java": (
        "Integer Long Short Byte Double Float Boolean Character String StringBuilder StringBuffer Math StrictMath "
        "System Thread Runtime Class Object Enum Number Void Process ProcessBuilder ClassLoader Iterable Comparable "
        "CharSequence Runnable AutoCloseable Throwable Exception RuntimeException Error"
    ),
    # System's, named after a `using System;` that binds no name
    "csharp": (
        "Math Console String Convert Array Enum Guid DateTime DateTimeOffset TimeSpan Environment GC Activator Type "
        "Object Nullable Tuple ValueTuple BitConverter Buffer Int32 Int64 UInt32 UInt64 Double Single Boolean Char "
        "Decimal Byte Task File Path Directory Encoding Interlocked Volatile ArgumentNullException ArgumentException "
        "ArgumentOutOfRangeException ObjectDisposedException"
    ),
}
_RUNTIME_GLOBAL_NAMES = {family: frozenset(names.split()) for family, names in _RUNTIME_GLOBALS.items()}
_STD_CRATES = frozenset(("std", "core", "alloc"))  # `std::fs::File`: never a workspace definition


class _Families(dict[str, str | None]):
    """Path -> its language's family (None: not a file of the snapshot), looked up as asked: made whole, the map
    cost every query after a change 0.1 s at 100,000 files."""

    def __init__(self, files: Mapping[str, FileRecord]) -> None:
        super().__init__()
        self.files = files

    def __missing__(self, path: str) -> str | None:
        record = self.files.get(path)
        family = self[path] = language_family(record.language) if record is not None else None
        return family


class _SourceContext(NamedTuple):
    path: str
    record: FileRecord
    family: str
    bindings: Mapping[str, tuple[str, ...]]
    renames: Mapping[str, str]
    definers: dict[str, tuple[str, ...]]  # the resolver's cache of the family's definers (`_in_family`)
    members: dict[str, tuple[str, ...]]  # and of its member definers
    runtime_globals: frozenset[str]  # receivers that mean no workspace definition (`_runtime_globals_of`)


class UseResolver:
    """Which files a use of a name may refer to, by the language's scoping and the file's imports."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.tables = name_tables(snapshot)
        self.bindings = import_bindings(snapshot)
        self.renames = import_renames(snapshot)
        self._star_sources: dict[str, tuple[str, ...]] = {}
        self._local_names: dict[str, frozenset[str]] = {}
        self._own_type_names: dict[str, frozenset[str]] = {}  # per file: `_own_types`
        self._family_of = _Families(snapshot.files)
        # Per family, name -> its definers (member definers) in that family: a dictionary per family, not one keyed
        # by (name, family), saves making and hashing a tuple for each of the 100,000 uses of the standard library.
        self._definers: dict[str, dict[str, tuple[str, ...]]] = {}
        self._member_definers: dict[str, dict[str, tuple[str, ...]]] = {}
        self._made_outside: dict[str, frozenset[str]] = {}  # per file: module variables made by outside calls
        self._runtime_globals: dict[str, frozenset[str]] = {}  # per family (`_runtime_globals_of`)
        self._module_paths: dict[str, str] = {}  # "/" + module_path(path), asked for every chain receiver
        self._rust_macros: dict[str, frozenset[str]] | None = None  # name -> files defining that macro_rules!
        # What `targets` reads of the file it was last asked about: a file's uses are asked about one after another.
        # One immutable object, replaced whole: a thread asking about another file meanwhile cannot mix them.
        self._source: _SourceContext | None = None

    def _in_family(
        self, cache: dict[str, tuple[str, ...]], table: Mapping[str, tuple[str, ...]], name: str, family: str
    ) -> tuple[str, ...]:
        """The files of `table[name]` whose language a file of `family` can use, kept in `cache` (the family's): a
        Python `x.info()` never means a TypeScript method, however the names match. The table's own tuple when all of
        them can (no copy). `targets` looks in the cache itself first: this call is for the names not there yet."""
        found = cache.get(name)
        if found is None:
            family_of = self._family_of
            files = table.get(name, ())
            found = tuple(path for path in files if family_of[path] == family)
            cache[name] = found = files if len(found) == len(files) else found
        return found

    def star_sources(self, path: str) -> tuple[str, ...]:
        """Files whose names `path` imports wholesale (`from m import *`, `export * from`)."""
        sources = self._star_sources.get(path)
        if sources is None:
            record = self.snapshot.files[path]
            found = star_imported(record, resolved_imports(self.snapshot).get(path, ()))
            sources = self._star_sources[path] = tuple(path for files in found for path in files)
        return sources

    def macro_names(self, source: str) -> Mapping[str, frozenset[str]]:
        """The workspace's `macro_rules!` names (-> their files) that a plain name in `source` may be: Rust's only."""
        if self.snapshot.files[source].language != "rust":
            return {}
        if self._rust_macros is None:
            found: dict[str, set[str]] = {}
            for path, record in self.snapshot.files.items():
                if record.language == "rust":
                    for definition in record.definitions:
                        if definition[D_SIGNATURE].startswith("macro_rules!"):
                            found.setdefault(definition[D_NAME], set()).add(path)
            self._rust_macros = {name: frozenset(files) for name, files in found.items()}
        return self._rust_macros

    def plain_names_local(self, source: str) -> bool:
        """Whether a plain name `source` uses must be defined in it or imported into it (not star-imported) to mean
        a file of the workspace: otherwise it is a builtin or an undeclared global, and `targets` gives nothing."""
        return plain_names_scoped(self.snapshot.files[source]) and not self.star_sources(source)

    def targets(self, source: str, name: str, receiver: str | None) -> tuple[str, ...]:
        """The files among those defining `name` that `receiver.name` (or plain `name`) in `source` may mean."""
        context = self._source
        if context is None or context.path != source:
            context = self._source = self._context_of(source)
        record, family, source_bindings = context.record, context.family, context.bindings
        # The family's definers of a name, from the cache first: a method call for each of the standard library's
        # 70,000 uses cost about a tenth of linking (an alias, which is rare, goes straight to `_in_family`).
        definers_cache = context.definers
        if receiver is None:
            exported = context.renames.get(name)
            if exported is not None:  # `b` after `from m import a as b`: m's a
                definers = self._in_family(definers_cache, self.tables.definers, exported, family)
                aliased = source_bindings.get(name, ())
                return self._bound_targets(aliased, exported, definers) or self._renamed_targets(
                    aliased, exported, context
                )
        found = definers_cache.get(name)
        definers = found if found is not None else self._in_family(definers_cache, self.tables.definers, name, family)
        if not definers:
            imported_from = source_bindings.get(name if receiver is None else receiver)
            if imported_from:  # a workspace file that does not define it: re-exported under this name?
                renamed = self._renamed_targets(imported_from, name, context)
                if renamed:
                    return renamed
            # a name only functions' bodies define (the tables leave those out): here, the file's own
            return (source,) if (receiver is None or receiver in SELF_RECEIVERS) and self._local(source, name) else ()
        if receiver is None:
            bound = source_bindings.get(name)
            if bound is not None:
                return self._bound_targets(bound, name, definers) or self._renamed_targets(bound, name, context)
            if defines(self.tables.definers, source, name) or self._local(source, name):
                return (source,)
            if plain_names_scoped(record):
                star = self.star_sources(source)
                if star:
                    origins = name_origins(self.snapshot, star, name)
                    starred = tuple(path for path in definers if path in origins)
                    if starred:
                        return starred
                macro_files = self.macro_names(source).get(name) if record.language == "rust" else None
                if macro_files:
                    return tuple(path for path in definers if path in macro_files)
                return ()  # neither defined, imported nor star-imported here: a builtin or an undeclared global
            if record.language in PACKAGE_SCOPED_LANGUAGES:
                directory = source.rpartition("/")[0]
                return tuple(path for path in definers if path.rpartition("/")[0] == directory)
            return definers
        if receiver in SELF_RECEIVERS:
            here = defines(self.tables.definers, source, name) or self._local(source, name)
            return (source,) if here else definers
        bound = source_bindings.get(receiver)
        if bound is not None:  # `module.name`, `ImportedClass.name`, `package.module.name` after `import a.b`
            return self._bound_targets(bound, name, definers) or self._renamed_targets(bound, name, context)
        if receiver == COMPLEX_RECEIVER:  # `make().name`: a member of whatever the expression gives
            if record.language not in MODULE_SCOPED_LANGUAGES:
                return definers
            return self._in_family(context.members, self.tables.member_definers, name, family)
        if receiver in context.runtime_globals:
            return ()  # `Object.create(...)`, `JSON.parse`, `dict.fromkeys`
        if "." in receiver or "::" in receiver:  # a chain (`chain_head`)
            if context.runtime_globals and receiver.split(".", 1)[0].split("::", 1)[0] in context.runtime_globals:
                return ()  # `Array.prototype.slice.call(...)`
            members = self._in_family(context.members, self.tables.member_definers, name, family)
            return self._chain_targets(source, source_bindings, record.language, name, receiver, definers, members)
        if self._from_outside(source, receiver):
            return ()  # `log.info()` after `log = logging.getLogger(...)`: a method of an outside object
        if receiver in self._own_types(source) and defines(self.tables.definers, source, name):
            # `InvalidJSONError.__init__(self)` in the file that defines that class and the name: its own or a base's
            # here. requests' exceptions.py linked it to every file defining `__init__`, and each map opened with them.
            return (source,)
        if record.language in MODULE_SCOPED_LANGUAGES:
            # `res.once(...)` on an object: a member, never a module's top-level function (those come through the
            # module's import, bound above). tRPC's private `once` in router.ts drew eight files calling Node's.
            return self._in_family(context.members, self.tables.member_definers, name, family)
        return definers

    def _runtime_globals_of(self, family: str) -> frozenset[str]:
        """The language's own globals (`_RUNTIME_GLOBALS`) that the workspace does not define itself: a member of
        one is never a workspace definition."""
        found = self._runtime_globals.get(family)
        if found is None:
            names = _RUNTIME_GLOBAL_NAMES.get(family, frozenset())
            found = self._runtime_globals[family] = frozenset(n for n in names if n not in self.tables.definers)
        return found

    def _context_of(self, source: str) -> _SourceContext:
        record = self.snapshot.files[source]
        family = self._family_of[source] or language_family(record.language)
        definers = self._definers.get(family)
        if definers is None:
            definers = self._definers[family] = {}
        members = self._member_definers.get(family)
        if members is None:
            members = self._member_definers[family] = {}
        bindings, renames = self.bindings.get(source, {}), self.renames.get(source, {})
        runtime_globals = self._runtime_globals_of(family)
        return _SourceContext(source, record, family, bindings, renames, definers, members, runtime_globals)

    def _local(self, source: str, name: str) -> bool:
        """Whether `source` defines `name` in a function's body only (its set made when first asked)."""
        names = self._local_names.get(source)
        if names is None:
            names = self._local_names[source] = local_names(self.snapshot.files[source])
        return name in names

    def _own_types(self, source: str) -> frozenset[str]:
        """The classes and types `source` defines at its top level (its set made when first asked)."""
        types = self._own_type_names.get(source)
        if types is None:
            types = self._own_type_names[source] = frozenset(
                definition[D_NAME]
                for definition in self.snapshot.files[source].definitions
                if definition[D_CONTAINER] is None and definition[D_KIND] in _TYPE_KINDS and not definition[D_LOCAL]
            )
        return types

    def _from_outside(self, source: str, receiver: str) -> bool:
        """Whether `receiver` is a module-level variable of `source` made by calling into an import from outside
        the workspace (`log = logging.getLogger(__name__)`, `app = Flask(__name__)`)."""
        made_outside = self._made_outside.get(source)
        if made_outside is None:
            made_outside = self._made_outside[source] = self._variables_made_outside(source)
        return receiver in made_outside

    def _variables_made_outside(self, source: str) -> frozenset[str]:
        bindings = self.bindings.get(source)
        if not bindings:
            return frozenset()
        found: set[str] = set()
        seen: set[str] = set()
        for definition in self.snapshot.files[source].definitions:
            name = definition[D_NAME]
            if definition[D_CONTAINER] is not None or name in seen:
                continue
            seen.add(name)  # the first module-level definition of a name decides, as before
            made_by = _MADE_BY_CALL.match(definition[D_SIGNATURE])
            if made_by is not None and bindings.get(made_by.group(1).split(".", 1)[0]) == ():
                found.add(name)
        return frozenset(found)

    def _chain_targets(
        self,
        source: str,
        source_bindings: Mapping[str, tuple[str, ...]],
        language: str,
        name: str,
        receiver: str,
        definers: tuple[str, ...],
        members: tuple[str, ...],
    ) -> tuple[str, ...]:
        """`a.b.name`: a member of `self.field` (of the field's class when the file types it), a function of
        module `a.b`, or a member of an object found through a module; `os.path.name` with `os` from outside the
        workspace means nothing here."""
        separator = "::" if "::" in receiver else "."
        head, _, rest = receiver.partition(separator)
        if head in SELF_RECEIVERS:
            types = {
                type_name
                for _owner, attribute, type_name in self.snapshot.files[source].field_types
                if attribute == rest
            }
            if len(types) == 1:  # every class of the file that has this attribute gives it the same type
                [type_name] = types
                typed = tuple(path for path in members if defines(self.tables.definers, path, type_name))
                if typed:
                    return typed
            return members
        bound_head = source_bindings.get(head)
        if bound_head is not None and not bound_head:
            return ()
        if language == "rust" and head in _STD_CRATES:
            return ()
        if language not in MODULE_SCOPED_LANGUAGES:
            return definers
        module_suffix = "/" + receiver.replace(separator, "/")
        modules = self._module_paths
        in_module = set()
        for path in definers:
            module = modules.get(path)
            if module is None:
                module = modules[path] = "/" + module_path(path)
            if module.endswith(module_suffix):
                in_module.add(path)
        in_module.update(members)
        return tuple(path for path in definers if path in in_module)

    def imported_name(self, source: str, name: str, receiver: str | None) -> str:
        """The name a use in `source` refers to in the files `targets` gives: the imported name for a local alias
        (`b` after `from m import a as b` is `a`), the name a re-export on the way renamed (`renamed_origin`), else
        the name itself."""
        bound = self.bindings.get(source, {}).get(name if receiver is None else receiver, ())
        if receiver is None:
            name = self.renames.get(source, {}).get(name, name)
        renamed = renamed_origin(self.snapshot, bound, name) if bound else None
        if renamed is not None and not self._bound_targets(bound, name, self.tables.definers.get(name, ())):
            return renamed[1]
        return name

    def _bound_targets(self, bound: tuple[str, ...], name: str, definers: tuple[str, ...]) -> tuple[str, ...]:
        if not bound:
            return ()  # imported from outside the workspace
        origins = name_origins(self.snapshot, bound, name)
        return tuple(path for path in definers if path in origins)

    def _renamed_targets(self, bound: tuple[str, ...], name: str, context: _SourceContext) -> tuple[str, ...]:
        """The targets of `name` imported from `bound` through a re-export that renames it (`renamed_origin`)."""
        renamed = renamed_origin(self.snapshot, bound, name) if bound else None
        if renamed is None:
            return ()
        files, exported = renamed
        definers = self._in_family(context.definers, self.tables.definers, exported, context.family)
        return self._bound_targets(files, exported, definers)


def plain_names_scoped(record: FileRecord) -> bool:
    """Whether the file's plain names come only from itself, its imports (star imports too) or builtins: a module of
    a module-scoped language. A TS/JS file without imports may be a script whose names are global."""
    language = record.language
    if language == "rust":
        # A Rust module's plain names are its items, its `use`s' and the prelude's (macros apart: `#[macro_use]`
        # shows a crate's `macro_rules!` without a `use`, `UseResolver.macro_names`). Else `Result`, `Error` or
        # `File` in every file reached ripgrep's own `struct File` (one of its flags).
        return True
    return language in MODULE_SCOPED_LANGUAGES and (language == "python" or bool(record.imports))


def chain_head(receiver: str | None) -> str | None:
    """`a` of a chain receiver `a.b` or `a::b`; None for a plain name, a single name or an expression."""
    if receiver is None or receiver == COMPLEX_RECEIVER:
        return None
    for separator in ("::", "."):
        if separator in receiver:
            return receiver.split(separator, 1)[0]
    return None


def module_path(path: str) -> str:
    """`a/b.py`, `a/b/__init__.py`, `a/b/index.ts` -> `a/b`: the module a file is, as a path."""
    stem = path.rsplit(".", 1)[0] if "." in path.rpartition("/")[2] else path
    for package_file in ("/__init__", "/index", "/mod"):
        if stem.endswith(package_file):
            return stem[: -len(package_file)]
    return stem


def use_resolver(snapshot: Snapshot) -> UseResolver:
    return snapshot.derived("use_resolver", UseResolver)
