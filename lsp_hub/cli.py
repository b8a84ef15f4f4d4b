"""`lsp-hub`: serve LSP (stdio, TCP, WebSocket), the daemon and its `--connect` bridge, and the doctor, trust and
index verbs.

Heavy imports (asyncio, the hub, the index) happen inside the verbs: `lsp-hub --connect` and `lsp-hub daemon
status` import only the standard library and start fast."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_hub import __version__

if TYPE_CHECKING:
    from lsp_hub.index.syntax_checkers import SyntaxCheckers
    from lsp_hub.transport.daemon_client import RuntimePaths

INDEX_VERBS = ("repomap", "relevant", "syntax", "callers", "index")
USAGE = """lsp-hub [--tcp PORT | --ws PORT [--allow-origin URL]...] [--host HOST] [--config PATH] [--log-file PATH] [-v]
       lsp-hub --connect [--config PATH]            (stdio, through the per-user daemon)
       lsp-hub daemon start|stop|status [--json]
       lsp-hub doctor [ROOT] [--config PATH] [--verbose] [--json]
       lsp-hub trust PATH | --list | --remove PATH
       lsp-hub repomap|relevant|syntax|callers|index ...   (run `lsp-hub VERB --help`)
       lsp-hub query ACTION [FILE:LINE:COL | --symbol NAME] [args] [--json]   (run `lsp-hub query --help`)
       lsp-hub mcp [--root DIR] [--no-daemon] [--http PORT] [--fence]   (an MCP server for agents)"""


def _serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lsp-hub",
        usage=USAGE,
        description="One language server in front of many. Serves LSP on stdio unless --tcp or --ws is given.",
    )
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    transport.add_argument("--tcp", type=int, metavar="PORT", help="serve TCP clients on PORT (0 picks a port)")
    transport.add_argument("--ws", type=int, metavar="PORT", help="serve WebSocket clients on PORT")
    transport.add_argument(
        "--connect",
        action="store_true",
        help="LSP on stdio through the per-user daemon, starting it when absent (`lsp-hub "
        "daemon`): editors and agents share its servers and index",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind for --tcp/--ws (default 127.0.0.1)")
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="--ws: accept handshakes from web pages of this origin, e.g. http://localhost:3000 "
        "(repeatable; by default a handshake that carries an Origin header is refused)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="--ws: accept this name in the Host header besides 127.0.0.1, localhost, [::1] and "
        "--host (repeatable; guards against DNS rebinding)",
    )
    parser.add_argument("--config", type=Path, help="a configuration file applied on top of the other layers")
    parser.add_argument("--log-file", type=Path, help="write the log here (default: stderr)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    parser.add_argument("--version", action="version", version=f"lsp-hub {__version__}")
    return parser


def _serve(argv: list[str]) -> int:
    import asyncio  # here, not at the top: `lsp-hub query` starts faster without it
    import logging

    from lsp_hub.transport.logging_setup import setup_logging

    args = _serve_parser().parse_args(argv)
    setup_logging(args.verbose, args.log_file)
    from lsp_hub.proxy.extensions import default_extensions
    from lsp_hub.server import Hub
    from lsp_hub.transport.transport_security import HandshakePolicy, exposure_warning

    if (args.tcp is not None or args.ws is not None) and (warning := exposure_warning(args.host)):
        logging.getLogger("lsp_hub").warning("%s", warning)
        if args.log_file:
            print(warning, file=sys.stderr, flush=True)
    handshake = HandshakePolicy.create(bind_host=args.host, origins=args.allow_origin, hosts=args.allow_host)

    async def main() -> int:
        hub = Hub(cli_config=args.config, extensions=default_extensions, handshake=handshake)
        if args.tcp is not None:
            return await hub.serve_tcp(args.host, args.tcp, ready=_announce("tcp", args.host))
        if args.ws is not None:
            return await hub.serve_ws(args.host, args.ws, ready=_announce("ws", args.host))
        return await hub.serve_stdio()

    code = asyncio.run(main())
    logging.shutdown()
    sys.stdout.flush()
    # The stdin reader thread may still be blocked in read(); nothing is left to clean up, so leave now.
    os._exit(code)


def _daemon_run(paths: RuntimePaths, args: dict[str, Any]) -> int:
    """`lsp-hub daemon run`: serve the daemon's unix socket (or its token-guarded loopback port) in the foreground
    until stopped or idle."""
    import asyncio
    import logging

    from lsp_hub.config.loader import load_config
    from lsp_hub.proxy.extensions import default_extensions
    from lsp_hub.server import Hub
    from lsp_hub.transport.daemon_client import DaemonError, claim_daemon, release_daemon
    from lsp_hub.transport.daemon_transport import LOOPBACK, UNIX, TokenEndpoint, new_token, write_endpoint
    from lsp_hub.transport.logging_setup import setup_logging

    log_file = Path(args["log_file"]) if args["log_file"] else None
    setup_logging(args["verbose"], log_file)
    config = Path(args["config"]) if args["config"] else None
    # Read once: the idle timeout is the daemon's own; each session still loads its layers at initialize.
    loaded = load_config(workspace_roots=[], cli_config=config)
    for problem in loaded.problems:
        logging.getLogger("lsp_hub").error("configuration: %s", problem)
    lock = claim_daemon(paths)
    idle_exit_seconds = loaded.config.hub.daemon_idle_exit_seconds
    details = {"log": str(log_file or paths.log), "config": str(config) if config else None}
    try:
        hub = Hub(cli_config=config, extensions=default_extensions)
        if paths.transport == UNIX:
            serving = hub.serve_unix(paths.socket, idle_exit_seconds=idle_exit_seconds, details=details)
        else:
            token = new_token()

            def publish(port: int) -> str:
                endpoint = TokenEndpoint(LOOPBACK, port, token)
                write_endpoint(paths.endpoint_file, endpoint)
                return f"{endpoint.describe()} (token in {paths.endpoint_file})"

            serving = hub.serve_tcp_token(token, publish, idle_exit_seconds=idle_exit_seconds, details=details)
        code = asyncio.run(serving)
    except OSError as error:  # bind: one line for the starter to show, not a traceback
        raise DaemonError(f"cannot listen on {paths.listening_at}: {error.strerror or error}") from None
    finally:
        release_daemon(paths, lock)
    logging.shutdown()
    # Threads of the index or the stdin reader may still be blocked; nothing is left to clean up, so leave now.
    os._exit(code)


def _cli_syntax_checkers(file: Path) -> SyntaxCheckers:
    """`lsp-hub syntax FILE`: the parsers the hub would run for FILE, its project root trusted as `lsp-hub trust`
    recorded it (the project root: the nearest directory above FILE with a root marker, else FILE's directory)."""
    from lsp_hub.agents.query import REPOSITORY_MARKERS
    from lsp_hub.config.trust import TrustStore
    from lsp_hub.proxy.syntax_parsers import syntax_checkers_for

    root = next(
        (
            directory
            for directory in file.parents
            if any((directory / marker).exists() for marker in REPOSITORY_MARKERS)
        ),
        file.parent,
    )
    return syntax_checkers_for(root, trusted=TrustStore().is_trusted(root))


def _announce(scheme: str, host: str):  # type: ignore[no-untyped-def]
    def ready(port: int) -> None:
        print(f"lsp-hub listening on {scheme}://{host}:{port}", file=sys.stderr, flush=True)

    return ready


def script() -> int:
    """The `lsp-hub` program (and `python -m lsp_hub`): `main`; after a one-shot index verb the process then ends
    without taking the index apart object by object (0.1 s of a 1.3 s map at 100,000 files). It waits for the
    threads still running and flushes its output first, as an ordinary exit does; with child processes still
    there (a build's workers) it exits the ordinary way, which ends them."""
    argv = sys.argv[1:]
    one_shot = bool(argv) and argv[0] in INDEX_VERBS
    if one_shot:
        # It builds, answers and ends. What a build makes (records, name tables, links, rows) forms no cycles and
        # lives until the end; the cyclic collector would only scan it again and again as the heap grows: on the
        # standard library 0.23-0.32 s of a cold build's main thread (taken from its parser workers' cores) and
        # 0.10-0.17 s of the one-core graph phase after it, for 238 unreachable objects found at the end.
        gc.disable()
    code = main(argv, process_ends=one_shot)
    if one_shot:
        _end_now(code)
    return code


def _end_now(code: int) -> None:
    import logging
    import threading

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()  # a cache write beside the map, say: an ordinary exit waits for it too
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None and multiprocessing.active_children():
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return  # a reader that left: `main`'s own handling, on the ordinary way out
    logging.shutdown()
    os._exit(code)


def main(argv: list[str] | None = None, process_ends: bool = False) -> int:
    """Run one command. `process_ends`: the process ends once it returns (`script`), so a one-shot map may leave
    storing its graphs to a child that outlives it (`platform.detached`, `background.save_after_exit`)."""
    try:
        return _main(argv, process_ends)
    except BrokenPipeError:
        # `lsp-hub doctor | head`: the reader left; that is not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None, process_ends: bool = False) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    verb = argv[0] if argv else ""
    if verb == "query":
        from lsp_hub.agents.query import query_main  # the standard library only: a query starts fast

        return query_main(argv[1:])
    if verb == "mcp":
        from lsp_hub.agents.mcp_server import mcp_main

        return mcp_main(argv[1:])
    if verb == "doctor":
        parser = argparse.ArgumentParser(prog="lsp-hub doctor", description="Check the configured servers.")
        parser.add_argument("root", nargs="?", type=Path, default=Path.cwd())
        parser.add_argument("--config", type=Path)
        parser.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            help="each server's root, root markers and the places searched for it",
        )
        parser.add_argument("--json", action="store_true", help="one JSON object with every detail")
        args = parser.parse_args(argv[1:])
        from lsp_hub.doctor import run_doctor

        return run_doctor(
            args.root.resolve(), cli_config=args.config, out=sys.stdout, verbose=args.verbose, as_json=args.json
        )
    if verb == "trust":
        from lsp_hub.config.trust import trust_main

        return trust_main(argv[1:], sys.stdout)
    if verb == "daemon":
        from lsp_hub.transport.daemon_client import daemon_main

        return daemon_main(argv[1:], sys.stdout, sys.stderr, run=_daemon_run)
    if "--connect" in argv:
        from lsp_hub.transport.bridge import bridge_main

        return bridge_main([arg for arg in argv if arg != "--connect"])
    if verb in INDEX_VERBS:
        from lsp_hub.index.cli import index_cli_main
        from lsp_hub.platform import detached

        after_exit = detached.run_after_exit if process_ends and detached.available() else None
        return index_cli_main(argv, sys.stdout, syntax_checkers_for=_cli_syntax_checkers, run_after_exit=after_exit)
    return _serve(argv)


if __name__ == "__main__":
    raise SystemExit(main())
