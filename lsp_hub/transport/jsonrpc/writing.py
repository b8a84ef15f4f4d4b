"""Writing frames: the writes a burst of input causes leave together (`CoalescingWriter`), and the one OS-specific
call of the message path (`widen_pipe`)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from lsp_hub.platform.processes import widen_pipe_buffer

logger = logging.getLogger("lsp_hub.transport.jsonrpc")

COALESCE_BYTES = 64 * 1024  # a burst's writes to one stream leave at least this often (one pipe buffer's worth)
PIPE_SIZE = 1 << 20


class Named(Protocol):
    peer_name: str


class _WriteHold:
    """While a read loop handles frames that had already arrived together, writes are held and leave afterwards
    in one write per stream (see CoalescingWriter). Module-wide, because a message read from one peer is written
    to another (client to server, server to client). The loop lets go as soon as it would wait for input; failing
    that, the first held write has the event loop let go at its next step, so nothing stays held longer."""

    active = False
    writers: list[CoalescingWriter] = []
    release_due_on: asyncio.AbstractEventLoop | None = None  # the loop a release is scheduled on

    @classmethod
    def hold(cls) -> None:
        cls.active = True

    @classmethod
    def release(cls) -> None:
        cls.active = False
        cls.release_due_on = None
        writers, cls.writers = cls.writers, []
        for writer in writers:
            writer.flush()

    @classmethod
    def held_by(cls, writer: CoalescingWriter) -> bool:
        """Whether a write to `writer` must wait for the release; registers it to be flushed then."""
        if not cls.active:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not the event loop's thread: write now
            return False
        if cls.release_due_on is not loop:  # (a release scheduled on a loop since closed never comes)
            loop.call_soon(cls.release)
            cls.release_due_on = loop
        cls.writers.append(writer)
        return True


hold_writes = _WriteHold.hold
release_writes = _WriteHold.release


def writes_held() -> bool:
    """Whether writes are being held now, or any held one still waits (for tests and checks)."""
    return _WriteHold.active or bool(_WriteHold.writers)


class CoalescingWriter:
    """A stream writer (pipe, socket, stdout) whose writes during a burst of input leave as one write.

    Forwarding each of 5,000 didChange notifications with its own write cost a system call and a wake-up of the
    server each. Frames keep their order (held ones go out before any later write), and a lone message is not
    delayed: outside a burst, and at its end, writes go straight to the stream. Everything else (close,
    wait_closed, get_extra_info...) is the wrapped writer's."""

    def __init__(self, inner: Any, peer: Named) -> None:
        self.inner = inner
        self._peer = peer
        self._held: list[bytes] = []
        self._held_bytes = 0

    def write(self, data: bytes) -> Any:
        if self._held:
            self._held.append(data)  # behind frames still held: registered already
            self._held_bytes += len(data)
            if self._held_bytes >= COALESCE_BYTES:
                self.flush()  # a long burst goes out in pieces: the peer starts on it sooner
            return None
        if _WriteHold.held_by(self):
            self._held.append(data)
            self._held_bytes = len(data)
            return None
        return self.inner.write(data)

    def flush(self) -> None:
        if not self._held:
            return
        held, self._held = self._held, []
        self._held_bytes = 0
        try:
            self.inner.write(held[0] if len(held) == 1 else b"".join(held))
        except (BrokenPipeError, ConnectionResetError, RuntimeError, ValueError) as exc:
            logger.warning("cannot write to %s: %s", self._peer.peer_name, exc)

    def close(self) -> Any:
        self.flush()
        return self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def widen_pipe(pipe: Any) -> None:
    """Ask for a 1 MB pipe buffer (Linux; 64 KB by default, at most /proc/sys/fs/pipe-max-size): a large answer
    then crosses a pipe in one write and one or a few reads, not a wake-up of each side per 64 KB. Anything that is
    not a pipe (a socket, a file, a terminal), or a system that refuses, keeps what it has."""
    if pipe is None:
        return
    try:
        widen_pipe_buffer(pipe if isinstance(pipe, int) else pipe.fileno(), PIPE_SIZE)
    except (OSError, ValueError, AttributeError) as exc:
        logger.debug("pipe buffer left as it is: %s", exc)
