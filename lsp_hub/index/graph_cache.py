"""What the index cache keeps of the graphs, as stored: the state an earlier process saved for exactly these files
(under their fingerprint and the graph code's), handed out part by part to the builders that rebuild their objects
from it (`graph.py` the name tables and resolved imports, `links.py` the links, `ranking.py` the weighted graph).

The bottom of the graph modules: it imports none of them, so they can all import it (`graph_store.py`, above them,
stores what they built). A missing, outdated or damaged entry reads as None, and the builders build as usual.
"""

from __future__ import annotations

import logging
import marshal
import threading
from typing import Any

from lsp_hub.index.store import IndexStore
from lsp_hub.index.workspace import Snapshot

log = logging.getLogger(__name__)

STATE_KEY = "graph_state"
STATE_FORMAT = 1
RANKING_KEY = "ranking"
RANKING_FORMAT = 1


def storable(snapshot: Snapshot) -> IndexStore | None:
    """The store that may keep or give graphs of this snapshot: complete, and every file as on disk."""
    store = snapshot.store
    return store if store is not None and not snapshot.pending and snapshot.on_disk() else None


def stored(snapshot: Snapshot, key: str, format_version: int) -> dict[str, Any] | None:
    """What an earlier process kept under `key` for exactly these files, decoded; None when there is nothing
    usable (a damaged entry included: the caller builds instead)."""
    store = storable(snapshot)
    data = store.load_graph(key, snapshot.fingerprint()) if store is not None else None
    if data is None:
        return None
    try:
        value = marshal.loads(data)
    except (ValueError, EOFError, TypeError) as error:
        log.warning("stored %s of %s unreadable (%s); building it", key, snapshot.root, error)
        return None
    if not isinstance(value, dict) or value.get("format") != format_version \
            or len(value.get("nodes", ())) != len(snapshot.files):
        return None
    return value


class StoredState:
    """The stored graph state of one snapshot. Each builder takes its parts once: what it took is no longer held
    here, so the snapshot keeps the built objects only, not the state beside them."""

    def __init__(self, state: dict[str, Any]) -> None:
        self._state = state
        self._lock = threading.Lock()

    def take(self, *keys: str) -> tuple[Any, ...] | None:
        """The parts named (None when one is missing), removed; `nodes` stays for every taker."""
        with self._lock:
            if not all(key in self._state for key in keys):
                return None
            return tuple(self._state[key] if key == "nodes" else self._state.pop(key) for key in keys)


def graph_state(snapshot: Snapshot) -> StoredState | None:
    """The graph state an earlier process kept for exactly these files, or None."""
    return snapshot.derived("stored_graph_state", _load)


def _load(snapshot: Snapshot) -> StoredState | None:
    state = stored(snapshot, STATE_KEY, STATE_FORMAT)
    return StoredState(state) if state is not None else None
