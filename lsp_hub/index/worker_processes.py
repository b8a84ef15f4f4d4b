"""The parse workers' processes, owned outright rather than through `concurrent.futures`: each worker is one process
that takes jobs from one queue as it becomes free and answers through a pipe of its own. A stopped build kills
exactly its processes; a worker killed in the middle of an answer ends its own pipe (the reader gets end of file
and never waits for the rest); and nothing reaches into a pool's private members, which is where
`ProcessPoolExecutor` keeps its processes and its result pipe. The forkserver the workers come from is ended
through its process, as multiprocessing offers no public way to stop it before exit.

Invariant: each job is answered by one message carrying its number; the building thread alone sends jobs and reads
answers. Nothing here knows what a job is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import multiprocessing.process
    from multiprocessing.connection import Connection

log = logging.getLogger("lsp_hub.index.workspace")

JOIN_SECONDS = 5.0  # a worker told to end that has not within this is killed
KILL_JOIN_SECONDS = 1.0
FORKSERVER_COMMAND = "from multiprocessing.forkserver import main"  # what its interpreter was started with
FORKSERVER_END_SECONDS = 2.0
FORKSERVER_POLL_SECONDS = 0.005


class WorkerDied(OSError):
    """A worker process ended before answering every job it was given."""


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    results: Connection  # this process's end: receives


class WorkerProcesses:
    """`count` processes of `context` that each run `initializer(*initargs)` once, then take jobs from one queue as
    they become free (so none idles while another has jobs waiting), each answered with `function(*job)`'s value,
    or the exception it raised, raised again here."""

    def __init__(
        self,
        context: Any,  # a multiprocessing context: each concrete one has `Process` (their base class does not)
        count: int,
        function: Callable[..., Any],
        initializer: Callable[..., None],
        initargs: Sequence[Any] = (),
    ) -> None:
        self._context = context
        self._count = count
        self._function, self._initializer, self._initargs = function, initializer, tuple(initargs)
        self._workers: list[_Worker] = []
        self._jobs: Any = None  # the queue every worker takes from: its feeding thread never blocks the sender
        self._next_job = 0
        self.pending = 0  # jobs sent and not answered yet
        self._lock = threading.Lock()  # `start` (a starting thread) against `kill` (the building thread, stopping)
        self._killed = False
        self.forkserver_pid: int | None = None  # the workers' parent when it is not this process

    def start(self) -> None:
        """Start the processes; with a forkserver this waits for it to be running and to have imported."""
        self._jobs = self._context.Queue()
        for _ in range(self._count):
            results_reader, results_writer = self._context.Pipe(duplex=False)
            process = self._context.Process(
                target=serve_jobs,
                args=(self._jobs, results_writer, self._function, self._initializer, self._initargs),
                name="lsp-hub-index-worker",
                daemon=True,
            )
            with self._lock:
                if self._killed:
                    return
                process.start()
                self._workers.append(_Worker(process, results_reader))
            results_writer.close()  # the worker's alone now: its death ends the pipe for the reader
        if self._workers and self.forkserver_pid is None:
            parent = parent_of(self._workers[0].process.pid or 0)
            self.forkserver_pid = parent if parent != os.getpid() else None

    @property
    def count(self) -> int:
        return len(self._workers)

    def send(self, job: tuple[Any, ...]) -> int:
        """Queue `job` for the first worker free; returns its number, which its answer carries."""
        number = self._next_job
        self._next_job += 1
        self._jobs.put((number, job))
        self.pending += 1
        return number

    def answers(self, timeout: float) -> list[tuple[int, Any]]:
        """The answers that arrive within `timeout` (none when none do), as (job number, value). Raises WorkerDied
        when a worker has ended (which before `close` only a death does), and a job's own exception as it raised
        it."""
        from multiprocessing.connection import wait

        if not self.pending:
            return []
        by_handle: dict[Any, _Worker] = {}
        for worker in self._workers:
            by_handle[worker.results] = worker
            by_handle[worker.process.sentinel] = worker
        answered: list[tuple[int, Any]] = []
        for handle in wait(list(by_handle), timeout):
            worker = by_handle[handle]
            if handle is not worker.results:
                raise WorkerDied(f"index worker {worker.process.pid} ended (exit code {worker.process.exitcode})")
            try:
                number, succeeded, value = worker.results.recv()
            except (EOFError, OSError) as error:
                raise WorkerDied(f"index worker {worker.process.pid} ended before answering") from error
            self.pending -= 1
            if not succeeded:
                raise value
            answered.append((number, value))
        return answered

    def close(self) -> None:
        """Tell every worker to end once the jobs are done, and wait for them (killing those that do not end)."""
        for _ in self._workers:
            self._jobs.put(None)
        for worker in self._workers:
            worker.process.join(JOIN_SECONDS)
            if worker.process.is_alive():
                log.warning("index worker %s did not end; killing it", worker.process.pid)
                worker.process.kill()
                worker.process.join(KILL_JOIN_SECONDS)
        self._release()

    def kill(self) -> None:
        """Kill every worker now, in the middle of its job; those still starting are not started."""
        with self._lock:
            self._killed = True
            workers = list(self._workers)
        for worker in workers:
            with contextlib.suppress(OSError, ValueError):
                worker.process.kill()
        for worker in workers:
            with contextlib.suppress(OSError, ValueError, AssertionError):
                worker.process.join(KILL_JOIN_SECONDS)
        if self._jobs is not None:
            # Jobs nobody will read may fill its pipe: its feeding thread must not hold this process's exit.
            self._jobs.cancel_join_thread()
        self._release()

    def _release(self) -> None:
        if self._jobs is not None:
            self._jobs.close()
        for worker in self._workers:
            worker.results.close()
            with contextlib.suppress(ValueError):  # still running, after a kill that could not be waited for
                worker.process.close()


def serve_jobs(
    jobs: Any,
    results: Connection,
    function: Callable[..., Any],
    initializer: Callable[..., None],
    initargs: tuple[Any, ...],
) -> None:
    """A worker's life: jobs taken from the shared queue one at a time, each answered with (number, True, value)
    or (number, False, exception), until a None."""
    initializer(*initargs)
    while (item := jobs.get()) is not None:
        number, job = item
        try:
            answer: tuple[int, bool, Any] = (number, True, function(*job))
        except BaseException as error:  # handed to the building thread, which raises it there
            answer = (number, False, error)
        try:
            results.send(answer)
        except (OSError, EOFError):
            return  # the building process is gone
        except Exception as error:  # an exception that cannot be pickled
            results.send((number, False, RuntimeError(f"index worker: {answer[2]!r} ({error})")))


def stop_forkserver(pid: int | None = None) -> None:
    """End this process's multiprocessing forkserver (`pid`, else the child running its command) and wait until it
    has exited, without holding the interpreter meanwhile. It is left unreaped: multiprocessing reaps it when it
    next needs a forkserver, and then starts another (its `ensure_running` checks whether its forkserver is alive);
    reaped here, that check would fail instead."""
    if sys.platform == "win32":
        return  # no forkserver there
    if pid is None:
        pid = _forkserver_child()
    if pid is None or pid == os.getpid():
        return
    try:
        if sys.platform == "linux":
            exited = os.WEXITED | os.WNOWAIT
            if os.waitid(os.P_PID, pid, exited | os.WNOHANG) is not None:
                return  # it has exited already
            os.kill(pid, signal.SIGTERM)
            os.waitid(os.P_PID, pid, exited)
        else:  # macOS has no waitid: its status, polled
            import psutil

            forkserver = psutil.Process(pid)
            if forkserver.ppid() != os.getpid():
                return
            forkserver.terminate()
            deadline = time.monotonic() + FORKSERVER_END_SECONDS
            while forkserver.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
                time.sleep(FORKSERVER_POLL_SECONDS)
    except ChildProcessError:
        return  # not a child of this process (any more): nothing of ours
    except Exception as error:  # gone meanwhile, or psutil missing: it ends with this process then
        log.debug("could not stop the index forkserver %s: %s", pid, error)


def parent_of(pid: int) -> int | None:
    """The parent of process `pid` (a worker's: its forkserver), or None when it cannot be told."""
    try:
        import psutil

        return psutil.Process(pid).ppid()
    except Exception:  # psutil missing, or the process gone: the forkserver is then found by its command
        return None


def _forkserver_child() -> int | None:
    try:
        import psutil

        for child in psutil.Process().children():
            with contextlib.suppress(psutil.Error):
                if FORKSERVER_COMMAND in " ".join(child.cmdline()):
                    return int(child.pid)
    except Exception as error:  # psutil missing or failing: the forkserver then ends with this process
        log.debug("could not find the index forkserver: %s", error)
    return None
