"""What the workspace and the forwarder may ask of one client session: a narrow interface, so that neither imports
the session module (which imports them)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lsp_hub.proxy.backends import Backend


class ClientView(Protocol):
    """What the workspace (and the forwarder) may ask of one client session."""

    state: str
    init_params: dict[str, Any]
    client_capabilities: dict[str, Any]
    commands: dict[str, Any]

    def client_supports(self, *path: str) -> bool: ...

    def notify(self, method: str, params: Any) -> None: ...

    def request(self, method: str, params: Any) -> asyncio.Future[Any]: ...

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]: ...

    def tell_user(self, message: str, *, error: bool = False) -> None: ...

    def settings_from_client(self, value: Any, what: str) -> Any: ...

    def publish_diagnostics(self, uri: str, diagnostics: list[dict[str, Any]]) -> None: ...

    def advertise_commands(self, uid: int, commands: list[str]) -> None: ...

    def backend_running(self, backend: Backend) -> None: ...

    def backend_stopped(self, backend: Backend) -> None: ...
