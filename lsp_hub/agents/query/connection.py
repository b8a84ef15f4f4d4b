"""The connection to the hub: LSP over a socket (read as a socket) or a hub's pipes, synchronous, standard library
only.

Where the hub is: `connect_socket` (a unix socket, or a daemon's endpoint file), `spawn_hub` (`--no-daemon`:
`python -m lsp_hub` as a child over pipes), `connect_default` (the user's daemon, through
`daemon_client.ensure_daemon`, started when absent). Frames are read and written by `client_framing`, as the
daemon CLI's are.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import lsp_hub
from lsp_hub.agents.query.errors import HubFailed, HubLost, HubTimeout, QueryError
from lsp_hub.agents.query.options import DEFAULT_TIMEOUT_SECONDS
from lsp_hub.agents.query.positions import path_uri
from lsp_hub.transport.client_framing import FrameBuffer, FramingError, encode_message

if TYPE_CHECKING:
    import subprocess

# How the hub's log message starts when it did not answer a request here (session.NOT_MAPPED_NOTICE; this package
# imports none of the hub's modules).
NOT_ANSWERED_NOTICE = "lsp-hub: not answered here: "
CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True},
    "workspace": {
        "applyEdit": True,
        "workspaceFolders": True,
        "configuration": True,
        "workspaceEdit": {"documentChanges": True},
    },
    "textDocument": {
        "synchronization": {"didSave": True},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
        "publishDiagnostics": {"versionSupport": True},
        "codeAction": {
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "quickfix", "refactor", "source"]}},
            "resolveSupport": {"properties": ["edit"]},
        },
        "rename": {"prepareSupport": False},
        "callHierarchy": {},
    },
}


class HubConnection:
    """LSP to the hub over a socket (`over_socket`) or a pipe pair (a hub of its own): synchronous, stdlib only.

    Requests the hub sends to the client are answered here (configuration: nulls; applyEdit: collected for
    `code-actions --apply`); notifications are dropped, except a warning or error the hub shows about the
    configuration (a project file it ignored...), written once to `notices` when that is set."""

    def __init__(
        self,
        read_fd: int,
        write_fd: int,
        *,
        process: subprocess.Popen[bytes] | None = None,
        stderr_file: Any = None,
        owned: bool = True,
        description: str = "the hub",
        sock: socket.socket | None = None,
    ) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        # A socket is read and written as one (recv/sendall): on Windows a socket is no file descriptor os.read
        # can use, and select() takes sockets only, so pipes there are read by a thread (`_pipe_chunks`).
        self.sock = sock
        self._pipe_chunks: queue.Queue[bytes] | None = None
        if sock is None and sys.platform == "win32":
            self._pipe_chunks = queue.Queue()
            threading.Thread(target=self._read_pipe, daemon=True, name="hub-pipe-reader").start()
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
        self._frames = FrameBuffer()
        self._next_id = 0

    @classmethod
    def over_socket(cls, connection: socket.socket, *, description: str, owned: bool = True) -> HubConnection:
        """LSP over a connected socket, read and written as a socket on every system: a Windows socket is no file
        descriptor (os.read and os.write fail on it), so no descriptor of it is kept."""
        return cls(-1, -1, sock=connection, owned=owned, description=description)

    # -- framing
    def _write(self, message: dict[str, Any]) -> None:
        data = encode_message(message)
        try:
            if self.sock is not None:
                self.sock.sendall(data)
            while data and self.sock is None:
                written = os.write(self.write_fd, data)
                data = data[written:]
        except OSError as error:
            raise HubLost(
                f"lsp-hub query: lost the connection to {self.description}: {error.strerror}{self._tail()}"
            ) from None

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while True:
            try:
                message = self._frames.next_message()
            except FramingError as error:
                raise HubFailed(f"lsp-hub query: {self.description} sent {error}") from None
            if message is not None:
                return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            reason = "it closed the connection"
            if self._pipe_chunks is not None:
                try:
                    chunk = self._pipe_chunks.get(timeout=remaining)
                except queue.Empty:
                    raise TimeoutError from None
            else:
                waited_on: socket.socket | int = self.sock if self.sock is not None else self.read_fd
                readable, _, _ = select.select([waited_on], [], [], remaining)
                if not readable:
                    raise TimeoutError
                try:
                    chunk = self.sock.recv(1 << 20) if self.sock is not None else os.read(self.read_fd, 1 << 20)
                except OSError as error:
                    chunk, reason = b"", str(error.strerror)
            if not chunk:
                raise HubLost(f"lsp-hub query: lost {self.description}: {reason}{self._tail()}")
            self._frames.feed(chunk)

    def _read_pipe(self) -> None:
        assert self._pipe_chunks is not None
        while True:
            try:
                chunk = os.read(self.read_fd, 1 << 20)
            except OSError:
                chunk = b""
            self._pipe_chunks.put(chunk)
            if not chunk:
                return

    def peer_closed(self) -> bool:
        """Whether the hub closed the connection (end of file waiting to be read, or its process ended)."""
        if self.process is not None:
            return self.process.poll() is not None
        try:
            if self.sock is not None:
                readable, _, _ = select.select([self.sock], [], [], 0)
                # select said readable, so this does not block; MSG_DONTWAIT (absent on Windows) only makes sure.
                return bool(readable) and self.sock.recv(1, socket.MSG_PEEK | getattr(socket, "MSG_DONTWAIT", 0)) == b""
            fd_readable, _, _ = select.select([self.read_fd], [], [], 0)
            if not fd_readable:
                return False
            with socket.socket(fileno=os.dup(self.read_fd)) as probe:
                # Not setblocking(False): the duplicate shares the connection's file status, which must stay blocking.
                return probe.recv(1, socket.MSG_PEEK | getattr(socket, "MSG_DONTWAIT", 0)) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

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
                raise HubTimeout(
                    f"lsp-hub query: no answer to {method} within {timeout:g} s (raise it with --timeout)"
                ) from None
            if "method" in message:
                self._on_hub_message(message)
            elif message.get("id") == request_id:
                error = message.get("error")
                if error is not None:
                    # An index command's error says what went wrong in its own words; the method carrying every
                    # command (`workspace/executeCommand`) would only stand in front of them.
                    where = "" if method == "workspace/executeCommand" else f"{method}: "
                    text = f"lsp-hub query: {where}{error.get('message', error)}"
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
        if (
            message.get("method") == "window/logMessage"
            and isinstance(params, dict)
            and str(params.get("message", "")).startswith(NOT_ANSWERED_NOTICE)
        ):
            self.not_answered.append(str(params["message"])[len(NOT_ANSWERED_NOTICE) :])
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
        self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": path_uri(root),
                "capabilities": CLIENT_CAPABILITIES,
                "workspaceFolders": [{"uri": path_uri(root), "name": root.name}],
                "clientInfo": {"name": "lsp-hub query"},
            },
            timeout,
        )
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
            import subprocess

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
        elif self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
        else:
            for fd in {self.read_fd, self.write_fd}:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.owned = False  # closed once: a second close must not close descriptor numbers reused since


def spawn_hub(root: Path, env: dict[str, str] | None = None, owned: bool = True) -> HubConnection:
    """A hub of our own for this query: `python -m lsp_hub` (same interpreter) over pipes, its stderr kept in a
    temporary file to say why it failed. It stops its servers when we send exit or go away."""
    # The directory holding the lsp_hub package (not this file's: it is a package inside it, and lsp_hub/ on the
    # path would shadow the standard library's `platform` with lsp_hub.platform, crashing the hub as it starts).
    package_parent = str(Path(lsp_hub.__file__).resolve().parent.parent)
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, child_env.get("PYTHONPATH")]))
    import subprocess  # here: a query through the daemon starts without these
    import tempfile

    stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the connection, closed with it
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "lsp_hub"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            cwd=root,
            env=child_env,
        )
    except OSError as error:
        raise HubFailed(f"lsp-hub query: cannot start the hub: {error}") from None
    assert process.stdin is not None and process.stdout is not None
    return HubConnection(
        process.stdout.fileno(),
        process.stdin.fileno(),
        process=process,
        stderr_file=stderr_file,
        owned=owned,
        description="its hub",
    )


def connect_socket(path: str) -> HubConnection:
    """LSP with the hub listening on the unix socket at `path`, or, when `path` is a daemon's endpoint file
    (`daemon.endpoint`: loopback TCP and its token), through that: what a system without unix sockets offers."""
    if os.path.isfile(path):
        from lsp_hub.transport.daemon_transport import TransportError, connect_with_token

        try:
            connection = connect_with_token(Path(path), timeout=5.0)
        except TransportError as error:
            raise HubFailed(f"lsp-hub query: {error}") from None
        if connection is None:
            raise HubFailed(f"lsp-hub query: no hub listens at the endpoint {path} names (or it names none)")
        return HubConnection.over_socket(connection, description=f"the hub of {path}")
    unix_family = getattr(socket, "AF_UNIX", None)  # read here, never at import: Windows has none
    if unix_family is None:
        raise HubFailed(
            f"lsp-hub query: --socket {path}: this system offers no unix sockets; give a daemon's endpoint file "
            "(daemon.endpoint in its runtime directory) instead, or leave --socket out to use the daemon"
        )
    connection = socket.socket(unix_family, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError as error:
        connection.close()
        raise HubFailed(f"lsp-hub query: cannot connect to {path}: {error.strerror or error}") from None
    return HubConnection.over_socket(connection, description=f"the hub at {path}")


def connect_default(root: Path, who: str = "lsp-hub query") -> HubConnection:
    """The hub when neither --socket nor --no-daemon is given: the user's daemon, started in the background when
    none answers (said on stderr, by `who`)."""
    from lsp_hub.transport.daemon_client import DaemonError, daemon_run_args, ensure_daemon, prepare_runtime_directory

    try:
        paths = prepare_runtime_directory()
        connection, started = ensure_daemon(paths, daemon_run_args(None, None, 0))
    except DaemonError as error:
        raise HubFailed(f"{who}: {error}") from None
    if started is not None:
        print(
            f"{who}: started the lsp-hub daemon (pid {started}, at {paths.listening_at}); "
            "`lsp-hub daemon stop` ends it",
            file=sys.stderr,
            flush=True,
        )
    return HubConnection.over_socket(connection, description=f"the daemon at {paths.listening_at}")
