"""Diagnostics per (source, URI), merged into one list per URI, and how that list reaches the client.

A source is a backend's pushed diagnostics, a backend's pulled diagnostics, or one of the hub's own producers
(syntax checks). Whenever any part of a URI changes, the union is published; clearing a part republishes, so
nothing stale remains. A client that pulls (`textDocument/diagnostic`) is not pushed to: it is asked to pull again
(`workspace/diagnostic/refresh`) and gets the union with a resultId, so an unchanged list costs nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Part:
    """Who produced a set of diagnostics: `owner` is a backend uid (or 0 for the hub), `kind` push/pull/..."""

    owner: int
    kind: str
    label: str  # shown as `source` when a diagnostic has none


# Codes that mean the same finding when different servers report them (`dedupe_diagnostics`). A code shared by
# two servers (pyflakes' F401 from pylsp and ruff) means the same by itself.
SAME_MEANING: tuple[frozenset[str], ...] = (
    frozenset({"F401", "reportUnusedImport"}),  # ruff/pyflakes, basedpyright/pyright: unused import
    frozenset({"F841", "reportUnusedVariable"}),  # unused local variable
    frozenset({"F821", "reportUndefinedVariable"}),  # undefined name
    frozenset({"F811", "reportRedeclaration"}),  # redefinition of an unused name
    frozenset({"F632", "reportUnnecessaryComparison"}),  # `is` with a literal / always-same comparison
    frozenset({"6133", "6196", "no-unused-vars", "@typescript-eslint/no-unused-vars"}),  # TS/ESLint: unused
    frozenset({"2304", "no-undef"}),  # TS/ESLint: cannot find name
    frozenset({"unused-variable", "clang-diagnostic-unused-variable"}),  # clangd / clang-tidy
)
_FAMILY_OF: dict[str, int] = {code: index for index, family in enumerate(SAME_MEANING) for code in family}

RankOfPart = Callable[["Part"], int]


def _meaning(diagnostic: dict[str, Any]) -> str | None:
    code = diagnostic.get("code")
    if code is None or isinstance(code, dict | list | bool):
        return None
    family = _FAMILY_OF.get(str(code))
    return f"family:{family}" if family is not None else f"code:{code}"


def _match_key(diagnostic: dict[str, Any]) -> str:
    """What identifies a diagnostic the client hands back in codeAction's context (it echoes our objects)."""
    return json.dumps(
        [diagnostic.get("range"), diagnostic.get("message"), diagnostic.get("code"), diagnostic.get("source")],
        sort_keys=True,
    )


class DiagnosticStore:
    def __init__(self, publish: Callable[[str, list[dict[str, Any]], int | None], None],
                 dedupe_rank: Callable[[str], RankOfPart | None] | None = None) -> None:
        """`dedupe_rank(uri)` gives the precedence of the parts of a URI whose language asks for one finding to be
        shown once (`dedupe_diagnostics`), or None to show every part's diagnostics."""
        self._publish = publish
        self._dedupe_rank = dedupe_rank or (lambda uri: None)
        self._parts: dict[str, dict[Part, list[dict[str, Any]]]] = {}
        self._merged: dict[str, list[dict[str, Any]]] = {}  # what was last published per URI
        # What the client may echo back, per URI: match key -> every (owner, diagnostic) it stands for.
        self._origins: dict[str, dict[str, list[tuple[int, dict[str, Any]]]]] = {}

    def put(self, uri: str, part: Part, diagnostics: list[dict[str, Any]], version: int | None = None) -> None:
        labelled = [d if d.get("source") else {**d, "source": part.label} for d in diagnostics if isinstance(d, dict)]
        parts = self._parts.setdefault(uri, {})
        if not labelled and part not in parts:
            if uri not in self._origins:
                self._publish(uri, [], version)  # the server says "nothing here": make sure the client knows
            return
        if labelled:
            parts[part] = labelled
        else:
            parts.pop(part, None)
        self._republish(uri, version)

    def get(self, uri: str) -> list[dict[str, Any]]:
        """The merged list as published (deduplicated where the language asks for it)."""
        return list(self._merged.get(uri, []))

    def uris(self) -> list[str]:
        return list(self._parts)

    def sources(self, uri: str) -> dict[int, set[str]]:
        """Per backend (owner), the `source` labels of its diagnostics of `uri`: who said what."""
        found: dict[int, set[str]] = {}
        for part, diagnostics in self._parts.get(uri, {}).items():
            found.setdefault(part.owner, set()).update(str(d.get("source") or "") for d in diagnostics)
        return found

    def clear_owner(self, owner: int) -> None:
        """A backend stopped or crashed: its parts go, everywhere."""
        for uri, parts in list(self._parts.items()):
            dropped = [part for part in parts if part.owner == owner]
            if dropped:
                for part in dropped:
                    del parts[part]
                self._republish(uri, None)

    def clear_uri(self, uri: str, owners: set[int] | None = None) -> None:
        """The document closed: drop its parts (those of `owners`, or all) and publish what is left."""
        parts = self._parts.get(uri)
        if not parts:
            return
        for part in list(parts):
            if owners is None or part.owner in owners:
                del parts[part]
        self._republish(uri, None)

    def origins(self, uri: str, diagnostics: list[Any]) -> dict[int, list[dict[str, Any]]]:
        """Split diagnostics the client sent back (codeAction context) by the backend that produced them."""
        index = self._origins.get(uri, {})
        split: dict[int, list[dict[str, Any]]] = {}
        for diagnostic in diagnostics:
            if not isinstance(diagnostic, dict):
                continue
            for owner, original in index.get(_match_key(diagnostic), []):
                split.setdefault(owner, []).append(original)
        return split

    def _republish(self, uri: str, version: int | None) -> None:
        parts = self._parts.get(uri, {})
        merged: list[dict[str, Any]] = []
        origins: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        rank = self._dedupe_rank(uri) if len(parts) > 1 else None
        ordered = sorted(parts.items(), key=lambda item: rank(item[0])) if rank else parts.items()
        shown: dict[tuple[str, str], tuple[int, str]] = {}  # (range, meaning) -> (owner, match key) shown for it
        for part, diagnostics in ordered:
            for diagnostic in diagnostics:
                meaning = _meaning(diagnostic) if rank else None
                twin = (json.dumps(diagnostic.get("range"), sort_keys=True), meaning) if meaning else None
                if twin is not None and twin in shown and shown[twin][0] != part.owner:
                    # Shown once, from the server of higher precedence; a codeAction on it still reaches this
                    # server with its own diagnostic, so its fixes are not lost.
                    origins[shown[twin][1]].append((part.owner, diagnostic))
                    continue
                key = _match_key(diagnostic)
                merged.append(diagnostic)
                origins.setdefault(key, []).append((part.owner, diagnostic))
                if twin is not None:
                    shown.setdefault(twin, (part.owner, key))
        if parts:
            self._origins[uri] = origins
            self._merged[uri] = merged
        else:
            self._parts.pop(uri, None)
            self._origins.pop(uri, None)
            self._merged.pop(uri, None)
        self._publish(uri, merged, version)


class ClientDiagnostics:
    """How the merged diagnostics reach one client: pushed (`publishDiagnostics`), or, for a client that pulls,
    a resultId per URI that changes with its list and a refresh request asking the client to pull again."""

    def __init__(self, *, pulls: bool, can_refresh: bool, push: Callable[[str, list[dict[str, Any]]], None],
                 refresh: Callable[[], None], schedule: Callable[[Callable[[], None]], object]) -> None:
        self.pulls = pulls
        self._can_refresh = can_refresh
        self._push = push
        self._refresh = refresh
        self._schedule = schedule
        self._refresh_due = False
        # Unique to this session, so a resultId a client kept from an earlier hub never matches by accident.
        self._prefix = os.urandom(4).hex()
        self._counter = itertools.count(1)
        self._result_ids: dict[str, str] = {}

    def publish(self, uri: str, diagnostics: list[dict[str, Any]]) -> None:
        if not self.pulls:
            self._push(uri, diagnostics)
            return
        self._result_ids[uri] = f"{self._prefix}:{next(self._counter)}"
        if self._can_refresh and not self._refresh_due:
            self._refresh_due = True  # one refresh for every change made in this turn of the loop
            self._schedule(self._send_refresh)

    def _send_refresh(self) -> None:
        self._refresh_due = False
        self._refresh()

    def result_id(self, uri: str) -> str:
        return self._result_ids.setdefault(uri, f"{self._prefix}:{next(self._counter)}")

    def document_report(self, uri: str, previous_result_id: Any, items: list[dict[str, Any]]) -> dict[str, Any]:
        result_id = self.result_id(uri)
        if previous_result_id == result_id:
            return {"kind": "unchanged", "resultId": result_id}
        return {"kind": "full", "resultId": result_id, "items": items}

    def workspace_report(self, store: DiagnosticStore, previous: dict[str, Any],
                         version_of: Callable[[str], int | None],
                         diagnostics_of: Callable[[str], list[dict[str, Any]]] | None = None) -> dict[str, Any]:
        """Every document's report; `diagnostics_of` gives a document's diagnostics as this client sees them (in
        its own text), else the store's."""
        reports = []
        for uri in store.uris():
            items = diagnostics_of(uri) if diagnostics_of is not None else store.get(uri)
            report = self.document_report(uri, previous.get(uri), items)
            reports.append({**report, "uri": uri, "version": version_of(uri)})
        return {"items": reports}


# What lspHub.diagnostics asks tsserver (through typescript-language-server's `typescript.tsserverRequest`) for a
# document's whole verdict: the three kinds typescript-language-server publishes.
TSSERVER_DIAGNOSTIC_REQUESTS = ("syntacticDiagnosticsSync", "semanticDiagnosticsSync", "suggestionDiagnosticsSync")
_TSSERVER_SEVERITIES = {"error": 1, "warning": 2, "message": 3, "suggestion": 4}


def tsserver_diagnostics(body: Any) -> list[dict[str, Any]]:
    """tsserver's diagnostics (1-based lines, 1-based UTF-16 offsets) as LSP diagnostics, as typescript-language-server
    publishes them: source "typescript", its code, suggestions as hints, unused and deprecated as tags."""
    diagnostics: list[dict[str, Any]] = []
    for item in body if isinstance(body, list) else []:
        try:
            start, end = item["start"], item["end"]
            diagnostic: dict[str, Any] = {
                "range": {"start": {"line": start["line"] - 1, "character": start["offset"] - 1},
                          "end": {"line": end["line"] - 1, "character": end["offset"] - 1}},
                "message": item["text"], "severity": _TSSERVER_SEVERITIES.get(item.get("category"), 1),
                "source": item.get("source") or "typescript"}
        except (KeyError, TypeError):
            continue
        if item.get("code") is not None:
            diagnostic["code"] = item["code"]
        tags = [tag for tag, flag in ((1, "reportsUnnecessary"), (2, "reportsDeprecated")) if item.get(flag)]
        if tags:
            diagnostic["tags"] = tags
        diagnostics.append(diagnostic)
    return diagnostics


class ReportTracker:
    """Which content of each document each server has reported diagnostics on, so a caller can wait for complete
    diagnostics of one version instead of sleeping.

    A report counts for the content last sent to that server (`sent`): a push that names a version counts for that
    version; a push without one counts when it arrived after the content was sent; a pull counts for the version
    the hub pulled. Reports on older content never count. A server that puts versions in its reports sends an
    unversioned one only for a document that is not open (basedpyright, when a document closes): such a report
    never counts, though it may arrive after the document was opened again.

    For a server whose diagnostics of one file depend on others (`has_reported_on(..., after=)`), a report counts
    only if it came after the last change the server was told of in another document (`changed`): a pull made
    after it, or a push that arrived after it.
    """

    def __init__(self) -> None:
        self._clock = itertools.count(1)
        self._sent: dict[tuple[int, str], tuple[int, int]] = {}  # (owner, uri) -> (version, when)
        self._reported: dict[tuple[int, str], tuple[int | None, int]] = {}  # (owner, uri) -> (version, when)
        self._waiters: set[asyncio.Event] = set()
        self._versioned: set[int] = set()  # owners seen putting a version in a report
        # Per owner, the latest changes it was told of, newest first, at most two documents: enough to know the
        # latest change of a document other than any one asked about.
        self._changes: dict[int, list[tuple[str, int]]] = {}

    def now(self) -> int:
        """A moment on the tracker's clock (when a pull or an ask is sent: its answer counts from then)."""
        return next(self._clock)

    def sent(self, owner: int, uri: str, version: int) -> None:
        self._sent[(owner, uri)] = (version, next(self._clock))

    def changed(self, owner: int, uri: str) -> None:
        """`owner` was told `uri` changed (its text, a save, or the file on disk)."""
        latest = [(uri, next(self._clock))] + [entry for entry in self._changes.get(owner, []) if entry[0] != uri]
        self._changes[owner] = latest[:2]

    def last_change_besides(self, owner: int, uri: str) -> int:
        """When `owner` was last told of a change to a document other than `uri` (0: never)."""
        return next((when for changed_uri, when in self._changes.get(owner, []) if changed_uri != uri), 0)

    def reported(self, owner: int, uri: str, version: int | None, *, asked: bool = False,
                 when: int | None = None) -> None:
        """A report from `owner` about `uri` (on `version` when it names one). `asked`: an answer to the hub's own
        request for that version, which says nothing about what the server puts in its pushes. `when`: the moment
        it is about (the hub's request was sent then), else now."""
        if version is not None and not asked:
            self._versioned.add(owner)
        elif owner in self._versioned:
            return  # about a document that is not open (a closed one's clearing), not about the one open now
        self._reported[(owner, uri)] = (version, next(self._clock) if when is None else when)
        self.wake()

    def wake(self) -> None:
        """Make every waiter look again (something it waits on changed besides a report)."""
        for waiter in self._waiters:
            waiter.set()

    def has_reported_on(self, owner: int, uri: str, version: int, *, after: int = 0) -> bool:
        """Whether `owner` has reported on `version` of `uri` (and, with `after`, since that moment)."""
        sent, report = self._sent.get((owner, uri)), self._reported.get((owner, uri))
        if sent is None or report is None or sent[0] < version:
            return False
        reported_version, reported_when = report
        if reported_when <= after:
            return False
        if reported_version is not None:
            return reported_version >= version
        return reported_when > sent[1]

    def closed(self, uri: str) -> None:
        """The document closed: forget what was sent and reported about it."""
        for key in [key for key in self._sent if key[1] == uri]:
            del self._sent[key]
        for key in [key for key in self._reported if key[1] == uri]:
            del self._reported[key]

    async def wait_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Wait (at most `timeout` seconds) until `done()` holds, re-checking after each report."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        waiter = asyncio.Event()
        self._waiters.add(waiter)
        try:
            while not done():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                waiter.clear()
                try:
                    await asyncio.wait_for(waiter.wait(), remaining)
                except TimeoutError:
                    return done()
            return True
        finally:
            self._waiters.discard(waiter)
