"""`lsp-hub query`: one question to the hub from a shell, for agents and scripts.

    lsp-hub query ACTION [FILE:LINE:COL | --symbol NAME] [args] [--json] [--no-daemon | --socket PATH]
                  [--root DIR] [--timeout S] [--limit N]

This module is the client only, and imports nothing but the standard library (no pygls, lsprotocol, networkx,
tree-sitter): it frames LSP itself (Content-Length + JSON) over pipes or a unix socket, so it starts fast. The hub
it talks to is, in order: `--socket PATH` (or $LSP_HUB_SOCKET), else `--no-daemon` (a hub of its own, a child
process over pipes, for this one query), else `connect_default()`, which the daemon's `ensure_daemon()` replaces.

Positions are 1-based lines and 1-based columns in characters here, 0-based UTF-16 in LSP; both ways are converted
with the file's text. Exit codes (EXIT_CODES, shown by `query --help`): 0 an answer, 1 an empty answer, 2 bad input
or an ambiguous symbol, 3 the hub or a server failed; `diagnostics` follows the linters: 0 checked and clean, 1
issues, 2 not checked by any server.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote, unquote, urlparse

from lsp_hub import write_lock
from lsp_hub.confined_files import ConfinedRoot, FileRefused

EXIT_ANSWER, EXIT_EMPTY, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3
DEFAULT_TIMEOUT_SECONDS = 30.0
# How the hub's log message starts when it did not answer a request here (session.NOT_MAPPED_NOTICE; this module
# imports none of the hub's).
NOT_ANSWERED_NOTICE = "lsp-hub: not answered here: "
DEFAULT_LIMIT = 50
# The nearest ancestor holding one of these is the workspace root; version-control roots win over project files.
REPOSITORY_MARKERS = (".git", ".hg", ".lsp-hub.toml")
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "package.json", "tsconfig.json", "Cargo.toml",
                   "go.mod", "compile_commands.json", "compile_flags.txt", "pom.xml", "build.gradle")
LOCATION_ACTIONS = {"definition": "textDocument/definition", "declaration": "textDocument/declaration",
                    "type-definition": "textDocument/typeDefinition",
                    "implementation": "textDocument/implementation", "references": "textDocument/references"}
TARGET_ACTIONS = (*LOCATION_ACTIONS, "hover", "rename", "code-actions", "incoming-calls", "outgoing-calls")
SERVER_CALLERS_SECONDS = 5.0  # at least this long for the servers that confirm `callers`
PROJECT_WIDE_ACTIONS = ("references", "implementation", "rename", "incoming-calls")
ACTIONS = (*TARGET_ACTIONS, "symbols", "diagnostics", "format", "repomap", "relevant", "callers", "syntax",
           "status", "languages", "apply", "undo")
SYMBOL_KINDS = {1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method", 7: "property",
                8: "field", 9: "constructor", 10: "enum", 11: "interface", 12: "function", 13: "variable",
                14: "constant", 15: "string", 16: "number", 17: "boolean", 18: "array", 19: "object", 20: "key",
                21: "null", 22: "enum-member", 23: "struct", 24: "event", 25: "operator", 26: "type-parameter"}
SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}
CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True},
    "workspace": {"applyEdit": True, "workspaceFolders": True, "configuration": True,
                  "workspaceEdit": {"documentChanges": True}},
    "textDocument": {
        "synchronization": {"didSave": True},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
        "publishDiagnostics": {"versionSupport": True},
        "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "quickfix", "refactor",
                                                                                     "source"]}},
                       "resolveSupport": {"properties": ["edit"]}},
        "rename": {"prepareSupport": False},
        "callHierarchy": {},
    },
}


class QueryError(Exception):
    """Ends the query with one line on stderr and an exit code."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class HubFailed(QueryError):
    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_FAILED)


class HubTimeout(HubFailed):
    """No answer within the timeout (the request was cancelled)."""


class HubLost(HubFailed):
    """The connection to the hub ended (a daemon stopped, a child hub died)."""


class _UsageParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would print usage and exit
        raise QueryError(f"{self.prog}: {message}")


# ============================================================================================= the connection
class HubConnection:
    """LSP to the hub over a pair of file descriptors (a pipe pair or one socket): synchronous, stdlib only.

    Requests the hub sends to the client are answered here (configuration: nulls; applyEdit: collected for
    `code-actions --apply`); notifications are dropped, except a warning or error the hub shows about the
    configuration (a project file it ignored...), written once to `notices` when that is set."""

    def __init__(self, read_fd: int, write_fd: int, *, process: subprocess.Popen[bytes] | None = None,
                 stderr_file: Any = None, owned: bool = True, description: str = "the hub") -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self.process = process
        self.stderr_file = stderr_file
        self.owned = owned  # False: shared by several queries (tests); never shut down by one
        self.description = description
        self.initialized_root: Path | None = None
        self.applied_edits: list[dict[str, Any]] = []  # workspace/applyEdit from servers, applied by the query
        # Only while this session runs a command of its own: an edit the hub hands a long-lived session (an MCP
        # server's) for another client's command is refused, not claimed as applied.
        self.accepting_edits = False
        self.documents: dict[str, tuple[int, str]] = {}  # what this session has open: uri -> (version, text)
        self.notices: TextIO | None = None
        self._noticed: set[str] = set()
        # Why the hub answered a request of this session with nothing, or with items left out: a line of this
        # session's text that another client's unsaved text does not share (session.py's NOT_MAPPED_NOTICE).
        self.not_answered: list[str] = []
        self._buffer = bytearray()
        self._next_id = 0

    # -- framing
    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        data = b"Content-Length: %d\r\n\r\n" % len(body) + body
        try:
            while data:
                written = os.write(self.write_fd, data)
                data = data[written:]
        except OSError as error:
            raise HubLost(f"lsp-hub query: lost the connection to {self.description}: "
                            f"{error.strerror}{self._tail()}") from None

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while True:
            header_end = self._buffer.find(b"\r\n\r\n")
            if header_end >= 0:
                length = None
                for line in bytes(self._buffer[:header_end]).split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length is None:
                    raise HubFailed(f"lsp-hub query: {self.description} sent a message without Content-Length")
                start = header_end + 4
                if len(self._buffer) >= start + length:
                    body = bytes(self._buffer[start:start + length])
                    del self._buffer[:start + length]
                    message = json.loads(body)
                    return message if isinstance(message, dict) else {}
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            readable, _, _ = select.select([self.read_fd], [], [], remaining)
            if not readable:
                raise TimeoutError
            try:
                chunk = os.read(self.read_fd, 1 << 20)
            except OSError as error:
                chunk, reason = b"", error.strerror
            else:
                reason = "it closed the connection"
            if not chunk:
                raise HubLost(f"lsp-hub query: lost {self.description}: {reason}{self._tail()}")
            self._buffer += chunk

    def _tail(self) -> str:
        """The last line the child hub wrote to stderr, to say why it failed."""
        if self.stderr_file is None:
            return ""
        self.stderr_file.seek(0)
        lines = [line for line in self.stderr_file.read().decode("utf-8", "replace").splitlines() if line.strip()]
        return f" ({lines[-1].strip()})" if lines else ""

    # -- JSON-RPC
    def notify(self, method: str, params: Any = None) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any = None, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> Any:
        self._next_id += 1
        request_id = self._next_id
        self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self._read_message(deadline)
            except TimeoutError:
                self.notify("$/cancelRequest", {"id": request_id})
                raise HubTimeout(f"lsp-hub query: no answer to {method} within {timeout:g} s "
                                 "(raise it with --timeout)") from None
            if "method" in message:
                self._on_hub_message(message)
            elif message.get("id") == request_id:
                error = message.get("error")
                if error is not None:
                    text = f"lsp-hub query: {method}: {error.get('message', error)}"
                    raise QueryError(text) if error.get("code") == -32602 else HubFailed(text)
                return message.get("result")

    def _on_hub_message(self, message: dict[str, Any]) -> None:
        if "id" not in message:
            self._notice(message)  # other notifications (diagnostics, progress) are asked for, not listened to
            return
        method, params = message["method"], message.get("params") or {}
        result: Any = None
        if method == "workspace/configuration":
            result = [None] * len(params.get("items", []))
        elif method == "workspace/applyEdit" and self.accepting_edits:
            self.applied_edits.append(params.get("edit") or {})
            result = {"applied": True}
        elif method == "workspace/applyEdit":
            result = {"applied": False, "failureReason": "this client applies only the edits of its own commands"}
        self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _notice(self, message: dict[str, Any]) -> None:
        """A window/showMessage warning or error about the configuration: one line, once. A log message saying a
        request was not answered here is kept for the answer (`not_answered`)."""
        params = message.get("params")
        if message.get("method") == "window/logMessage" and isinstance(params, dict) and \
                str(params.get("message", "")).startswith(NOT_ANSWERED_NOTICE):
            self.not_answered.append(str(params["message"])[len(NOT_ANSWERED_NOTICE):])
            return
        if self.notices is None or message.get("method") != "window/showMessage" or not isinstance(params, dict):
            return
        text = " ".join(str(params.get("message", "")).split())
        if params.get("type") not in (1, 2) or "configuration" not in text or text in self._noticed:
            return
        self._noticed.add(text)
        self.notices.write(text + "\n")
        self.notices.flush()

    def initialize(self, root: Path, timeout: float) -> None:
        if self.initialized_root is not None:
            return
        self.request("initialize", {
            "processId": os.getpid(), "rootUri": path_uri(root), "capabilities": CLIENT_CAPABILITIES,
            "workspaceFolders": [{"uri": path_uri(root), "name": root.name}],
            "clientInfo": {"name": "lsp-hub query"}}, timeout)
        self.notify("initialized", {})
        self.initialized_root = root

    def close(self) -> None:
        """shutdown and exit (only a connection of our own); a child hub stops its servers and ends."""
        if not self.owned:
            return
        try:
            if self.initialized_root is not None:
                self.request("shutdown", None, 5.0)
                self.notify("exit", None)
        except QueryError:
            pass
        if self.process is not None:
            try:
                self.process.wait(5.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.stderr_file is not None:
            self.stderr_file.close()
        if self.process is not None:  # its pipes' file objects own the descriptors: close them, not the numbers
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
        else:
            for fd in {self.read_fd, self.write_fd}:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.owned = False  # closed once: a second close must not close descriptor numbers reused since


def spawn_hub(root: Path, env: dict[str, str] | None = None, owned: bool = True) -> HubConnection:
    """A hub of our own for this query: `python -m lsp_hub` (same interpreter) over pipes, its stderr kept in a
    temporary file to say why it failed. It stops its servers when we send exit or go away."""
    package_parent = str(Path(__file__).resolve().parent.parent)
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, child_env.get("PYTHONPATH")]))
    stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the connection, closed with it
    try:
        process = subprocess.Popen([sys.executable, "-m", "lsp_hub"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=stderr_file, cwd=root, env=child_env)
    except OSError as error:
        raise HubFailed(f"lsp-hub query: cannot start the hub: {error}") from None
    assert process.stdin is not None and process.stdout is not None
    return HubConnection(process.stdout.fileno(), process.stdin.fileno(), process=process, stderr_file=stderr_file,
                         owned=owned, description="its hub")


def connect_socket(path: str) -> HubConnection:
    """LSP over a unix socket a running hub listens on."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError as error:
        connection.close()
        raise HubFailed(f"lsp-hub query: cannot connect to {path}: {error.strerror or error}") from None
    fd = connection.detach()
    return HubConnection(fd, fd, description=f"the hub at {path}")


def connect_default(root: Path, who: str = "lsp-hub query") -> HubConnection:
    """The hub when neither --socket nor --no-daemon is given: the user's daemon, started in the background when
    none answers (said on stderr, by `who`)."""
    from lsp_hub.daemon_client import DaemonError, daemon_run_args, ensure_daemon, prepare_runtime_directory

    try:
        paths = prepare_runtime_directory()
        connection, started = ensure_daemon(paths, daemon_run_args(None, None, 0))
    except DaemonError as error:
        raise HubFailed(f"{who}: {error}") from None
    if started is not None:
        print(f"{who}: started the lsp-hub daemon (pid {started}, socket {paths.socket}); "
              "`lsp-hub daemon stop` ends it", file=sys.stderr, flush=True)
    fd = connection.detach()
    return HubConnection(fd, fd, description=f"the daemon at {paths.socket}")


# ============================================================================================= files and positions
def path_uri(path: Path | str) -> str:
    return "file://" + quote(str(path))


def uri_path(uri: str) -> str:
    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def find_root(start: Path) -> Path:
    """The nearest ancestor with a repository marker, else with a project marker, else `start` itself."""
    for markers in (REPOSITORY_MARKERS, PROJECT_MARKERS):
        for directory in (start, *start.parents):
            if any((directory / marker).exists() for marker in markers):
                return directory
    return start


def utf16_column(line_text: str, characters: int) -> int:
    return len(line_text[:characters].encode("utf-16-le")) // 2


def character_column(line_text: str, utf16: int) -> int:
    """The character index of a UTF-16 column (rounded down inside a surrogate pair)."""
    encoded = line_text.encode("utf-16-le")[:utf16 * 2]
    return len(encoded.decode("utf-16-le", "ignore"))


@dataclass
class Workspace:
    """The root, the files this query read (their text as the servers saw it), and the hub, once connected."""

    root: Path
    timeout: float
    hub: HubConnection | None = None  # None while the input is checked: bad input costs no hub
    texts: dict[str, str] = field(default_factory=dict)  # real path -> text
    # Writes the changes instead (`lsp-hub mcp` and `--apply`: the verified write, verified_write.py).
    write_through: Callable[[list[Change]], None] | None = None
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
        path = (Path.cwd() / path) if not path.is_absolute() else path
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


def parse_location(text: str) -> tuple[str, int, int]:
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit() or not parts[0]:
        raise QueryError(f"lsp-hub query: expected FILE:LINE:COL (1-based) or --symbol NAME, not {text!r}")
    line, column = int(parts[1]), int(parts[2])
    if line < 1 or column < 1:
        raise QueryError("lsp-hub query: LINE and COL are 1-based")
    return parts[0], line, column


def resolve_target(workspace: Workspace, location: str | None, symbol: str | None) -> Target:
    """FILE:LINE:COL, or --symbol NAME through the hub's index (lspHub.callers names its definitions)."""
    if symbol is not None:
        result = workspace.connection.request("workspace/executeCommand", {
            "command": "lspHub.callers", "arguments": [{"symbol": symbol, "depth": 1, "servers": False}]},
            workspace.timeout)
        definitions = (result or {}).get("definitions") or []
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
    if location is None:
        raise QueryError("lsp-hub query: give FILE:LINE:COL or --symbol NAME")
    name, line, column = parse_location(location)
    file = workspace.resolve(name)
    return Target(file, workspace.lsp_position(file, line, column))


# ============================================================================================= edits
def apply_text_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """TextEdits (UTF-16 ranges, non-overlapping) applied to `text`, last first."""
    lines = text.split("\n")

    def offset(position: dict[str, Any]) -> int:
        line = min(int(position["line"]), len(lines))
        if line == len(lines):
            return len(text)
        start = sum(len(item) + 1 for item in lines[:line])
        return start + character_column(lines[line], int(position["character"]))

    spans = sorted(((offset(edit["range"]["start"]), offset(edit["range"]["end"]), edit.get("newText", ""))
                    for edit in edits), key=lambda span: (span[0], span[1]), reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


def workspace_edit_files(edit: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A WorkspaceEdit's text edits per path (`changes` or `documentChanges`; file operations are refused)."""
    files: dict[str, list[dict[str, Any]]] = {}
    for uri, edits in (edit.get("changes") or {}).items():
        files.setdefault(uri_path(uri), []).extend(edits)
    for change in edit.get("documentChanges") or []:
        if "textDocument" not in change:
            raise QueryError(f"lsp-hub query: the edit {change.get('kind', 'operation')}s a file; "
                             "lsp-hub query only applies text edits")
        files.setdefault(uri_path(change["textDocument"]["uri"]), []).extend(change.get("edits", []))
    return files


@dataclass
class Change:
    path: str
    old: str
    new: str
    edits: list[dict[str, Any]]


def changes_of(workspace: Workspace, files: dict[str, list[dict[str, Any]]]) -> list[Change]:
    changes = []
    for path, edits in sorted(files.items()):
        real = os.path.realpath(path)
        if Path(real) != workspace.root and workspace.root not in Path(real).parents:
            raise QueryError(f"lsp-hub query: the edit touches {path}, outside the workspace root {workspace.root}")
        old = workspace.text(real)
        changes.append(Change(real, old, apply_text_edits(old, edits), edits))
    return changes


def unified_diff(changes: list[Change], workspace: Workspace) -> str:
    parts: list[str] = []
    for change in changes:
        name = os.path.relpath(change.path, workspace.root)
        parts.extend(difflib.unified_diff(change.old.splitlines(keepends=True), change.new.splitlines(keepends=True),
                                          f"a/{name}", f"b/{name}"))
    return "".join(part if part.endswith("\n") else part + "\n\\ No newline at end of file\n" for part in parts)


def write_changes(workspace: Workspace, changes: list[Change]) -> None:
    """Atomically (a temporary file beside each, then rename, inside the root whatever races the paths), holding
    each file's write lock and after checking no file changed on disk since the servers read it; then tell the
    servers (didChangeWatchedFiles)."""
    if workspace.write_through is not None:
        workspace.write_through(changes)
        return
    with contextlib.ExitStack() as locks:
        try:
            for change in sorted(changes, key=lambda change: change.path):  # one order: no two writers deadlock
                locks.enter_context(write_lock.exclusive(Path(change.path), workspace.timeout))
        except write_lock.WriteLockError as error:
            raise QueryError(f"lsp-hub query: nothing written: {error}", EXIT_FAILED) from None
        for change in changes:
            try:
                current = workspace.files.read(change.path).data.decode("utf-8", errors="replace")
            except FileRefused as refusal:
                raise QueryError(f"lsp-hub query: cannot read {change.path}: {refusal}") from None
            if current != change.old:
                raise QueryError(f"lsp-hub query: {change.path} changed on disk since the servers read it; "
                                 "nothing written, ask again")
        for change in changes:
            atomic_write(Path(change.path), change.new, workspace.files)
            workspace.texts[change.path] = change.new
    try:
        for change in changes:  # documents the session has open get the new text, and are saved
            uri = path_uri(change.path)
            if uri in workspace.connection.documents:
                workspace.update(uri, change.new)
                workspace.connection.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        workspace.connection.notify("workspace/didChangeWatchedFiles", {
            "changes": [{"uri": path_uri(change.path), "type": 2} for change in changes]})
    except HubFailed as error:  # the files are written: say so, or a retry would apply the edit twice
        names = ", ".join(os.path.relpath(change.path, workspace.root) for change in changes)
        raise HubFailed(f"lsp-hub query: wrote {names}; then {str(error).removeprefix('lsp-hub query: ')} "
                        "(the servers were not told)") from None


def atomic_write(target: Path, text: str, files: ConfinedRoot | None = None) -> None:
    """Write `text` through a temporary file beside `target` and a rename within its directory's descriptor, so
    a reader never sees half of it and no swapped symbolic link redirects it; an existing file keeps its mode, a
    new one gets the umask's. `files`: the root the write must stay in (default: the file's directory)."""
    confined = files if files is not None else ConfinedRoot(target.parent)
    try:
        confined.write(target, text.encode("utf-8"))
    except FileRefused as refusal:
        raise QueryError(f"lsp-hub query: {refusal}", EXIT_FAILED) from None


def files_json(changes: list[Change], workspace: Workspace) -> list[dict[str, Any]]:
    result = []
    for change in changes:
        edits = []
        for edit in change.edits:
            line, column = workspace.position_out(change.path, edit["range"]["start"])
            end_line, end_column = workspace.position_out(change.path, edit["range"]["end"])
            edits.append({"line": line, "column": column, "end_line": end_line, "end_column": end_column,
                          "new_text": edit.get("newText", "")})
        result.append({"path": change.path, "edits": edits})
    return result


# ============================================================================================= the actions
@dataclass
class Answer:
    """What an action found: its JSON object, its text form, and whether it is empty (exit code 1)."""

    data: dict[str, Any]
    text: str
    empty: bool = False
    exit_code: int | None = None  # instead of empty/answer (diagnostics: the linters' convention)
    warning: str | None = None  # one line for stderr, even with --json


def _display(path: str | Path) -> str:
    """A path as a model reads it best: relative to the current directory when inside it."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def _capped(lines: list[str], limit: int) -> list[str]:
    return lines if len(lines) <= limit else [*lines[:limit], f"... {len(lines) - limit} more"]


def locations_json(workspace: Workspace, result: Any) -> list[dict[str, Any]]:
    items = result if isinstance(result, list) else [result] if isinstance(result, dict) else []
    locations = []
    for item in items:
        uri = item.get("targetUri") or item.get("uri")
        range_ = item.get("targetSelectionRange") or item.get("range")
        if not uri or not range_:
            continue
        path = uri_path(uri)
        line, column = workspace.position_out(path, range_["start"])
        end_line, end_column = workspace.position_out(path, range_["end"])
        entry = {"path": path, "line": line, "column": column, "end_line": end_line, "end_column": end_column,
                 "text": workspace.line_text(path, line)}
        if "origin" in item:  # `lspHub.references`: server, index or both
            entry["origin"] = item["origin"]
        locations.append(entry)
    return locations


def as_is(text: str) -> str:
    """Repository text shown as it is (what `Quote` does without `lsp-hub mcp --fence`)."""
    return text


Quote = Callable[[str], str]  # how text from the repository is shown (`lsp-hub mcp --fence` wraps it)


def locations_text(locations: list[dict[str, Any]], limit: int, quote: Quote = as_is) -> str:
    ordered = sorted(locations, key=lambda entry: (entry["path"], entry["line"], entry["column"]))
    # A location only the index knows is marked: no server analyses its file (see `uncovered_note`).
    lines = [f"{_display(entry['path'])}:{entry['line']}:{entry['column']}  {quote(entry['text'])}"
             + ("  [index]" if entry.get("origin") == "index" else "") for entry in ordered]
    return "\n".join(_capped(lines, limit))


def uncovered_note(data: dict[str, Any]) -> str:
    """For references and renames: which files no server analysed, whose uses come from the index."""
    uncovered = data.get("uncovered") or []
    if not uncovered:
        return ""
    names = ", ".join(_display(path) for path in uncovered[:8]) + (f" and {len(uncovered) - 8} more"
                                                                   if len(uncovered) > 8 else "")
    return f"(no server listed anything in {len(uncovered)} file(s) where the index found uses: {names})"


def hover_text(result: Any) -> str:
    contents = (result or {}).get("contents") if isinstance(result, dict) else None
    pieces = contents if isinstance(contents, list) else [contents] if contents else []
    texts = []
    for piece in pieces:
        if isinstance(piece, str):
            texts.append(piece)
        elif isinstance(piece, dict) and "value" in piece:
            language = piece.get("language")
            texts.append(f"```{language}\n{piece['value']}\n```" if language else piece["value"])
    return "\n\n".join(text for text in texts if text.strip())


def flatten_symbols(workspace: Workspace, result: Any, path: str | None) -> list[dict[str, Any]]:
    symbols: list[dict[str, Any]] = []

    def visit(item: dict[str, Any], container: str | None) -> None:
        if "location" in item:  # SymbolInformation
            item_path = uri_path(item["location"]["uri"])
            start = item["location"]["range"]["start"]
            container = item.get("containerName") or container
        else:  # DocumentSymbol
            item_path = path or ""
            start = (item.get("selectionRange") or item["range"])["start"]
        line, column = workspace.position_out(item_path, start)
        symbols.append({"name": item.get("name", ""), "kind": SYMBOL_KINDS.get(item.get("kind", 0), "symbol"),
                        "path": item_path, "line": line, "column": column, "container": container})
        for child in item.get("children") or []:
            visit(child, item.get("name"))

    for item in result or []:
        if isinstance(item, dict):
            visit(item, None)
    return symbols


def symbols_text(symbols: list[dict[str, Any]], limit: int) -> str:
    lines = [f"{_display(entry['path'])}:{entry['line']}:{entry['column']}  {entry['kind']} "
             f"{entry['container'] + '.' if entry['container'] else ''}{entry['name']}" for entry in symbols]
    return "\n".join(_capped(lines, limit))


def diagnostics_json(workspace: Workspace, path: str, diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result = []
    for diagnostic in diagnostics:
        line, column = workspace.position_out(path, diagnostic["range"]["start"])
        end_line, end_column = workspace.position_out(path, diagnostic["range"]["end"])
        code = diagnostic.get("code")
        result.append({"path": path, "line": line, "column": column, "end_line": end_line, "end_column": end_column,
                       "severity": SEVERITIES.get(diagnostic.get("severity") or 1, "error"),
                       "source": diagnostic.get("source") or "", "code": None if code is None else str(code),
                       "message": diagnostic.get("message", "")})
    return result


def diagnostics_text(diagnostics: list[dict[str, Any]], limit: int, quote: Quote = as_is) -> str:
    """`[server] N issue(s):` blocks of `path:line:col — message`, errors first."""
    rank = {"error": 0, "warning": 1, "information": 2, "hint": 3}
    blocks: dict[str, list[dict[str, Any]]] = {}
    for diagnostic in diagnostics:
        blocks.setdefault(diagnostic["source"] or "unknown", []).append(diagnostic)
    order = sorted(blocks, key=lambda source: (min(rank[d["severity"]] for d in blocks[source]), source))
    out = []
    for source in order:
        entries = sorted(blocks[source], key=lambda d: (rank[d["severity"]], d["path"], d["line"], d["column"]))
        out.append(f"[{source}] {len(entries)} issue(s):")
        lines = []
        for entry in entries:
            code = f" [{entry['code']}]" if entry["code"] else ""
            severity = "" if entry["severity"] == "error" else f"{entry['severity']}: "
            message = " ".join(entry["message"].split())  # one line per diagnostic
            lines.append(f"  {_display(entry['path'])}:{entry['line']}:{entry['column']} — {severity}"
                         f"{quote(message)}{code}")
        out.extend(_capped(lines, limit))
    return "\n".join(out)


def hub_wait_ms(timeout: float) -> int:
    """How long the hub may wait (for diagnostics, say) within a request of `timeout` seconds: it must answer, with
    what is still pending, before this side gives up on the request."""
    return int(max(0.2, timeout - min(1.0, timeout / 4)) * 1000)


def hub_command(workspace: Workspace, command: str, arguments: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> Any:
    """One of the hub's own `lspHub.*` commands; `timeout` defaults to the query's."""
    return workspace.connection.request("workspace/executeCommand", {
        "command": command, "arguments": [arguments] if arguments is not None else []},
        workspace.timeout if timeout is None else timeout)


def _open_for_servers(workspace: Workspace, arguments: dict[str, Any]) -> None:
    """Before `lspHub.callers`: open the definitions' files so that their servers run, and wait for each one's
    first report on the file, as project-wide questions do (basedpyright knows the project's other files only
    then). Files no server serves stay closed: the index answers for them alone."""
    if "symbol" in arguments:
        found = hub_command(workspace, "lspHub.callers", {**arguments, "servers": False}) or {}
        paths = [Path(uri_path(definition["uri"])) for definition in found.get("definitions", [])[:4]]
    else:
        paths = [Path(uri_path(arguments["uri"]))]
    languages = languages_of(workspace)
    for path in dict.fromkeys(paths):
        language = language_entry(languages, path) or {}
        served = any(server.get("state") not in ("missing", "disabled") for server in language.get("servers", []))
        if served and path.is_file():
            uri = workspace.open(path)
            hub_command(workspace, "lspHub.diagnostics", {"uri": uri, "timeoutMs": hub_wait_ms(workspace.timeout)})


def languages_of(workspace: Workspace) -> list[dict[str, Any]]:
    """The hub's configured languages (`lspHub.languages`)."""
    return list((hub_command(workspace, "lspHub.languages") or {}).get("languages", []))


def language_entry(languages: list[dict[str, Any]], path: Path) -> dict[str, Any] | None:
    """The language (an entry of `lspHub.languages`) of a file, by its name or extension."""
    suffix = path.suffix[1:]
    return next((entry for entry in languages
                 if path.name in entry.get("filenames", []) or suffix in entry.get("extensions", [])), None)


def _check_served(workspace: Workspace, path: Path) -> None:
    """A file of a language no configured server serves gets one clear line, not an empty answer."""
    if language_entry(languages_of(workspace), path) is None:
        raise QueryError(f"lsp-hub query: no language server serves {path.name} (no language has the extension "
                         f"{path.suffix or '(none)'}; see `lsp-hub query languages`)")


EMPTY_REASONS = ("no_server", "missing", "disabled", "failed", "starting", "busy", "nothing", "unsaved_elsewhere")


def why_empty(workspace: Workspace, path: Path) -> tuple[str, str]:
    """Why a question about `path` got no answer, as (a word of EMPTY_REASONS, a sentence): no server for the
    language, its servers missing, failed or starting, busy (work in progress, requests waiting), or a server
    that answered with nothing."""
    entry = language_entry(languages_of(workspace), path)
    if entry is None:
        return "no_server", f"no language server serves {path.name}"
    servers = entry.get("servers", [])
    if not servers:
        return "no_server", f"no language server is configured for {entry.get('language', path.suffix)}"
    states = {server["name"]: server.get("state", "") for server in servers}
    statuses = {server["name"]: server for server in (hub_command(workspace, "lspHub.status") or {}).get(
        "servers", []) if server.get("name") in states}
    busy = []
    for name, server in statuses.items():
        work, waiting = server.get("workInProgress") or [], server.get("requestsInFlight") or 0
        if work or waiting:
            parts = ([", ".join(work[:2])] if work else []) + ([f"{waiting} request(s) waiting"] if waiting else [])
            busy.append(f"{name} ({'; '.join(parts)})")
    if busy:
        return "busy", f"no answer yet: {', '.join(busy)} is busy; ask again shortly"
    running = [name for name, state in states.items() if state == "running"]
    if running:
        return "nothing", f"{', '.join(running)} found nothing here"
    for state, word, sentence in (("starting", "starting", "is still starting"), ("failed", "failed", "has failed"),
                                  ("crashed", "failed", "crashed"), ("missing", "missing", "is not installed"),
                                  ("disabled", "disabled", "is disabled")):
        named = [name for name, server_state in states.items() if server_state == state]
        if named:
            error = statuses.get(named[0], {}).get("error")
            return word, f"no server answered: {', '.join(named)} {sentence}" + (f" ({error})" if error else "")
    return "nothing", f"no server answered for {path.name} ({', '.join(f'{n}: {s}' for n, s in states.items())})"


def _with_empty_reason(answer: Answer, workspace: Workspace, path: Path) -> Answer:
    not_answered = workspace.connection.not_answered
    if not_answered:  # on a line another client's unsaved text does not share: never an answer about another line
        answer.data["complete"] = False
        answer.data["not_answered"] = list(not_answered)
        if answer.empty:
            answer.data["empty_reason"], answer.data["empty_detail"] = "unsaved_elsewhere", not_answered[0]
        else:
            answer.text += "\n" + "\n".join(f"(incomplete: {reason})" for reason in not_answered)
        return answer
    if answer.empty:
        answer.data["empty_reason"], answer.data["empty_detail"] = why_empty(workspace, path)
    return answer


def run_action(action: str, options: argparse.Namespace, workspace: Workspace) -> Answer:
    limit = options.limit
    connection, timeout = workspace.connection, workspace.timeout
    connection.not_answered.clear()  # only this action's
    if action in TARGET_ACTIONS:
        target = options.resolved_target or resolve_target(workspace, None, options.symbol)
        _check_served(workspace, target.path)
        uri = workspace.open(target.path)
        where = {"textDocument": {"uri": uri}, "position": target.position}
        if action in PROJECT_WIDE_ACTIONS:
            # A server that just started answers from the open files only until it has found the project's
            # (basedpyright's first references are the file's own): its first report on the file says it has.
            hub_command(workspace, "lspHub.diagnostics", {"uri": uri, "timeoutMs": hub_wait_ms(timeout)})
        if action == "references":
            return _with_empty_reason(_references(workspace, where, limit), workspace, target.path)
        if action in LOCATION_ACTIONS:
            params = where
            locations = locations_json(workspace, connection.request(LOCATION_ACTIONS[action], params, timeout))
            return _with_empty_reason(Answer({"locations": locations, "complete": True},
                                             locations_text(locations, limit), not locations), workspace, target.path)
        if action == "hover":
            text = hover_text(connection.request("textDocument/hover", where, timeout))
            return _with_empty_reason(Answer({"text": text, "complete": True}, text, not text), workspace,
                                      target.path)
        if action == "rename":
            return _rename(workspace, where, options)
        if action == "code-actions":
            return _code_actions(workspace, target, uri, options)
        return _with_empty_reason(_calls(workspace, action, where, limit), workspace, target.path)
    if action == "symbols":
        if options.query is not None:
            result = connection.request("workspace/symbol", {"query": options.query}, timeout)
            symbols = flatten_symbols(workspace, result, None)
        else:
            if len(options.files) != 1:
                raise QueryError("lsp-hub query symbols: give one FILE or --query Q")
            path = workspace.resolve(options.files[0])
            _check_served(workspace, path)
            uri = workspace.open(path)
            result = connection.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, timeout)
            symbols = flatten_symbols(workspace, result, str(path))
            return _with_empty_reason(Answer({"symbols": symbols}, symbols_text(symbols, limit), not symbols),
                                      workspace, path)
        return Answer({"symbols": symbols}, symbols_text(symbols, limit), not symbols)
    if action == "diagnostics":
        return _diagnostics(workspace, options)
    if action == "format":
        if len(options.files) != 1:
            raise QueryError("lsp-hub query format: give one FILE")
        path = workspace.resolve(options.files[0])
        _check_served(workspace, path)
        uri = workspace.open(path)
        from lsp_hub.format_style import project_style  # standard library only, like this module

        style = project_style(path, workspace.root, workspace.text(path)).lsp_options()
        edits = connection.request("textDocument/formatting", {
            "textDocument": {"uri": uri}, "options": style}, timeout) or []
        changes = [change for change in changes_of(workspace, {str(path): edits}) if change.new != change.old]
        diff = unified_diff(changes, workspace)
        if options.apply and changes:
            write_changes(workspace, changes)
        return Answer({"diff": diff, "applied": bool(options.apply and changes)},
                      diff or "already formatted", not changes)
    if action in ("apply", "undo"):
        return _verified_write_action(workspace, action, options)
    if action in ("repomap", "relevant", "callers", "syntax"):
        return _index_action(workspace, action, options)
    if action == "status":
        status = hub_command(workspace, "lspHub.status")
        lines = [f"{server['name']}  {server['state']}  {server['root']}" for server in status.get("servers", [])]
        index = status.get("index") or {}
        lines.append(f"index: {index.get('state', 'none')}, {index.get('files', 0)} files; "
                     f"{status.get('documents', 0)} open documents")
        return Answer(status, "\n".join(lines))
    assert action == "languages"
    languages = hub_command(workspace, "lspHub.languages")
    lines = [f"{entry['language']}: " + ", ".join(f"{server['name']} ({server['state']})"
                                                  for server in entry["servers"])
             for entry in languages.get("languages", [])]
    return Answer(languages, "\n".join(lines), not lines)


def _covering_references(workspace: Workspace, where: dict[str, Any]) -> dict[str, Any]:
    """`lspHub.references`: the servers' references and the index's uses in the files they listed nothing in."""
    return hub_command(workspace, "lspHub.references", {
        "uri": where["textDocument"]["uri"], "position": where["position"], "includeDeclaration": True}) or {}


def _references(workspace: Workspace, where: dict[str, Any], limit: int) -> Answer:
    result = _covering_references(workspace, where)
    locations = locations_json(workspace, result.get("locations"))
    uncovered = [uri_path(uri) for uri in result.get("uncovered") or []]
    data = {"locations": locations, "complete": bool(result.get("complete", True)), "uncovered": uncovered,
            "servers": result.get("servers") or []}
    text = "\n".join(part for part in (locations_text(locations, limit), uncovered_note(data)) if part)
    return Answer(data, text, not locations)


@dataclass
class IndexRenameSites:
    """What a rename must also change where no server answered: the index's uses as edits, and the uses it found
    but cannot rename exactly (the text there is not the old name)."""

    edits: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # path -> TextEdits
    missed: list[str] = field(default_factory=list)  # "path:line:column  why"
    uncovered: list[str] = field(default_factory=list)
    incomplete: str = ""  # why the references found are not all there are, if they are not


def index_rename_sites(workspace: Workspace, where: dict[str, Any], old_name: str, new_name: str,
                       server_files: set[str]) -> IndexRenameSites:
    """The index's uses of the renamed definition in the files the servers' references left out: an edit at each
    exact occurrence of `old_name` (a use through an alias keeps the alias: `b` of `import a as b`)."""
    result = _covering_references(workspace, where)
    sites = IndexRenameSites(uncovered=[uri_path(uri) for uri in result.get("uncovered") or []])
    late = [server["name"] for server in result.get("servers") or [] if not server.get("complete")]
    if late or result.get("serverError"):
        sites.incomplete = f"no complete answer from {', '.join(late) or 'the servers'}"
    elif result.get("truncated") or result.get("indexState") == "building" or result.get("indexError"):
        sites.incomplete = result.get("truncated") or result.get("indexError") or "the index is still building"
    for location in result.get("locations") or []:
        if location.get("origin") != "index":
            continue
        path = os.path.realpath(uri_path(location["uri"]))
        if path in server_files:
            continue  # the servers' edit covers this file
        start, end = location["range"]["start"], location["range"]["end"]
        line_number, column = workspace.position_out(path, start)
        try:
            line = workspace.text(path).split("\n")[start["line"]]
        except (QueryError, IndexError):
            sites.missed.append(f"{_display(path)}:{line_number}:{column}  unreadable")
            continue
        found = line[character_column(line, start["character"]):character_column(line, end["character"])]
        if location.get("name", old_name) != old_name:
            continue  # a use of the name under an alias: the alias stays
        if found != old_name:
            sites.missed.append(f"{_display(path)}:{line_number}:{column}  reads {found!r}, not {old_name!r}")
            continue
        sites.edits.setdefault(path, []).append({"range": location["range"], "newText": new_name})
    return sites


_IDENTIFIER = re.compile(r"[\w$]+")


def name_at(workspace: Workspace, uri: str, position: dict[str, Any]) -> str:
    """The identifier at an LSP position of a file."""
    try:
        line = workspace.text(uri_path(uri)).split("\n")[int(position["line"])]
    except (QueryError, IndexError):
        return ""
    column = character_column(line, int(position["character"]))
    for match in _IDENTIFIER.finditer(line):
        if match.start() <= column <= match.end():
            return match.group()
    return ""


def _rename(workspace: Workspace, where: dict[str, Any], options: argparse.Namespace) -> Answer:
    """The servers' rename, and the index's edits in the files the servers do not analyse (their references list
    nothing there): a rename applied covers every use found, or is refused naming what it would miss."""
    if not options.new_name:
        raise QueryError("lsp-hub query rename: give NEW_NAME")
    edit = workspace.connection.request("textDocument/rename", {**where, "newName": options.new_name},
                                        workspace.timeout)
    files = workspace_edit_files(edit or {})
    old_name = name_at(workspace, where["textDocument"]["uri"], where["position"])
    index_sites = IndexRenameSites()
    if edit and old_name:  # nothing to complete when no server renames (or no name is there)
        index_sites = index_rename_sites(workspace, where, old_name, options.new_name,
                                         {os.path.realpath(path) for path in files})
        for path, edits in index_sites.edits.items():
            files.setdefault(path, []).extend(edits)
    changes = changes_of(workspace, files)
    diff = unified_diff(changes, workspace)
    index_edits = [{"path": path, "line": workspace.position_out(path, edit["range"]["start"])[0],
                    "column": workspace.position_out(path, edit["range"]["start"])[1]}
                   for path, edits in index_sites.edits.items() for edit in edits]
    refusal = ""
    if index_sites.missed:
        refusal = (f"{len(index_sites.missed)} use(s) found by the index cannot be renamed exactly: "
                   + "; ".join(index_sites.missed[:20]))
    elif index_sites.incomplete:
        refusal = f"the uses found may not be all: {index_sites.incomplete}"
    if options.apply and changes and refusal:
        raise QueryError(f"lsp-hub query rename: nothing written: {refusal}", EXIT_FAILED)
    if options.apply and changes:
        write_changes(workspace, changes)
    data = {"files": files_json(changes, workspace), "diff": diff, "applied": bool(options.apply and changes),
            "from_index": index_edits, "uncovered": index_sites.uncovered, "missed": index_sites.missed}
    notes = [uncovered_note(data)] if index_edits else []
    if refusal:
        notes.append(f"(not safe to apply: {refusal})")
    text = "\n".join(part for part in (diff or "nothing to rename", *notes) if part)
    return Answer(data, text, not changes)


def _code_actions(workspace: Workspace, target: Target, uri: str, options: argparse.Namespace) -> Answer:
    connection, timeout = workspace.connection, workspace.timeout
    # The diagnostics on that line, so servers offer their quick fixes (waited for, as `diagnostics` does).
    report = hub_command(workspace, "lspHub.diagnostics", {"uri": uri, "timeoutMs": hub_wait_ms(timeout)})
    line = target.position["line"]
    context = [d for d in (report or {}).get("diagnostics", [])
               if d["range"]["start"]["line"] <= line <= d["range"]["end"]["line"]]
    result = connection.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": target.position, "end": target.position},
        "context": {"diagnostics": context}}, timeout) or []
    servers = _server_names(workspace)
    actions = [{"title": item.get("title", ""), "kind": item.get("kind", ""), "server": _origin(item, servers)}
               for item in result]
    applied: Any = False
    diff = ""
    if options.apply is not None:
        number = _action_number(actions, options.apply)
        diff = _apply_action(workspace, result[number - 1])
        applied = number
    lines = [f"{number}. {action['title']}" + (f"  ({action['kind']}, {action['server']})" if action["kind"] else "")
             for number, action in enumerate(actions, 1)]
    return Answer({"actions": actions, "applied": applied, **({"diff": diff} if applied else {})},
                  "\n".join(lines) + (f"\n{diff}" if diff else ""), not actions)


def _action_number(actions: list[dict[str, Any]], choice: int | str) -> int:
    """The 1-based number of the action chosen by number or by title (exact, else the one title containing it)."""
    if isinstance(choice, int):
        if not 1 <= choice <= len(actions):
            raise QueryError(f"lsp-hub query code-actions: --apply takes 1 to {len(actions)}, not {choice}")
        return choice
    exact = [number for number, action in enumerate(actions, 1) if action["title"] == choice]
    near = [number for number, action in enumerate(actions, 1) if choice.lower() in action["title"].lower()]
    chosen = exact or near
    if len(chosen) != 1:
        titles = "; ".join(action["title"] for action in actions) or "none"
        raise QueryError(f"lsp-hub query code-actions: {'no' if not chosen else 'more than one'} action is titled "
                         f"{choice!r} (the actions: {titles})")
    return chosen[0]


def _origin(item: dict[str, Any], servers: dict[int, str]) -> str:
    data = item.get("data")
    uid = data.get("lspHub") if isinstance(data, dict) else None
    return servers.get(uid, "") if isinstance(uid, int) else ""


def _server_names(workspace: Workspace) -> dict[int, str]:
    """Backend uid -> server name, to say which server offered a code action (the hub tags items with the uid)."""
    status = hub_command(workspace, "lspHub.status") or {}
    return {server["uid"]: server["name"] for server in status.get("servers", []) if "uid" in server}


def _apply_action(workspace: Workspace, action: dict[str, Any]) -> str:
    connection, timeout = workspace.connection, workspace.timeout
    if "edit" not in action and "command" in action and isinstance(action["command"], dict):
        action = {"command": action["command"]}  # a Command inside a CodeAction
    elif "edit" not in action and isinstance(action.get("command"), str):
        action = {"command": {"command": action["command"], "arguments": action.get("arguments", [])}}
    elif "edit" not in action:
        action = connection.request("codeAction/resolve", action, timeout) or action
    edits: list[dict[str, Any]] = [action["edit"]] if action.get("edit") else []
    if isinstance(action.get("command"), dict):
        connection.applied_edits.clear()
        connection.accepting_edits = True
        try:
            connection.request("workspace/executeCommand", action["command"], timeout)
        finally:
            connection.accepting_edits = False
        edits.extend(connection.applied_edits)  # a command's edits come back as workspace/applyEdit
    files: dict[str, list[dict[str, Any]]] = {}
    for edit in edits:
        for path, text_edits in workspace_edit_files(edit).items():
            files.setdefault(path, []).extend(text_edits)
    changes = changes_of(workspace, files)
    write_changes(workspace, changes)
    return unified_diff(changes, workspace)


def _calls(workspace: Workspace, action: str, where: dict[str, Any], limit: int) -> Answer:
    connection, timeout = workspace.connection, workspace.timeout
    items = connection.request("textDocument/prepareCallHierarchy", where, timeout) or []
    calls = []
    for item in items[:1]:
        method = "callHierarchy/incomingCalls" if action == "incoming-calls" else "callHierarchy/outgoingCalls"
        for call in connection.request(method, {"item": item}, timeout) or []:
            other = call.get("from") or call.get("to") or {}
            if action == "incoming-calls":  # where the call is: in the caller's file
                path, start = uri_path(other["uri"]), (call.get("fromRanges") or [other["selectionRange"]])[0]
            else:  # where the callee is defined
                path, start = uri_path(other["uri"]), other["selectionRange"]["start"]
                start = {"start": start}
            line, column = workspace.position_out(path, start["start"])
            calls.append({"name": other.get("name", ""), "kind": SYMBOL_KINDS.get(other.get("kind", 0), "symbol"),
                          "path": path, "line": line, "column": column})
    lines = [f"{_display(call['path'])}:{call['line']}:{call['column']}  {call['kind']} {call['name']}"
             for call in calls]
    return Answer({"calls": calls}, "\n".join(_capped(lines, limit)), not calls)


# A directory's files: these directories are not entered (as the index's walk: dependencies, virtual environments,
# build output, caches, version control), nor any hidden one; larger files are passed over.
SKIPPED_DIRECTORIES = frozenset((
    "node_modules", "bower_components", "jspm_packages", ".venv", "venv", ".env", "virtualenv", ".tox", ".nox",
    "site-packages", "dist", "build", "out", "target", "vendor", "obj", "__pycache__", "coverage", "htmlcov"))
MAX_CHECKED_FILE_BYTES = 1_048_576
DIAGNOSTICS_BATCH = 50  # files opened and waited for together (`lspHub.diagnostics {uris}` takes at most 200)
NOT_CHECKED_WORDS = {"missing": "is not installed", "disabled": "is disabled", "failed": "failed",
                     "starting": "was still starting", "timeout": "sent no report in time"}


def files_under(directory: Path, served: Callable[[Path], bool]) -> tuple[list[Path], int]:
    """The files under `directory` that `served` accepts, sorted, and how many were passed over for their size.
    Symbolic links to directories are not followed (no loops, nothing outside)."""
    found: list[Path] = []
    too_large = 0
    stack = [directory]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith(".") and entry.name not in SKIPPED_DIRECTORIES:
                        stack.append(Path(entry.path))
                elif entry.is_file() and served(Path(entry.path)):
                    if entry.stat().st_size > MAX_CHECKED_FILE_BYTES:
                        too_large += 1
                    else:
                        found.append(Path(entry.path))
            except OSError:
                continue
    return sorted(found), too_large


def not_checked_phrase(entry: dict[str, Any]) -> str:
    """Why one server did not check, in words ("basedpyright is not installed")."""
    if entry.get("server") is None:
        return str(entry.get("detail") or "no language server serves it")
    phrase = f"{entry['server']} {NOT_CHECKED_WORDS.get(entry.get('reason', ''), entry.get('reason', ''))}"
    return phrase + (f" ({entry['detail']})" if entry.get("reason") == "failed" and entry.get("detail") else "")


@dataclass
class DiagnosticsSummary:
    """Several files' `lspHub.diagnostics` reports as one answer: their diagnostics, who checked (`checkedBy`), who
    could not and why (`notChecked`, with the files each entry concerns), and the files nobody checked."""

    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    checked_by: set[str] = field(default_factory=set)
    not_checked: dict[tuple[Any, str], dict[str, Any]] = field(default_factory=dict)
    unchecked: list[dict[str, Any]] = field(default_factory=list)  # {path, language, why}
    pending: set[str] = field(default_factory=set)
    complete: bool = True

    def add(self, workspace: Workspace, path: str, report: dict[str, Any]) -> None:
        self.diagnostics.extend(diagnostics_json(workspace, path, report.get("diagnostics") or []))
        self.complete = self.complete and bool(report.get("complete"))
        self.pending.update(report.get("pending") or [])
        checked_by = report.get("checkedBy") or []
        self.checked_by.update(checked_by)
        entries = report.get("notChecked") or []
        for entry in entries:
            merged = self.not_checked.setdefault((entry.get("server"), entry.get("reason", "")),
                                                 {**entry, "paths": []})
            merged["paths"].append(path)
        if not checked_by and ("checkedBy" in report or report.get("error")):  # (a hub before checkedBy: unknown)
            why = "; ".join(not_checked_phrase(entry) for entry in entries) or report.get("error") or \
                "no server reported"
            self.unchecked.append({"path": path, "language": report.get("language"), "why": why})

    def as_json(self) -> dict[str, Any]:
        return {"diagnostics": self.diagnostics, "complete": self.complete and not self.unchecked,
                "pending": sorted(self.pending), "checkedBy": sorted(self.checked_by),
                "notChecked": list(self.not_checked.values()), "uncheckedFiles": self.unchecked}


def coverage_notes(data: dict[str, Any], limit: int = DEFAULT_LIMIT) -> list[str]:
    """What was not checked, in words: the files no server checked ("not checked: no python server ran —
    basedpyright is not installed"), then the servers that did not check files others did."""
    groups: dict[tuple[Any, str], list[str]] = {}
    for file in data.get("uncheckedFiles") or []:
        groups.setdefault((file.get("language"), file["why"]), []).append(file["path"])
    notes = []
    for (language, why), paths in groups.items():
        who = f"no {language} server ran" if language else "no language server ran"
        where = f" for {_display(paths[0])}" if len(paths) == 1 else \
            f" for {len(paths)} files ({', '.join(_display(p) for p in paths[:3])}{', ...' if len(paths) > 3 else ''})"
        notes.append(f"not checked{where}: {who} — {why}")
    unchecked_paths = {file["path"] for file in data.get("uncheckedFiles") or []}
    late: list[str] = []
    for entry in data.get("notChecked") or []:
        if all(path in unchecked_paths for path in entry.get("paths") or []) or entry.get("server") is None:
            continue  # said above
        if entry.get("reason") in ("timeout", "starting"):
            late.append(entry["server"])
        else:
            predicate = not_checked_phrase(entry).removeprefix(f"{entry['server']} ")
            notes.append(f"(not checked by {entry['server']}: it {predicate})")
    pending = sorted(set(late) | set(data.get("pending") or []))
    if pending:
        notes.append(f"(incomplete: no report from {', '.join(pending)} in time)")
    return _capped(notes, limit)


def diagnostics_answer_text(data: dict[str, Any], limit: int, quote: Quote = as_is) -> str:
    """The diagnostics, or "no issues" when a server checked, then what was not checked."""
    text = diagnostics_text(data["diagnostics"], limit, quote)
    if not text and data.get("checkedBy"):
        text = "no issues"
    return "\n".join(filter(None, [text, *coverage_notes(data, limit)]))


def _diagnostics(workspace: Workspace, options: argparse.Namespace) -> Answer:
    if not options.files:
        raise QueryError("lsp-hub query diagnostics: give one or more FILEs or DIRs")
    if options.text_file and len(options.files) != 1:
        raise QueryError("lsp-hub query diagnostics: --text-file goes with one FILE")
    named = [workspace.resolve(name, directories=True) for name in options.files]
    paths = [path for path in named if not path.is_dir()]
    if options.text_file and not paths:
        raise QueryError("lsp-hub query diagnostics: --text-file goes with a FILE, not a directory")
    directories = [path for path in named if path.is_dir()]
    too_large = left_over = 0
    if directories:
        languages = [entry for entry in languages_of(workspace) if entry.get("servers")]

        def served(path: Path) -> bool:
            return language_entry(languages, path) is not None

        for directory in directories:
            found, large = files_under(directory, served)
            paths.extend(found)
            too_large += large
        paths = list(dict.fromkeys(paths))
        if len(paths) > options.limit:  # --limit caps the files of a directory, too
            left_over, paths = len(paths) - options.limit, paths[:options.limit]
    text = None
    if options.text_file:
        try:
            text = Path(options.text_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
            raise QueryError(f"lsp-hub query: cannot read {options.text_file}: {reason}") from None
    summary = DiagnosticsSummary()
    wait_ms = hub_wait_ms(workspace.timeout)
    if text is not None:
        [path] = paths
        workspace.texts[str(path)] = text  # the positions are in the text checked
        uri = workspace.open(path)
        report = hub_command(workspace, "lspHub.diagnostics", {"uri": uri, "timeoutMs": wait_ms, "text": text}) or {}
        if isinstance(report.get("version"), int):
            workspace.connection.documents[uri] = (report["version"], text)
        summary.add(workspace, str(path), report)
    for start in range(0, len(paths) if text is None else 0, DIAGNOSTICS_BATCH):
        batch = paths[start:start + DIAGNOSTICS_BATCH]
        uris = [workspace.open(path) for path in batch]
        answer = hub_command(workspace, "lspHub.diagnostics", {"uris": uris, "timeoutMs": wait_ms}) or {}
        for path, report in zip(batch, answer.get("reports") or [], strict=False):
            summary.add(workspace, str(path), report)
    data = summary.as_json()
    data["files"] = len(paths)
    if left_over or too_large:
        data["complete"] = False
        data["skippedFiles"] = {"limit": left_over, "too_large": too_large}
    text_out = diagnostics_answer_text(data, options.limit)
    if left_over:
        text_out += f"\n(not checked: {left_over} more file(s) past --limit {options.limit})"
    if too_large:
        text_out += f"\n(not checked: {too_large} file(s) over {MAX_CHECKED_FILE_BYTES // 1024} KB)"
    if not paths:
        text_out = "not checked: no file here is of a language a server serves"
        data["complete"] = False
    # The linters' convention: 1 issues found, 2 a file no server checked (said on stderr), 0 checked and clean.
    nobody = data["uncheckedFiles"]
    warning = "; ".join(coverage_notes({"uncheckedFiles": nobody})) if nobody else None if paths else text_out
    exit_code = EXIT_EMPTY if data["diagnostics"] else EXIT_USAGE if warning else EXIT_ANSWER
    return Answer(data, text_out, not data["diagnostics"], exit_code, warning)


def _index_action(workspace: Workspace, action: str, options: argparse.Namespace) -> Answer:
    files = [str(workspace.resolve(name)) for name in options.files]
    if action == "repomap":
        result = hub_command(workspace, "lspHub.repoMap", {"focusFiles": files, "mentionedIdents": options.mention,
                                                        "tokenBudget": options.budget})
        return Answer(result, result.get("text", "").rstrip("\n"), not result.get("files"))
    if action == "relevant":
        if not options.description:
            raise QueryError("lsp-hub query relevant: give a DESCRIPTION (--description TEXT)")
        result = hub_command(workspace, "lspHub.relevantFiles", {"description": options.description,
                                                              "targets": files, "topN": options.top})
        lines = [f"{entry['score']:7.3f}  {entry['path']}  ({'; '.join(entry['reasons'])})"
                 for entry in result.get("files", [])]
        return Answer(result, "\n".join(lines), not lines)
    if action == "callers":
        if options.symbol is not None:
            arguments: dict[str, Any] = {"symbol": options.symbol}
        else:
            target = options.resolved_target
            arguments = {"uri": path_uri(target.path), "position": target.position}
        _open_for_servers(workspace, arguments)
        # The servers get half the query's time: a cold server's first call hierarchy may take a while, and the
        # index's answer still comes back in time when it takes too long.
        server_ms = int(max(SERVER_CALLERS_SECONDS, workspace.timeout / 2) * 1000)
        result = hub_command(workspace, "lspHub.callers", {**arguments, "depth": options.depth,
                                                        "timeoutMs": server_ms})
        lines = []
        for caller in result.get("callers", []):
            path = uri_path(caller["location"]["uri"])
            line, column = workspace.position_out(path, caller["location"]["range"]["start"])
            # Where a caller came from, only when the index and a server did not both find it.
            origin = f"  [{caller['origin']}]" if result.get("servers") and caller.get("origin") != "both" else ""
            lines.append(f"{'  ' * (caller['depth'] - 1)}{_display(path)}:{line}:{column}  "
                         f"{caller.get('caller') or '(top level)'}{origin}")
        late = [server["name"] for server in result.get("servers", []) if not server.get("complete")]
        notes = [f"(incomplete: no answer from {', '.join(late)} in time; the index's callers only)"] if late else []
        text = "\n".join(_capped(lines, options.limit) + notes)
        return Answer(result, text, not lines)
    if len(files) != 1:
        raise QueryError("lsp-hub query syntax: give one FILE")
    result = hub_command(workspace, "lspHub.syntaxCheck", {"uri": path_uri(files[0])})
    lines = []
    for error in result.get("errors", []):
        line, column = workspace.position_out(files[0], error["range"]["start"])
        lines.append(f"{_display(files[0])}:{line}:{column}: {error['message']}")
    text = "\n".join(lines) if lines else f"{_display(files[0])}: " + ("ok" if result.get("checked") else
                                                                      f"not checked ({result.get('reason')})")
    if result.get("checked"):  # which parser judged, and why tree-sitter stood in for the language's own
        note = f"checked by {result.get('checker')}" + (f": {result['fallbackReason']}"
                                                         if result.get("fallbackReason") else "")
        text += f"\n({note})" if lines else f" ({note})"
    # As `lsp-hub syntax`: exit code 1 when there are syntax errors.
    return Answer(result, text, not result.get("ok", True))


# ============================================================================================= the command line
def shell_writer(workspace: Workspace) -> Any:
    """The verified writer of `lsp-hub query`'s writes (--apply, apply, undo), journaled as the shell's session."""
    from lsp_hub.undo_journal import SHELL_SESSION, UndoJournal
    from lsp_hub.verified_write import VerifiedWriter  # standard library only, like this module

    writer = VerifiedWriter(workspace, workspace.files, timeout=workspace.timeout, quote=as_is, display=_display)
    journal = UndoJournal(workspace.root, SHELL_SESSION, int(writer.write_options().get("undoDepth", 20)))
    return writer, journal


def write_through_verified(workspace: Workspace, results: list[Any]) -> Callable[[list[Change]], None]:
    """`--apply`: the servers' edits land as one verified write (syntax, dependents, journal)."""
    from lsp_hub.verified_write import FileWrite, WriteRefused

    def write(changes: list[Change]) -> None:
        writer, journal = shell_writer(workspace)
        try:
            results.append(writer.write([FileWrite(Path(change.path), _exactly(change.new), expected=change.old)
                                         for change in changes], journal=journal, format_files=False, fixes=False))
        except WriteRefused as refused:
            raise QueryError(f"lsp-hub query: {refused}") from None
        for change in changes:
            workspace.texts[change.path] = change.new

    return write


def _exactly(text: str) -> Callable[[str | None], str]:
    return lambda _old: text


def _verified_write_action(workspace: Workspace, action: str, options: argparse.Namespace) -> Answer:
    from lsp_hub.undo_journal import NothingToUndo
    from lsp_hub.verified_write import WriteRefused, edit_requests, undo_last

    writer, journal = shell_writer(workspace)
    try:
        if action == "undo":
            answer = undo_last(writer, journal)
        else:
            try:
                with open(options.edits, encoding="utf-8") as file:
                    edits = json.load(file)
            except (OSError, ValueError) as error:
                raise QueryError(f"lsp-hub query apply: cannot read --edits {options.edits}: {error}") from None
            edits = edits.get("edits") if isinstance(edits, dict) else edits

            def resolve(name: str, _existing: bool) -> Path:
                try:
                    path, _info = workspace.files.stat(name if os.path.isabs(name) else os.path.abspath(name))
                except FileRefused as refusal:
                    raise WriteRefused(str(refusal)) from None
                return path

            answer = writer.write(edit_requests(edits, resolve, _display), force=options.force, journal=journal)
    except NothingToUndo as nothing:
        raise QueryError(f"lsp-hub query undo: {nothing}", EXIT_EMPTY) from None
    except WriteRefused as refused:
        raise QueryError(f"lsp-hub query {action}: {refused}") from None
    return Answer(answer.data, answer.text)

EXIT_CODES = """exit codes (every action: 2 bad input -- a bad position, a missing file, a file outside the root,
an unknown or ambiguous symbol -- and 3 the hub or a server failed, or no answer within --timeout):
  diagnostics       0 checked by a server and clean, 1 issues found, 2 a file no server checked (stderr
                    says who could not and why: not installed, disabled, failed, starting, no report in time,
                    no server for the language)
  definition, declaration, type-definition, implementation, references, hover, symbols, incoming-calls,
  outgoing-calls, callers, repomap, relevant, languages
                    0 an answer, 1 an empty answer (stderr says why, for a file's question)
  rename, format    0 edits shown (or applied with --apply), 1 nothing to change
  code-actions      0 actions listed (or an action applied with --apply N|TITLE), 1 no action offered
  syntax            0 no syntax errors (or not checked), 1 syntax errors (as `lsp-hub syntax`)
  apply             0 written (the answer says what the servers and the dependents found), 2 refused (nothing
                    written: a syntax error, old_text not found, a file changed since)
  undo              0 undone, 1 nothing to undo, 2 refused (a file changed since that write)
  status            0"""


def _parser() -> _UsageParser:
    parser = _UsageParser(prog="lsp-hub query", description="Ask the hub one question; one answer on stdout.",
                          epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=ACTIONS, metavar="ACTION", help=", ".join(ACTIONS))
    parser.add_argument("operands", nargs="*", help="FILE:LINE:COL (or FILE...; diagnostics: FILE or DIR...), "
                                                    "then NEW_NAME for rename")
    parser.add_argument("--symbol", help="a name (greet, Class.method, module.func) instead of FILE:LINE:COL")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-daemon", action="store_true", help="run a hub for this one query")
    parser.add_argument("--socket", default=os.environ.get("LSP_HUB_SOCKET"),
                        help="talk to the hub listening on this unix socket (default $LSP_HUB_SOCKET)")
    parser.add_argument("--root", help="the workspace root (default: the nearest ancestor with a root marker)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS, help="seconds per request")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                        help="lines of text output; diagnostics DIR: files checked (default 50)")
    parser.add_argument("--apply", nargs="?", const=True, default=None,
                        help="rename, format: write the files; code-actions --apply N|TITLE: apply that action")
    parser.add_argument("--query", help="symbols: search the workspace")
    parser.add_argument("--text-file", help="diagnostics: check this text as FILE's new content")
    parser.add_argument("--budget", type=int, default=1024, help="repomap: token budget")
    parser.add_argument("--mention", nargs="+", default=[], help="repomap: identifiers to favour")
    parser.add_argument("--description", help="relevant: the task")
    parser.add_argument("--top", type=int, default=10, help="relevant: how many files")
    parser.add_argument("--depth", type=int, default=1, help="callers: depth")
    parser.add_argument("--edits", help="apply: a JSON file of edits, [{path, old_text, new_text} | {path, content}]")
    parser.add_argument("--force", action="store_true", help="apply: replace read-only files too")
    return parser


def _normalize(options: argparse.Namespace) -> None:
    """Spread the positional operands over what each action takes."""
    operands: list[str] = list(options.operands)
    if options.action == "code-actions" and isinstance(options.apply, str) and not options.apply.isdigit() and \
            not _looks_like_location(options.apply):
        options.apply = options.apply.strip()  # a title
        if not options.apply:
            raise QueryError("lsp-hub query code-actions: --apply takes a number or a title")
    elif isinstance(options.apply, str) and not (options.action == "code-actions" and options.apply.isdigit()):
        # `format --apply FILE`: argparse took the operand as the option's value.
        operands.append(options.apply)
        options.apply = True
    options.target, options.new_name, options.files = None, None, []
    if options.action in TARGET_ACTIONS or options.action == "callers":
        if options.symbol is None:
            if not operands:
                raise QueryError(f"lsp-hub query {options.action}: give FILE:LINE:COL or --symbol NAME")
            options.target, operands = operands[0], operands[1:]
        if options.action == "rename":
            if len(operands) != 1:
                raise QueryError("lsp-hub query rename: give TARGET NEW_NAME")
            options.new_name, operands = operands[0], []
    elif options.action == "relevant" and operands and options.description is None:
        options.description, operands = operands[-1], operands[:-1]
    options.files = operands
    if (options.action in TARGET_ACTIONS or options.action == "callers") and operands:
        raise QueryError(f"lsp-hub query {options.action}: unexpected {' '.join(operands)}")
    if options.action == "code-actions" and options.apply is not None:
        if options.apply is True:
            raise QueryError("lsp-hub query code-actions: --apply takes the number or the title of an action")
        if isinstance(options.apply, str) and options.apply.isdigit():
            options.apply = int(options.apply)
    if options.action == "apply" and not options.edits:
        raise QueryError("lsp-hub query apply: give --edits FILE.json")
    if options.apply is not None and options.action not in ("rename", "format", "code-actions"):
        raise QueryError(f"lsp-hub query {options.action}: --apply only goes with rename, format, code-actions")
    if options.timeout <= 0 or options.limit < 1:
        raise QueryError("lsp-hub query: --timeout and --limit must be positive")


def _looks_like_location(text: str) -> bool:
    try:
        parse_location(text)
    except QueryError:
        return False
    return True


def _root(options: argparse.Namespace) -> Path:
    if options.root:
        root = Path(options.root).expanduser().resolve()
        if not root.is_dir():
            raise QueryError(f"lsp-hub query: --root {options.root} is not a directory")
        return root
    cwd = Path.cwd().resolve()
    root = find_root(cwd)
    first = options.files[0] if options.files else options.target.rsplit(":", 2)[0] if options.target else None
    if first is not None:  # a file outside the current directory's project: its own project
        file = Path(first).expanduser().resolve()
        if file.exists() and root not in file.parents:
            root = find_root(file.parent)
    return root


Connector = Callable[[Path], HubConnection]


def query_main(argv: list[str], *, out: TextIO | None = None, err: TextIO | None = None,
               connection: HubConnection | None = None) -> int:
    """Run one query; returns the exit code. `connection`: a hub already connected (tests share one)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        options = _parser().parse_intermixed_args(argv)
        _normalize(options)
        root = connection.initialized_root if connection and connection.initialized_root else _root(options)
        workspace = Workspace(root, options.timeout)
        # Positions and files are checked before a hub is reached (or started).
        options.resolved_target = resolve_target(workspace, options.target, None) if options.target else None
        for name in options.files:
            workspace.resolve(name, directories=options.action == "diagnostics")
        if connection is None:
            if options.socket and not options.no_daemon:
                connection = connect_socket(options.socket)
            elif options.no_daemon:
                connection = spawn_hub(root)
            else:
                connection = connect_default(root)
        workspace.hub = connection
        connection.notices = err
        connection.initialize(root, options.timeout)
        applied: list[Any] = []
        if options.apply is not None:
            workspace.write_through = write_through_verified(workspace, applied)
        answer = run_action(options.action, options, workspace)
        for written in applied:  # --apply: what the verified write found, after the diff
            answer.data["write"] = written.data
            answer.text = f"{answer.text}\n{written.text}" if answer.text else written.text
        out.write(json.dumps(answer.data, ensure_ascii=False) + "\n" if options.json else
                  (answer.text + "\n" if answer.text else ""))
        out.flush()
        if answer.empty and answer.data.get("empty_detail") and not options.json:
            err.write(f"lsp-hub query {options.action}: {answer.data['empty_detail']}\n")
        if answer.warning:
            err.write(f"lsp-hub query {options.action}: {answer.warning}\n")
        if answer.exit_code is not None:
            return answer.exit_code
        return EXIT_EMPTY if answer.empty else EXIT_ANSWER
    except QueryError as error:
        err.write(f"{error}\n")
        return error.code
    except KeyboardInterrupt:
        return 130
    finally:
        if connection is not None:
            connection.close()
