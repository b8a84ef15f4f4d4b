"""How a project's own configuration maps bare import names to its files, for the import resolver:

- TypeScript/JavaScript: `compilerOptions.paths` and `baseUrl` of the nearest `tsconfig.json`/`jsconfig.json`
  (following a relative `extends`), and the workspace's own packages by their `package.json` `name` (npm, pnpm and
  yarn workspaces alike: any package of the tree is importable by name), entered through `exports["."]`, `types`,
  `module`, `main` or `source`, else `index.*`/`src/index.*`: a TypeScript file through its declarations first, a
  JavaScript file through its code first, as each resolves it.
- Rust: the crates of the tree by their `Cargo.toml` `[package] name` (dashes read as underscores), so that
  `use other_crate::x` in a Cargo workspace reaches the other crate's `src/lib.rs`.

Built from the marker files' texts the walk collects; parsing is lenient (a file that does not parse is ignored).
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

TSCONFIG_NAMES = ("tsconfig.json", "jsconfig.json")
MAX_EXTENDS_DEPTH = 5
_LINE_COMMENT = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def lenient_json(text: str) -> Any:
    """JSON with comments and trailing commas (as tsconfig allows); None when it still does not parse."""
    stripped = _LINE_COMMENT.sub(lambda match: match.group(1) or "", text)
    try:
        return json.loads(_TRAILING_COMMA.sub(r"\1", stripped))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class TsConfig:
    directory: str
    base_url: str | None  # workspace-relative directory, or None
    paths: tuple[tuple[str, tuple[str, ...]], ...]  # pattern -> substitutions, relative to `paths_base`
    paths_base: str


def _compiler_options(marker: str, texts: Mapping[str, str], depth: int = 0) -> dict[str, Any]:
    parsed = lenient_json(texts.get(marker, ""))
    if not isinstance(parsed, dict):
        return {}
    options: dict[str, Any] = {}
    extends = parsed.get("extends")
    if isinstance(extends, str) and extends.startswith(".") and depth < MAX_EXTENDS_DEPTH:
        parent = posixpath.normpath(posixpath.join(posixpath.dirname(marker), extends))
        if not parent.endswith(".json"):
            parent += ".json"
        inherited = _compiler_options(parent, texts, depth + 1)
        directory = posixpath.dirname(parent)
        # The parent's baseUrl and paths stay relative to the parent's directory.
        for key in ("baseUrl", "_pathsBase"):
            if isinstance(inherited.get(key), str):
                inherited[key] = posixpath.normpath(posixpath.join(directory, inherited[key])) \
                    if not inherited[key].startswith("/") else inherited[key]
        options.update(inherited)
    own = parsed.get("compilerOptions")
    if isinstance(own, dict):
        here = posixpath.dirname(marker)
        if isinstance(own.get("baseUrl"), str):
            options["baseUrl"] = posixpath.normpath(posixpath.join(here, own["baseUrl"]))
        if isinstance(own.get("paths"), dict):
            options["paths"] = own["paths"]
            options["_pathsBase"] = options.get("baseUrl", here)
    return options


def _clean(directory: str) -> str:
    return "" if directory in (".", "") else directory


@dataclass
class PackageMaps:
    tsconfigs: dict[str, TsConfig] = field(default_factory=dict)  # directory -> its config
    npm_packages: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # name -> (dir, package.json)
    crates: dict[str, str] = field(default_factory=dict)  # crate name (underscores) -> crate directory

    @classmethod
    def from_markers(cls, markers: Mapping[str, str]) -> PackageMaps:
        maps = cls()
        for marker, text in markers.items():
            directory, name = posixpath.split(marker)
            if name in TSCONFIG_NAMES and (directory not in maps.tsconfigs or name == "tsconfig.json"):
                options = _compiler_options(marker, markers)
                paths = options.get("paths") if isinstance(options.get("paths"), dict) else {}
                entries = tuple((pattern, tuple(target for target in targets if isinstance(target, str)))
                                for pattern, targets in (paths or {}).items() if isinstance(targets, list))
                base = options.get("baseUrl")
                maps.tsconfigs[directory] = TsConfig(directory, _clean(base) if isinstance(base, str) else None,
                                                     entries, _clean(options.get("_pathsBase", directory)))
            elif name == "package.json":
                parsed = lenient_json(text)
                if isinstance(parsed, dict) and isinstance(parsed.get("name"), str):
                    maps.npm_packages.setdefault(parsed["name"], (directory, parsed))
            elif name == "Cargo.toml":
                try:
                    package = tomllib.loads(text).get("package")
                except (tomllib.TOMLDecodeError, ValueError):
                    continue
                if isinstance(package, dict) and isinstance(package.get("name"), str):
                    maps.crates.setdefault(package["name"].replace("-", "_"), directory)
        return maps

    # --- TypeScript / JavaScript --------------------------------------------------------------------------------

    def _nearest_tsconfig(self, importer: str) -> TsConfig | None:
        directory = posixpath.dirname(importer)
        while True:
            found = self.tsconfigs.get(directory)
            if found is not None:
                return found
            if not directory:
                return None
            directory = posixpath.dirname(directory)

    def resolve_ecma(self, importer: str, module: str, probe: Callable[[str], str | None]) -> str | None:
        """The workspace file a bare specifier means by tsconfig paths/baseUrl or a workspace package's name."""
        config = self._nearest_tsconfig(importer)
        if config is not None:
            for pattern, substitutions in config.paths:
                star = pattern.find("*")
                if star < 0:
                    matched = module == pattern
                    wildcard = ""
                else:
                    prefix, suffix = pattern[:star], pattern[star + 1:]
                    matched = module.startswith(prefix) and module.endswith(suffix) and len(module) >= len(
                        prefix) + len(suffix)
                    wildcard = module[len(prefix):len(module) - len(suffix)] if matched else ""
                if matched:
                    for substitution in substitutions:
                        target = posixpath.join(config.paths_base, substitution.replace("*", wildcard))
                        found = probe(target)
                        if found is not None:
                            return found
            if config.base_url is not None:
                found = probe(posixpath.join(config.base_url, module))
                if found is not None:
                    return found
        return self._npm_package_file(module, probe, runtime=importer.endswith(_JAVASCRIPT_SUFFIXES))

    def _npm_package_file(self, module: str, probe: Callable[[str], str | None], runtime: bool) -> str | None:
        parts = module.split("/")
        name_length = 2 if module.startswith("@") else 1
        package = self.npm_packages.get("/".join(parts[:name_length]))
        if package is None:
            return None
        directory, manifest = package
        rest = "/".join(parts[name_length:])
        if rest:
            return probe(posixpath.join(directory, rest)) or probe(posixpath.join(directory, "src", rest))
        for entry in _entry_points(manifest, runtime):
            found = probe(posixpath.join(directory, entry))
            if found is not None:
                return found
            if entry.startswith(("dist/", "lib/", "build/", "./dist/", "./lib/", "./build/")):
                # A built entry point: its source usually sits under src/ with the same name.
                source = re.sub(r"^(\./)?(dist|lib|build)/", "src/", entry)
                found = probe(posixpath.join(directory, re.sub(r"\.d\.ts$|\.js$|\.mjs$|\.cjs$", "", source)))
                if found is not None:
                    return found
        return probe(posixpath.join(directory, "index")) or probe(posixpath.join(directory, "src", "index"))

    # --- Rust ---------------------------------------------------------------------------------------------------

    def crate_source(self, crate: str) -> str | None:
        """The `src` directory of a crate of the tree, by its name as `use` writes it."""
        directory = self.crates.get(crate)
        if directory is None:
            return None
        return posixpath.join(directory, "src") if directory else "src"


# The entry points of a package, in the order its importer's language takes them: TypeScript reads declarations
# (`types`), node runs code (`import`/`default`, `main`); declarations are a JavaScript importer's last resort.
_TYPED_EXPORTS = ("types", "import", "module", "default", "require", "node")
_TYPED_FIELDS = ("source", "types", "typings", "module", "main")
_RUNTIME_EXPORTS = ("import", "module", "default", "require", "node", "types")
_RUNTIME_FIELDS = ("module", "main", "source", "types", "typings")
_JAVASCRIPT_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx")


def _entry_points(manifest: Mapping[str, Any], runtime: bool = False) -> list[str]:
    entries: list[str] = []
    exports = manifest.get("exports")
    if isinstance(exports, dict):
        exports = exports.get(".", exports if not any(key.startswith(".") for key in exports) else None)
    if isinstance(exports, str):
        entries.append(exports)
    elif isinstance(exports, dict):
        for key in _RUNTIME_EXPORTS if runtime else _TYPED_EXPORTS:
            value = exports.get(key)
            if isinstance(value, str):
                entries.append(value)
    for key in _RUNTIME_FIELDS if runtime else _TYPED_FIELDS:
        value = manifest.get(key)
        if isinstance(value, str):
            entries.append(value)
    return [posixpath.normpath(entry) for entry in entries]
