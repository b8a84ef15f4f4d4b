"""Graphs kept in the index cache: each file's contribution (its names in the name tables, its resolved imports,
its links, its row of weighted edges and what they pass on), stored under the fingerprint of the files they were
computed on. A later process whose snapshot has the same fingerprint assembles its graphs from them instead of
resolving every use again, and updates them after a change like graphs it built itself.

The store is only an accelerator: a missing, outdated or damaged entry means the graphs are built as usual.
"""

from __future__ import annotations

import logging
import marshal
from dataclasses import dataclass
from typing import Any

from lsp_hub.index.graph import GraphInputs, NameTables, graph_inputs
from lsp_hub.index.links import FileLinks, file_links
from lsp_hub.index.ranking import ReferenceGraph, Row, reference_graph
from lsp_hub.index.resolve import ImportResolver, ResolvedImport
from lsp_hub.index.workspace import Snapshot

log = logging.getLogger(__name__)

STATE_KEY = "graph_state"
STATE_FORMAT = 1


@dataclass(frozen=True, slots=True)
class StoredGraphs:
    inputs: GraphInputs
    links: dict[str, FileLinks]
    graph: ReferenceGraph


def stored_graphs(snapshot: Snapshot) -> StoredGraphs | None:
    """The graphs an earlier process kept for exactly these files, or None."""
    return snapshot.derived("stored_graphs", _load)


def _load(snapshot: Snapshot) -> StoredGraphs | None:
    store = snapshot.store
    if store is None or snapshot.pending or not snapshot.on_disk():
        return None
    data = store.load_graph(STATE_KEY, snapshot.fingerprint())
    if data is None:
        return None
    try:
        state = marshal.loads(data)
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            return None
        nodes: list[str] = state["nodes"]
        if len(nodes) != len(snapshot.files):
            return None
        resolved = {path: [ResolvedImport(*entry) for entry in entries] for path, entries in state["resolved"].items()}
        inputs = GraphInputs(NameTables(*state["tables"]), state["dependents"],
                             ImportResolver(snapshot.files, snapshot.markers), resolved, state["bindings"],
                             state["renames"], None)
        rows = {path: Row(*row) for path, row in state["rows"].items()}
        graph = ReferenceGraph(nodes, rows, state["incoming"], state["factors"], len(nodes))
        return StoredGraphs(inputs, state["links"], graph)
    except (ValueError, EOFError, TypeError, KeyError) as error:
        log.warning("stored graphs of %s unreadable (%s); building them", snapshot.root, error)
        return None


def save_graphs(snapshot: Snapshot, min_interval: float = 0.0) -> None:
    """Keep the snapshot's graphs for the next process, when they are built and its files are as on disk; not
    again within `min_interval` seconds of the last save (a hub whose files an agent rewrites would otherwise
    store ten megabytes after every map)."""
    store = snapshot.store
    if store is None or snapshot.pending or not snapshot.is_derived("reference_graph") or not snapshot.on_disk():
        return
    fingerprint = snapshot.fingerprint()
    if store.graph_saved(STATE_KEY) == fingerprint or store.seconds_since_saved(STATE_KEY) < min_interval:
        return
    inputs = graph_inputs(snapshot)
    graph = reference_graph(snapshot)
    tables = inputs.tables
    state: dict[str, Any] = {
        "format": STATE_FORMAT,
        "nodes": graph.nodes,
        "tables": (tables.definers, tables.referencers, tables.member_definers),
        "dependents": inputs.dependents,
        "resolved": {path: [(entry.module, entry.files, entry.names, entry.aliases) for entry in entries]
                     for path, entries in inputs.resolved.items()},
        "bindings": inputs.bindings,
        "renames": inputs.renames,
        "links": file_links(snapshot),
        "rows": {path: (row.out_weight, row.kept, row.passes) for path, row in graph.rows.items()},
        "incoming": graph.incoming,
        "factors": graph.factors,
    }
    store.save_graph(STATE_KEY, fingerprint, marshal.dumps(state))
