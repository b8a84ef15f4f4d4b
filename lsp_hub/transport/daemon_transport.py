"""How clients reach the per-user daemon: its unix socket, or loopback TCP with a secret token.

asyncio serves no unix sockets on Windows, so there the daemon listens on 127.0.0.1 (a port the system picks) and
writes `daemon.endpoint` (JSON: host, port, token) in its private runtime directory, readable by the user only
(0600 on POSIX; on Windows the user's temporary directory is private to the user). Any local user can reach the
port, but only one who can read the file knows the token: a client's first line is `lsp-hub-token TOKEN`, and the
daemon answers `ok` or `refused: REASON` (then closes) before any LSP. The same design runs on Linux and macOS
with LSP_HUB_DAEMON_TRANSPORT=tcp-token, which is how the test suite proves it.

Standard library only; no asyncio (the daemon side reads the line itself and asks `token_refusal`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

TRANSPORT_ENV = "LSP_HUB_DAEMON_TRANSPORT"
UNIX, TCP_TOKEN = "unix", "tcp-token"
TOKEN_PREFIX = b"lsp-hub-token "
MAX_GREETING_BYTES = 256  # the greeting line, prefix and 64 hex digits, with room to spare
GREETING_TIMEOUT_SECONDS = 10.0
ACCEPTED = b"ok\r\n"
LOOPBACK = "127.0.0.1"


class TransportError(Exception):
    """One line for the user: a bad transport setting, an unreadable endpoint file, a refused token."""


def chosen_transport(environ: Mapping[str, str] = os.environ) -> str:
    """`unix`, or `tcp-token` (LSP_HUB_DAEMON_TRANSPORT; the default where the system offers no unix sockets, as
    on Windows, or asyncio serves none)."""
    value = environ.get(TRANSPORT_ENV, "").strip().lower()
    unix_served = hasattr(socket, "AF_UNIX") and sys.platform != "win32"
    if not value:
        return UNIX if unix_served else TCP_TOKEN
    if value not in (UNIX, TCP_TOKEN) or (value == UNIX and not unix_served):
        allowed = f"{UNIX} or {TCP_TOKEN}" if unix_served else TCP_TOKEN
        raise TransportError(f"{TRANSPORT_ENV}={value!r} is not a daemon transport here (use {allowed})")
    return value


@dataclass(frozen=True)
class TokenEndpoint:
    host: str
    port: int
    token: str

    def describe(self) -> str:
        return f"tcp://{self.host}:{self.port}"


def new_token() -> str:
    import secrets  # the daemon's side only: `lsp-hub --connect` starts without it

    return secrets.token_hex(32)


def write_endpoint(path: Path, endpoint: TokenEndpoint) -> None:
    """Publish the endpoint: written whole under a temporary name created 0600, then renamed into place, so a
    reader never sees half a file and nobody else ever could read it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(descriptor, json.dumps({"host": endpoint.host, "port": endpoint.port,
                                         "token": endpoint.token}).encode())
    finally:
        os.close(descriptor)
    os.replace(temporary, path)


def read_endpoint(path: Path) -> TokenEndpoint | None:
    """The published endpoint, or None when no daemon published one (or what is there is not one)."""
    try:
        record = json.loads(path.read_bytes())
        return TokenEndpoint(str(record["host"]), int(record["port"]), str(record["token"]))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):
        return None  # a file cut short by a crash: as good as absent, the next daemon replaces it
    except OSError as error:
        raise TransportError(f"cannot read {path}: {error.strerror or error}") from None


def connect_with_token(path: Path, timeout: float) -> socket.socket | None:
    """A connection to the daemon published at `path`, the token accepted; None when none listens there."""
    endpoint = read_endpoint(path)
    if endpoint is None:
        return None
    try:
        client = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout)
    except ConnectionRefusedError:
        return None  # a dead daemon's file: the next daemon replaces it
    except OSError as error:
        raise TransportError(f"cannot connect to {endpoint.describe()}: {error.strerror or error}") from None
    try:
        client.sendall(TOKEN_PREFIX + endpoint.token.encode() + b"\r\n")
        answer = _read_line(client)
    except OSError as error:
        client.close()
        raise TransportError(f"lost the connection to {endpoint.describe()}: {error.strerror or error}") from None
    if answer != ACCEPTED:
        client.close()
        reason = answer.decode(errors="replace").strip().removeprefix("refused: ") or "it closed the connection"
        raise TransportError(f"the daemon at {endpoint.describe()} refused this connection: {reason}")
    client.settimeout(None)
    return client


def _read_line(connection: socket.socket) -> bytes:
    line = b""
    while not line.endswith(b"\n") and len(line) < MAX_GREETING_BYTES:
        chunk = connection.recv(1)
        if not chunk:
            break
        line += chunk
    return line


def token_refusal(greeting: bytes, token: str) -> str | None:
    """Why the daemon refuses a client whose first line is `greeting`, or None when it holds the token."""
    if not greeting.startswith(TOKEN_PREFIX):
        return "no token (a client of this daemon sends the token in daemon.endpoint first)"
    import hmac  # the daemon's side only

    presented = greeting[len(TOKEN_PREFIX):].strip()
    if not hmac.compare_digest(presented, token.encode()):
        return "wrong token (the daemon.endpoint read was not this daemon's)"
    return None
