"""Transports: stdio (one client), TCP and WebSocket daemons, the per-user daemon's unix socket or token TCP (many
clients, one session each), and socket pairs made by the hub's own process (`lsp-hub mcp --no-daemon`).

Each connection gets its own endpoint (`jsonrpc.RawProtocol`), read by `jsonrpc.read_loop`, and `Session`. A
connection that closes, an `exit`, SIGTERM or SIGINT stop the backends that connection started; no child
process outlives the hub. Network connections pass `transport_security` first: another local user's connection
and a web page's WebSocket handshake are refused, and a network client's session may not choose programs. A client
of the unix socket that runs as this user may (others are refused); it may also ask the hub itself for the
daemon's status or to stop (`HubRequests`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from lsp_hub import __version__
from lsp_hub.platform import paths
from lsp_hub.proxy.session import Session, SessionExtension
from lsp_hub.proxy.workspace import Workspaces
from lsp_hub.transport.daemon_client import DAEMON_STATUS_METHOD, DAEMON_STOP_METHOD
from lsp_hub.transport.daemon_transport import ACCEPTED, GREETING_TIMEOUT_SECONDS, LOOPBACK, token_refusal
from lsp_hub.transport.jsonrpc import (
    FileWriter,
    FrameReader,
    MessageSource,
    MsgId,
    RawProtocol,
    WebSocketMessages,
    WebSocketWriter,
    read_loop,
    stdin_stream,
    widen_pipe,
)
from lsp_hub.transport.transport_security import (
    IN_PROCESS_CLIENT,
    STDIO_CLIENT,
    ClientOrigin,
    HandshakePolicy,
    PeerOwners,
    unix_peer_refusal,
)

logger = logging.getLogger(__name__)

ExtensionFactory = Callable[[], list[SessionExtension]]
ConnectionHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
STREAM_LIMIT = 64 * 1024 * 1024


# A peer that closed or reset its end: routine for a client that leaves as soon as it has its answer.
CLIENT_LEFT = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


def _take_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Move the LSP stream off file descriptors 0 and 1, onto private ones no child process inherits.

    The index's worker processes (and anything else started) inherit fds 0-2: holding the client's pipes, they
    would keep the editor from seeing the hub end, and any stray write of theirs, or a stray print() here, would
    land in the protocol stream. Afterwards fd 0 reads /dev/null and fd 1 writes to stderr (the log)."""
    protocol_in = os.dup(0)  # os.dup gives non-inheritable descriptors (PEP 446)
    protocol_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return os.fdopen(protocol_in, "rb", buffering=0), os.fdopen(protocol_out, "wb")


class HubRequests:
    """Stands in front of one daemon connection's session: answers the daemon's own requests (any time, even
    before initialize), passes everything else to the session, and notes whether the peer is an LSP client
    (a connection that only asked for the status must not count as activity for the idle timer)."""

    def __init__(self, hub: Hub, session: Session) -> None:
        self.hub = hub
        self.session = session
        self.is_lsp_client = False

    def on_request(self, msg_id: MsgId, method: str, params: Any) -> Any:
        if method == DAEMON_STATUS_METHOD:
            return self.hub.daemon_status(asking=self.session)
        if method == DAEMON_STOP_METHOD:
            logger.info("asked to stop by a client of the daemon's socket")
            # After this answer is written: stopping closes every session, this one included.
            asyncio.get_running_loop().call_soon(self.hub.stop_soon)
            return {"pid": os.getpid()}
        self.is_lsp_client = True
        return self.session.on_request(msg_id, method, params)

    def on_notification(self, method: str, params: Any) -> None:
        self.is_lsp_client = True
        self.session.on_notification(method, params)


class IdleExit:
    """Ends the daemon once it has had no client for `seconds` (0: never). Connections that are not LSP clients
    (a status query) neither reset nor hold off the count once they have gone."""

    def __init__(self, seconds: float, on_idle: Callable[[], None]) -> None:
        self.seconds = seconds
        self.on_idle = on_idle
        self.connections = 0
        self.idle_since = time.monotonic()
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._arm()

    def connected(self) -> None:
        self.connections += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def disconnected(self, *, was_lsp_client: bool) -> None:
        self.connections -= 1
        if was_lsp_client:
            self.idle_since = time.monotonic()
        self._arm()

    def _arm(self) -> None:
        if self.seconds <= 0 or self.connections > 0:
            return
        delay = max(0.0, self.idle_since + self.seconds - time.monotonic())
        self._timer = asyncio.get_running_loop().call_later(delay, self._expire)

    def _expire(self) -> None:
        self._timer = None
        if self.connections == 0:
            logger.warning("no client for %g s: the daemon exits", self.seconds)
            self.on_idle()


def _within(path: str, folder: str) -> bool:
    return paths.is_within(path, folder)


class Hub:
    """Everything one `lsp-hub` process serves: its sessions, whatever the transport."""

    def __init__(self, *, cli_config: Path | None, extensions: ExtensionFactory | None = None,
                 handshake: HandshakePolicy | None = None, peer_owners: PeerOwners | None = None) -> None:
        self.cli_config = cli_config
        self.extensions = extensions or (lambda: [])
        self.handshake = handshake or HandshakePolicy()
        self.peer_owners = peer_owners or PeerOwners()
        self.sessions: set[Session] = set()
        # Sessions of one root under one configuration share a workspace (its servers, diagnostics, index). On the
        # daemons it outlives its last session until its servers stop through their idle timer.
        self.workspaces = Workspaces()
        self.stopping = asyncio.Event()
        self.daemon_details: dict[str, Any] = {}  # what daemon_status tells besides the sessions (socket, log)
        self._started = time.monotonic()
        self._stop_task: asyncio.Future[None] | None = None
        self._unix_listener: asyncio.AbstractServer | None = None
        self._in_process_clients: set[asyncio.Task[None]] = set()

    async def serve_stream(
        self, reader: MessageSource, protocol: RawProtocol, *, client: ClientOrigin,
        on_session: Callable[[Session], None] | None = None,
    ) -> int:
        """Serve one connection until the client exits or disconnects; returns the LSP exit code.

        `on_session` sees the session before any message is read (the daemon puts `HubRequests` in front)."""
        exited = asyncio.Event()
        exit_code = 1

        def on_exit(code: int) -> None:
            nonlocal exit_code
            exit_code = code
            exited.set()

        session = Session(protocol, cli_config=self.cli_config, on_exit=on_exit, extensions=self.extensions(),
                          client=client, workspaces=self.workspaces)
        self.sessions.add(session)
        if on_session is not None:
            on_session(session)
        stop_reading = threading.Event()
        reading = asyncio.ensure_future(read_loop(reader, protocol, stop_reading))
        stopping = asyncio.ensure_future(self.stopping.wait())
        waiting = asyncio.ensure_future(exited.wait())
        try:
            await asyncio.wait([reading, waiting, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop_reading.set()
            if not exited.is_set():
                await session.close(exit_code=0 if session.state == "shutdown" else 1)
            for task in (reading, waiting, stopping):
                task.cancel()
            self.sessions.discard(session)
            protocol.flush()  # before the transport closes or the process leaves
        if reading.done() and not reading.cancelled() and (error := reading.exception()) is not None:
            if isinstance(error, CLIENT_LEFT):  # routine: a client that closes as soon as it has its answer
                logger.debug("the client left: %s", error)
            else:
                logger.error("connection ended with an error: %s", error)
        return exit_code

    async def stop(self) -> None:
        """SIGTERM/SIGINT: stop every session's backends, then let the transports end."""
        if self._unix_listener is not None:
            # First refuse new clients: a starter that finds no listener starts a new daemon (which waits for
            # this one to let go of daemon.pid) instead of getting a session that is closed at once.
            self._unix_listener.close()
        await asyncio.gather(*(session.close(exit_code=1) for session in list(self.sessions)),
                             return_exceptions=True)
        await self.workspaces.stop_all()  # those kept warm without a session too
        self.stopping.set()

    def stop_soon(self) -> None:
        if self._stop_task is None:
            self._stop_task = asyncio.ensure_future(self.stop())

    def daemon_status(self, *, asking: Session | None = None) -> dict[str, Any]:
        """`lspHub/daemonStatus`: who is connected and which servers run, per workspace root.

        A server is listed under the workspace folder (of a session of its workspace) that holds its root, else
        under its own root; a workspace kept warm without a session is listed under its own folders."""
        workspaces: dict[str, list[dict[str, Any]]] = {}
        clients = [session for session in self.sessions if session is not asking]
        for workspace in self.workspaces:
            folders = [f for session in workspace.sessions for f in getattr(session, "folders", [])] or \
                workspace.folders
            for folder in folders:
                workspaces.setdefault(folder, [])
            for server in workspace.server_statuses():
                folder = next((f for f in folders if _within(str(server["root"]), f)), str(server["root"]))
                workspaces.setdefault(folder, []).append(server)
        return {
            "running": True,
            "pid": os.getpid(),
            "version": __version__,
            **self.daemon_details,
            "uptimeSeconds": round(time.monotonic() - self._started, 1),
            "clients": len(clients),
            "workspaces": [{"root": root, "servers": servers} for root, servers in sorted(workspaces.items())],
        }

    def kill_everything(self) -> None:
        self.workspaces.kill_all()

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        hangup = getattr(signal, "SIGHUP", None)  # none on Windows
        for sig in (signal.SIGTERM, signal.SIGINT, *([hangup] if hangup is not None else [])):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: int) -> None:
        logger.info("received signal %s: stopping all servers", sig)
        self.stop_soon()

    # ------------------------------------------------------------------------------------------------ transports
    async def serve_stdio(self) -> int:
        self.install_signal_handlers()
        protocol = RawProtocol()
        protocol_in, protocol_out = _take_stdio()
        widen_pipe(protocol_in)
        widen_pipe(protocol_out)
        reader = await stdin_stream(protocol_in)
        protocol.set_writer(FileWriter(protocol_out))
        try:
            return await self.serve_stream(reader, protocol, client=STDIO_CLIENT)
        finally:
            self.kill_everything()

    def _check_peer_owners_once(self) -> None:
        reason = self.peer_owners.unavailable_reason()
        if reason is not None:
            logger.warning("cannot tell which local user a connection comes from (%s): connections from other "
                           "users on this machine will be accepted", reason)

    async def serve_tcp(self, host: str, port: int, ready: Callable[[int], None] | None = None) -> int:
        self.install_signal_handlers()
        self._check_peer_owners_once()
        client = ClientOrigin.for_transport("tcp")
        self.workspaces.keep_warm = True

        async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            peer = writer.get_extra_info("peername")
            refusal = self.peer_owners.refusal(peer, writer.get_extra_info("sockname"))
            if refusal is not None:
                logger.warning("refused a TCP client: %s", refusal)
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
                return
            logger.info("client connected from %s", peer)
            try:
                await self._serve_streams(reader, writer, client)
            finally:
                logger.info("client %s disconnected", peer)

        server = await asyncio.start_server(on_connection, host, port, limit=64 * 1024 * 1024)
        bound = server.sockets[0].getsockname()[1]
        logger.info("lsp-hub listening on tcp://%s:%s", host, bound)
        if ready:
            ready(bound)
        async with server:
            await self.stopping.wait()
        self.kill_everything()
        return 0

    async def serve_ws(self, host: str, port: int, ready: Callable[[int], None] | None = None) -> int:
        from http import HTTPStatus

        from websockets.asyncio.server import ServerConnection, serve
        from websockets.http11 import Request, Response

        self.install_signal_handlers()
        self._check_peer_owners_once()
        client = ClientOrigin.for_transport("ws")
        self.workspaces.keep_warm = True

        def check_handshake(connection: ServerConnection, request: Request) -> Response | None:
            # Before the upgrade: a refused page or user never gets a session.
            refusal = self.handshake.refusal(request.headers.get("Origin"), request.headers.get("Host")) or \
                self.peer_owners.refusal(connection.remote_address, connection.local_address)
            if refusal is None:
                return None
            logger.warning("refused a WebSocket handshake from %s: %s", connection.remote_address, refusal)
            return connection.respond(HTTPStatus.FORBIDDEN, f"lsp-hub: {refusal}\n")

        async def on_connection(websocket: ServerConnection) -> None:
            logger.info("websocket client connected from %s", websocket.remote_address)
            protocol = RawProtocol()
            protocol.set_writer(WebSocketWriter(websocket), include_headers=False)
            try:
                await self.serve_stream(WebSocketMessages(websocket), protocol, client=client)
            finally:
                with contextlib.suppress(Exception):
                    await websocket.close()

        async with serve(on_connection, host, port, max_size=None, process_request=check_handshake) as server:
            bound = next(iter(server.sockets)).getsockname()[1]
            logger.info("lsp-hub listening on ws://%s:%s", host, bound)
            if ready:
                ready(bound)
            await self.stopping.wait()
        self.kill_everything()
        return 0

    async def serve_in_process(self) -> int:
        """A hub inside another command (`lsp-hub mcp --no-daemon`): its clients come through `accept_socket`;
        it serves until stopped (SIGTERM, SIGINT), keeping its servers warm between connections."""
        self.install_signal_handlers()
        self.workspaces.keep_warm = True
        await self.stopping.wait()
        self.kill_everything()
        return 0

    def accept_socket(self, connection: socket.socket) -> None:
        """Serve a client on one end of a socket pair this process made (the other end is this process's own, so
        it speaks for the user as stdio does). On the hub's event loop; from another thread, through
        `loop.call_soon_threadsafe`. A socket pair exists on every system, unix sockets do not."""
        task = asyncio.ensure_future(self._serve_socket(connection))
        self._in_process_clients.add(task)
        task.add_done_callback(self._in_process_clients.discard)

    async def _serve_socket(self, connection: socket.socket) -> None:
        reader, writer = await asyncio.open_connection(sock=connection, limit=STREAM_LIMIT)
        await self._serve_streams(reader, writer, IN_PROCESS_CLIENT)

    async def _serve_streams(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: ClientOrigin
    ) -> None:
        """One client over a connection's streams, closed after it; the same strict framing as stdio (a broken
        header is logged and reading resynchronizes)."""
        protocol = RawProtocol()
        protocol.set_writer(writer)
        try:
            await self.serve_stream(FrameReader(reader), protocol, client=client)
        finally:
            with contextlib.suppress(Exception):
                writer.close()
                await writer.wait_closed()

    async def serve_unix(self, path: Path, *, idle_exit_seconds: float,
                         details: Mapping[str, Any] | None = None) -> int:
        """The per-user daemon: serve clients of the unix socket at `path` (its directory already checked private)
        until stopped, or until no client has come for `idle_exit_seconds`."""

        async def refusal(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str | None:
            return unix_peer_refusal(writer.get_extra_info("socket"))

        async def listen(on_connection: ConnectionHandler) -> tuple[asyncio.AbstractServer, str]:
            if sys.platform == "win32" or not hasattr(socket, "AF_UNIX"):  # asyncio serves none on Windows
                raise OSError("this system offers no unix sockets (LSP_HUB_DAEMON_TRANSPORT=tcp-token serves)")
            # Created 0600 (the umask applies to bind; nothing else runs yet), and chmod'ed to be sure.
            previous_umask = os.umask(0o177)
            try:
                server = await asyncio.start_unix_server(on_connection, path=os.fspath(path), limit=STREAM_LIMIT)
            finally:
                os.umask(previous_umask)
            os.chmod(path, 0o600)
            return server, str(path)

        return await self._serve_daemon(listen, refusal, ClientOrigin.for_transport("unix"),
                                        idle_exit_seconds=idle_exit_seconds, details=details)

    async def serve_tcp_token(self, token: str, publish: Callable[[int], str], *, idle_exit_seconds: float,
                              details: Mapping[str, Any] | None = None) -> int:
        """The per-user daemon on 127.0.0.1 (Windows, or LSP_HUB_DAEMON_TRANSPORT=tcp-token): a client is served
        once its first line presents `token`, which only the user can read (`daemon_transport.py`). `publish`
        writes the endpoint file for the port the system picked and says where it is."""

        async def refusal(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str | None:
            try:
                greeting = await asyncio.wait_for(reader.readline(), GREETING_TIMEOUT_SECONDS)
            except (TimeoutError, ValueError, *CLIENT_LEFT):  # ValueError: a "line" longer than the limit
                greeting = b""
            reason = token_refusal(greeting, token) or self.peer_owners.refusal(
                writer.get_extra_info("peername"), writer.get_extra_info("sockname"))
            with contextlib.suppress(*CLIENT_LEFT):
                writer.write(ACCEPTED if reason is None else f"refused: {reason}\r\n".encode())
                await writer.drain()
            return reason

        async def listen(on_connection: ConnectionHandler) -> tuple[asyncio.AbstractServer, str]:
            server = await asyncio.start_server(on_connection, LOOPBACK, 0, limit=STREAM_LIMIT)
            return server, publish(server.sockets[0].getsockname()[1])

        return await self._serve_daemon(listen, refusal, ClientOrigin.for_transport("tcp-token"),
                                        idle_exit_seconds=idle_exit_seconds, details=details)

    async def _serve_daemon(self, listen: Callable[[ConnectionHandler], Awaitable[tuple[asyncio.AbstractServer, str]]],
                            refusal: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[str | None]],
                            client: ClientOrigin, *, idle_exit_seconds: float,
                            details: Mapping[str, Any] | None) -> int:
        """Serve the daemon's clients, each checked by `refusal` first, until stopped or idle."""
        self.install_signal_handlers()
        self.workspaces.keep_warm = True
        idle = IdleExit(idle_exit_seconds, self.stop_soon)

        async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            reason = await refusal(reader, writer)
            if reason is not None:
                logger.warning("refused a client of the daemon's socket: %s", reason)
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
                return
            idle.connected()
            front: list[HubRequests] = []

            def put_in_front(session: Session) -> None:
                front.append(HubRequests(self, session))
                session.protocol.handler = front[0]

            protocol = RawProtocol()
            protocol.set_writer(writer)
            try:
                await self.serve_stream(FrameReader(reader), protocol, client=client, on_session=put_in_front)
            finally:
                with contextlib.suppress(Exception):
                    writer.close()
                    await writer.wait_closed()
                idle.disconnected(was_lsp_client=bool(front) and front[0].is_lsp_client)

        server, where = await listen(on_connection)
        self.daemon_details = {"socket": where, "idleExitSeconds": idle_exit_seconds, **(details or {})}
        self._unix_listener = server
        logger.info("lsp-hub daemon (pid %s) listening on %s", os.getpid(), where)
        idle.start()
        async with server:
            await self.stopping.wait()
        self.kill_everything()
        return 0
