"""Who may talk to the hub over the network, and what a client may choose.

Three rules, checked before a connection gets a session:
- a WebSocket handshake from a web page (it carries `Origin`) is refused unless that origin was allowed, and the
  `Host` header must name an address the hub was told it is reached by (a DNS-rebinding page names its own);
- a loopback connection whose peer socket belongs to another local user is refused (on Linux the owner of a TCP
  socket is in /proc/net/tcp and tcp6), and so is a client of the daemon's unix socket run by another user
  (SO_PEERCRED);
- only the client that started the hub (stdio) and same-user clients of the daemon's unix socket may choose
  programs: a TCP or WebSocket client's program-choosing settings are dropped like an untrusted project's.

Pure functions and small readers; no asyncio, no LSP.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
PROC_NET_TCP = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


@dataclass(frozen=True)
class ClientOrigin:
    """How a client reached the hub, and whether it speaks for the user who started it."""

    transport: str  # "stdio", "tcp", "ws", "unix"
    may_choose_programs: bool

    @classmethod
    def for_transport(cls, transport: str) -> ClientOrigin:
        # stdio: the editor started us, it is the user. A network client may be anyone who can reach the port.
        return cls(transport, may_choose_programs=transport in ("stdio", "unix"))


STDIO_CLIENT = ClientOrigin.for_transport("stdio")


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
def _decode_address(hex_address: str) -> tuple[str, int]:
    """An address of /proc/net/tcp[6] ("0100007F:1F90") as (ip, port); each 32-bit word is in host order."""
    hex_ip, hex_port = hex_address.split(":")
    raw = bytes.fromhex(hex_ip)
    if sys.byteorder == "little":
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(raw)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address), int(hex_port, 16)


def _canonical(endpoint: tuple[str, int]) -> tuple[str, int]:
    address = ipaddress.ip_address(endpoint[0].split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address), int(endpoint[1])


class PeerOwners:
    """Finds which local user owns the other end of a loopback TCP connection (Linux: /proc/net/tcp, tcp6)."""

    def __init__(self, tables: tuple[Path, ...] = PROC_NET_TCP) -> None:
        self.tables = tables

    def unavailable_reason(self) -> str | None:
        """Why owners cannot be determined here, or None when they can."""
        readable = [table for table in self.tables if os.access(table, os.R_OK)]
        if not readable:
            return f"cannot read {' or '.join(map(str, self.tables))} (not Linux?)"
        return None

    def uid_of(self, peer: tuple[str, int], local: tuple[str, int]) -> int | None:
        """The uid owning the socket whose local end is `peer` and remote end is `local`, if it is listed."""
        wanted = (_canonical(peer), _canonical(local))
        for table in self.tables:
            try:
                lines = table.read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                if len(fields) < 8:
                    continue
                try:
                    if (_decode_address(fields[1]), _decode_address(fields[2])) == wanted:
                        return int(fields[7])
                except ValueError:
                    continue
        return None

    def refusal(self, peer: tuple[str, int] | None, local: tuple[str, int] | None) -> str | None:
        """Why a connection from `peer` to our `local` end is refused: its owner is another local user."""
        if peer is None or local is None or not is_loopback(str(peer[0])):
            return None  # a remote peer has no local owner; binding off loopback was warned about at start-up
        owner = self.uid_of((str(peer[0]), int(peer[1])), (str(local[0]), int(local[1])))
        if owner is None:
            logger.info("could not find the owner of the connection from %s:%s; accepting it", peer[0], peer[1])
            return None
        if owner != os.getuid():
            return f"connection from {peer[0]}:{peer[1]} belongs to uid {owner}, not to this hub's user"
        return None


# ==================================================================================================== unix socket
def unix_peer_refusal(connection: socket.socket | None) -> str | None:
    """Why a client of the daemon's unix socket is refused: it runs as another user (SO_PEERCRED says who).

    The socket's mode (0600, in a 0700 directory) already keeps others out; this holds should those be loosened."""
    if connection is None:
        return "the connection has no socket to ask for its peer's credentials"
    try:
        credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError) as error:  # AttributeError: no SO_PEERCRED (not Linux)
        return f"cannot read the peer's credentials ({error})"
    pid, uid, _gid = struct.unpack("3i", credentials)
    if uid != os.getuid():
        return f"the client (pid {pid}) runs as uid {uid}, not as this hub's user (uid {os.getuid()})"
    return None
