"""What a server says it is busy with (`$/progress` begun and not ended), and whether it is loading its project:
from its start until its first progress ends, and again whenever it begins a progress of that first one's title
(typescript-language-server loads a project again when a file of a closed one is reopened, and answers from a
partial view meanwhile). A server shown a file is presumed loading until it reports the load or publishes
diagnostics: tsserver reports no load for a file outside any tsconfig.json (an inferred project), and, as VS Code's
router for it assumes, its first diagnostics come from the server that has the whole project. Bounded: a server may
begin what it never ends; a load a busy server begins only after that bound is still the load, and waited for."""

from __future__ import annotations

import asyncio
from typing import Any

MAX_WORK_IN_PROGRESS = 64  # progress begun and not ended that a backend remembers
EXPECTED = "lsp-hub/expected-load"  # the token of a load the hub asked for and the server has not reported yet
EXPECTED_LOAD_SECONDS = 10.0  # a server shown a file that reports nothing for this long is no longer presumed loading


class ServerProgress:
    def __init__(self) -> None:
        self.work_in_progress: dict[str, str] = {}  # token -> title
        self._loading_tokens: set[str] = set()
        self._loading_titles: set[str] = set()  # the titles of the progress that ran while the project loaded
        self._project_loaded = asyncio.Event()
        self._load_reported = False  # the load expected is one the server reports (`expect_load`)
        # The expected load's bound ran out before any report: a progress the server begins later is that load,
        # late (tsserver on a busy machine), and is waited for like one reported in time.
        self._late_load_possible = False

    def restart(self) -> None:
        """A new process: its project is not loaded yet."""
        self._loading_tokens.clear()
        self._loading_titles.clear()
        self._project_loaded.clear()
        self._late_load_possible = False

    def note(self, token: Any, kind: Any, title: Any = None) -> None:
        key = str(token)
        if kind == "begin":
            if len(self.work_in_progress) >= MAX_WORK_IN_PROGRESS:
                self.work_in_progress.pop(next(iter(self.work_in_progress)))
            self.work_in_progress[key] = title if isinstance(title, str) else ""
        elif kind == "end":
            self.work_in_progress.pop(key, None)
        if self._project_loaded.is_set():
            if kind == "begin" and isinstance(title, str) and self._a_load(title):
                self._project_loaded.clear()  # loading (a project) again, or the expected load, late
                self._loading_tokens = {key}
                self._loading_titles.add(title)
                self._late_load_possible = False
            return
        if kind == "begin":
            self._loading_tokens.add(key)
            if isinstance(title, str) and title:
                self._loading_titles.add(title)
        elif kind == "end" and key in self._loading_tokens:
            self._loading_tokens.clear()
            self._project_loaded.set()

    def expect_load(self, seconds: float = EXPECTED_LOAD_SECONDS, reported: bool = False) -> None:
        """The server has just been shown a file of its project: it is loading from now, though its progress may
        come a moment later, until that progress ends, it publishes diagnostics, or `seconds` pass without either.
        `reported`: the server reports this project's load, so diagnostics do not end the wait (tsserver's
        syntax-only server publishes some before its progress begins)."""
        if not self.load_expectable:
            return
        self._loading_tokens.add(EXPECTED)
        self._load_reported = reported
        asyncio.get_running_loop().call_later(seconds, self._bound_reached)

    @property
    def load_expectable(self) -> bool:
        """Whether `expect_load` would take a new expectation: no load is known to be over or under way."""
        return not self._project_loaded.is_set() and not self._loading_tokens

    def note_diagnostics(self) -> None:
        """It published diagnostics: a load it never reports is over (one it reports ends with its progress)."""
        if self._awaiting_report and not self._load_reported:
            self._expectation_over()

    def _a_load(self, title: str) -> bool:
        """Whether progress of this title, begun once the project counts as loaded, is a load of it."""
        return title in self._loading_titles or self._late_load_possible

    @property
    def _awaiting_report(self) -> bool:
        """An expected load (`expect_load`) is presumed and the server has reported nothing of it yet."""
        return self._loading_tokens == {EXPECTED} and not self._project_loaded.is_set()

    def _bound_reached(self) -> None:
        if self._awaiting_report:
            self._late_load_possible = True  # a progress it begins later is this load, late
            self._expectation_over()

    def _expectation_over(self) -> None:
        self._loading_tokens.clear()
        self._project_loaded.set()  # it reported nothing: no longer presumed loading

    @property
    def loading(self) -> bool:
        """Whether it is loading its project: a progress of the loading kind begun and not yet ended."""
        return bool(self._loading_tokens) and not self._project_loaded.is_set()

    async def wait_loaded(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._project_loaded.wait(), timeout)
            return True
        except TimeoutError:
            return False
