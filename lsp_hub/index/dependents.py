"""The files that depend on some files: what a change to them may break elsewhere.

A file depends on a written file when it imports it (the import graph) or uses a name the written file defines
(the reference graph's links, which resolve each use through imports to its definitions). Dependents are ranked by
how much of theirs reaches the written files: the summed weight of their links into them (uses, weighted as the
repo map weighs them), plus a fixed share for an import. The reasons name the import and the names used, so an
agent sees why a file was checked."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from lsp_hub.index.graph_inputs import importers
from lsp_hub.index.ranking import reference_graph
from lsp_hub.index.workspace import Snapshot

IMPORT_WEIGHT = 1.0  # an import alone ranks like one plain use of one name
MAX_NAMES_SHOWN = 5


@dataclass
class Dependent:
    path: str
    score: float = 0.0
    imports: list[str] = field(default_factory=list)  # written files it imports
    names: dict[str, float] = field(default_factory=dict)  # names of the written files it uses -> their weight
    changed: list[str] = field(default_factory=list)  # the names it uses that the write changes

    def reasons(self) -> list[str]:
        reasons = [f"uses {', '.join(self.changed[:MAX_NAMES_SHOWN])}, which the write changes"] if self.changed else []
        reasons += [f"imports {target}" for target in self.imports]
        if self.names:
            ranked = sorted(self.names, key=lambda name: (-self.names[name], name))
            shown = ", ".join(ranked[:MAX_NAMES_SHOWN])
            more = len(ranked) - MAX_NAMES_SHOWN
            reasons.append(f"uses {shown}" + (f" and {more} more" if more > 0 else ""))
        return reasons


def dependents(
    snapshot: Snapshot,
    written: list[str],
    limit: int,
    changed: Collection[str] = (),
    imported_by: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[Dependent], int]:
    """The files depending on `written` (workspace-relative paths; themselves excluded), best first, at most
    `limit`; and how many there were in all. Those using one of the `changed` names (on the lines a write changes)
    come first: they are the likeliest to break, however little else of the written files they use. `imported_by`:
    graph_inputs' `importers` of `written`, when the caller has it."""
    targets = [path for path in dict.fromkeys(written) if path in snapshot.files]
    excluded = set(targets)
    found: dict[str, Dependent] = {}

    def entry(path: str) -> Dependent:
        dependent = found.get(path)
        if dependent is None:
            dependent = found[path] = Dependent(path)
        return dependent

    graph = reference_graph(snapshot)
    if imported_by is None:
        imported_by = importers(snapshot, targets)
    for target in targets:
        for source in graph.incoming.get(target, ()):
            if source in excluded:
                continue
            dependent = entry(source)
            for name, weight in graph.rows[source].passes.get(target, ()):
                dependent.score += weight
                dependent.names[name] = dependent.names.get(name, 0.0) + weight
        for source in imported_by.get(target, ()):
            if source in excluded:
                continue
            dependent = entry(source)
            dependent.score += IMPORT_WEIGHT
            dependent.imports.append(target)
    changed_names = set(changed)
    for dependent in found.values():
        dependent.changed = sorted(name for name in dependent.names if name in changed_names)
    ranked = sorted(found.values(), key=lambda dependent: (not dependent.changed, -dependent.score, dependent.path))
    return ranked[:max(0, limit)], len(ranked)
