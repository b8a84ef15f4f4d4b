"""`python -m tests.without_unix_sockets ARGS`: `lsp-hub ARGS` as on a system without unix sockets (Windows):
socket.AF_UNIX is taken away before lsp_hub is imported, so any use of it fails as it would there, and
socket.socketpair becomes what Windows' Python makes of it, a connected pair of loopback TCP sockets."""

from __future__ import annotations

import socket


def loopback_socketpair(
    family: int | None = None, type: int = socket.SOCK_STREAM, proto: int = 0
) -> tuple[socket.socket, socket.socket]:
    with socket.socket(socket.AF_INET, type, proto) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        client = socket.socket(socket.AF_INET, type, proto)
        client.connect(listener.getsockname())
        server, _ = listener.accept()
    return server, client


if hasattr(socket, "AF_UNIX"):
    del socket.AF_UNIX
socket.socketpair = loopback_socketpair  # type: ignore[assignment]

from lsp_hub.cli import main  # noqa: E402 - only once AF_UNIX is gone

raise SystemExit(main())
