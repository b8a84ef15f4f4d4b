"""Resolve imports to files of the workspace.

Per language (anything that does not resolve is external: the standard library, a dependency, a system header):
- Python: relative imports (`from ..a import b`) from the importing file's package; absolute imports from every
  directory that can be an import root (the workspace root, `src/`, any directory holding a top-level package),
  preferring the candidate nearest the importer. Packages resolve to `__init__.py`; `from pkg import mod` binds
  `mod` to the submodule file when one exists.
- TypeScript/JavaScript: relative specifiers with extension probing (.ts .tsx .d.ts .js .jsx .mjs .cjs .mts .cts),
  `/index.*` probing, and `./x.js` written for a `./x.ts` source (TypeScript's ESM convention); bare specifiers by
  tsconfig `paths`/`baseUrl` and the workspace's own packages by name (`package_maps.py`).
- Go: import paths under a module path from a `go.mod` of the workspace, to the package directory's files.
- Rust: `mod x;` to `x.rs` or `x/mod.rs` beside the declaring module; `crate::`, `self::`, `super::` paths to the
  longest module prefix that is a file, under the crate's `src/` (found from `Cargo.toml`); `other_crate::` paths
  to another crate of the tree by its `Cargo.toml` name (a Cargo workspace's members, path dependencies).
- C/C++: quoted includes relative to the including file, then any workspace file whose path ends with the include
  (nearest to the includer first; this covers `include/` directories without knowing the build flags).
- Java: `a.b.C` to a file ending in `a/b/C.java` (any source root); `a.b.*` to the package directory.
- C#: a `using` namespace to the files that declare that namespace.
- Ruby: `require_relative` from the requiring file; `require 'x'` to `x.rb` at the root or under `lib/`.
"""

from __future__ import annotations

import copy
import posixpath
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lsp_hub.index.package_maps import PackageMaps
from lsp_hub.index.records import D_KIND, D_NAME, I_LEVEL, I_MODULE, I_NAMES, FileRecord

_ECMA_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_ECMA_LANGUAGES = frozenset(("typescript", "tsx", "javascript"))
_GO_MODULE_LINE = re.compile(r"^\s*module\s+(\S+)", re.MULTILINE)
_RUST_ROOT_FILES = ("lib.rs", "main.rs", "mod.rs")


@dataclass(frozen=True, slots=True)
class ResolvedImport:
    module: str  # as written (normalised by the extractor)
    files: tuple[str, ...]  # the workspace files of the imported module; empty when external or unknown
    names: tuple[tuple[str, tuple[str, ...]], ...]  # (imported name, files it is expected to come from)
    aliases: tuple[str, ...] = ()  # local names bound to the module itself (`import x`, Go package name)


def _python_parts(path: str) -> list[str]:
    """`a/b/c.py` -> [a, b, c], `a/b/__init__.py` -> [a, b]: the names of the module a Python file is."""
    parts = path.rsplit(".", 1)[0].split("/")
    return parts[:-1] if parts[-1] == "__init__" else parts


def _common_prefix_length(a: str, b: str) -> int:
    length = 0
    for part_a, part_b in zip(a.split("/"), b.split("/"), strict=False):
        if part_a != part_b:
            break
        length += 1
    return length


def _nearest(importer: str, candidates: Iterable[str]) -> str | None:
    """The candidate sharing the most leading directories with the importer (then the shortest, then by name)."""
    best: tuple[int, int, str] | None = None
    for candidate in candidates:
        key = (-_common_prefix_length(importer, candidate), candidate.count("/"), candidate)
        if best is None or key < best:
            best = key
    return None if best is None else best[2]


class ImportResolver:
    """Resolution against one set of workspace files (a snapshot); cheap to query, built once per snapshot."""

    def __init__(
        self, files: Mapping[str, FileRecord], markers: Mapping[str, str] | None = None, paths: Iterable[str] = ()
    ) -> None:
        """`paths`: more paths than `files` holds records of (a build's walk, before its records come: only the
        records' C# namespaces are then missing)."""
        self.files = files
        self.paths = frozenset(files).union(paths)
        markers = markers or {}
        self._directories: dict[str, list[str]] = defaultdict(list)  # directory -> files directly in it
        self._by_suffix: dict[str, list[str]] = defaultdict(list)  # file name -> paths (for suffix matching)
        # A module's last name -> the Python files that are a module of that name under some import root.
        self._python_modules: dict[str, list[str]] = defaultdict(list)
        # A module name -> (the files that are it under some root, those under a root that is no package): the same
        # for every importer, and asked for by most of them (`import os`, `from typing import ...`).
        self._module_files: dict[str, tuple[list[str], list[str]]] = {}
        for path in self.paths:
            directory, name = posixpath.split(path)
            self._directories[directory].append(path)
            self._by_suffix[name].append(path)
        for path in self.paths:
            if path.endswith((".py", ".pyi")):
                self._add_python_module(path)
        self.go_modules: list[tuple[str, str]] = []  # (module path, directory), longest module path first
        self.cargo_directories: list[str] = []
        for marker, text in markers.items():
            directory, name = posixpath.split(marker)
            if name == "go.mod":
                match = _GO_MODULE_LINE.search(text)
                if match:
                    self.go_modules.append((match.group(1).strip('"'), directory))
            elif name == "Cargo.toml":
                self.cargo_directories.append(directory)
        self.go_modules.sort(key=lambda entry: -len(entry[0]))
        self.package_maps = PackageMaps.from_markers(markers)
        self._csharp_namespaces: dict[str, list[str]] = defaultdict(list)
        for path, record in files.items():
            if record.language == "csharp":
                for definition in record.definitions:
                    if definition[D_KIND] == "module":
                        self._csharp_namespaces[definition[D_NAME]].append(path)

    def with_files(self, files: Mapping[str, FileRecord]) -> ImportResolver:
        """This resolver for another snapshot with the same paths, markers and C# namespaces (only the files' other
        contents differ), without indexing the paths again."""
        resolver = copy.copy(self)
        resolver.files = files
        return resolver

    # --- Python -------------------------------------------------------------------------------------------------

    def _add_python_module(self, path: str) -> None:
        parts = _python_parts(path)
        if parts:
            # Every suffix of the path is a module name for some import root (`_python_modules_named`): indexed by
            # the last name only, since a table of every suffix held several strings and lists per file.
            self._python_modules[parts[-1].rpartition(".")[2]].append(path)

    def _python_modules_named(self, module: str) -> list[str]:
        """The files that are the module `module` under some import root (only roots that are not packages
        themselves count: checked by the caller, when it matters), in the order of `self.paths`."""
        found = []
        for path in self._python_modules.get(module.rpartition(".")[2], ()):
            parts = _python_parts(path)
            if any(".".join(parts[start:]) == module for start in range(len(parts))):
                found.append(path)
        return found

    @staticmethod
    def _python_root_of(path: str, module: str) -> str:
        """The import root directory under which `path` is the module `module`."""
        parts = path.rsplit(".", 1)[0].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        return "/".join(parts[: max(0, len(parts) - module.count(".") - 1)])

    def _python_module_files(self, importer: str, module: str) -> str | None:
        found = self._module_files.get(module)
        if found is None:
            named = self._python_modules_named(module)
            rooted = [path for path in named if not self._is_python_package(self._python_root_of(path, module))]
            found = self._module_files[module] = (named, rooted)
        candidates, valid = found
        if not candidates:
            return None
        if not valid:
            if module.partition(".")[0] in sys.stdlib_module_names:
                # A module of a package never imports its sibling by a bare name (Python 3 has no implicit relative
                # import): rich/progress.py's `from abc import ABC` is the standard library's, not rich/abc.py.
                return None
            # A script's own directory is on sys.path: `import helper` next to helper.py inside a package.
            importer_directory = posixpath.dirname(importer)
            valid = [path for path in candidates if self._python_root_of(path, module) == importer_directory]
        return _nearest(importer, valid)

    def _is_python_package(self, directory: str) -> bool:
        if not directory:
            return False
        return f"{directory}/__init__.py" in self.paths or f"{directory}/__init__.pyi" in self.paths

    def _python_path(self, base: str) -> str | None:
        for candidate in (f"{base}.py", f"{base}.pyi", f"{base}/__init__.py", f"{base}/__init__.pyi"):
            if candidate.lstrip("/") in self.paths:
                return candidate.lstrip("/")
        return None

    def _resolve_python(self, importer: str, module: str, names: tuple[str, ...], level: int) -> ResolvedImport:
        if level > 0:
            base = posixpath.dirname(importer)
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            module_base = posixpath.join(base, *module.split(".")) if module else base
            target = self._python_path(module_base) if module else self._python_path(base)
            name_files = []
            for name in names:
                submodule = self._python_path(posixpath.join(module_base, name)) if name != "*" else None
                if submodule is not None:
                    name_files.append((name, (submodule,)))
                elif target is not None:
                    name_files.append((name, (target,)))
            files = (target,) if target is not None else tuple(f for _, fs in name_files for f in fs)
            return ResolvedImport(module, files, tuple(name_files))
        target = self._python_module_files(importer, module)
        name_files = []
        for name in names:
            submodule = self._python_module_files(importer, f"{module}.{name}") if name != "*" else None
            if submodule is not None:
                name_files.append((name, (submodule,)))
            elif target is not None:
                name_files.append((name, (target,)))
        files = (target,) if target is not None else ()
        # `import a.b` makes `a.b.f()` mean a/b.py's f: the receiver of that call is the chain "a.b".
        aliases = (module,) if not names else ()
        return ResolvedImport(module, files, tuple(name_files), aliases)

    # --- TypeScript / JavaScript --------------------------------------------------------------------------------

    def _probe_ecma(self, base: str) -> str | None:
        base = posixpath.normpath(base)
        if base.startswith("../") or base == "..":
            return None
        if base in self.paths:
            return base
        stem, extension = posixpath.splitext(base)
        if extension in (".js", ".jsx", ".mjs", ".cjs"):
            # TypeScript sources import each other by the emitted name: './x.js' means './x.ts'.
            for typed in (".ts", ".tsx", ".mts", ".cts", ".d.ts"):
                if stem + typed in self.paths:
                    return stem + typed
        for suffix in _ECMA_EXTENSIONS:
            if base + suffix in self.paths:
                return base + suffix
        for suffix in _ECMA_EXTENSIONS:
            candidate = f"{base}/index{suffix}"
            if candidate in self.paths:
                return candidate
        return None

    def _resolve_ecma(self, importer: str, module: str, names: tuple[str, ...]) -> ResolvedImport:
        if not module.startswith((".", "/")):
            target = self.package_maps.resolve_ecma(importer, module, self._probe_ecma)
        else:
            directory = posixpath.dirname(importer)
            base = module.lstrip("/") if module.startswith("/") else posixpath.join(directory, module)
            target = self._probe_ecma(base)
        if target is None:
            # A package's names are bound here all the same, to nothing of ours: ava's `test` in a test file that
            # also has an object with a `test()` method is ava's (an ES module's names cannot be shadowed in its
            # scope; a Python import can, by a fallback `def` after `except ImportError:`, and keeps its lookup).
            return ResolvedImport(module, (), tuple((name, ()) for name in names if name != "*"))
        return ResolvedImport(module, (target,), tuple((name, (target,)) for name in names if name != "*"))

    # --- Go -----------------------------------------------------------------------------------------------------

    def _resolve_go(self, module: str) -> ResolvedImport:
        alias = module.rsplit("/", 1)[-1]
        for module_path, directory in self.go_modules:
            if module == module_path or module.startswith(module_path + "/"):
                relative = module[len(module_path) :].lstrip("/")
                package_directory = posixpath.join(directory, relative) if relative else directory
                package_directory = package_directory.strip("/")
                files = tuple(
                    sorted(
                        path
                        for path in self._directories.get(package_directory, ())
                        if path.endswith(".go") and not path.endswith("_test.go")
                    )
                )
                return ResolvedImport(module, files, (), (alias,))
        return ResolvedImport(module, (), (), (alias,))  # an external package: its alias is not ours either

    # --- Rust ---------------------------------------------------------------------------------------------------

    def _rust_crate_source(self, importer: str) -> str:
        directory = posixpath.dirname(importer)
        best = ""
        for cargo_directory in self.cargo_directories:
            if not cargo_directory or directory == cargo_directory or directory.startswith(cargo_directory + "/"):
                source = posixpath.join(cargo_directory, "src") if cargo_directory else "src"
                if len(source) > len(best) and (directory == source or directory.startswith(source + "/")):
                    best = source
        if best:
            return best
        # No Cargo.toml: the nearest ancestor directory holding lib.rs or main.rs is the crate root.
        while True:
            if f"{directory}/lib.rs".lstrip("/") in self.paths or f"{directory}/main.rs".lstrip("/") in self.paths:
                return directory
            if not directory:
                return ""
            directory = posixpath.dirname(directory)

    @staticmethod
    def _rust_module_directory(path: str) -> str:
        """Directory holding the child modules of the module defined by `path`."""
        directory, name = posixpath.split(path)
        if name in _RUST_ROOT_FILES:
            return directory
        return posixpath.join(directory, name[: -len(".rs")])

    def _rust_module_file(self, directory: str, name: str) -> str | None:
        for candidate in (posixpath.join(directory, f"{name}.rs"), posixpath.join(directory, name, "mod.rs")):
            if candidate in self.paths:
                return candidate
        return None

    def _resolve_rust(self, importer: str, module: str, names: tuple[str, ...]) -> ResolvedImport:
        segments = [segment for segment in module.split("::") if segment]
        if not segments:
            return ResolvedImport(module, (), ())
        head = segments[0]
        if head == "crate":
            source = self._rust_crate_source(importer)
            directory, rest = source, segments[1:]
            current: str | None = None
            for root_file in ("lib.rs", "main.rs"):
                if posixpath.join(source, root_file).lstrip("/") in self.paths:
                    current = posixpath.join(source, root_file).lstrip("/")
                    break
        elif head in ("self", "super"):
            directory = self._rust_module_directory(importer)
            rest = segments[1:]
            current = importer
            if head == "super":
                directory = posixpath.dirname(directory)
                parent_file = self._rust_module_file(posixpath.dirname(directory), posixpath.basename(directory))
                current = parent_file
        elif self._rust_module_file(self._rust_module_directory(importer), head) is not None:
            # A path starting at a child module of the current one (`framing::frame` after `mod framing;`).
            directory = self._rust_module_directory(importer)
            rest = segments
            current = importer
        else:
            # Another crate of the tree by name (`use other_crate::x` in a Cargo workspace).
            crate_source = self.package_maps.crate_source(head)
            if crate_source is None:
                # std's or another package's: the names it binds are not the workspace's (`use std::fmt;`
                # then `fmt::Debug`, `use std::fs::File`), as an ES module's from a package are not
                alias = segments[-1] if len(segments) > 1 else head
                return ResolvedImport(
                    module,
                    (),
                    tuple((name, ()) for name in names if name != "*"),
                    (alias,) if alias not in names else (),
                )
            directory, rest = crate_source, segments[1:]
            current = next(
                (
                    path
                    for path in (
                        posixpath.join(crate_source, "lib.rs").lstrip("/"),
                        posixpath.join(crate_source, "main.rs").lstrip("/"),
                    )
                    if path in self.paths
                ),
                None,
            )
        for segment in rest:
            found = self._rust_module_file(directory, segment)
            if found is None:
                break  # the remaining segments name items inside `current`
            current = found
            directory = self._rust_module_directory(found)
        if current is None:
            return ResolvedImport(module, (), ())
        alias = segments[-1] if len(segments) > 1 or head not in ("crate", "self", "super") else ""
        return ResolvedImport(
            module,
            (current,),
            tuple((name, (current,)) for name in names if name != "*"),
            (alias,) if alias and alias not in names else (),
        )

    # --- C / C++ ------------------------------------------------------------------------------------------------

    def _resolve_include(self, importer: str, module: str) -> ResolvedImport:
        quoted = module.startswith('"')
        target = module.strip('"<>').strip()
        if not target:
            return ResolvedImport(module, (), ())
        if quoted:
            local = posixpath.normpath(posixpath.join(posixpath.dirname(importer), target))
            if local in self.paths:
                return ResolvedImport(module, (local,), ())
        name = posixpath.basename(target)
        candidates = [path for path in self._by_suffix.get(name, ()) if path == target or path.endswith("/" + target)]
        found = _nearest(importer, candidates)
        return ResolvedImport(module, (found,) if found else (), ())

    # --- Java / C# / Ruby ---------------------------------------------------------------------------------------

    def _resolve_java(self, importer: str, module: str, names: tuple[str, ...]) -> ResolvedImport:
        parts = module.split(".")
        if names == ("*",):
            suffix = "/".join(parts)
            files = tuple(
                sorted(
                    path
                    for directory, paths in self._directories.items()
                    if directory == suffix or directory.endswith("/" + suffix)
                    for path in paths
                    if path.endswith(".java")
                )
            )
            return ResolvedImport(module, files, ())
        # `import a.b.C` or `import static a.b.C.member`: the longest prefix that is a file.
        for end in range(len(parts), 0, -1):
            relative = "/".join(parts[:end]) + ".java"
            candidates = [
                path
                for path in self._by_suffix.get(posixpath.basename(relative), ())
                if path == relative or path.endswith("/" + relative)
            ]
            found = _nearest(importer, candidates)
            if found is not None:
                return ResolvedImport(module, (found,), tuple((name, (found,)) for name in names if name != "*"))
        return ResolvedImport(module, (), ())

    def _resolve_csharp(self, module: str) -> ResolvedImport:
        name = module.split("=", 1)[-1].strip()
        files = tuple(sorted(self._csharp_namespaces.get(name, ())))
        return ResolvedImport(module, files, ())

    def _resolve_ruby(self, importer: str, module: str) -> ResolvedImport:
        target = module if module.endswith(".rb") else module + ".rb"
        if module.startswith((".", "/")):
            candidate = posixpath.normpath(posixpath.join(posixpath.dirname(importer), target))
            return ResolvedImport(module, (candidate,) if candidate in self.paths else (), ())
        for candidate in (target, f"lib/{target}"):
            if candidate in self.paths:
                return ResolvedImport(module, (candidate,), ())
        candidates = [
            path for path in self._by_suffix.get(posixpath.basename(target), ()) if path.endswith("/lib/" + target)
        ]
        found = _nearest(importer, candidates)
        return ResolvedImport(module, (found,) if found else (), ())

    # --- entry points -------------------------------------------------------------------------------------------

    def resolve(
        self, importer: str, language: str, module: str, names: tuple[str, ...] = (), level: int = 0
    ) -> ResolvedImport:
        """Where one import of `importer` leads inside the workspace."""
        names = tuple(names)
        if language == "python":
            return self._resolve_python(importer, module, names, level)
        if language in _ECMA_LANGUAGES:
            return self._resolve_ecma(importer, module, names)
        if language == "go":
            return self._resolve_go(module)
        if language == "rust":
            return self._resolve_rust(importer, module, names)
        if language in ("c", "cpp"):
            return self._resolve_include(importer, module)
        if language == "java":
            return self._resolve_java(importer, module, names)
        if language == "csharp":
            return self._resolve_csharp(module)
        if language == "ruby":
            return self._resolve_ruby(importer, module)
        return ResolvedImport(module, (), ())

    def resolve_file(self, path: str) -> list[ResolvedImport]:
        """All imports of one indexed file, resolved."""
        record = self.files.get(path)
        return [] if record is None else self.resolve_record(record)

    def resolve_record(self, record: FileRecord) -> list[ResolvedImport]:
        """All imports of a record of one of the paths, resolved."""
        path, language = record.path, record.language
        return [
            self.resolve(path, language, entry[I_MODULE], tuple(entry[I_NAMES]), entry[I_LEVEL])
            for entry in record.imports
        ]
