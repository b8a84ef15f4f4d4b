"""Who may talk to the hub over the network, and what a client may choose.

Three rules, checked before a connection gets a session:
- a WebSocket handshake from a web page (it carries `Origin`) is refused unless that origin was allowed, and the
  `Host` header must name an address the hub was told it is reached by (a DNS-rebinding page names its own);
- a loopback connection whose peer socket belongs to another local user is refused (`platform.peers` finds the
  owner), and so is a client of the daemon's unix socket run by another user (its peer credentials, else the
  socket's permissions);
- only the client that started the hub (stdio) and same-user clients of the daemon (its unix socket, or its
  token on loopback TCP) may choose programs: a TCP or WebSocket client's program-choosing settings are dropped
  like an untrusted project's.

Pure functions and small readers; no asyncio, no LSP.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lsp_hub.platform.peers import PeerCredentials, tcp_owner_source, unix_peer_credentials
from lsp_hub.platform.users import current_user, describe_user, owned_by_current_user

logger = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
# Transports whose clients speak for the user: the editor that started us, and the daemon's clients proven to be
# the user's (unix-socket credentials, or the token only the user can read), and a socket pair's end the hub's own
# process made (`lsp-hub mcp --no-daemon`).
USER_TRANSPORTS = ("stdio", "unix", "tcp-token", "in-process")


@dataclass(frozen=True)
class ClientOrigin:
    """How a client reached the hub, and whether it speaks for the user who started it."""

    transport: str  # "stdio", "tcp", "ws", "unix", "tcp-token", "in-process"
    may_choose_programs: bool

    @classmethod
    def for_transport(cls, transport: str) -> ClientOrigin:
        # stdio: the editor started us, it is the user. A network client may be anyone who can reach the port.
        return cls(transport, may_choose_programs=transport in USER_TRANSPORTS)


STDIO_CLIENT = ClientOrigin.for_transport("stdio")
IN_PROCESS_CLIENT = ClientOrigin.for_transport("in-process")  # a socket pair's end made by the hub's own process


def is_loopback(host: str) -> bool:
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def exposure_warning(host: str) -> str | None:
    """What binding `host` risks, for a host that is not loopback."""
    if is_loopback(host):
        return None
    return (f"lsp-hub: listening on {host}, not a loopback address: anyone who can reach it can connect, read what "
            "the servers and the index read in the workspaces they name, and use your language servers as you. "
            "Bind to 127.0.0.1 unless you mean this.")


# ==================================================================================================== WebSocket
def _normalize_origin(origin: str) -> str:
    return origin.strip().rstrip("/").lower()


def _host_name(host_header: str) -> str:
    """The host part of a Host header: `[::1]:2087` -> `::1`, `LocalHost.:80` -> `localhost`."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


@dataclass(frozen=True)
class HandshakePolicy:
    """Which `Origin` and `Host` headers a WebSocket handshake may carry."""

    allowed_origins: frozenset[str] = frozenset()
    allowed_hosts: frozenset[str] = LOOPBACK_NAMES

    @classmethod
    def create(cls, *, bind_host: str, origins: Iterable[str] = (), hosts: Iterable[str] = ()) -> HandshakePolicy:
        names = set(LOOPBACK_NAMES) | {_host_name(bind_host)} | {_host_name(host) for host in hosts}
        return cls(frozenset(_normalize_origin(origin) for origin in origins), frozenset(names))

    def refusal(self, origin: str | None, host_header: str | None) -> str | None:
        """Why a handshake with these headers is refused, or None to accept it."""
        if origin is not None and _normalize_origin(origin) not in self.allowed_origins:
            # Browsers send Origin on every WebSocket handshake; other clients do not.
            return f"Origin {origin!r} is not allowed (allow it with --allow-origin {origin})"
        if host_header is None:
            return "no Host header"
        if _host_name(host_header) not in self.allowed_hosts:
            return f"Host {host_header!r} is not an address of this hub (allow it with --allow-host)"
        return None


# ==================================================================================================== peers
class PeerOwners:
    """Finds which local user owns the other end of a loopback TCP connection (`platform.peers`: /proc/net/tcp on
    Linux, psutil elsewhere; `tables` stand in for /proc in tests)."""

    def __init__(self, tables: tuple[Path, ...] | None = None) -> None:
        self.source = tcp_owner_source(tables)

    def unavailable_reason(self) -> str | None:
        """Why owners cannot be determined here, or None when they can."""
        return self.source.unavailable_reason()

    def owner_of(self, peer: tuple[str, int], local: tuple[str, int]) -> str | None:
        """The user owning the socket whose local end is `peer` and remote end is `local`, if it is listed."""
        return self.source.owner_of(peer, local)

    def refusal(self, peer: tuple[str, int] | None, local: tuple[str, int] | None) -> str | None:
        """Why a connection from `peer` to our `local` end is refused: its owner is another local user."""
        if peer is None or local is None or not is_loopback(str(peer[0])):
            return None  # a remote peer has no local owner; binding off loopback was warned about at start-up
        owner = self.owner_of((str(peer[0]), int(peer[1])), (str(local[0]), int(local[1])))
        if owner is None:
            logger.info("could not find the owner of the connection from %s:%s; accepting it", peer[0], peer[1])
            return None
        if owner != current_user():
            return f"connection from {peer[0]}:{peer[1]} belongs to {describe_user(owner)}, not to this hub's user"
        return None


# ==================================================================================================== unix socket
def unix_peer_refusal(connection: socket.socket | None) -> str | None:
    """Why a client of the daemon's unix socket is refused: it runs as another user (its credentials say who).

    Where the system cannot tell a peer's credentials, the socket's permissions decide: a socket file of ours,
    0600, in a directory of ours that only we may enter, cannot be reached by another user; anything looser is
    refused, since the peer could then be anyone."""
    if connection is None:
        return "the connection has no socket to ask for its peer's credentials"
    credentials = unix_peer_credentials(connection)
    if isinstance(credentials, PeerCredentials):
        if credentials.user != current_user():
            client = f"the client (pid {credentials.pid})" if credentials.pid is not None else "the client"
            return f"{client} runs as {describe_user(credentials.user)}, not as this hub's user " \
                f"({describe_user(current_user())})"
        return None
    return _socket_file_refusal(connection, cannot_tell=credentials)


def _socket_file_refusal(connection: socket.socket, cannot_tell: str) -> str | None:
    try:
        path = Path(connection.getsockname())
        socket_info, directory_info = os.lstat(path), os.lstat(path.parent)
    except (OSError, TypeError) as error:
        return f"cannot read the peer's credentials ({cannot_tell}) nor check the socket's permissions ({error})"
    looser = [f"{name} {oct(stat.S_IMODE(info.st_mode))}" for name, info, private in (
        ("socket", socket_info, 0o600), ("directory", directory_info, 0o700))
        if not owned_by_current_user(info.st_uid) or stat.S_IMODE(info.st_mode) & ~private]
    if looser:
        return f"cannot read the peer's credentials ({cannot_tell}) and the socket is not private to this user " \
            f"({', '.join(looser)}): the client could be anyone"
    return None
