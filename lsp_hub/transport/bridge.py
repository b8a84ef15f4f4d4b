"""`lsp-hub --connect`: a stdio LSP server that is only a bridge to the per-user daemon.

It starts the daemon when none answers (saying so on stderr), then copies bytes both ways between its
stdin/stdout and the daemon's socket, without reading them: the daemon serves the LSP session, so an editor
configured with `lsp-hub --connect` shares servers and the index with every other client of the daemon.

Standard library only, so it starts in a few tens of milliseconds: no pygls, lsprotocol, asyncio.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import threading

from lsp_hub.transport.daemon_client import (
    DAEMON_STATUS_METHOD,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    DaemonError,
    RuntimePaths,
    ask,
    daemon_run_args,
    ensure_daemon,
    prepare_runtime_directory,
)

CHUNK = 256 * 1024
# After the editor closes our stdin, how long the daemon gets to answer what is in flight and close its end.
DRAIN_SECONDS = 10.0


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="lsp-hub --connect",
        description="LSP on stdio, served by the per-user lsp-hub daemon (started when absent).")
    parser.add_argument("--config", help="a configuration file for the daemon, if this starts it")
    parser.add_argument("--log-file", help="the daemon's log, if this starts it")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="the daemon's verbosity, if this starts it")
    return parser.parse_args(argv)


def _pump_stdin(connection: socket.socket) -> None:
    """Editor -> daemon. At the editor's EOF, half-close, so the daemon ends the session and closes its end."""
    try:
        while chunk := os.read(0, CHUNK):
            connection.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            connection.shutdown(socket.SHUT_WR)
        connection.settimeout(DRAIN_SECONDS)


def _pump_socket(connection: socket.socket) -> None:
    """Daemon -> editor, until the daemon closes the connection (or the editor stops reading)."""
    try:
        while chunk := connection.recv(CHUNK):
            view = memoryview(chunk)
            while view:
                view = view[os.write(1, view):]
    except OSError:
        pass


def _tell_if_config_differs(paths: RuntimePaths, config: str) -> None:
    """The running daemon keeps the configuration it started with; say so when ours is another one."""
    try:
        running_with = (ask(paths, DAEMON_STATUS_METHOD) or {}).get("config")
    except DaemonError:
        return
    if running_with != config:
        print(f"lsp-hub --connect: the daemon was already running with --config {running_with or '(none)'}; "
              f"--config {config} applies only to a daemon this starts (`lsp-hub daemon stop` first to change it)",
              file=sys.stderr, flush=True)


def bridge_main(argv: list[str]) -> int:
    try:
        args = _parse(argv)
    except SystemExit as leaving:
        return EXIT_OK if leaving.code == 0 else EXIT_USAGE
    try:
        paths = prepare_runtime_directory()
        connection, started = ensure_daemon(paths, daemon_run_args(args.config, args.log_file, args.verbose))
    except DaemonError as error:
        print(f"lsp-hub --connect: {error}", file=sys.stderr, flush=True)
        return EXIT_FAILURE
    if started is not None:
        print(f"lsp-hub --connect: started the lsp-hub daemon (pid {started}, listening at {paths.listening_at}, "
              f"log {paths.log})", file=sys.stderr, flush=True)
    elif args.config:
        _tell_if_config_differs(paths, os.path.abspath(args.config))
    # The reader of stdin may block in read() forever; a daemon thread does not hold the exit up.
    threading.Thread(target=_pump_stdin, args=(connection,), daemon=True, name="stdin-to-daemon").start()
    _pump_socket(connection)
    return EXIT_OK
