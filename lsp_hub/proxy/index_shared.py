"""The code index of a workspace (`SharedIndex`): built once, shared by every session of the workspace, kept
fresh (documents through `index_feed.py`, the disk through watched files or polling), asked in worker threads.

The index itself (`lsp_hub.index`) is a library that knows nothing of LSP; CPU work (building, queries) runs in
worker threads (builds fan out to processes inside the library) so the event loop keeps forwarding meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.documents import uri_to_path
from lsp_hub.proxy.index_feed import DocumentFeed
from lsp_hub.proxy.index_roots import project_root, root_markers
from lsp_hub.proxy.index_syntax import SyntaxDiagnostics
from lsp_hub.transport.jsonrpc import INVALID_PARAMS, ResponseFailure

if TYPE_CHECKING:
    from lsp_hub.index.syntax_checkers import SyntaxCheckers
    from lsp_hub.index.watch import IndexWatcher
    from lsp_hub.index.workspace import WorkspaceIndex
    from lsp_hub.proxy.client_view import ClientView
    from lsp_hub.proxy.workspace import Workspace

logger = logging.getLogger(__name__)

GRAPH_QUERIES = frozenset(("repo_map", "relevant_files"))  # after these, the hub keeps the graphs ready for updates
WAIT_FOR_BUILD_SECONDS = 10.0
POLL_SECONDS = 10.0
# Before a query, the most it waits for the watcher's round under way to end, so that a file written just before the
# query is in its answer: a round ends every 25 ms when nothing changes (index/watch.py IDLE_TIMEOUT_MS), or once a
# burst of changes is applied.
WATCH_SETTLE_SECONDS = 0.5
PROGRESS_TOKEN = "lsp-hub/index"
STOP_BUILD_SECONDS = 1.0  # how long closing waits for a stopped build's thread to notice


class SharedIndex:
    """The code index of one workspace: built once, shared by every session of the workspace, and living as long
    as the workspace (it is one of `Workspace.attachments`; the workspace's `stop` closes it).

    Documents are indexed with the text the backends see (the latest writer's, `Workspace.document`); syntax
    diagnostics go through the workspace's diagnostic store. Progress of a build goes to every session of the
    workspace at the build's start that supports work-done progress; messages for the user go to every session.
    """

    ATTACHMENT = "index"  # its name in `Workspace.attachments`

    @classmethod
    def of(cls, workspace: Workspace, folders: list[str], named_a_folder: bool) -> SharedIndex:
        """The workspace's index: made (and its build started) for the workspace's first initialized session, and
        kept by the workspace, which closes it when it stops."""
        shared = workspace.attachments.get(cls.ATTACHMENT)
        if isinstance(shared, SharedIndex) and not shared.closed:
            logger.info("session joins the workspace's index (%d build(s) so far)", shared.builds)
            return shared
        shared = cls(workspace, folders, named_a_folder)
        workspace.attachments[cls.ATTACHMENT] = shared
        return shared

    def __init__(self, workspace: Workspace, folders: list[str], named_a_folder: bool) -> None:
        from lsp_hub.index.workspace import WorkspaceIndex

        self.workspace = workspace
        self.indexes: dict[str, WorkspaceIndex] = {}
        self.built = asyncio.Event()
        self.builds = 0  # full builds started (the first, and those of no-folder project roots)
        self._building: asyncio.Task[None] | None = None
        self._preparing: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._prestarting: asyncio.Task[None] | None = None
        self._watchers: dict[str, IndexWatcher] = {}  # by index root: files watched instead of walked per query
        self.no_folder = False  # the client named no workspace folder: roots come from the files it opens
        self.reason: str | None = None  # why the index covers what it covers, when that is not the folders
        self._rootless: dict[str, str] = {}  # open documents in no project (no-folder mode) -> why
        self._root_builds: set[asyncio.Task[None]] = set()
        self._progress_sessions: list[ClientView] = []
        self.syntax = SyntaxDiagnostics(workspace, self.index_for)
        self.feed = DocumentFeed(workspace, self.index_for, self.syntax)
        self.closed = False
        from lsp_hub.index.background import collect_less_often

        collect_less_often()  # this process now keeps indexes
        if named_a_folder:
            for folder in folders:
                try:
                    self.indexes[folder] = WorkspaceIndex(folder, cache_max_mb=workspace.config.index.cache_max_mb)
                except OSError as exc:
                    logger.error("cannot index %s: %s", folder, exc)
        else:
            # A single file opened from a shell: the session's folder is then the hub's current directory, which may
            # be $HOME or /usr. Index the project roots of the files opened instead, as they are opened.
            self.no_folder = True
            self.reason = ("no workspace folder: indexing the project roots of open files (the nearest directory "
                           "with a root marker), and nothing until one is opened")
        self.builds += 1
        self._building = workspace.spawn(self._build_all())

    # ------------------------------------------------------------------------------------------------ lifecycle
    async def close(self) -> None:
        """The workspace ends: a build under way is abandoned (its worker processes killed) rather than waited for."""
        if self.closed:
            return
        self.closed = True
        if self._poller is not None:
            self._poller.cancel()
        for watcher in self._watchers.values():
            await asyncio.to_thread(watcher.stop)
        self.feed.updates.close()
        for index in self.indexes.values():
            index.stop()
        builds = [task for task in (self._building, *self._root_builds) if task is not None and not task.done()]
        if builds:
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.gather(*builds, return_exceptions=True)),
                                       STOP_BUILD_SECONDS)
            except TimeoutError:
                # Its thread still runs and may still write to the caches: leave them open, the process is ending.
                logger.warning("the index build did not stop within %.1f s", STOP_BUILD_SECONDS)
                return
        for index in self.indexes.values():
            await asyncio.to_thread(index.close)

    async def _build_all(self) -> None:
        from lsp_hub.index.walk import IndexingCancelled

        progress = await self._progress_begin("Indexing workspace")
        loop = asyncio.get_running_loop()
        last_report = 0.0

        def report(done: int, total: int) -> None:  # called from the build thread
            nonlocal last_report
            now = time.monotonic()
            if progress and (now - last_report > 0.2 or done == total):
                last_report = now
                percentage = int(100 * done / total) if total else 100
                loop.call_soon_threadsafe(self._progress, "report", f"Indexing {done}/{total} files", percentage)

        try:
            for folder, index in list(self.indexes.items()):
                started = time.perf_counter()
                statistics = await asyncio.to_thread(index.build, report)
                logger.info("indexed %s: %s files, %s symbols in %.2f s", folder, statistics.get("files"),
                            statistics.get("symbols"), time.perf_counter() - started)
        except IndexingCancelled:
            logger.info("index build abandoned: the workspace is closing")
            return
        except Exception:
            logger.exception("building the index failed")
        finally:
            self.built.set()
            if progress:
                self._progress("end", "Index ready", None)
        # Documents opened while building were indexed from disk: their in-memory text goes in now.
        for document in self.workspace.documents():
            self.feed.changed(document.uri, delay=0.0)

    async def _progress_begin(self, title: str) -> bool:
        """Progress goes to the sessions of the workspace that support it, as they are when the build starts."""
        sessions = [s for s in self.workspace.sessions
                    if s.state != "closed" and s.client_supports("window", "workDoneProgress")]

        async def create(session: ClientView) -> ClientView | None:
            try:
                await asyncio.wait_for(session.request("window/workDoneProgress/create", {"token": PROGRESS_TOKEN}),
                                       5)
            except Exception as exc:
                logger.info("no progress reporting: %s", exc)
                return None
            return session

        accepted = [s for s in await asyncio.gather(*(create(s) for s in sessions)) if s is not None]
        self._progress_sessions = accepted
        for session in accepted:
            session.notify("$/progress", {"token": PROGRESS_TOKEN, "value": {
                "kind": "begin", "title": title, "cancellable": False, "percentage": 0}})
        return bool(accepted)

    def _progress(self, kind: str, message: str, percentage: int | None) -> None:
        value: dict[str, Any] = {"kind": kind, "message": message}
        if percentage is not None:
            value["percentage"] = percentage
        for session in self._progress_sessions:
            if session.state != "closed":
                session.notify("$/progress", {"token": PROGRESS_TOKEN, "value": value})

    # ------------------------------------------------------------------------------------------------ freshness
    def prestart_servers(self) -> None:
        """Start the servers of every language the index holds (`[hub] prestart`), once per workspace."""
        if self._prestarting is None and not self.closed:
            self._prestarting = self.workspace.spawn(self._prestart())

    async def _prestart(self) -> None:
        from lsp_hub.proxy.prestart import representative_files

        for index in list(self.indexes.values()):
            for path in await asyncio.to_thread(representative_files, index):
                if self.closed:
                    return
                started = self.workspace.prestart(path)
                if started:
                    logger.info("prestart: %s for %s", ", ".join(backend.name for backend in started), path)

    def poll(self) -> None:
        """A session whose client cannot watch files for us (`lsp-hub query`, MCP): watch the files ourselves
        (index/watch.py), and poll mtimes only for a root whose watcher could not start (once for the workspace)."""
        if self._poller is None and not self.closed:
            self._poller = self.workspace.spawn(self._poll())

    async def _poll(self) -> None:
        from lsp_hub.index.watch import IndexWatcher

        await self.built.wait()  # the first build walks anyway; the watcher takes over from what it found
        for index in list(self.indexes.values()):
            watcher = IndexWatcher(index)
            if await asyncio.to_thread(watcher.start):
                self._watchers[str(index.root)] = watcher
            else:
                logger.info("not watching %s (%s): polling it every %.0f s", index.root, watcher.reason, POLL_SECONDS)
        while any(str(index.root) not in self._watchers for index in self.indexes.values()):
            await asyncio.sleep(POLL_SECONDS)
            for index in list(self.indexes.values()):
                if str(index.root) not in self._watchers and not await self._refresh(index):
                    return

    async def _refresh(self, index: WorkspaceIndex) -> bool:
        """Bring the index up to date before a query: from the watcher's events when it watches (no walk), else a
        warm build (walks and stats, parses what changed: about 30 ms on the standard library); False once the
        index is stopped."""
        from lsp_hub.index.walk import IndexingCancelled

        try:
            watcher = self._watchers.get(str(index.root))
            if watcher is not None:
                await asyncio.to_thread(watcher.ensure_fresh, WATCH_SETTLE_SECONDS)
            else:
                await asyncio.to_thread(index.build)
        except IndexingCancelled:
            return False
        except Exception:
            logger.exception("refreshing the index failed")
        return True

    def index_for(self, uri_or_path: str | None) -> WorkspaceIndex | None:
        """The index of the workspace folder holding a file (the first folder when no file is named)."""
        if not self.indexes:
            return None
        if uri_or_path:
            path = uri_to_path(uri_or_path) if "://" in uri_or_path else uri_or_path
            if path:
                candidates = [f for f in self.indexes if path == f or path.startswith(f.rstrip("/") + "/")]
                if candidates:
                    return self.indexes[max(candidates, key=len)]
        return next(iter(self.indexes.values()))

    def syntax_checkers(self, uri_or_path: str | None) -> SyntaxCheckers:
        return self.syntax.checkers(uri_or_path)

    def document_changed(self, uri: str) -> None:
        if self.no_folder:
            self._index_project_of(uri)
        self.feed.changed(uri)

    def _index_project_of(self, uri: str) -> None:
        """No-folder mode: index the project an opened file belongs to (once), or say why there is none."""
        from lsp_hub.index.workspace import WorkspaceIndex

        if uri in self._rootless:
            return
        path = uri_to_path(uri)
        if path is None:
            self._rootless[uri] = f"{uri} is not a file"
            return
        if any(path.startswith(folder.rstrip("/") + "/") for folder in self.indexes):
            return
        markers = root_markers(self.workspace.config)
        root, why_not = project_root(path, markers)
        if root is None:
            self._rootless[uri] = why_not
            logger.info("not indexing around %s: %s", path, why_not)
            return
        try:
            index = WorkspaceIndex(root, cache_max_mb=self.workspace.config.index.cache_max_mb)
        except OSError as exc:
            self._rootless[uri] = f"cannot index {root}: {exc}"
            return
        self.indexes[root] = index
        logger.info("no workspace folder: indexing %s, the project root of %s", root, path)
        self.builds += 1
        task = self.workspace.spawn(self._build_root(index))
        self._root_builds.add(task)
        task.add_done_callback(self._root_builds.discard)

    async def _build_root(self, index: WorkspaceIndex) -> None:
        from lsp_hub.index.walk import IndexingCancelled

        try:
            await asyncio.to_thread(index.build)
        except IndexingCancelled:
            return
        except Exception:
            logger.exception("building the index of %s failed", index.root)
            return
        for document in self.workspace.documents():  # their in-memory text, over what the build read from disk
            if index.relative_path(uri_to_path(document.uri) or document.uri) is not None:
                self.feed.changed(document.uri, delay=0.0)

    def document_closed(self, uri: str) -> None:
        """A session closed `uri`: the index takes the text the backends now see, or the file on disk once no
        session has it open."""
        if self.workspace.document(uri) is None:
            self._rootless.pop(uri, None)
            self.feed.forget(uri)
        self.feed.changed(uri)

    def watched_files_changed(self, changes: list[dict[str, Any]]) -> None:
        for change in changes:
            uri = change.get("uri")
            if isinstance(uri, str) and self.workspace.document(uri) is None:
                self.feed.changed(uri)

    # ------------------------------------------------------------------------------------------------ queries
    async def query(self, function: str | Callable[..., Any], args: dict[str, Any], anchor: str | None,
                    refresh: bool = True) -> Any:
        """`function(index, args)` on the index holding `anchor`, once it is built and has every change made so far;
        `refresh` false for a query that goes on from another's answer (it must see the same files)."""
        from lsp_hub.index import api

        call = getattr(api, function) if isinstance(function, str) else function
        index = self.index_for(anchor)
        if index is None:
            raise ResponseFailure(INVALID_PARAMS, f"lsp-hub indexes nothing: {self.reason or 'no workspace folder'}")
        if not self.built.is_set():
            # Past the wait, answer from what is indexed so far: the result then says complete: false.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.built.wait()), WAIT_FOR_BUILD_SECONDS)
        await self.feed.updates.flush()  # an edit just made must be in the answer, debounced or not
        if refresh and self._poller is not None and self.built.is_set():
            # Nobody tells this workspace of changes on disk (a `lsp-hub query` or MCP session): an agent that has
            # just written a file with its own tool asks next, and must not wait for the next poll.
            await self._refresh(index)
        try:
            result = await asyncio.to_thread(call, index, args)
        except ValueError as exc:
            raise ResponseFailure(INVALID_PARAMS, str(exc)) from exc
        if function in GRAPH_QUERIES and self._preparing is None:
            # Graphs kept for the next change: a map answered from a stored ranking built none.
            self._preparing = self.workspace.spawn(self._prepare_graphs(index))
        return result

    async def _prepare_graphs(self, index: WorkspaceIndex) -> None:
        from lsp_hub.index import background

        try:
            await asyncio.to_thread(background.prepare_graphs, index)
            # Idle time too: relevance's weights fitted to this repository's history (once per HEAD).
            await asyncio.to_thread(background.tune_relevance, index)
        except Exception:  # an optimisation only: the next query builds what it needs itself
            logger.exception("preparing the index graphs failed")
        finally:
            self._preparing = None

    def status(self) -> dict[str, Any]:
        notes: dict[str, Any] = {}
        if self.reason is not None:
            notes["reason"] = self.reason
        if self._rootless:
            notes["unindexedFiles"] = [{"uri": uri, "reason": why} for uri, why in sorted(self._rootless.items())]
        if not self.indexes:
            return {"index": {"state": "none", "files": 0, "symbols": 0, "roots": [], **notes}} if notes else {}
        parts = [index.statistics() for index in self.indexes.values()]
        languages: dict[str, int] = {}
        for part in parts:
            for language, count in part.get("languages", {}).items():
                languages[language] = languages.get(language, 0) + count
        times = [p["lastBuildSeconds"] for p in parts if p.get("lastBuildSeconds") is not None]
        return {"index": {
            "state": _joint_state([p["state"] for p in parts]),
            **({"errors": errors} if (errors := [p["error"] for p in parts if p.get("error")]) else {}),
            "files": sum(p.get("files", 0) for p in parts),
            "symbols": sum(p.get("symbols", 0) for p in parts),
            "languages": dict(sorted(languages.items())),
            "lastBuildSeconds": max(times) if times else None,
            "skippedFiles": sum(p.get("skippedFiles", 0) for p in parts),
            "roots": [str(index.root) for index in self.indexes.values()],
            "builds": self.builds,  # one per workspace, however many sessions share it
            "watching": {root: watcher.status() for root, watcher in self._watchers.items()},
            # Which parser judges syntax, per root asked so far (the TypeScript helper's pid once it runs).
            "syntaxCheckers": self.syntax.describe(),
            **notes,
        }}


def _joint_state(states: list[str]) -> str:
    """The workspace's index state from its roots': failed when one failed (its error is beside it), ready when
    all are, else building."""
    if "failed" in states:
        return "failed"
    return "ready" if all(state == "ready" for state in states) else "building"
