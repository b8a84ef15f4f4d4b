"""One downstream language server at one root, supervised: start and initialize, send, restart, stop.

Sending is synchronous and ordered: while the server starts, requests wait in an outbox and are sent, in order,
after its documents have been opened with their current text. Every request gets a deadline once sent; every
death of the process answers the requests in flight with an error, so nothing waits forever. The process itself
is `server_process.py`, a request `pending.py`, what it is told of documents `document_sync.py`, its progress
`server_progress.py`.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsp_hub.config.resolve import find_upward
from lsp_hub.platform.children import CHILDREN
from lsp_hub.platform.paths import uri_to_path
from lsp_hub.proxy.backends.document_sync import send_did_change, send_did_close, send_did_open, send_did_save
from lsp_hub.proxy.backends.pending import DIAGNOSTIC_PULLS, NotSupported, Pending
from lsp_hub.proxy.backends.server_process import STREAM_LIMIT, ServerConnection, drain_stderr
from lsp_hub.proxy.backends.server_progress import ServerProgress
from lsp_hub.proxy.capabilities import CAPABILITY_PATHS, has_capability
from lsp_hub.proxy.kept_tasks import KeptTasks
from lsp_hub.transport.jsonrpc import REQUEST_FAILED, MsgId, RawProtocol, ResponseFailure, materialize

if TYPE_CHECKING:
    from lsp_hub.config.model import HubOptions, ServerSpec
    from lsp_hub.proxy.documents import OpenText
    from lsp_hub.proxy.routing import BackendKey

logger = logging.getLogger(__name__)

STDERR_TAIL_LINES = 200


class State(enum.Enum):
    STOPPED = "stopped"  # not started yet, or stopped while idle: starts on next use
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    CRASHED = "crashed"  # died; restarts (after a backoff) on next use
    FAILED = "failed"  # gave up: missing binary, initialize failed, or too many crashes


class BackendHost(Protocol):
    """What a backend needs from the session that owns it."""

    def initialize_params(self, backend: Backend) -> dict[str, Any]: ...

    def document(self, uri: str) -> OpenText | None: ...

    def on_backend_request(self, backend: Backend, msg_id: MsgId, method: str, params: Any) -> Any: ...

    def on_backend_notification(self, backend: Backend, method: str, params: Any) -> None: ...

    def on_backend_running(self, backend: Backend) -> None: ...

    def on_backend_stopped(self, backend: Backend, *, crashed: bool) -> None: ...

    def tell_user(self, message: str, *, error: bool = False) -> None: ...


class _Handler:
    """Messages the server sends to us (requests, notifications) go to the session."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def on_request(self, msg_id: MsgId, method: str, params: Any) -> Any:
        return self.backend.host.on_backend_request(self.backend, msg_id, method, params)

    def on_notification(self, method: str, params: Any) -> None:
        self.backend.host.on_backend_notification(self.backend, method, params)


class Backend:
    def __init__(
        self,
        key: BackendKey,
        spec: ServerSpec,
        argv: list[str],
        host: BackendHost,
        options: HubOptions,
        uid: int,
    ) -> None:
        self.key = key
        self.spec = spec
        self.name = spec.name
        self.root = key.root
        self.argv = argv
        self.host = host
        self.options = options
        self.uid = uid  # short unique id, used to namespace ids and tokens
        self.state = State.STOPPED
        self.capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] = {}
        self.dynamic: dict[str, dict[str, Any]] = {}  # registration id -> {"method", "registerOptions"}
        self.progress = ServerProgress()  # what it is busy with; whether it is still loading its project
        self.requests_in_flight = 0  # queued or sent, not yet answered
        self.open_documents: set[str] = set()
        self.restarts = 0
        self.failure: str | None = None
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._crash_times: collections.deque[float] = collections.deque()
        self._outbox: list[Callable[[], None]] = []
        self._connection: ServerConnection | None = None
        self._tasks = KeptTasks()
        self._idle_timer: asyncio.TimerHandle | None = None
        self._stopping_connection: ServerConnection | None = None

    # ------------------------------------------------------------------------------------------------ status
    @property
    def pid(self) -> int | None:
        process = self._connection.process if self._connection else None
        return process.pid if process is not None and process.returncode is None else None

    @property
    def protocol(self) -> RawProtocol | None:
        return self._connection.protocol if self._connection else None

    def supports(self, method: str) -> bool:
        if not self.spec.allows(method):
            return False
        if self.dynamic and any(reg.get("method") == method for reg in self.dynamic.values()):
            return True
        path = CAPABILITY_PATHS.get(method)
        if path is None:
            return True  # an extension method: forward it and let the server say
        return has_capability(self.capabilities, path)

    def registered_options(self, method: str) -> dict[str, Any] | None:
        for reg in self.dynamic.values():
            if reg.get("method") == method:
                options = reg.get("registerOptions")
                return options if isinstance(options, dict) else {}
        return None

    def _spawn_task(self, coro: Any) -> asyncio.Task[Any]:
        return self._tasks.spawn(coro)

    # ------------------------------------------------------------------------------------------------ start
    def ensure_started(self) -> None:
        if self.state in (State.STOPPED, State.CRASHED):
            self.state = State.STARTING
            self._spawn_task(self._start())

    def _backoff_seconds(self) -> float:
        if not self._crash_times:
            return 0.0
        return float(min(0.25 * 2 ** (len(self._crash_times) - 1), 8.0))

    async def _start(self) -> None:
        delay = self._backoff_seconds()
        if delay:
            await asyncio.sleep(delay)
        connection = ServerConnection(self.name, _Handler(self), self._on_process_exit)
        self.progress.restart()
        try:
            await connection.start(
                self.argv,
                self.spec.env,
                cwd=self.root if os.path.isdir(self.root) else None,
                limit=STREAM_LIMIT,
                **CHILDREN.launch_options(),  # its own process group, ending with the hub
            )
        except OSError as exc:
            self._give_up(f"could not start {self.argv[0]!r}: {exc}")
            return
        self._connection = connection
        process = connection.process
        assert process is not None and process.stderr is not None
        self._spawn_task(drain_stderr(process.stderr, self.stderr_tail, self.name))
        logger.info("%s started at %s (pid %s): %s", self.name, self.root, process.pid, " ".join(self.argv))
        protocol = connection.protocol
        try:
            _, answer = protocol.request("initialize", self.host.initialize_params(self))
            result = materialize(await asyncio.wait_for(answer, self.options.initialize_timeout_seconds))
        except TimeoutError:
            self._give_up(f"{self.name} did not answer initialize within {self.options.initialize_timeout_seconds:g} s")
            self._kill(connection)
            return
        except ResponseFailure as exc:
            if self._connection is not connection:
                return  # the process died while initializing: _on_process_exit handled it
            self._give_up(f"{self.name} refused initialize: {exc.message}")
            self._kill(connection)
            return
        if self._connection is not connection or self.state != State.STARTING:
            return
        result = result if isinstance(result, dict) else {}
        self.capabilities = result.get("capabilities") or {}
        self.server_info = result.get("serverInfo") or {}
        encoding = self.capabilities.get("positionEncoding", "utf-16")
        if encoding != "utf-16":
            logger.warning("%s chose position encoding %s although only utf-16 was offered", self.name, encoding)
        protocol.notify("initialized", {})
        for method, notification_params in self.spec.untrusted_notifications.items():  # set for untrusted roots only
            protocol.notify(method, notification_params)
        if self.spec.settings:
            protocol.notify("workspace/didChangeConfiguration", {"settings": self.spec.settings})
        self.state = State.RUNNING
        for uri in sorted(self.open_documents):
            document = self.host.document(uri)
            if document is not None:
                self._send_did_open(document)
        outbox, self._outbox = self._outbox, []
        for action in outbox:
            action()
        if not self.open_documents:
            self._arm_idle_timer()
        self.host.on_backend_running(self)

    def _give_up(self, reason: str) -> None:
        self.state = State.FAILED
        self.failure = reason
        logger.error("%s", reason)
        self.host.tell_user(f"lsp-hub: {reason}; other servers keep working.", error=True)
        self._fail_outbox(reason)

    def _fail_outbox(self, reason: str) -> None:
        outbox, self._outbox = self._outbox, []
        failure = ResponseFailure(REQUEST_FAILED, f"{self.name} is not available: {reason}")
        for action in outbox:
            fail = getattr(action, "fail", None)
            if fail is not None:
                fail(failure)

    # ------------------------------------------------------------------------------------------------ exit
    def _on_process_exit(self, connection: ServerConnection, returncode: int | None) -> None:
        protocol = connection.protocol
        reason = f"{self.name} exited with code {returncode}"
        protocol.fail_outgoing(ResponseFailure(REQUEST_FAILED, f"{reason} before answering"))
        protocol.cancel_all_incoming()
        if connection is self._stopping_connection or connection is not self._connection:
            return  # a stop we asked for, or an old process
        self._connection = None
        if self.state == State.STOPPING:
            self.state = State.STOPPED
            self.host.on_backend_stopped(self, crashed=False)
            return
        was_failed = self.state == State.FAILED
        now = time.monotonic()
        self._crash_times.append(now)
        while self._crash_times and now - self._crash_times[0] > self.options.restart_window_seconds:
            self._crash_times.popleft()
        tail = " | ".join(list(self.stderr_tail)[-3:])
        logger.error("%s crashed (code %s). Last stderr: %s", self.name, returncode, tail or "(none)")
        self.capabilities = {}
        self.dynamic.clear()
        self.progress.work_in_progress.clear()
        self.host.on_backend_stopped(self, crashed=True)
        if was_failed:
            return
        if len(self._crash_times) >= self.options.max_restarts:
            self._give_up(
                f"{self.name} crashed {len(self._crash_times)} times in "
                f"{self.options.restart_window_seconds:g} s; not restarting it"
            )
            return
        self.state = State.CRASHED
        self.restarts += 1
        if self.open_documents or self._outbox:
            self.ensure_started()  # documents are open: bring diagnostics back without waiting for a request

    # ------------------------------------------------------------------------------------------------ sending
    def request(self, method: str, params: Any, *, timeout: float | None = None) -> Pending:
        """Send (or queue) a request; the returned Pending's future resolves with the answer or an error."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        pending = Pending(self, method, params, future)
        if self.state == State.FAILED:
            future.set_exception(ResponseFailure(REQUEST_FAILED, f"{self.name} is not available: {self.failure}"))
            return pending
        deadline = timeout or self.spec.request_timeout_seconds or self.options.request_timeout_seconds

        def send() -> None:
            if pending.cancelled or future.done():
                return
            if not self.supports(method):
                future.set_exception(NotSupported(self.name, method))
                return
            protocol = self.protocol
            if protocol is None:
                future.set_exception(ResponseFailure(REQUEST_FAILED, f"{self.name} is not running"))
                return
            pending.sent_while_loading = self.loading_project
            pending.msg_id, _ = protocol.request(method, params, future)
            pending.timer = asyncio.get_running_loop().call_later(deadline, self._time_out, pending, deadline)

        def fail(failure: ResponseFailure) -> None:
            if not future.done():
                future.set_exception(failure)

        send.fail = fail  # type: ignore[attr-defined]
        if self.state == State.RUNNING:
            send()
        else:
            self._outbox.append(send)
            self.ensure_started()
        if method not in DIAGNOSTIC_PULLS:  # a server may hold a pull open on purpose: that is not a backlog
            pending.counted = True
            self.requests_in_flight += 1
        future.add_done_callback(pending.settled)
        return pending

    # ------------------------------------------------------------------------------------------------ project load
    @property
    def work_in_progress(self) -> dict[str, str]:
        """Work the server says it is doing now (progress begun and not ended): token -> title."""
        return self.progress.work_in_progress

    def note_progress(self, token: Any, kind: Any, title: Any = None) -> None:
        """A `$/progress` from the server: what it is busy with; until its first progress ends, it is loading its
        project."""
        self.progress.note(token, kind, title)

    def note_diagnostics(self) -> None:
        """It published diagnostics: it has checked a file, so a load it never reported is over."""
        self.progress.note_diagnostics()

    @property
    def loading_project(self) -> bool:
        """Whether its answers may still come from a partial view (typescript-language-server's syntax-only
        server answers until the project has loaded): only for servers configured to be waited for."""
        return self.spec.wait_for_project_load and self.progress.loading

    async def wait_project_loaded(self, timeout: float) -> bool:
        return await self.progress.wait_loaded(timeout)

    @property
    def request_timeout(self) -> float:
        return self.spec.request_timeout_seconds or self.options.request_timeout_seconds

    def _time_out(self, pending: Pending, seconds: float) -> None:
        if pending.future.done():
            return
        logger.warning("%s did not answer %s within %g s", self.name, pending.method, seconds)
        if pending.msg_id is not None:
            self.notify("$/cancelRequest", {"id": pending.msg_id})
        pending.future.set_exception(
            ResponseFailure(REQUEST_FAILED, f"{self.name} did not answer {pending.method} within {seconds:g} s")
        )

    def notify(self, method: str, params: Any) -> None:
        """Send a notification now if running; queue it while starting; drop it otherwise."""
        if self.state == State.RUNNING and self.protocol is not None:
            self.protocol.notify(method, params)
        elif self.state == State.STARTING:
            self._outbox.append(lambda: self.protocol.notify(method, params) if self.protocol else None)

    def respond(self, msg_id: MsgId, result: Any = None, error: Any = None) -> None:
        if self.protocol is not None:
            self.protocol.send_response(msg_id, result=result, error=error)

    # ------------------------------------------------------------------------------------------------ documents
    def open_document(self, document: OpenText) -> None:
        if document.uri in self.open_documents:
            return
        self.open_documents.add(document.uri)
        self._disarm_idle_timer()
        if self.state == State.RUNNING:
            self._send_did_open(document)
        else:
            self.ensure_started()  # the start opens every document in open_documents with its current text

    def _send_did_open(self, document: OpenText) -> None:
        if self.protocol is not None:
            send_did_open(self.protocol, self.capabilities, document)
            self._expect_project_load(document.uri)

    def show_file(self, uri: str, language_id: str, text: str) -> None:
        """Open and close a file no client has open (`prestart`): a server that loads its project for an open file
        (tsserver) starts loading it."""
        self.notify("textDocument/didOpen",
                    {"textDocument": {"uri": uri, "languageId": language_id, "version": 0, "text": text}})
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        self._expect_project_load(uri)

    def _expect_project_load(self, uri: str) -> None:
        """Shown a file, a server waited for is loading from now: its report of the load may come a moment later,
        and a question meanwhile must not take its partial answer for the whole."""
        if self.spec.wait_for_project_load and self.progress.load_expectable:  # else no file system lookup
            self.progress.expect_load(reported=self._reports_load_of(uri))

    def _reports_load_of(self, uri: str) -> bool:
        """Whether one of the spec's `load_reported_with` files is at or above the file (a configured project)."""
        if not self.spec.load_reported_with:
            return False
        path = uri_to_path(uri)
        if path is None:
            return False
        directory = Path(path).parent
        return any(find_upward(directory, name) is not None for name in self.spec.load_reported_with)

    def change_document(self, document: OpenText, changes: list[dict[str, Any]]) -> None:
        if self.state != State.RUNNING or document.uri not in self.open_documents or self.protocol is None:
            return  # a starting server gets the current text when it opens the document
        send_did_change(self.protocol, self.capabilities, document, changes)

    def save_document(self, document: OpenText, params: dict[str, Any]) -> None:
        if self.state != State.RUNNING or document.uri not in self.open_documents or self.protocol is None:
            return
        send_did_save(self.protocol, self.capabilities, document, params)

    def close_document(self, uri: str) -> None:
        if uri not in self.open_documents:
            return
        self.open_documents.discard(uri)
        if self.state == State.RUNNING and self.protocol is not None:
            send_did_close(self.protocol, self.capabilities, uri, reannounce=self.spec.reannounce_closed_files)
        if not self.open_documents:
            self._arm_idle_timer()

    # ------------------------------------------------------------------------------------------------ idle, stop
    def _arm_idle_timer(self) -> None:
        self._disarm_idle_timer()
        if self.state == State.RUNNING and self.options.idle_shutdown_seconds > 0:
            self._idle_timer = asyncio.get_running_loop().call_later(self.options.idle_shutdown_seconds, self._on_idle)

    def _disarm_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _on_idle(self) -> None:
        self._idle_timer = None
        if not self.open_documents and self.state == State.RUNNING:
            logger.info(
                "%s at %s has had no open documents for %g s: stopping it",
                self.name,
                self.root,
                self.options.idle_shutdown_seconds,
            )
            self._spawn_task(self.stop())

    async def stop(self, *, grace_seconds: float = 2.0) -> None:
        """shutdown, exit, then terminate, then kill: each step bounded in time."""
        self._disarm_idle_timer()
        connection = self._connection
        if connection is None:
            if self.state in (State.STARTING, State.CRASHED, State.STOPPED):
                self.state = State.STOPPED
            self._fail_outbox("stopped")
            return
        self.state = State.STOPPING
        self._stopping_connection = connection
        self._fail_outbox("stopped")
        await connection.shut_down(grace_seconds)
        connection.protocol.fail_outgoing(ResponseFailure(REQUEST_FAILED, f"{self.name} was stopped"))
        connection.stop_reading.set()
        if self._connection is connection:
            self._connection = None
            self.state = State.STOPPED
            self.capabilities = {}
            self.dynamic.clear()
            self.host.on_backend_stopped(self, crashed=False)

    def _kill(self, connection: ServerConnection) -> None:
        if connection.process is not None:
            self._stopping_connection = connection
            connection.kill()
        if self._connection is connection:
            self._connection = None

    async def restart(self) -> None:
        """Stop (politely) and start again with a clean slate, a server that had been given up on included."""
        await self.stop()
        self._crash_times.clear()
        self.failure = None
        self.state = State.STOPPED
        if self.open_documents:
            self.ensure_started()

    def kill_now(self) -> None:
        """Last resort at hub exit: no politeness, no waiting."""
        for connection in (self._connection, self._stopping_connection):
            if connection is not None:
                connection.kill()
