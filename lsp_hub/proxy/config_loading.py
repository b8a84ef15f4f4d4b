"""A session's configuration, loaded off the event loop and within a deadline.

`load_config` reads files (the user's, each workspace root's `.lsp-hub.toml`, `--config`, the trust store). On a
daemon the event loop serves every client, so a read that stalls (a hung network file system) must stall only the
session that asked: loading runs in a thread of its own, and when it takes longer than the deadline the session
loads again without the project files, each reported as not read in time. Only if that too misses the deadline
does initialize fail (`ConfigLoadTimeout`).

The threads are daemon threads, not an executor's: a thread stuck in a read cannot be stopped, and an executor's
threads are joined when the interpreter exits, so one stuck read would keep the daemon from ever exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from lsp_hub.config import loader
from lsp_hub.config.loader import LoadedConfig

logger = logging.getLogger(__name__)

CONFIG_DEADLINE_SECONDS = 5.0

T = TypeVar("T")


class ConfigLoadTimeout(Exception):
    """Not even the configuration without the project files could be loaded in time."""


def in_daemon_thread(work: Callable[[], T]) -> asyncio.Future[T]:
    """`work()` in a new daemon thread; its outcome arrives in the returned future (dropped if that was
    cancelled, or if the loop has closed)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]  # None only with an error

    def run() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = work()
        except Exception as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed while we worked
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name="lsp-hub config", daemon=True).start()
    return future


async def load_config_in_time(options: dict[str, Any], *, deadline: float | None = None) -> LoadedConfig:
    """`load_config(**options)` in a thread; past `deadline` seconds (CONFIG_DEADLINE_SECONDS), the same without
    the project files (reported as not read in time). Raises ConfigLoadTimeout when that misses the deadline too."""
    deadline = CONFIG_DEADLINE_SECONDS if deadline is None else deadline
    load = loader.load_config  # looked up at each call, so that tests can slow it down
    try:
        return await asyncio.wait_for(in_daemon_thread(lambda: load(**options)), deadline)
    except TimeoutError:
        logger.error("configuration: not loaded within %g s; loading it again without the project files", deadline)
    reason = f"could not be read within {deadline:g} s; ignored"
    try:
        return await asyncio.wait_for(in_daemon_thread(lambda: load(**options, unread_project_reason=reason)),
                                      deadline)
    except TimeoutError:
        raise ConfigLoadTimeout(
            f"lsp-hub could not read its configuration within {deadline:g} s, even without the project files "
            "(is the user configuration or trust file on a file system that hangs?); see the log") from None
