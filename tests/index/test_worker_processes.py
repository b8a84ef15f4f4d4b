"""The parse workers' processes (`worker_processes`): answers by job, a job's exception raised where it was sent,
a worker's death noticed at once (even in the middle of an answer), and the forkserver ended and started again."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lsp_hub.index.worker_processes import WorkerDied, WorkerProcesses, stop_forkserver
from tests.conftest import descendant_pids

pytestmark = pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="forkserver start method (POSIX)"
)


def _context() -> multiprocessing.context.BaseContext:
    return multiprocessing.get_context("forkserver")


def _collect(pool: WorkerProcesses, count: int, timeout: float = 20.0) -> list[tuple[int, object]]:
    answers: list[tuple[int, object]] = []
    deadline = time.monotonic() + timeout
    while len(answers) < count and time.monotonic() < deadline:
        answers += pool.answers(0.1)
    return answers


def test_each_answer_names_its_job_and_a_jobs_exception_is_raised_here() -> None:
    pool = WorkerProcesses(_context(), 2, pow, int)
    pool.start()
    try:
        numbers = {pool.send((2, exponent)): exponent for exponent in range(6)}
        answers = _collect(pool, 6)
        assert sorted((numbers[number], value) for number, value in answers) == [(e, 2**e) for e in range(6)]
        assert pool.pending == 0
        pool.send((2, "x"))  # pow(2, "x") raises TypeError in the worker
        with pytest.raises(TypeError):
            _collect(pool, 1)
    finally:
        pool.close()


def test_a_worker_that_dies_with_a_job_unanswered_is_reported() -> None:
    pool = WorkerProcesses(_context(), 1, os._exit, int)
    pool.start()
    try:
        pool.send((3,))
        started = time.monotonic()
        with pytest.raises(WorkerDied):
            _collect(pool, 1)
        assert time.monotonic() - started < 5.0
    finally:
        pool.kill()


_KILLED_MID_ANSWER = """
import multiprocessing, time
from lsp_hub.index.worker_processes import WorkerDied, WorkerProcesses

if __name__ == "__main__":
    pool = WorkerProcesses(multiprocessing.get_context("forkserver"), 1, bytes, int)
    pool.start()
    pool.send((50_000_000,))  # an answer far larger than the pipe holds: the worker blocks part way through it
    time.sleep(1.0)
    for child in multiprocessing.active_children():
        child.kill()
    try:
        while True:
            pool.answers(0.1)
    except WorkerDied as error:
        print("died:", error, flush=True)
    pool.kill()
    print("exiting", flush=True)
"""


def test_a_worker_killed_in_the_middle_of_an_answer_is_reported_and_nothing_hangs(tmp_path: Path) -> None:
    script = tmp_path / "killed_mid_answer.py"
    script.write_text(_KILLED_MID_ANSWER, encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    environment = {**os.environ, "PYTHONPATH": str(root)}
    try:
        finished = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=30, env=environment, cwd=tmp_path
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reading the half-sent answer of a killed worker hung")
    assert finished.returncode == 0, finished.stderr
    assert "died:" in finished.stdout and "exiting" in finished.stdout


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to list child processes")
def test_the_forkserver_is_ended_and_the_next_pool_starts_another() -> None:
    def live_forkservers() -> set[int]:
        found = set()
        for pid in descendant_pids(os.getpid(), live_only=True):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"multiprocessing.forkserver" in command:
                found.add(pid)
        return found

    pool = WorkerProcesses(_context(), 1, pow, int)
    pool.start()
    first = live_forkservers()
    pool.send((3, 2))
    assert [value for _worker, value in _collect(pool, 1)] == [9]
    pool.close()
    assert first
    stop_forkserver()
    assert not live_forkservers()
    again = WorkerProcesses(_context(), 1, pow, int)
    again.start()
    try:
        again.send((3, 3))
        assert [value for _worker, value in _collect(again, 1)] == [27]
        assert live_forkservers() and not live_forkservers() & first
    finally:
        again.close()
        stop_forkserver()
