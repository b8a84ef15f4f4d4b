"""Feeding the workers while the walk goes on (`builder`, `parse_pool`): a tree nothing is known of (a new worktree,
a first build) makes every file it finds a job, so batches of them are handed out as the walk finds them instead of
after it, and the workers' lookups (or parses) overlap the walk. At 100,000 files the walk takes 0.8-1 s, during
which a core idled.

The walk runs in a thread of its own (`WalkFeed.start`); the building thread takes the batches cut so far
(`batches`), and once the walk has ended, the files left over (`rest`, to be batched as the pool batches a whole
build) and the walk's result, exactly what `walk_workspace` returns. A tree whose walk ends before
STREAM_AFTER_FILES files were found is built from its whole walk, as before."""

from __future__ import annotations

import threading
from collections.abc import Callable

from lsp_hub.index.parse_worker import ParseJob
from lsp_hub.index.walk import WalkedFile, WalkResult

# Files found before the first batch is handed out: a smaller tree's walk is over in a few tens of milliseconds.
STREAM_AFTER_FILES = 4096
STREAM_BATCH_FILES = 256  # a batch handed out during the walk: this many files or STREAM_BATCH_BYTES
STREAM_BATCH_BYTES = 2 * 1024 * 1024

# walk_workspace with (should_stop, files_found, the result to fill) given: returns that result, its files sorted.
Walk = Callable[[Callable[[], bool], Callable[[int], None], WalkResult], WalkResult]


class WalkFeed:
    """A walk in a thread, cutting the files it finds into parse jobs (none known: `known_digest` None)."""

    def __init__(self, files_found: Callable[[int, WalkResult], None] | None = None) -> None:
        # Told the count after each directory, as the walk tells it, with the walk's result as filled so far.
        self._files_found = files_found
        self._changed = threading.Condition()
        self._cut: list[list[ParseJob]] = []  # batches cut, not yet taken
        self._uncut: list[WalkedFile] = []  # found since the last batch was cut
        self._uncut_bytes = 0
        self._seen = 0  # files of the walk's (growing) list looked at
        self.streaming = False  # batches are being cut: the tree passed STREAM_AFTER_FILES
        self.sizes: dict[str, int] = {}  # every job handed out so far, and the rest: its file's size
        self._result: WalkResult | None = None
        self._error: BaseException | None = None
        self._abandoned = False
        self._thread: threading.Thread | None = None
        self._walking = WalkResult()  # filled by the walk: its files in the order found until it sorts them at the end

    def start(self, walk: Walk, should_stop: Callable[[], bool]) -> None:
        def run() -> None:
            try:
                result = walk(lambda: should_stop() or self._abandoned, self._found_in, self._walking)
            except BaseException as error:  # handed to the building thread
                with self._changed:
                    self._error = error
                    self._changed.notify_all()
                return
            with self._changed:
                self._result = result
                self._changed.notify_all()

        self._thread = threading.Thread(target=run, name="index-walk", daemon=True)
        self._thread.start()

    def _found_in(self, count: int) -> None:
        """After each directory (in the walk's thread): cut what it found into batches once the tree is large."""
        if self._files_found is not None:
            self._files_found(count, self._walking)
        new = self._walking.files[self._seen : count]
        self._seen = count
        self._uncut.extend(new)
        self._uncut_bytes += sum(walked.size for walked in new)
        if not self.streaming and count < STREAM_AFTER_FILES:
            return
        cut: list[list[ParseJob]] = []
        while len(self._uncut) >= STREAM_BATCH_FILES or self._uncut_bytes >= STREAM_BATCH_BYTES:
            taken, taken_bytes = 0, 0
            while taken < len(self._uncut) and taken < STREAM_BATCH_FILES and taken_bytes < STREAM_BATCH_BYTES:
                taken_bytes += self._uncut[taken].size
                taken += 1
            batch = self._uncut[:taken]
            del self._uncut[:taken]
            self._uncut_bytes -= taken_bytes
            cut.append(self._jobs_of(batch))
        if cut:
            with self._changed:
                self.streaming = True
                self._cut.extend(cut)
                self._changed.notify_all()

    def _jobs_of(self, files: list[WalkedFile]) -> list[ParseJob]:
        jobs = [ParseJob(walked.path, walked.language, None) for walked in files]
        for walked in files:
            self.sizes[walked.path] = walked.size
        return jobs

    def wait_started(self) -> bool:
        """Wait until batches are cut (True) or the walk ended first (False: build from the whole walk)."""
        with self._changed:
            while not self._cut and self._result is None and self._error is None:
                self._changed.wait()
            self._raise_error()
            return bool(self._cut) or self.streaming

    def batches(self, timeout: float = 0.0) -> list[list[ParseJob]]:
        """The batches cut since the last call, waiting up to `timeout` for one while the walk goes on."""
        with self._changed:
            if not self._cut and self._result is None and self._error is None and timeout > 0:
                self._changed.wait(timeout)
            self._raise_error()
            cut, self._cut = self._cut, []
            return cut

    @property
    def found(self) -> int:
        """Files the walk has found so far."""
        return self._seen

    @property
    def finished(self) -> bool:
        """The walk ended (and its last batches were cut)."""
        return self._result is not None or self._error is not None

    def rest(self) -> list[ParseJob]:
        """The walk's files not handed out in a batch (once it has ended), taken once."""
        with self._changed:
            self._raise_error()
            assert self._result is not None
            rest, self._uncut = self._uncut, []
            self._uncut_bytes = 0
        return self._jobs_of(rest)

    def result(self) -> WalkResult:
        """The walk's result, waiting for its end."""
        with self._changed:
            while self._result is None and self._error is None:
                self._changed.wait()
            self._raise_error()
            assert self._result is not None
            return self._result

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def abandon(self) -> None:
        """The build ends without the walk (cancelled, or failed): stop it at its next directory."""
        self._abandoned = True
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
