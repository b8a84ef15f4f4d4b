"""The per-user daemon seen from outside: where its socket lives, starting it once, and `lsp-hub daemon`.

Standard library only (no pygls, lsprotocol, asyncio): `lsp-hub --connect` and `lsp-hub daemon status` must start
fast, and they import this module and nothing heavier.

Where: `$XDG_RUNTIME_DIR/lsp-hub/` (the runtime directory is private to the user by definition), else
`${TMPDIR:-/tmp}/lsp-hub-$UID/`. Either directory is created with mode 0700 and, before every use, checked to be
ours: a directory, not a symbolic link, owned by our uid, mode 0700. Another user who created it first could
otherwise read or replace the socket, and a client of the socket may make the daemon start programs.

Files in it: `daemon.sock` (0600), or with the tcp-token transport `daemon.endpoint` (0600: port and token, see
daemon_transport.py), `daemon.pid` (locked by the running daemon for its whole life: one daemon per user, and a
socket left by a killed daemon is known to be stale), `start.lock` (locked by a starter while it
starts the daemon and waits for it: racing starters start one), `daemon.log` (the daemon's stderr; the previous
one is kept as `daemon.log.1`).

The daemon answers two requests of its own on any connection, before `initialize`: `lspHub/daemonStatus` and
`lspHub/daemonStop` (JSON-RPC framed like LSP).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from lsp_hub.platform.locks import read_from_start, replace_content, try_lock
from lsp_hub.platform.users import current_user, describe_user, file_modes_are_enforced, owned_by_current_user
from lsp_hub.transport.client_framing import FrameBuffer, FramingError, encode_message
from lsp_hub.transport.daemon_transport import (
    TCP_TOKEN,
    TRANSPORT_ENV,
    UNIX,
    TransportError,
    chosen_transport,
    connect_with_token,
)

if TYPE_CHECKING:
    import subprocess

DAEMON_STATUS_METHOD = "lspHub/daemonStatus"
DAEMON_STOP_METHOD = "lspHub/daemonStop"

EXIT_OK, EXIT_NOT_RUNNING, EXIT_USAGE, EXIT_FAILURE = 0, 1, 2, 3
# sun_path holds 108 bytes on Linux, the terminating NUL included.
MAX_SOCKET_PATH_BYTES = 107
START_TIMEOUT_SECONDS = 20.0
STOP_TIMEOUT_SECONDS = 15.0


class DaemonError(Exception):
    """A problem to tell the user in one line (no traceback)."""


@dataclass(frozen=True)
class RuntimePaths:
    """The daemon's files in its private runtime directory."""

    directory: Path
    transport: str = UNIX  # or TCP_TOKEN: daemon_transport.py

    @property
    def socket(self) -> Path:
        return self.directory / "daemon.sock"

    @property
    def endpoint_file(self) -> Path:
        """Where a tcp-token daemon publishes its port and token (0600)."""
        return self.directory / "daemon.endpoint"

    @property
    def listening_at(self) -> Path:
        """The file that says where the daemon listens: its socket, or its endpoint file."""
        return self.socket if self.transport == UNIX else self.endpoint_file

    @property
    def pid_file(self) -> Path:
        return self.directory / "daemon.pid"

    @property
    def start_lock(self) -> Path:
        return self.directory / "start.lock"

    @property
    def log(self) -> Path:
        return self.directory / "daemon.log"


def runtime_directory(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the daemon's files live for this user (not created, not checked)."""
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):  # the XDG spec: a relative value is invalid and ignored
        return Path(runtime) / "lsp-hub"
    if sys.platform == "win32":
        import tempfile

        temporary = environ.get("TMPDIR") or tempfile.gettempdir()
    else:
        temporary = environ.get("TMPDIR") or "/tmp"
    return Path(temporary) / f"lsp-hub-{current_user()}"


def check_private_directory(path: Path) -> None:
    """Raise DaemonError unless `path` is a real directory of ours that only we can enter (mode 0700)."""
    try:
        info = os.lstat(path)
    except OSError as error:
        raise DaemonError(f"cannot use {path}: {error.strerror}") from None
    refusal = None
    if stat.S_ISLNK(info.st_mode):
        refusal = "it is a symbolic link"
    elif not stat.S_ISDIR(info.st_mode):
        refusal = "it is not a directory"
    elif not owned_by_current_user(info.st_uid):
        refusal = (
            f"it belongs to uid {info.st_uid}, not to you ({describe_user(current_user())}); someone may be "
            "trying to intercept the daemon"
        )
    elif file_modes_are_enforced() and stat.S_IMODE(info.st_mode) != 0o700:
        refusal = f"its mode is {stat.S_IMODE(info.st_mode):04o}, not 0700"
    if refusal is not None:
        raise DaemonError(
            f"refusing to use {path} for the daemon's socket: {refusal}. Remove it (or fix it) and "
            "try again, or set XDG_RUNTIME_DIR"
        )


def prepare_runtime_directory(environ: Mapping[str, str] = os.environ) -> RuntimePaths:
    """Create the runtime directory if needed (mode 0700) and check it is ours; raise DaemonError otherwise."""
    directory = runtime_directory(environ)
    try:
        os.mkdir(directory, 0o700)
        os.chmod(directory, 0o700)  # mkdir's mode passes through the umask; ours must be exactly 0700
    except FileExistsError:
        pass
    except OSError as error:
        raise DaemonError(f"cannot create {directory}: {error.strerror}") from None
    check_private_directory(directory)
    try:
        paths = RuntimePaths(directory, chosen_transport(environ))
    except TransportError as error:
        raise DaemonError(str(error)) from None
    if paths.transport == UNIX and len(os.fsencode(paths.socket)) > MAX_SOCKET_PATH_BYTES:
        raise DaemonError(
            f"the socket path {paths.socket} is longer than a unix socket allows "
            f"({MAX_SOCKET_PATH_BYTES} bytes); set XDG_RUNTIME_DIR to a shorter directory"
        )
    return paths


# ==================================================================================================== talking
def connect(paths: RuntimePaths, timeout: float = 5.0) -> socket.socket | None:
    """A connection to the running daemon, or None when none listens (no socket, or a stale one)."""
    if paths.transport != UNIX:
        try:
            return connect_with_token(paths.endpoint_file, timeout)
        except TransportError as error:
            raise DaemonError(str(error)) from None
    unix_family = getattr(socket, "AF_UNIX", None)  # read here, never at import: Windows has none
    if unix_family is None:
        raise DaemonError(f"this system offers no unix sockets: set {TRANSPORT_ENV}={TCP_TOKEN}")
    client = socket.socket(unix_family, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        client.connect(os.fspath(paths.socket))
    except (FileNotFoundError, ConnectionRefusedError):
        client.close()
        return None
    except OSError as error:
        client.close()
        raise DaemonError(f"cannot connect to {paths.socket}: {error.strerror or error}") from None
    client.settimeout(None)
    return client


def _read_message(connection: socket.socket, frames: FrameBuffer) -> dict[str, Any]:
    """The next message from the daemon (framed as every standard-library client of the hub reads it)."""
    while True:
        try:
            message = frames.next_message()
        except FramingError as error:
            raise DaemonError(f"the daemon sent {error}") from None
        if message is not None:
            return message
        chunk = connection.recv(1 << 16)
        if not chunk:
            raise DaemonError("the daemon closed the connection before answering")
        frames.feed(chunk)


def request(connection: socket.socket, method: str, params: Any = None, timeout: float = 10.0) -> Any:
    """Send one JSON-RPC request over `connection` and return its result (DaemonError for an error answer)."""
    connection.settimeout(timeout)
    frames = FrameBuffer()
    try:
        connection.sendall(encode_message({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        while True:
            message = _read_message(connection, frames)
            if message.get("id") == 1 and "method" not in message:
                break
    except TimeoutError:
        raise DaemonError(f"the daemon did not answer {method} within {timeout:g} s") from None
    except OSError as error:
        raise DaemonError(f"lost the connection to the daemon: {error.strerror or error}") from None
    if "error" in message:
        raise DaemonError(f"the daemon refused {method}: {message['error'].get('message')}")
    return message.get("result")


def ask(paths: RuntimePaths, method: str) -> Any | None:
    """One request on a connection of its own; None when no daemon runs."""
    connection = connect(paths)
    if connection is None:
        return None
    with connection:
        return request(connection, method)


# ==================================================================================================== starting
def _lock(path: Path, deadline: float) -> int:
    """An exclusive flock on `path`, waiting until `deadline`; returns the descriptor that holds it."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    while True:
        if try_lock(descriptor):
            return descriptor
        if time.monotonic() > deadline:
            os.close(descriptor)
            raise DaemonError(f"another lsp-hub is still starting the daemon (it holds {path})")
        time.sleep(0.02)


def _spawn_daemon(paths: RuntimePaths, daemon_args: list[str]) -> subprocess.Popen[bytes]:
    import subprocess  # here: a client that finds the daemon running starts without it

    from lsp_hub.platform.children import detached_options

    if paths.log.exists():
        os.replace(paths.log, paths.log.with_name(paths.log.name + ".1"))
    log = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        # A session of its own: no terminal's signals reach it and it outlives the editor or agent that started
        # it. Its cwd is / (it must neither pin nor index the starter's directory); its stdio is not the
        # starter's, so the starter's pipes close when the starter ends.
        return subprocess.Popen(
            [sys.executable, "-m", "lsp_hub", "daemon", "run", *daemon_args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd="/",
            **detached_options(),
        )
    finally:
        os.close(log)


def _log_tail(paths: RuntimePaths) -> str:
    try:
        lines = [line for line in paths.log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f": {lines[-1].strip()}" if lines else ""


def ensure_daemon(paths: RuntimePaths, daemon_args: list[str]) -> tuple[socket.socket, int | None]:
    """A connection to the daemon, starting it first when none answers.

    Returns the connection and the pid of the daemon this call started (None when one was running). Starters
    serialize on `start.lock` and look again once they hold it, so racing starters start one daemon.
    """
    connection = connect(paths)
    if connection is not None:
        return connection, None
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    lock = _lock(paths.start_lock, deadline)
    try:
        connection = connect(paths)
        if connection is not None:
            return connection, None
        process = _spawn_daemon(paths, daemon_args)
        while time.monotonic() < deadline:
            connection = connect(paths)
            if connection is not None:
                return connection, process.pid
            if process.poll() is not None:
                raise DaemonError(
                    f"the daemon exited with code {process.returncode} before listening "
                    f"(log: {paths.log}){_log_tail(paths)}"
                )
            time.sleep(0.02)
        raise DaemonError(
            f"the daemon did not listen on {paths.listening_at} within {START_TIMEOUT_SECONDS:g} s (log: {paths.log})"
        )
    finally:
        os.close(lock)


def claim_daemon(paths: RuntimePaths, wait_seconds: float = 10.0) -> int:
    """For the daemon itself: hold `daemon.pid` for life (one daemon per user), then clear a stale socket.

    Waits a little for a daemon that is still stopping. Returns the descriptor holding the lock."""
    descriptor = os.open(paths.pid_file, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait_seconds
    while not try_lock(descriptor):
        if time.monotonic() > deadline:
            try:
                holder = read_from_start(descriptor, 32).decode(errors="replace").strip() or "?"
            except OSError:  # Windows: the holder's lock covers the bytes that say who it is
                holder = "?"
            os.close(descriptor)
            raise DaemonError(f"another lsp-hub daemon is running (pid {holder})")
        time.sleep(0.05)
    replace_content(descriptor, f"{os.getpid()}\n".encode())
    # Whoever held the lock is gone, so a socket or endpoint file left behind is a dead daemon's: replace it.
    for stale in (paths.socket, paths.endpoint_file):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(stale)
    return descriptor


def release_daemon(paths: RuntimePaths, descriptor: int) -> None:
    """For the daemon at exit: remove its socket or endpoint file, empty the pid file (never unlinked: a starter may
    hold it)."""
    for published in (paths.socket, paths.endpoint_file):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(published)
    os.ftruncate(descriptor, 0)
    os.close(descriptor)


def daemon_run_args(config: str | None, log_file: str | None, verbose: int) -> list[str]:
    """The options a starter passes on to `lsp-hub daemon run`; paths made absolute (the daemon runs in /)."""
    args: list[str] = []
    if config:
        args += ["--config", os.path.abspath(config)]
    if log_file:
        args += ["--log-file", os.path.abspath(log_file)]
    return args + ["-v"] * verbose


# ==================================================================================================== the CLI
USAGE = """lsp-hub daemon start [--config PATH] [--log-file PATH] [-v] [--json]
       lsp-hub daemon stop [--json]
       lsp-hub daemon status [--json]
       lsp-hub daemon run [--config PATH] [--log-file PATH] [-v]   (in the foreground)"""


def _parse(argv: list[str]) -> tuple[str, dict[str, Any]]:
    import argparse

    parser = argparse.ArgumentParser(
        prog="lsp-hub daemon", usage=USAGE, description="The per-user lsp-hub daemon that `lsp-hub --connect` talks to."
    )
    parser.add_argument("action", choices=["start", "stop", "status", "run"])
    parser.add_argument("--config", help="start: a configuration file on top of the user's (read once, at start)")
    parser.add_argument("--log-file", help="start: the daemon's log (default: daemon.log beside its socket)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="start: more logging (-vv for debug)")
    parser.add_argument("--json", action="store_true", help="print the daemon's status as JSON")
    args = parser.parse_args(argv)
    if args.action in ("stop", "status") and (args.config or args.log_file or args.verbose):
        parser.error(f"{args.action} takes only --json")
    return args.action, vars(args)


def _describe(status: Mapping[str, Any]) -> str:
    lines = [
        f"lsp-hub daemon: pid {status.get('pid')}, socket {status.get('socket')}, {status.get('clients')} client(s)"
    ]
    for workspace in status.get("workspaces") or []:
        lines.append(f"  {workspace.get('root')}")
        for server in workspace.get("servers") or []:
            lines.append(
                f"    {server.get('name')} ({server.get('state')}, pid {server.get('pid')}) at {server.get('root')}"
            )
    return "\n".join(lines)


def daemon_main(
    argv: list[str],
    out: IO[str],
    err: IO[str] = sys.stderr,
    run: Callable[[RuntimePaths, dict[str, Any]], int] | None = None,
) -> int:
    """`lsp-hub daemon start|stop|status|run`: 0 ok, 1 not running (status, stop), 2 usage, 3 failure."""
    try:
        action, args = _parse(argv)
    except SystemExit as leaving:  # argparse has printed the usage and the problem
        return EXIT_OK if leaving.code == 0 else EXIT_USAGE
    try:
        paths = prepare_runtime_directory()
        if action == "run":
            assert run is not None
            return run(paths, args)
        if action == "start":
            connection, started = ensure_daemon(
                paths, daemon_run_args(args["config"], args["log_file"], args["verbose"])
            )
            with connection:
                status = request(connection, DAEMON_STATUS_METHOD)
            if args["json"]:
                print(json.dumps({**status, "started": started is not None}, indent=2), file=out)
            else:
                print(f"{'started' if started else 'already running'}: {_describe(status)}", file=out)
            return EXIT_OK
        if action == "status":
            status = ask(paths, DAEMON_STATUS_METHOD)
            if status is None:
                if args["json"]:
                    print(json.dumps({"running": False, "socket": str(paths.listening_at)}), file=out)
                else:
                    print(f"lsp-hub daemon is not running (no daemon listens on {paths.listening_at})", file=out)
                return EXIT_NOT_RUNNING
            print(json.dumps(status, indent=2) if args["json"] else _describe(status), file=out)
            return EXIT_OK
        return _stop(paths, args["json"], out)
    except DaemonError as error:
        print(f"lsp-hub daemon {action}: {error}", file=err)
        return EXIT_FAILURE


def _stop(paths: RuntimePaths, as_json: bool, out: IO[str]) -> int:
    try:
        answer = ask(paths, DAEMON_STOP_METHOD)
    except DaemonError as error:
        if "closed the connection" not in str(error):
            raise
        answer = None  # it stopped before answering; the pid file's owner is gone or going
    if answer is None:
        print(
            json.dumps({"running": False, "socket": str(paths.listening_at)})
            if as_json
            else f"lsp-hub daemon is not running (no daemon listens on {paths.listening_at})",
            file=out,
        )
        return EXIT_NOT_RUNNING
    from lsp_hub.platform.processes import pid_alive

    pid = int(answer["pid"])
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while pid_alive(pid):
        if time.monotonic() > deadline:
            raise DaemonError(f"the daemon (pid {pid}) did not stop within {STOP_TIMEOUT_SECONDS:g} s")
        time.sleep(0.02)
    print(json.dumps({"stopped": True, "pid": pid}) if as_json else f"lsp-hub daemon (pid {pid}) stopped", file=out)
    return EXIT_OK
