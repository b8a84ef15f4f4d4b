"""A request to a backend, from queued to answered: its future, its deadline timer, its cancellation.

`NotSupported` is the answer of a server that does not offer the method: not an error, just no answer.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lsp_hub.transport.jsonrpc import METHOD_NOT_FOUND, ResponseFailure

if TYPE_CHECKING:
    from lsp_hub.proxy.backends.backend import Backend

DIAGNOSTIC_PULLS = frozenset({"textDocument/diagnostic", "workspace/diagnostic"})


class NotSupported(ResponseFailure):
    """The server does not offer the method (by its capabilities): not an error, just no answer."""

    def __init__(self, server: str, method: str) -> None:
        super().__init__(METHOD_NOT_FOUND, f"{server} does not support {method}")


class Pending:
    """A request to a backend: queued while it starts, then in flight with a deadline."""

    __slots__ = (
        "backend",
        "cancelled",
        "counted",
        "future",
        "method",
        "msg_id",
        "params",
        "sent_while_loading",
        "timer",
    )

    def __init__(self, backend: Backend, method: str, params: Any, future: asyncio.Future[Any]) -> None:
        self.backend = backend
        self.method = method
        self.params = params
        self.future = future
        self.msg_id: int | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.cancelled = False
        self.counted = False  # in the backend's requests_in_flight
        # Sent while the server loaded its project: its answer may come from a partial view even when it arrives
        # after the load has ended (typescript-language-server routes it to its syntax-only server when sent).
        self.sent_while_loading = False

    def settled(self, future: asyncio.Future[Any]) -> None:
        if self.counted:
            self.backend.requests_in_flight -= 1
        if self.timer is not None:
            self.timer.cancel()
        if not future.cancelled():
            # Answers nobody waits for any more (the runner returned on another server's answer, or gave up)
            # must not end as "Future exception was never retrieved" in the log.
            future.exception()

    def cancel(self) -> None:
        """The client gave up on it: tell the server (if it was sent and not answered) and stop waiting.

        The future may already be cancelled: asyncio cancels the future a cancelled task was awaiting."""
        if self.cancelled:
            return
        self.cancelled = True
        if self.timer is not None:
            self.timer.cancel()
        unanswered = not self.future.done() or self.future.cancelled()
        if self.msg_id is not None and unanswered:
            self.backend.notify("$/cancelRequest", {"id": self.msg_id})
        if not self.future.done():
            self.future.cancel()
