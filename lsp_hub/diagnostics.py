"""Diagnostics per (source, URI), merged into one list per URI, and how that list reaches the client.

A source is a backend's pushed diagnostics, a backend's pulled diagnostics, or one of the hub's own producers
(syntax checks). Whenever any part of a URI changes, the union is published; clearing a part republishes, so
nothing stale remains. A client that pulls (`textDocument/diagnostic`) is not pushed to: it is asked to pull again
(`workspace/diagnostic/refresh`) and gets the union with a resultId, so an unchanged list costs nothing.
"""

from __future__ import annotations

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


def _match_key(diagnostic: dict[str, Any]) -> str:
    """What identifies a diagnostic the client hands back in codeAction's context (it echoes our objects)."""
    return json.dumps(
        [diagnostic.get("range"), diagnostic.get("message"), diagnostic.get("code"), diagnostic.get("source")],
        sort_keys=True,
    )


class DiagnosticStore:
    def __init__(self, publish: Callable[[str, list[dict[str, Any]], int | None], None]) -> None:
        self._publish = publish
        self._parts: dict[str, dict[Part, list[dict[str, Any]]]] = {}
        self._origins: dict[str, dict[str, tuple[int, dict[str, Any]]]] = {}

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
        return [d for part in self._parts.get(uri, {}).values() for d in part]

    def uris(self) -> list[str]:
        return list(self._parts)

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
            found = index.get(_match_key(diagnostic))
            if found is not None:
                owner, original = found
                split.setdefault(owner, []).append(original)
        return split

    def _republish(self, uri: str, version: int | None) -> None:
        parts = self._parts.get(uri, {})
        merged: list[dict[str, Any]] = []
        origins: dict[str, tuple[int, dict[str, Any]]] = {}
        for part, diagnostics in parts.items():
            for diagnostic in diagnostics:
                merged.append(diagnostic)
                origins[_match_key(diagnostic)] = (part.owner, diagnostic)
        if parts:
            self._origins[uri] = origins
        else:
            self._parts.pop(uri, None)
            self._origins.pop(uri, None)
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
                         version_of: Callable[[str], int | None]) -> dict[str, Any]:
        reports = []
        for uri in store.uris():
            report = self.document_report(uri, previous.get(uri), store.get(uri))
            reports.append({**report, "uri": uri, "version": version_of(uri)})
        return {"items": reports}
