"""Tasks started and not awaited, kept referenced until they end: the event loop holds only weak references to
tasks, so one nobody keeps may be collected mid-run (asyncio's documentation, `create_task`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


class KeptTasks:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
