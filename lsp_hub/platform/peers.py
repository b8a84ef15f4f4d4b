"""Who is on the other end of a local connection.

- A unix socket's peer: Linux `SO_PEERCRED` (uid and pid); macOS and the BSDs `getpeereid` (uid); where neither
  exists, nothing (`None` with the reason), and the caller falls back on the socket file's permissions.
- A loopback TCP peer's owner: Linux `/proc/net/tcp` and `tcp6` (the uid of each socket); elsewhere psutil's
  connection table (the owning process, then its user), where the system lets it tell.

Users are compared in `users.current_user()`'s form: a uid as text on POSIX, an account name on Windows.
"""

from __future__ import annotations

import ctypes
import ipaddress
import logging
import socket
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lsp_hub.platform.users import current_user

logger = logging.getLogger(__name__)

PROC_NET_TCP = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
Endpoint = tuple[str, int]


@dataclass(frozen=True)
class PeerCredentials:
    user: str  # as users.current_user() names users
    pid: int | None  # None where the system does not say (getpeereid)


# ==================================================================================================== unix sockets
def unix_peer_credentials(connection: socket.socket) -> PeerCredentials | str:
    """The credentials of a unix socket's peer, or why they cannot be read here."""
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is not None:  # Linux
        try:
            raw = connection.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
        except OSError as error:
            return f"SO_PEERCRED failed: {error}"
        pid, uid, _gid = struct.unpack("3i", raw)
        return PeerCredentials(str(uid), pid)
    getpeereid = _libc_function("getpeereid")
    if getpeereid is not None:  # macOS, the BSDs
        uid, gid = ctypes.c_uint32(), ctypes.c_uint32()
        if getpeereid(connection.fileno(), ctypes.byref(uid), ctypes.byref(gid)) != 0:
            return f"getpeereid failed (errno {ctypes.get_errno()})"
        return PeerCredentials(str(uid.value), None)
    return "this system offers neither SO_PEERCRED nor getpeereid"


def _libc_function(name: str) -> Callable[..., int] | None:
    if sys.platform == "win32":
        return None
    try:
        function: Callable[..., int] = getattr(ctypes.CDLL(None, use_errno=True), name)
        return function
    except (OSError, AttributeError):
        return None


# ==================================================================================================== loopback TCP
def canonical_endpoint(endpoint: Sequence[object]) -> Endpoint:
    """(address, port) with an IPv4-mapped IPv6 address as IPv4 and no scope id."""
    address = ipaddress.ip_address(str(endpoint[0]).split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address), int(str(endpoint[1]))


def _decode_proc_address(hex_address: str) -> Endpoint:
    """An address of /proc/net/tcp[6] ("0100007F:1F90") as (ip, port); each 32-bit word is in host order."""
    hex_ip, hex_port = hex_address.split(":")
    raw = bytes.fromhex(hex_ip)
    if sys.byteorder == "little":
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return canonical_endpoint((str(ipaddress.ip_address(raw)), int(hex_port, 16)))


class ProcNetTcp:
    """Socket owners as Linux lists them in /proc/net/tcp and tcp6 (the tables can be others, for tests)."""

    def __init__(self, tables: tuple[Path, ...] = PROC_NET_TCP) -> None:
        self.tables = tables

    def unavailable_reason(self) -> str | None:
        if not any(table.is_file() for table in self.tables):
            return f"{' and '.join(map(str, self.tables))} do not exist (not Linux)"
        return None

    def owner_of(self, local_end: Endpoint, remote_end: Endpoint) -> str | None:
        wanted = (canonical_endpoint(local_end), canonical_endpoint(remote_end))
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
                    if (_decode_proc_address(fields[1]), _decode_proc_address(fields[2])) == wanted:
                        return str(int(fields[7]))
                except ValueError:
                    continue
        return None


NOT_ONE_OF_OURS = "(not this user: none of its processes holds the socket)"


class PsutilConnections:
    """Socket owners through psutil's connection table: the owning process, then its user (macOS, Windows).

    macOS lists other users' sockets only to root: there, this user's own processes are searched instead, and a
    loopback socket none of them holds is another user's."""

    def unavailable_reason(self) -> str | None:
        try:
            import psutil  # noqa: F401 - only whether it is there
        except ImportError:
            return "psutil is not installed"
        return None

    def owner_of(self, local_end: Endpoint, remote_end: Endpoint) -> str | None:
        try:
            import psutil
        except ImportError:
            return None
        wanted = (canonical_endpoint(local_end), canonical_endpoint(remote_end))
        try:
            connections = psutil.net_connections(kind="tcp")
        except psutil.AccessDenied:  # macOS lists other users' sockets only to root
            return self._among_our_processes(wanted)
        except psutil.Error as error:
            logger.info("psutil cannot list the TCP connections: %s", error)
            return None
        for connection in connections:
            if not connection.laddr or not connection.raddr or connection.pid is None:
                continue
            try:
                if (canonical_endpoint(connection.laddr), canonical_endpoint(connection.raddr)) != wanted:
                    continue
                process = psutil.Process(connection.pid)
                if sys.platform == "win32":
                    return str(process.username()).rsplit("\\", 1)[-1]
                return str(process.uids().real)
            except (psutil.Error, ValueError):
                return None
        return None


    @staticmethod
    def _among_our_processes(wanted: tuple[Endpoint, Endpoint]) -> str | None:
        import psutil

        me = current_user()
        for process in psutil.process_iter():
            try:
                if sys.platform != "win32" and str(process.uids().real) != me:
                    continue
                for connection in process.net_connections(kind="tcp"):
                    if connection.laddr and connection.raddr and (
                            canonical_endpoint(connection.laddr), canonical_endpoint(connection.raddr)) == wanted:
                        return me
            except (psutil.Error, ValueError):
                continue
        return NOT_ONE_OF_OURS


def tcp_owner_source(tables: tuple[Path, ...] | None = None) -> ProcNetTcp | PsutilConnections:
    """Where this system says who owns a TCP socket: /proc where it exists (or `tables`), else psutil."""
    proc = ProcNetTcp(tables or PROC_NET_TCP)
    if tables is not None or proc.unavailable_reason() is None:
        return proc
    return PsutilConnections()
