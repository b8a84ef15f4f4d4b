"""TypeScript's own parser for syntax checks: one long-lived node process (`ts_syntax.js`) per TypeScript copy.

The process starts on the first check that needs it and is then reused by every thread of the hub: requests carry
ids, a reader thread hands each answer to the thread waiting for it, and each check has a deadline. A process that
died is started again on the next check; one that misses a deadline is killed (a parser stuck on some input would
otherwise hold every later check) and likewise started again. A copy of TypeScript that fails to start
`MAX_QUICK_FAILURES` times in a row is not tried again for `RETRY_AFTER_SECONDS`.

The helper must never outlive the hub, even a hub killed by SIGKILL: it exits when its stdin reaches EOF, which the
kernel causes by closing the hub's end of the pipe (the pipe is close-on-exec, so no other child holds it), and when
it finds itself re-parented. PR_SET_PDEATHSIG is not used: it fires when the *thread* that started the child ends,
and the first check usually runs in a short-lived worker thread. The hub also ends it at exit (`close_all_helpers`).

Where TypeScript and node are is decided by whoever creates the `TypeScriptRuntime` (the hub, by its trust rules):
this module only runs what it is given.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import logging
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

HELPER_SCRIPT = Path(__file__).with_name("ts_syntax.js")
START_TIMEOUT_SECONDS = 15.0  # loading typescript.js (9 MB) takes 0.3-0.5 s on a calm machine
CHECK_TIMEOUT_SECONDS = 3.0  # a 1 MB file parses in well under a second
MAX_QUICK_FAILURES = 3
RETRY_AFTER_SECONDS = 60.0


class TypeScriptUnavailable(Exception):
    """TypeScript's parser could not answer; the message says why (it is shown to the user as the fallback reason)."""


class _HelperDied(Exception):
    """The helper process ended before it answered."""


@dataclass(frozen=True, slots=True)
class TypeScriptRuntime:
    """Where the TypeScript library and the node to run it are, as the hub chose them."""

    node: str  # absolute path of the node executable
    typescript: str  # absolute path of typescript/lib/typescript.js
    version: str  # TypeScript's version, from its package.json ("5.9.3")
    path_env: str | None = None  # PATH for the helper (the hub's cleaned PATH), None: the hub's own

    @property
    def checker_name(self) -> str:
        return f"typescript-{self.version}"


@dataclass(frozen=True, slots=True)
class TsDiagnostic:
    start: int  # UTF-16 offset into the text
    length: int
    code: int
    message: str


@dataclass(slots=True)
class _Waiter:
    done: threading.Event = field(default_factory=threading.Event)
    answer: dict[str, Any] | None = None


class _HelperProcess:
    """One running `node ts_syntax.js`, with its reader threads."""

    def __init__(self, runtime: TypeScriptRuntime) -> None:
        env = dict(os.environ)
        if runtime.path_env is not None:
            env["PATH"] = runtime.path_env
        self.process = subprocess.Popen(
            [runtime.node, str(HELPER_SCRIPT), runtime.typescript],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd="/", env=env, close_fds=True,
            start_new_session=True,  # a Ctrl-C in the hub's terminal is the hub's to handle, not the helper's
        )
        self.pid = self.process.pid
        self._waiters: dict[int, _Waiter] = {}
        self._waiters_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.ready = threading.Event()
        self.version: str | None = None
        self.fatal: str | None = None
        self.exited = False
        threading.Thread(target=self._read_answers, name=f"ts-syntax-{self.pid}", daemon=True).start()
        threading.Thread(target=self._drain_stderr, name=f"ts-syntax-err-{self.pid}", daemon=True).start()

    def _read_answers(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                logger.debug("TypeScript helper %d said something that is not JSON: %r", self.pid, line[:200])
                continue
            if not isinstance(message, dict):
                continue
            if "ready" in message or "fatal" in message:
                self.version = message.get("version")
                self.fatal = message.get("fatal")
                self.ready.set()
                continue
            request_id = message.get("id")
            with self._waiters_lock:
                waiter = self._waiters.pop(request_id, None) if isinstance(request_id, int) else None
            if waiter is not None:
                waiter.answer = message
                waiter.done.set()
        # EOF: the process ended. Everyone still waiting learns it now rather than at their deadline.
        self.exited = True
        self.ready.set()
        with self._waiters_lock:
            waiters, self._waiters = list(self._waiters.values()), {}
        for waiter in waiters:
            waiter.done.set()

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            logger.debug("TypeScript helper %d: %s", self.pid, line.decode("utf-8", "replace").rstrip())

    def request(self, request_id: int, payload: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """The helper's answer, or None when it ended or missed the deadline (the caller tells which)."""
        waiter = _Waiter()
        with self._waiters_lock:
            if self.exited:
                return None
            self._waiters[request_id] = waiter
        data = (json.dumps({"id": request_id, **payload}) + "\n").encode("utf-8")
        try:
            with self._write_lock:
                assert self.process.stdin is not None
                self.process.stdin.write(data)
                self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):  # ValueError: the pipe was closed by close()
            with self._waiters_lock:
                self._waiters.pop(request_id, None)
            return None
        waiter.done.wait(timeout)
        with self._waiters_lock:
            self._waiters.pop(request_id, None)
        return waiter.answer

    def alive(self) -> bool:
        return not self.exited and self.process.poll() is None

    def close(self) -> None:
        """End the process: close its stdin (it exits on EOF), then kill it if it lingers."""
        with contextlib.suppress(OSError, ValueError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(0.5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(2.0)


class TypeScriptHelper:
    """TypeScript's parser behind one runtime: started on first use, restarted when it dies or hangs."""

    def __init__(self, runtime: TypeScriptRuntime, *, start_timeout: float = START_TIMEOUT_SECONDS,
                 check_timeout: float = CHECK_TIMEOUT_SECONDS) -> None:
        self.runtime = runtime
        self.start_timeout = start_timeout
        self.check_timeout = check_timeout
        self.starts = 0  # processes started so far (1 + restarts)
        self._process: _HelperProcess | None = None
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._quick_failures = 0
        self._failed_at = 0.0
        self._last_failure = ""
        self.closed = False

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.alive() else None

    def _running(self) -> _HelperProcess:
        with self._lock:
            if self.closed:
                raise TypeScriptUnavailable("the hub is shutting down")
            process = self._process
            if process is not None and process.alive():
                return process
            if self._quick_failures >= MAX_QUICK_FAILURES:
                if time.monotonic() - self._failed_at < RETRY_AFTER_SECONDS:
                    raise TypeScriptUnavailable(self._last_failure)
                self._quick_failures = 0
            if process is not None:
                logger.info("the TypeScript syntax helper (pid %d) ended; starting it again", process.pid)
                process.close()
            self._process = None
            try:
                process = _HelperProcess(self.runtime)
            except OSError as error:
                raise self._failure(f"cannot start {self.runtime.node}: {error.strerror or error}") from None
            self.starts += 1
            if not process.ready.wait(self.start_timeout) or process.exited or process.fatal:
                why = process.fatal or ("it exited at start" if process.exited else
                                        f"it was not ready within {self.start_timeout:g} s")
                process.close()
                raise self._failure(f"TypeScript's parser ({self.runtime.typescript}) could not start: {why}")
            logger.info("TypeScript %s syntax helper started (pid %d)", process.version, process.pid)
            self._process = process
            self._quick_failures = 0
            return process

    def _failure(self, why: str) -> TypeScriptUnavailable:
        self._quick_failures += 1
        self._failed_at = time.monotonic()
        self._last_failure = why
        logger.warning("%s", why)
        return TypeScriptUnavailable(why)

    def check(self, text: str, file_name: str, kind: str) -> list[TsDiagnostic]:
        """TypeScript's parse diagnostics of `text` (kind: ts, tsx, js or jsx); raises TypeScriptUnavailable.

        A process found dead during the check (killed between checks, say, before its end was noticed) costs one
        more try on a fresh process; a second death in a row is the input's doing, and the check falls back."""
        try:
            return self._check_once(text, file_name, kind)
        except _HelperDied:
            logger.info("the TypeScript syntax helper ended during a check; trying once more on a new one")
        try:
            return self._check_once(text, file_name, kind)
        except _HelperDied:
            raise TypeScriptUnavailable("TypeScript's parser exited during the check, twice") from None

    def _check_once(self, text: str, file_name: str, kind: str) -> list[TsDiagnostic]:
        process = self._running()
        answer = process.request(next(self._ids), {"fileName": file_name, "kind": kind, "text": text},
                                 self.check_timeout)
        if answer is None:
            if process.alive():
                # Missed the deadline: a parser stuck on this input would hold every later check, so start afresh.
                logger.warning("the TypeScript syntax helper (pid %d) did not answer within %g s; ending it",
                               process.pid, self.check_timeout)
                process.close()
                raise TypeScriptUnavailable(f"TypeScript's parser did not answer within {self.check_timeout:g} s")
            raise _HelperDied()
        if "error" in answer:
            raise TypeScriptUnavailable(f"TypeScript's parser failed: {str(answer['error']).splitlines()[0]}")
        return [TsDiagnostic(int(d["start"]), int(d["length"]), int(d["code"]), str(d["message"]))
                for d in answer.get("diagnostics", [])]

    def close(self) -> None:
        with self._lock:
            self.closed = True
            process, self._process = self._process, None
        if process is not None:
            process.close()


_helpers: dict[TypeScriptRuntime, TypeScriptHelper] = {}
_helpers_lock = threading.Lock()


def helper_for(runtime: TypeScriptRuntime) -> TypeScriptHelper:
    """The process-wide helper of a runtime: every workspace of the hub that uses the same TypeScript shares it."""
    with _helpers_lock:
        helper = _helpers.get(runtime)
        if helper is None or helper.closed:
            helper = _helpers[runtime] = TypeScriptHelper(runtime)
        return helper


def running_helpers() -> list[TypeScriptHelper]:
    with _helpers_lock:
        return [helper for helper in _helpers.values() if helper.pid is not None]


@atexit.register
def close_all_helpers() -> None:
    """End every helper (the hub is exiting; a hub that is killed ends them through their stdin's EOF instead)."""
    with _helpers_lock:
        helpers = list(_helpers.values())
        _helpers.clear()
    for helper in helpers:
        helper.close()
