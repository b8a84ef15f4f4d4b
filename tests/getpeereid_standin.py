"""macOS's peer credentials on Linux: `install()` takes SO_PEERCRED away and gives `lsp_hub.platform.peers` a
`getpeereid(fd, &uid, &gid)` C function (a ctypes callback answering from the kernel's credentials, read before
SO_PEERCRED was taken), so the getpeereid branch of `unix_peer_credentials` runs as it does on macOS."""

from __future__ import annotations

import ctypes
import os
import socket
import struct
from collections.abc import Callable
from typing import Any

GETPEEREID = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32), use_errno=True
)
calls: list[int] = []  # the descriptors asked about, so a test can see this path ran


def standin(peercred: int) -> Callable[[str], object]:
    """A `_libc_function` that finds only getpeereid, answering from SO_PEERCRED (`peercred`, its number)."""

    def getpeereid(descriptor: int, uid: Any, gid: Any) -> int:
        calls.append(descriptor)
        try:
            with socket.socket(fileno=os.dup(descriptor)) as duplicate:
                _pid, peer_uid, peer_gid = struct.unpack("3i", duplicate.getsockopt(socket.SOL_SOCKET, peercred, 12))
        except OSError as error:
            ctypes.set_errno(error.errno or 0)
            return -1
        uid[0], gid[0] = peer_uid, peer_gid
        return 0

    function = GETPEEREID(getpeereid)
    return lambda name: function if name == "getpeereid" else None


def install() -> None:
    """For a process of its own (a daemon under test): as macOS, from here on."""
    from lsp_hub.platform import peers

    peercred = socket.SO_PEERCRED
    del socket.SO_PEERCRED
    peers._libc_function = standin(peercred)  # type: ignore[assignment]
