"""The documents of one query: the workspace root, the files read (their text as the servers saw it), the
documents the session has open (kept open and brought up to date, never closed and reopened), and the target a
question is about (`FILE:LINE:COL`, or a symbol's definition through the hub's index)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_hub.agents.query.connection import HubConnection
from lsp_hub.agents.query.errors import QueryError
from lsp_hub.agents.query.positions import Location, character_column, location, path_uri, uri_path, utf16_column
from lsp_hub.platform.confined_files import ConfinedRoot, FileRefused

if TYPE_CHECKING:
    from lsp_hub.agents.query.edits import Change

# The nearest ancestor holding one of these is the workspace root; version-control roots win over project files.
REPOSITORY_MARKERS = (".git", ".hg", ".lsp-hub.toml")
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "package.json", "tsconfig.json", "Cargo.toml",
                   "go.mod", "compile_commands.json", "compile_flags.txt", "pom.xml", "build.gradle")


def find_root(start: Path) -> Path:
    """The nearest ancestor with a repository marker, else with a project marker, else `start` itself."""
    for markers in (REPOSITORY_MARKERS, PROJECT_MARKERS):
        for directory in (start, *start.parents):
            if any((directory / marker).exists() for marker in markers):
                return directory
    return start


@dataclass
class Workspace:
    """The root, the files this query read (their text as the servers saw it), and the hub, once connected."""

    root: Path
    timeout: float
    hub: HubConnection | None = None  # None while the input is checked: bad input costs no hub
    texts: dict[str, str] = field(default_factory=dict)  # real path -> text
    # Writes the changes instead (`lsp-hub mcp` and `--apply`: the verified write, verified_write.py).
    write_through: Callable[[list[Change]], None] | None = None
    # Where a relative file name starts: `--root` when the user gave it, else (None) the current directory.
    anchor: Path | None = None
    _files: ConfinedRoot | None = field(default=None, repr=False)

    @property
    def connection(self) -> HubConnection:
        assert self.hub is not None, "connect before asking the hub"
        return self.hub

    @property
    def files(self) -> ConfinedRoot:
        if self._files is None:
            self._files = ConfinedRoot(self.root)
        return self._files

    def resolve(self, name: str, *, directories: bool = False) -> Path:
        """An existing file (or with `directories`, a directory) inside the root, symbolic links resolved; else one
        clear error. (The shell expands a `~` it means; here it is a character of the name.)"""
        path = Path(name)
        path = ((self.anchor or Path.cwd()) / path) if not path.is_absolute() else path
        if not path.exists():
            raise QueryError(f"lsp-hub query: {name}: no such file")
        real = path.resolve()
        if not real.is_file() and not (directories and real.is_dir()):
            raise QueryError(f"lsp-hub query: {name}: not a file")
        if real != self.root and self.root not in real.parents:
            raise QueryError(f"lsp-hub query: {name} is outside the workspace root {self.root} (see --root)")
        return real

    def text(self, path: Path | str) -> str:
        """The file's text as it is on disk, line ends included (no newline translation: an edit computed on it
        keeps the file's "\r\n"), read inside the root whatever races its path."""
        key = str(path)
        if key not in self.texts:
            try:
                self.texts[key] = self.files.read(key).data.decode("utf-8")
            except FileRefused as refusal:
                raise QueryError(f"lsp-hub query: cannot read {key}: {refusal}") from None
            except UnicodeDecodeError:
                raise QueryError(f"lsp-hub query: cannot read {key}: not UTF-8 text") from None
        return self.texts[key]

    def open(self, path: Path) -> str:
        """Open the file from disk for this query (the hub routes it by its extension). In a session that has it
        open from an earlier query, bring its text up to date instead: closing and reopening would let a server's
        clearing report for the closed document count as its report on the reopened one."""
        uri, text = path_uri(path), self.text(path)
        known = self.connection.documents.get(uri)
        if known is None:
            self.connection.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "", "version": 1, "text": text}})
            self.connection.documents[uri] = (1, text)
        elif known[1] != text:
            self.update(uri, text)
        return uri

    def update(self, uri: str, text: str) -> None:
        version = self.connection.documents[uri][0] + 1
        self.connection.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                          "contentChanges": [{"text": text}]})
        self.connection.documents[uri] = (version, text)

    def lsp_position(self, path: Path, line: int, column: int) -> dict[str, int]:
        """1-based line and character column -> LSP's 0-based line and UTF-16 character."""
        text = self.text(path)
        lines = text.split("\n")
        if not 1 <= line <= len(lines):
            count = len(lines) - 1 if text.endswith("\n") else len(lines)  # the last line ends with its newline
            raise QueryError(f"lsp-hub query: {path} has {count} lines; line {line} does not exist")
        line_text = lines[line - 1].rstrip("\r")
        if not 1 <= column <= len(line_text) + 1:
            raise QueryError(f"lsp-hub query: line {line} of {path} has {len(line_text)} characters; "
                             f"column {column} does not exist")
        return {"line": line - 1, "character": utf16_column(line_text, column - 1)}

    def position_out(self, path: str, position: dict[str, Any]) -> tuple[int, int]:
        """LSP position -> 1-based line and character column (UTF-16 counted in the file's own text)."""
        line, utf16 = int(position.get("line", 0)), int(position.get("character", 0))
        try:
            line_text = self.text(path).split("\n")[line]
        except (QueryError, IndexError):
            return line + 1, utf16 + 1
        return line + 1, character_column(line_text, utf16) + 1

    def line_text(self, path: str, line: int) -> str:
        try:
            return self.text(path).split("\n")[line - 1].strip()
        except (QueryError, IndexError):
            return ""


@dataclass(frozen=True)
class Target:
    path: Path
    position: dict[str, int]  # LSP


def distinct_definitions(definitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One definition per name per file: a function's `@overload` signatures (TypeScript's overload list) and its
    implementation, a property's getter and setter, are one symbol, and the last of them (the implementation) is
    where a question about it goes. Definitions without a name stay apart."""
    distinct: dict[tuple[str, str] | int, dict[str, Any]] = {}
    for position, definition in enumerate(definitions):
        name = definition.get("name")
        distinct[(definition["uri"], name) if isinstance(name, str) else position] = definition
    return list(distinct.values())


def outside_tests(definitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The one definition outside test files when the others are tests' (a stand-in of the same name, which the
    hub marks `inTests`), else all of them."""
    outside = [definition for definition in definitions if not definition.get("inTests")]
    return outside if len(outside) == 1 else definitions


def resolve_target(workspace: Workspace, place: Location | str | None, symbol: str | None) -> Target:
    """FILE:LINE:COL, or --symbol NAME through the hub's index (lspHub.callers names its definitions)."""
    if symbol is not None:
        result = workspace.connection.request("workspace/executeCommand", {
            "command": "lspHub.callers", "arguments": [{"symbol": symbol, "depth": 1, "servers": False}]},
            workspace.timeout)
        definitions = outside_tests(distinct_definitions((result or {}).get("definitions") or []))
        if not definitions:
            raise QueryError(f"lsp-hub query: unknown symbol {symbol!r} (no definition in the index of "
                             f"{workspace.root})")
        if len(definitions) > 1:
            lines = [f"lsp-hub query: {symbol!r} is ambiguous; {len(definitions)} definitions:"]
            for definition in definitions:
                path = uri_path(definition["uri"])
                line, column = workspace.position_out(path, definition["range"]["start"])
                lines.append(f"  {path}:{line}:{column}  {workspace.line_text(path, line)}")
            raise QueryError("\n".join(lines))
        definition = definitions[0]
        return Target(Path(uri_path(definition["uri"])), definition["range"]["start"])
    if place is None:
        raise QueryError("lsp-hub query: give FILE:LINE:COL or --symbol NAME")
    if isinstance(place, str):
        place = location(place)
    file = workspace.resolve(place.file)
    return Target(file, workspace.lsp_position(file, place.line, place.column))
