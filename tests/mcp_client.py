"""A synchronous handle on the MCP SDK's own client (stdio or streamable HTTP), for tests.

The SDK's client is a pair of async context managers whose task groups must be entered and left by one task; a
module-wide session therefore lives in a thread of its own with its own event loop, and tests call it through
`call(tool, arguments)`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import AsyncIterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import CallToolResult, ListRootsResult, Root
from pydantic import FileUrl

from tests.conftest import REPO_ROOT


def lsp_hub_mcp_command(*args: str, module: str = "lsp_hub") -> tuple[str, list[str]]:
    return sys.executable, ["-m", module, "mcp", *args]


class McpClient:
    """`lsp-hub mcp ARGS` over stdio (or an HTTP URL), one ClientSession for the client's life."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, cwd: str | None = None,
                 url: str | None = None, timeout: float = 120.0, roots: list[Path] | None = None,
                 module: str = "lsp_hub") -> None:
        """`module` is what `python -m` runs (`tests.without_unix_sockets` runs lsp-hub as on Windows)."""
        self.args, self.url, self.timeout, self.roots, self.module = args, url, timeout, roots, module
        self.env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
        self.cwd = cwd
        self._loop = asyncio.new_event_loop()
        self._ready: Future[ClientSession] = Future()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),), daemon=True)
        self._thread.start()
        self.session = self._ready.result(timeout)

    @contextlib.asynccontextmanager
    async def _streams(self) -> AsyncIterator[tuple[Any, Any]]:
        if self.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            async with streamable_http_client(self.url) as streams:
                yield streams[0], streams[1]
            return
        command, args = lsp_hub_mcp_command(*self.args, module=self.module)
        params = StdioServerParameters(command=command, args=args, env=self.env, cwd=self.cwd)
        async with stdio_client(params) as (read, write):
            yield read, write

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with self._streams() as (read, write), ClientSession(
                    read, write, list_roots_callback=self._list_roots if self.roots is not None else None) as session:
                self.initialize_result = await session.initialize()
                self._ready.set_result(session)
                await self._stop.wait()
        except BaseException as error:  # handed to the waiting test
            if not self._ready.done():
                self._ready.set_exception(error)

    async def _list_roots(self, context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=FileUrl(path.as_uri()), name=path.name) for path in self.roots or []])

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(self.timeout)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        return self.run(self.session.call_tool(tool, arguments or {}))

    def text(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        """The answer's text; the call must succeed."""
        result = self.call(tool, arguments)
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        assert not result.is_error, text
        return text

    def error(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        """The error's text; the call must fail as a tool result (isError), not a protocol error."""
        result = self.call(tool, arguments)
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        assert result.is_error, text
        return text

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
