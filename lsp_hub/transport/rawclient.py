"""A raw JSON-RPC client for `lsp-hub`: runs it as a subprocess (or connects over TCP/WebSocket).

Used by the demo, the benchmarks and the tests; handy for scripts and agents too. It speaks plain dicts (the
same endpoint, `jsonrpc.RawProtocol`, the hub uses), records every notification, answers the hub's requests to the
client from a table, and keeps the hub's stderr drained.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from lsp_hub.transport.jsonrpc import (
    FrameReader,
    MessageSource,
    MsgId,
    RawProtocol,
    WebSocketMessages,
    WebSocketWriter,
    read_loop,
    spawn_peer,
)

PACKAGE_PARENT = Path(__file__).resolve().parent.parent.parent  # <parent>/lsp_hub/transport/rawclient.py

DEFAULT_CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True, "showMessage": {}},
    "workspace": {
        "configuration": True,
        "workspaceFolders": True,
        "applyEdit": True,
        "executeCommand": {"dynamicRegistration": True},
        "didChangeWatchedFiles": {"dynamicRegistration": True},
    },
    "textDocument": {
        "synchronization": {"didSave": True, "dynamicRegistration": False},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "completion": {"completionItem": {"snippetSupport": True}},
        "publishDiagnostics": {"relatedInformation": True, "versionSupport": True},
        "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "quickfix", "source"]}}},
    },
}


def position_of(text: str, needle: str, offset: int = 0) -> dict[str, int]:
    """The LSP position (UTF-16 columns) of the first occurrence of `needle` in `text`, plus `offset` characters."""
    index = text.index(needle) + offset
    line_start = text.rfind("\n", 0, index) + 1
    column = len(text[line_start:index].encode("utf-16-le")) // 2
    return {"line": text.count("\n", 0, index), "character": column}


class _Handler:
    def __init__(self, client: HubClient) -> None:
        self.client = client

    def on_request(self, msg_id: MsgId, method: str, params: Any) -> Any:
        self.client.server_requests.append((method, params))
        answer = self.client.answers.get(method)
        if answer is None:
            return None
        return answer(params) if callable(answer) else answer

    def on_notification(self, method: str, params: Any) -> None:
        self.client.notifications.append((method, params))
        if method == "textDocument/publishDiagnostics" and isinstance(params, dict):
            self.client.diagnostics[params["uri"]] = params["diagnostics"]
        self.client._changed.set()


class HubClient:
    def __init__(self) -> None:
        self.protocol = RawProtocol("hub")
        self.protocol.handler = _Handler(self)
        self.notifications: list[tuple[str, Any]] = []
        self.server_requests: list[tuple[str, Any]] = []
        self.diagnostics: dict[str, list[dict[str, Any]]] = {}
        self.answers: dict[str, Any] = {}
        self.stderr = bytearray()
        self._changed = asyncio.Event()
        self._process: asyncio.subprocess.Process | None = None
        self.stdout_pipe: BinaryIO | None = None  # the read end of the process's stdout
        self._stop_reading = threading.Event()
        self._tasks: list[asyncio.Task[Any]] = []

    @property
    def process(self) -> asyncio.subprocess.Process:
        assert self._process is not None, "the client runs no process (connected over the network, or not started)"
        return self._process

    def _read(self, source: MessageSource) -> None:
        self._tasks.append(asyncio.ensure_future(read_loop(source, self.protocol, self._stop_reading)))

    async def start(self, *args: str, env: dict[str, str] | None = None, cwd: str | None = None,
                    command: list[str] | None = None) -> None:
        """Run `lsp-hub ARGS` (or any other stdio server given as `command`) and talk to it."""
        full_env = {**os.environ, **(env or {})}
        full_env.setdefault("PYTHONPATH", str(PACKAGE_PARENT))
        argv = command or [sys.executable, "-m", "lsp_hub", *args]
        self._process, stdout, self.stdout_pipe = await spawn_peer(argv, env=full_env, cwd=cwd)
        self.protocol.set_writer(self._process.stdin)
        self._read(FrameReader(stdout, peer_name="hub"))
        self._tasks.append(asyncio.ensure_future(self._drain_stderr()))

    async def connect_tcp(self, host: str, port: int) -> None:
        """Talk to an already running `lsp-hub --tcp` daemon."""
        reader, writer = await asyncio.open_connection(host, port, limit=64 * 1024 * 1024)
        self.protocol.set_writer(writer)
        self._read(FrameReader(reader, peer_name="hub"))

    async def connect_ws(self, host: str, port: int) -> None:
        from websockets.asyncio.client import connect

        websocket = await connect(f"ws://{host}:{port}", max_size=None)
        self.protocol.set_writer(WebSocketWriter(websocket), include_headers=False)
        self._read(WebSocketMessages(websocket, peer_name="hub"))

    async def disconnect(self) -> None:
        self._stop_reading.set()
        for task in self._tasks:
            task.cancel()
        writer = self.protocol.writer
        if writer is not None:
            with contextlib.suppress(Exception):
                result = writer.close()
                if asyncio.iscoroutine(result):
                    await result

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while chunk := await stream.read(65536):
            self.stderr.extend(chunk)

    async def request(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        _, future = self.protocol.request(method, params)
        return await asyncio.wait_for(future, timeout)

    def send_request(self, method: str, params: Any = None) -> tuple[int, asyncio.Future[Any]]:
        return self.protocol.request(method, params)

    def notify(self, method: str, params: Any = None) -> None:
        self.protocol.notify(method, params)

    def send_bytes(self, data: bytes) -> None:
        """Bytes as they are, after anything the protocol still holds for the hub."""
        writer = self.protocol.writer or self.process.stdin
        assert writer is not None
        writer.write(data)

    async def initialize(
        self,
        root: Path,
        *,
        init_options: dict[str, Any] | None = None,
        capabilities: dict[str, Any] | None = None,
        folders: list[Path] | None = None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "capabilities": capabilities if capabilities is not None else DEFAULT_CLIENT_CAPABILITIES,
            "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in (folders or [root])],
            "clientInfo": {"name": "lsp-hub-tests"},
        }
        if init_options is not None:
            params["initializationOptions"] = {"lspHub": init_options}
        result = await self.request("initialize", params)
        self.notify("initialized", {})
        return result

    def open(self, path: Path, language_id: str, text: str | None = None, version: int = 1) -> str:
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language_id, "version": version,
            "text": path.read_text() if text is None else text}})
        return uri

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            value = predicate()
            if value:
                return value
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {what}; notifications: "
                                     f"{json.dumps(self.notifications[-10:])[:2000]}\nhub stderr tail: "
                                     f"{self.stderr[-3000:].decode(errors='replace')}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.2))

    async def wait_diagnostics(self, uri: str, predicate: Callable[[list[dict[str, Any]]], bool],
                               timeout: float = 30.0) -> list[dict[str, Any]]:
        await self.wait_for(lambda: uri in self.diagnostics and predicate(self.diagnostics[uri]), timeout,
                            f"diagnostics of {uri}")
        return self.diagnostics[uri]

    async def status(self) -> dict[str, Any]:
        return await self.request("workspace/executeCommand", {"command": "lspHub.status", "arguments": []})

    async def stop(self, timeout: float = 10.0) -> int | None:
        """shutdown + exit, then wait for the hub to end; returns its exit code."""
        if self._process is None:
            return None
        if self.process.returncode is None:
            with contextlib.suppress(Exception):
                await self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
            try:
                await asyncio.wait_for(self.process.wait(), timeout)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self._stop_reading.set()
        for task in self._tasks:
            task.cancel()
        return self.process.returncode
