"""Watching a workspace's files instead of walking the tree before each query.

`IndexWatcher(index).start()` watches the index's root with `watchfiles` (Rust's `notify`: inotify, FSEvents,
ReadDirectoryChangesW) in a thread and applies what changes to the index as it happens (`refresh_files`, by the
walk's rules: ignored directories, .gitignore, size limits). `ensure_fresh()` is what a hub calls before a query in
place of `index.build()`: while the watcher runs it walks nothing; it walks once after the watcher started (what
changed before the watch began) and again only when an ignore file changed (the rules themselves moved). A watcher
that cannot be set up (inotify's limits reached, a file system that reports nothing) leaves `watching` False with
the `reason`, and `ensure_fresh()` then walks as before. Graphs built before a burst are updated after it, in the
watcher's thread, off the next query's path.

Latency: a change is applied within about DEBOUNCE_MS + STEP_MS of the write; `ensure_fresh(wait=...)` may wait
for the watcher to take in what the kernel has already reported.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

from lsp_hub.index.background import keep_graphs_current
from lsp_hub.index.languages import language_for_path
from lsp_hub.index.walk import IndexingCancelled
from lsp_hub.index.workspace import WorkspaceIndex

log = logging.getLogger(__name__)

DEBOUNCE_MS = 100  # the longest a burst of changes is gathered before it is applied
STEP_MS = 20  # a burst ends after this long without a change
# The watcher thread comes round this often when nothing changes: a query waits for the round under way to end (so a
# file written just before it is in its answer), and 200 ms here cost every query ~150 ms through the daemon.
IDLE_TIMEOUT_MS = 25
SHARED_REFRESH_CHECK_SECONDS = 3600.0  # how often a watch asks whether the shared entries' daily refresh is due
READY_TIMEOUT_SECONDS = 10.0  # setting up the watches on a large tree takes a while (one per directory on Linux)
IGNORE_FILES = (".gitignore",)
GIT_EXCLUDE = ".git/info/exclude"


class IndexWatcher:
    """Keeps one WorkspaceIndex fresh from file-system events. Thread-safe; `stop()` ends the thread."""

    def __init__(self, index: WorkspaceIndex, *, force_polling: bool = False, keep_graphs: bool = True) -> None:
        self.index = index
        self.force_polling = force_polling
        self.keep_graphs = keep_graphs  # update built graphs after each burst (`background.keep_graphs_current`)
        self.watching = False
        self.reason: str | None = "not started"
        self.applied_changes = 0  # files changed in the index by events (tests and status)
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._walk_needed = True  # what changed before the watch began is seen by one walk
        self._lock = threading.Lock()
        self._busy = False  # applying a burst
        self._bursts = 0  # bursts taken in (or idle rounds passed): `ensure_fresh(wait)` waits for the next
        self._next_shared_refresh = time.monotonic() + SHARED_REFRESH_CHECK_SECONDS  # the build has just asked
        self._thread: threading.Thread | None = None

    # --- life cycle ---------------------------------------------------------------------------------------------

    def start(self) -> bool:
        """Start watching; returns `watching`. On failure `reason` says why and the index is walked as before."""
        try:
            import watchfiles  # noqa: F401  (a missing or broken install is a reason to walk, not an error)
        except ImportError as error:
            return self._failed(f"watchfiles unavailable: {error}")
        self._thread = threading.Thread(target=self._run, name=f"index-watch {self.index.root.name}", daemon=True)
        self._thread.start()
        if not self._ready.wait(READY_TIMEOUT_SECONDS):
            self._stop.set()
            return self._failed(f"setting up the watches took over {READY_TIMEOUT_SECONDS:g} s")
        return self.watching

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.watching = False
        self.reason = "stopped"

    def _failed(self, reason: str) -> bool:
        log.warning("not watching %s (%s); the tree is walked before queries instead", self.index.root, reason)
        self.watching = False
        self.reason = reason
        return False

    def status(self) -> dict[str, Any]:
        return {"watching": self.watching, "reason": self.reason, "appliedChanges": self.applied_changes}

    # --- what the hub calls ---------------------------------------------------------------------------------

    def ensure_fresh(self, wait: float = 0.0) -> dict[str, Any]:
        """Make the index current before a query: walk only when not watching, once after the watch began, or
        after an ignore file changed. `wait` seconds at most for the watcher to take in the events the kernel has
        reported by now. Returns whether it walked, with `status()`."""
        walked = False
        if not self.watching or self._walk_needed or self.index.state != "ready":
            self._walk_needed = False
            self.index.bring_up_to_date()
            walked = True
        elif wait > 0:
            self._wait_for_a_round(wait)
        return {"walked": walked, **self.status()}

    def _wait_for_a_round(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            seen = self._bursts
        while time.monotonic() < deadline:
            with self._lock:
                if self._bursts > seen + 1 or (self._bursts > seen and not self._busy):
                    return
            time.sleep(0.005)

    # --- the thread -----------------------------------------------------------------------------------------

    def _run(self) -> None:
        import watchfiles

        root = str(self.index.root)
        try:
            for changes in watchfiles.watch(
                root,
                watch_filter=_worth_looking_at,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                stop_event=self._stop,
                rust_timeout=IDLE_TIMEOUT_MS,
                yield_on_timeout=True,
                raise_interrupt=False,
                force_polling=self.force_polling,
                ignore_permission_denied=True,
            ):
                if not self._ready.is_set():
                    self.watching, self.reason = True, None
                    self._ready.set()
                if changes:
                    with self._lock:
                        self._busy = True
                    try:
                        self._apply(path for _change, path in changes)
                    except IndexingCancelled:
                        return
                    except Exception as error:  # never let one bad burst end the watch: walk next time instead
                        log.warning(
                            "applying file changes under %s failed (%s); walking next time", self.index.root, error
                        )
                        self._walk_needed = True
                with self._lock:
                    self._busy = False
                    self._bursts += 1
                if changes and self.keep_graphs:
                    try:
                        keep_graphs_current(self.index)
                    except Exception as error:  # an optimisation only: the next query updates them itself
                        log.warning("updating the graphs of %s failed (%s)", self.index.root, error)
                if time.monotonic() >= self._next_shared_refresh:  # a daemon may watch a root for days, unbuilt
                    self._next_shared_refresh = time.monotonic() + SHARED_REFRESH_CHECK_SECONDS
                    try:
                        self.index.refresh_shared_entries()
                    except Exception as error:  # cache upkeep only: it must not end the watch
                        log.warning("refreshing the shared entries of %s failed (%s)", self.index.root, error)
        except Exception as error:  # inotify limits, a root that vanished, a file system without events
            self._failed(f"{type(error).__name__}: {error}")
        finally:
            if self.watching and not self._stop.is_set():
                self._failed("the watch ended")
            self._ready.set()

    def _apply(self, absolute_paths: Iterable[str]) -> None:
        root = str(self.index.root)
        files: list[str] = []
        for absolute in absolute_paths:
            relative = os.path.relpath(absolute, root).replace(os.sep, "/")
            if relative.startswith("../") or relative in (".", ".."):
                continue
            if relative == GIT_EXCLUDE or relative.rsplit("/", 1)[-1] in IGNORE_FILES:
                self._walk_needed = True  # the rules changed: which files count is the walk's to say
                continue
            if language_for_path(relative) is not None and not os.path.isdir(absolute):
                files.append(relative)
            else:
                files.extend(self._under(relative))
        if files:
            self.applied_changes += self.index.refresh_files(files)

    def _under(self, directory: str) -> list[str]:
        """A directory that appeared, vanished or moved: the indexed files under it and the files now in it."""
        prefix = directory + "/"
        found = [path for path in self.index.snapshot().files if path.startswith(prefix)]
        absolute = self.index.root / directory
        if absolute.is_dir():
            for folder, subfolders, names in os.walk(absolute):
                subfolders[:] = [name for name in subfolders if not name.startswith(".")]
                relative_folder = os.path.relpath(folder, self.index.root).replace(os.sep, "/")
                found.extend(f"{relative_folder}/{name}" for name in names if language_for_path(name) is not None)
        return found


def _worth_looking_at(_change: Any, path: str) -> bool:
    """What may change the index: source files, ignore files, and names without a suffix (maybe directories).
    Git's own churn (objects, refs, the index file) is left out before it costs anything."""
    normalized = path.replace(os.sep, "/")
    if "/.git/" in normalized:
        return normalized.endswith("/" + GIT_EXCLUDE)
    name = normalized.rsplit("/", 1)[-1]
    return language_for_path(name) is not None or name in IGNORE_FILES or "." not in name
