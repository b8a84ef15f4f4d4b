"""Feeding the shared index the documents the backends see: each change debounced on one timer per document,
then the text (or, over the size cap, the file on disk) parsed in a worker thread, and its syntax checked
(`index_syntax.py`) when no server is there to check it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.documents import SharedDocument, uri_to_path

if TYPE_CHECKING:
    from lsp_hub.index.workspace import WorkspaceIndex
    from lsp_hub.proxy.index_syntax import SyntaxDiagnostics
    from lsp_hub.proxy.workspace import Workspace

logger = logging.getLogger(__name__)

UPDATE_DEBOUNCE_SECONDS = 0.3


class Debouncer:
    """`action(key)` `delay` seconds after the last `schedule(key)`, one timer per key.

    A timer already due no later is kept and told the new time (it re-arms when it fires early): typing does not
    cancel and create a timer per keystroke."""

    def __init__(self, spawn: Callable[[Awaitable[Any]], asyncio.Task[Any]],
                 action: Callable[[str], Awaitable[None]]) -> None:
        self._spawn = spawn
        self._action = action
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.due: dict[str, float] = {}  # loop time each pending action is due at
        self._running: set[asyncio.Task[Any]] = set()  # actions under way (their timer fired)
        self.closed = False

    def schedule(self, key: str, delay: float = UPDATE_DEBOUNCE_SECONDS) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        timer = self.timers.get(key)
        if timer is not None and not self.closed and timer.when() <= due:
            self.due[key] = due
            return
        if timer is not None:
            del self.timers[key]
            timer.cancel()
        if self.closed:
            return
        self.due[key] = due
        self.timers[key] = loop.call_at(due, self._when_due, key)

    def _when_due(self, key: str) -> None:
        due = self.due.get(key)
        loop = asyncio.get_running_loop()
        if due is not None and due > loop.time():
            self.timers[key] = loop.call_at(due, self._when_due, key)
            return
        self.due.pop(key, None)
        self.timers.pop(key, None)  # fired: a change from now on arms a new one
        task = self._spawn(self._action(key))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def flush(self) -> None:
        """Every pending action now, and those under way finished."""
        for key in list(self.timers):
            timer = self.timers.pop(key, None)
            self.due.pop(key, None)
            if timer is not None:
                timer.cancel()
                await self._action(key)
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    def close(self) -> None:
        self.closed = True
        for timer in self.timers.values():
            timer.cancel()


class DocumentFeed:
    """The documents of one workspace, fed to the index holding each (`index_for`)."""

    def __init__(self, workspace: Workspace, index_for: Callable[[str], WorkspaceIndex | None],
                 syntax: SyntaxDiagnostics) -> None:
        self.workspace = workspace
        self._index_for = index_for
        self._syntax = syntax
        self._oversized: set[str] = set()  # open documents over the size cap, already taken off the index
        self.updates = Debouncer(workspace.spawn, self._update)

    def changed(self, uri: str, delay: float = UPDATE_DEBOUNCE_SECONDS) -> None:
        self.updates.schedule(uri, delay)

    def forget(self, uri: str) -> None:
        """No session has `uri` open any more."""
        self._oversized.discard(uri)
        self._syntax.clear(uri)

    async def _update(self, uri: str) -> None:
        path = uri_to_path(uri)
        index = self._index_for(uri)
        if path is None or self.updates.closed:
            return
        document = self.workspace.document(uri)
        text = self._document_bytes(document) if document is not None else None
        if document is not None and text is None:  # over the size cap
            if uri in self._oversized:
                return  # already back on the disk version, diagnostics cleared: nothing more per keystroke
            self._oversized.add(uri)
            self._syntax.clear(uri)
        else:
            self._oversized.discard(uri)
        try:
            if index is not None and index.relative_path(path) is not None:
                await asyncio.to_thread(index.update_file, path, text)  # None: the file on disk, itself capped
        except (ValueError, OSError) as exc:
            logger.debug("not indexing %s: %s", uri, exc)
        if document is not None and text is not None:
            await self._syntax.check(document, text)

    def _document_bytes(self, document: SharedDocument) -> bytes | None:
        """An open document's text as UTF-8, or None (said once to the user) when it is over the size cap: parsing
        a multi-megabyte document on every change stalled the whole hub (up to 4 s per keystroke at 5 MB)."""
        cap = self.workspace.config.hub.max_document_bytes
        # Characters never outnumber UTF-8 bytes: a text longer than the cap is over it without encoding it.
        text = document.text
        data = None if len(text) > cap else text.encode("utf-8", "surrogatepass")
        if data is not None and len(data) <= cap:
            return data
        name = uri_to_path(document.uri) or document.uri
        self.workspace.tell_user(f"lsp-hub: {name} is larger than {cap:,} bytes (hub.max_document_bytes): it gets "
                                 "no syntax diagnostics from the hub and the index keeps its version on disk.")
        return None
