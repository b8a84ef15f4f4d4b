"""One run of a language server's process: spawn it, our endpoint on its stdin and stdout, its stderr, its signals.

The process knows nothing of documents, requests or restarts (`backend.py` decides those); it reports its exit
through the callback it was given. Its children share its process group, so a signal reaches them too.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lsp_hub.platform.children import CHILDREN, KILL
from lsp_hub.platform.server_temp import SERVER_TEMP
from lsp_hub.transport.jsonrpc import MessageHandler, RawProtocol, RawResponseReader, read_loop, spawn_peer

logger = logging.getLogger(__name__)

STREAM_LIMIT = 64 * 1024 * 1024  # a single frame header line or stderr chunk may be long; never choke on it


class ServerConnection:
    """One run of the server's process: our endpoint on its stdin and stdout (large answers read unparsed, through
    RawResponseReader); `on_exit` is told when the process ends."""

    def __init__(
        self,
        name: str,
        handler: MessageHandler,
        on_exit: Callable[[ServerConnection, int | None], None],
    ) -> None:
        self.name = name
        self.protocol = RawProtocol(name)
        self.protocol.handler = handler
        self.protocol.answers_parse_errors = False
        self.process: asyncio.subprocess.Process | None = None
        self.stop_reading = threading.Event()
        self._on_exit = on_exit
        self._tasks: list[asyncio.Task[None]] = []
        self.temporary_directory: Path | None = None

    async def start(self, argv: list[str], env_overrides: Mapping[str, str], **kwargs: Any) -> None:
        """Start the server in this process's environment with `env_overrides` over it, and a temporary directory
        of its own (`platform.server_temp`) between the two: a TMPDIR the configuration sets wins. The directory
        is removed when the server ends, is stopped or killed, or at once if it does not start."""
        temporary = SERVER_TEMP.make()
        env = {**os.environ, **SERVER_TEMP.environment(temporary), **env_overrides}
        try:
            process, stdout, _ = await spawn_peer(argv, env=env, **kwargs)
        except BaseException:
            SERVER_TEMP.remove(temporary)
            raise
        self.temporary_directory = temporary
        assert process.stdin is not None
        CHILDREN.adopt(process.pid)
        self.process = process
        self.protocol.set_writer(process.stdin)
        reader = RawResponseReader(stdout, peer_name=self.name)
        self._tasks = [
            asyncio.create_task(read_loop(reader, self.protocol, self.stop_reading)),
            asyncio.create_task(self._watch_exit(process)),
        ]

    async def shut_down(self, grace_seconds: float) -> None:
        """shutdown, exit, then terminate, then kill: each step bounded in time."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(Exception):
            _, answer = self.protocol.request("shutdown", None)
            await asyncio.wait_for(answer, grace_seconds)
        with contextlib.suppress(Exception):
            self.protocol.notify("exit", None)
        for sig in (None, signal.SIGTERM, KILL):
            if sig is not None:
                signal_group(process, sig)
            try:
                await asyncio.wait_for(process.wait(), grace_seconds)
                break
            except TimeoutError:
                continue
        # Children the server started (tsserver, node workers) share its process group; not waiting to see the exit.
        self.kill()

    def kill(self) -> None:
        """Kill the server and what it started, and remove its temporary directory now: a hub that ends leaves
        before its exit is seen."""
        if self.process is not None:
            signal_group(self.process, KILL)
        SERVER_TEMP.remove(self.temporary_directory)

    async def _watch_exit(self, process: asyncio.subprocess.Process) -> None:
        await process.wait()
        CHILDREN.release(process.pid)
        self.stop_reading.set()
        self._on_exit(self, process.returncode)
        if self.temporary_directory is not None:
            await asyncio.to_thread(SERVER_TEMP.remove, self.temporary_directory)


async def drain_stderr(stream: asyncio.StreamReader, tail: collections.deque[str], name: str) -> None:
    """A full stderr pipe blocks a server: read it all the time, keep the tail, log it at debug level."""
    partial = b""
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            break
        lines = (partial + chunk).split(b"\n")
        partial = lines.pop()
        if len(partial) > 4096:
            lines.append(partial)
            partial = b""
        for line in lines:
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                tail.append(text)
                logger.debug("[%s stderr] %s", name, text)


def signal_group(process: asyncio.subprocess.Process, sig: int) -> None:
    """Signal the server and the children it started (tsserver, node workers), which share its process group."""
    CHILDREN.signal_group(process.pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if process.returncode is None:
            process.send_signal(sig)
