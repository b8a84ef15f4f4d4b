"""What a checked file's project lacks, so that its diagnostics mislead: a note beside them (`setupNotes`).

A fresh clone that nobody installed is where agents work. TypeScript there reads a `tsconfig.json` that extends a
package from `node_modules` (`"extends": "@sindresorhus/tsconfig"`); without it the compiler checks with its default
options, and on ky that gave 441 errors such as "An async function or method in ES5 requires the 'Promise'
constructor", none of them the code's. Imports of packages fail the same way when `node_modules` is missing. The
note says so once, instead of leaving an agent to chase them; `python_setup` does the same for Python. Standard
library only, like `query`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lsp_hub.agents.query.project_files import read_small_text, shown
from lsp_hub.agents.query.python_setup import python_setup_notes

_ECMA_SUFFIXES = frozenset((".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"))
_CONFIG_NAMES = ("tsconfig.json", "jsconfig.json")
_DEPENDENCY_KEYS = ("dependencies", "devDependencies", "peerDependencies")


def setup_notes(root: Path, paths: Iterable[Path], diagnostics: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """One sentence per problem of the projects of `paths` (TypeScript and JavaScript files), each once; then what
    the `diagnostics` say a Python environment lacks (`python_setup`)."""
    notes: dict[str, None] = dict.fromkeys(python_setup_notes(root, diagnostics))
    seen: set[Path] = set()
    for path in paths:
        if path.suffix not in _ECMA_SUFFIXES:
            continue
        directory = path.parent
        if directory in seen:
            continue
        seen.add(directory)
        for note in _notes_for(root, directory):
            notes[note] = None
    return list(notes)


def _notes_for(root: Path, directory: Path) -> list[str]:
    notes = []
    config = _nearest(root, directory, _CONFIG_NAMES)
    if config is not None:
        for extended in _extends(config):
            if not _resolves(config.parent, extended):
                relative = extended.startswith((".", "/"))
                missing = "does not exist" if relative else "is not installed"
                notes.append(
                    f'{shown(root, config)} extends "{extended}", which {missing}: TypeScript checks '
                    "with its default options, so expect errors a set-up project would not have"
                    + ("" if relative else "; install the project's dependencies")
                )
    manifest = _nearest(root, directory, ("package.json",))
    if manifest is not None and _declares_dependencies(manifest) and not _in_node_modules(manifest.parent):
        notes.append(
            f"{shown(root, manifest)} declares dependencies, but there is no node_modules: imports of "
            "packages cannot be resolved; install the project's dependencies"
        )
    return notes


def _nearest(root: Path, directory: Path, names: tuple[str, ...]) -> Path | None:
    """The first of `names` in `directory` or an ancestor, up to `root`."""
    current = directory
    while True:
        for name in names:
            candidate = current / name
            if candidate.is_file():
                return candidate
        if current == root or current.parent == current or root not in current.parents:
            return None
        current = current.parent


def _extends(config: Path) -> list[str]:
    """The `extends` of a tsconfig.json (a string or, since TypeScript 5.0, a list); none when unreadable."""
    data = _read_json(config)
    value = data.get("extends") if isinstance(data, dict) else None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _resolves(directory: Path, specifier: str) -> bool:
    """Whether `extends` finds its file: a relative or absolute path as is (or with `.json`), a package in a
    `node_modules` of the directory or an ancestor (Node's resolution)."""
    if specifier.startswith((".", "/")) or Path(specifier).is_absolute():
        target = (directory / specifier).resolve()
        return target.is_file() or target.with_name(target.name + ".json").is_file()
    parts = specifier.split("/")
    return _in_node_modules(directory, "/".join(parts[:2]) if specifier.startswith("@") else parts[0])


def _declares_dependencies(manifest: Path) -> bool:
    data = _read_json(manifest)
    return isinstance(data, dict) and any(isinstance(data.get(key), dict) and data[key] for key in _DEPENDENCY_KEYS)


def _in_node_modules(directory: Path, package: str | None = None) -> bool:
    """Whether a `node_modules` directory of `directory` or an ancestor (Node's resolution) holds `package`, or
    (None) is there at all."""
    for ancestor in (directory, *directory.parents):
        modules = ancestor / "node_modules"
        if (modules / package).exists() if package is not None else modules.is_dir():
            return True
    return False


def _read_json(path: Path) -> object:
    """A JSON file that may have comments and trailing commas (tsconfig.json does); None when it cannot be read."""
    text = read_small_text(path)
    if text is None:
        return None
    try:
        return json.loads(_without_comments(text))
    except ValueError:
        return None


def _without_comments(text: str) -> str:
    """`text` with `//` and `/* */` comments and trailing commas before `}` or `]` removed, strings kept."""
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            end = index + 1
            while end < length and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[index : end + 1])
            index = end + 1
        elif text.startswith("//", index):
            newline = text.find("\n", index)
            index = length if newline < 0 else newline
        elif text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = length if close < 0 else close + 2
        elif char in "}]":
            while out and out[-1].isspace():
                out.pop()
            if out and out[-1] == ",":
                out.pop()
            out.append(char)
            index += 1
        else:
            out.append(char)
            index += 1
    return "".join(out)
