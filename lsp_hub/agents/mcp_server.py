"""`lsp-hub mcp`: the hub as an MCP server, for coding agents (the official SDK's `MCPServer`).

    lsp-hub mcp [--root DIR] [--no-daemon | --socket PATH] [--http PORT] [--fence] [--timeout S]

This module is the command: its arguments, and the hub and transport it serves the tools (`mcp_tools.py`) over:
the user's daemon (started when absent), `--socket PATH`, or with `--no-daemon` a hub on this event loop, reached
through socket pairs; stdio, or streamable HTTP on 127.0.0.1 for this user only (`--http`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import sys
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from lsp_hub.agents import query
from lsp_hub.agents.mcp_tools import Tools, build_server

logger = logging.getLogger("lsp_hub.mcp")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lsp-hub mcp",
        description=(
            "An MCP server (stdio, or streamable HTTP with --http) giving agents the hub's language servers and "
            "index, and writes that are checked before and after they land."
        ),
    )
    parser.add_argument(
        "--root", type=Path, help="the workspace (default: the client's first root, else the current directory)"
    )
    hub = parser.add_mutually_exclusive_group()
    hub.add_argument(
        "--no-daemon",
        action="store_true",
        help="host the hub in this process instead of using the "
        "user's daemon (servers are not shared with editors or other agents)",
    )
    hub.add_argument(
        "--socket",
        default=os.environ.get("LSP_HUB_SOCKET"),
        help="the hub listening on this unix socket, or a daemon's endpoint file (default $LSP_HUB_SOCKET, else "
        "the daemon)",
    )
    parser.add_argument(
        "--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio"
    )
    parser.add_argument(
        "--fence",
        action="store_true",
        help="wrap text from the repository (source lines, hover "
        'docs, diagnostic messages) in <untrusted-data source="repository">...</untrusted-data>',
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds to wait for the hub per request (and for diagnostics after a write); default 30",
    )
    parser.add_argument("--config", type=Path, help="--no-daemon: a configuration file for the hub")
    parser.add_argument("--log-file", type=Path, help="write the log here (default: stderr)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging")
    return parser


def mcp_main(argv: list[str]) -> int:
    from lsp_hub.transport.logging_setup import setup_logging

    args = _parser().parse_args(argv)
    setup_logging(args.verbose, args.log_file)
    root = args.root.expanduser().resolve() if args.root else None
    if root is not None and not root.is_dir():
        print(f"lsp-hub mcp: --root {args.root} is not a directory", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print("lsp-hub mcp: --timeout must be positive", file=sys.stderr)
        return 2
    try:
        code = asyncio.run(_serve(args, root))
    except KeyboardInterrupt:
        code = 130
    logging.shutdown()
    # Worker threads may still be blocked on the hub; nothing is left to clean up.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def _serve(args: argparse.Namespace, root: Path | None) -> int:
    if args.no_daemon:
        return await _with_hub_in_process(args, root)
    connect = (
        partial(_connect_socket, args.socket) if args.socket else partial(query.connect_default, who="lsp-hub mcp")
    )
    return await _run(args, Tools(root, connect, timeout=args.timeout, fenced=args.fence))


def _connect_socket(path: str, _root: Path) -> query.HubConnection:
    return query.connect_socket(path)


async def _run(args: argparse.Namespace, tools: Tools) -> int:
    app = build_server(tools)
    try:
        if args.http is not None:
            await _serve_http(app, args.http)
        else:
            await app.run_stdio_async()
    finally:
        await anyio.to_thread.run_sync(tools.close)  # ends our session; the daemon keeps its servers warm
    return 0


async def _with_hub_in_process(args: argparse.Namespace, root: Path | None) -> int:
    """A hub on this event loop; each connection the tools open (from their worker threads) is one end of a socket
    pair whose other end the hub serves. A socket pair exists on every system (unix sockets do not), and no file
    is left behind. Its servers end with this process."""
    from lsp_hub.proxy.extensions import default_extensions
    from lsp_hub.server import Hub

    hub = Hub(cli_config=args.config, extensions=default_extensions)
    loop = asyncio.get_running_loop()

    def connect(_root: Path) -> query.HubConnection:
        ours, hubs = socket.socketpair()
        loop.call_soon_threadsafe(hub.accept_socket, hubs)
        return query.HubConnection.over_socket(ours, description="its hub")

    serving = asyncio.ensure_future(hub.serve_in_process())
    try:
        tools = Tools(root, connect, timeout=args.timeout, fenced=args.fence)
        mcp = asyncio.ensure_future(_run(args, tools))
        # SIGTERM stops the hub (its handler): then this server ends too.
        await asyncio.wait([mcp, serving], return_when=asyncio.FIRST_COMPLETED)
        for task in (mcp, serving):
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        return 0
    finally:
        with contextlib.suppress(Exception):
            await hub.stop()
        hub.kill_everything()


async def _serve_http(app: MCPServer, port: int) -> None:
    """Streamable HTTP on 127.0.0.1 only: Host and Origin checked against DNS rebinding and web pages, and a
    connection from another local user refused (its uid read from /proc/net/tcp)."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from lsp_hub.transport.transport_security import PeerOwners

    host = "127.0.0.1"
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"127.0.0.1:{port}", f"localhost:{port}", "127.0.0.1", "localhost"],
        allowed_origins=[f"http://127.0.0.1:{port}", f"http://localhost:{port}"],
    )
    starlette_app = app.streamable_http_app(transport_security=security, host=host)
    owners = PeerOwners()
    if (reason := owners.unavailable_reason()) is not None:
        logger.warning(
            "cannot tell which local user a connection comes from (%s): connections from other users "
            "on this machine will be accepted",
            reason,
        )

    async def only_this_user(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            client, server = scope.get("client"), scope.get("server")
            refusal = owners.refusal(tuple(client) if client else None, tuple(server) if server else None)
            if refusal is not None:
                logger.warning("refused an HTTP client: %s", refusal)
                await send(
                    {"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"text/plain")]}
                )
                await send({"type": "http.response.body", "body": f"lsp-hub: {refusal}\n".encode()})
                return
        await starlette_app(scope, receive, send)

    config = uvicorn.Config(only_this_user, host=host, port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    print(f"lsp-hub mcp listening on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    await server.serve()
