"""Byte streams for the endpoint: stdin (a pipe or socket through asyncio; a file or terminal through a reading
thread), a blocking stdout writer, and a child process spoken to on its stdin/stdout (backends, the test and
benchmark clients). Public asyncio API only."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO, NamedTuple

from lsp_hub.transport.jsonrpc.endpoint import MessageHandler, RawProtocol, read_loop
from lsp_hub.transport.jsonrpc.framing import READ_SIZE, FrameReader
from lsp_hub.transport.jsonrpc.writing import widen_pipe

logger = logging.getLogger("lsp_hub.transport.jsonrpc")

STREAM_LIMIT = 64 * 1024 * 1024


class FileWriter:
    """A blocking binary file (stdout) as the endpoint's writer: each write leaves at once."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _read_in_a_thread(source: BinaryIO, limit: int) -> asyncio.StreamReader:
    """A file or terminal (which asyncio cannot watch) read by a daemon thread into a StreamReader."""
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=limit)
    read = getattr(source, "read1", source.read)  # whatever is there, without waiting for a whole chunk

    def hand_over(callback: Callable[..., None], *args: Any) -> bool:
        try:
            loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the event loop has closed: nobody reads any more
            return False
        return True

    def pump() -> None:
        try:
            while chunk := read(READ_SIZE):
                if not hand_over(stream.feed_data, chunk):
                    return
        except (OSError, ValueError) as exc:
            logger.info("stdin: %s", exc)
        hand_over(stream.feed_eof)

    threading.Thread(target=pump, name="lsp-hub stdin", daemon=True).start()
    return stream


async def stdin_stream(source: BinaryIO | None = None, limit: int = STREAM_LIMIT) -> FrameReader:
    """stdin (or `source`) as a FrameReader: on an asyncio stream when it is a pipe or a socket (no thread hand-off
    per chunk), else read by a thread (a regular file or a terminal)."""
    source = source or sys.stdin.buffer
    reader = asyncio.StreamReader(limit=limit)
    try:
        await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), source)
    except (ValueError, OSError) as exc:
        logger.info("stdin is not a pipe (%s): reading it in a thread", exc)
        return FrameReader(_read_in_a_thread(source, limit))
    return FrameReader(reader)


class Peer(NamedTuple):
    """A child process spoken to on its stdin (`process.stdin`) and stdout (`stdout`, read from `stdout_pipe`)."""

    process: asyncio.subprocess.Process
    stdout: asyncio.StreamReader
    stdout_pipe: BinaryIO


async def spawn_peer(argv: Sequence[str], *, limit: int = STREAM_LIMIT, **kwargs: Any) -> Peer:
    """Start a program spoken to on its stdin/stdout (stderr a pipe too): the process, and its stdout as a stream.

    Its stdout pipe is made here, so that it can be widened (`widen_pipe`) through a descriptor of ours: asyncio
    hands out a child's stdout pipe only through private members."""
    read_end, write_end = os.pipe()
    try:
        widen_pipe(read_end)
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=write_end, stderr=asyncio.subprocess.PIPE, **kwargs)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)  # the child has its copy: EOF comes when it ends
    assert process.stdin is not None
    widen_pipe(process.stdin.get_extra_info("pipe"))
    stdout = asyncio.StreamReader(limit=limit)
    pipe = open(read_end, "rb", buffering=0)  # noqa: SIM115  # the transport closes it when the pipe ends
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout), pipe)
    return Peer(process, stdout, pipe)


async def serve_stdio(
    make_handler: Callable[[RawProtocol, asyncio.Event], MessageHandler],
    protocol_cls: type[RawProtocol] = RawProtocol,
) -> None:
    """Serve raw JSON-RPC on stdin/stdout until the input ends or the handler sets the stop event.

    For small servers built on RawProtocol (the benchmark's backend, the tests' fake servers)."""
    protocol = protocol_cls("client")
    reader = await stdin_stream()
    protocol.set_writer(FileWriter(sys.stdout.buffer))
    stop = asyncio.Event()
    protocol.handler = make_handler(protocol, stop)
    reading = asyncio.ensure_future(read_loop(reader, protocol))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait([reading, stopping], return_when=asyncio.FIRST_COMPLETED)
    for task in (reading, stopping):
        task.cancel()
    protocol.flush()
    with contextlib.suppress(Exception):
        await reading
