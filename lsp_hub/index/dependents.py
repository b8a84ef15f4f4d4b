"""The files that depend on some files: what a change to them may break elsewhere.

A file depends on a written file when it imports it (the import graph) or uses a name the written file defines
(the reference graph's links, which resolve each use through imports to its definitions). Dependents are ranked by
how much of theirs reaches the written files: the summed weight of their links into them (uses, weighted as the
repo map weighs them), plus a fixed share for an import. The reasons name the import and the names used, so an
agent sees why a file was checked."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from lsp_hub.index.graph_inputs import importer_kinds
from lsp_hub.index.ranking import reference_graph
from lsp_hub.index.records import D_CONTAINER, D_NAME
from lsp_hub.index.workspace import Snapshot

IMPORT_WEIGHT = 1.0  # an import alone ranks like one plain use of one name
PACKAGE_IMPORT_WEIGHT = 0.1  # an import of the whole package a written file is in (Go, Java's `a.b.*`, C#)
MAX_NAMES_SHOWN = 5


@dataclass
class Dependent:
    path: str
    score: float = 0.0
    imports: list[str] = field(default_factory=list)  # written files it imports
    package_imports: list[str] = field(default_factory=list)  # written files it imports only with their package
    names: dict[str, float] = field(default_factory=dict)  # names of the written files it uses -> their weight
    changed: list[str] = field(default_factory=list)  # the names it uses that the write changes
    # Of `names`, those the written files define only inside a class or type: `x.items()` links to every file with
    # a member `items` when the index cannot tell x's type (a dict's `get` to a cookie jar's), so they are shown as
    # members (`.items`), and a file with nothing else ranks last.
    members: set[str] = field(default_factory=set)

    def reasons(self) -> list[str]:
        reasons = [f"uses {', '.join(self.changed[:MAX_NAMES_SHOWN])}, which the write changes"] if self.changed else []
        reasons += [f"imports {target}" for target in self.imports]
        reasons += [f"imports the package of {target}" for target in self.package_imports]
        if self.names:
            ranked = sorted(self.names, key=lambda name: (name in self.members, -self.names[name], name))
            shown = ", ".join(f".{name}" if name in self.members else name for name in ranked[:MAX_NAMES_SHOWN])
            more = len(ranked) - MAX_NAMES_SHOWN
            shown += f" and {more} more" if more > 0 else ""
            hedge = " (member names only: maybe another type's)" if self.members_only else ""
            reasons.append(f"uses {shown}{hedge}")
        return reasons

    @property
    def members_only(self) -> bool:
        """Whether its only tie to the written files is members' names, without an import of them."""
        return (
            bool(self.names)
            and self.members.issuperset(self.names)
            and not (self.imports or self.package_imports or self.changed)
        )

    @property
    def through_package_only(self) -> bool:
        """Whether it reaches the written files only by importing their packages whole, using none of their names."""
        return bool(self.package_imports) and not self.imports and not self.names


def dependents(
    snapshot: Snapshot,
    written: list[str],
    limit: int,
    changed: Collection[str] = (),
    imported_by: Mapping[str, Mapping[str, bool]] | None = None,
) -> tuple[list[Dependent], int]:
    """The files depending on `written` (workspace-relative paths; themselves excluded), best first, at most
    `limit`; and how many there were in all. Those using one of the `changed` names (on the lines a write changes)
    come first: they are the likeliest to break, however little else of the written files they use; those that
    only import a written file's package whole, using none of its names, come next to last, and those tied to them
    only by members' names (`members_only`) last. `imported_by`: graph_inputs'
    `importer_kinds` of `written`, when the caller has it."""
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
        imported_by = importer_kinds(snapshot, targets)
    for target in targets:
        for source in graph.incoming.get(target, ()):
            if source in excluded:
                continue
            dependent = entry(source)
            for name, weight in graph.rows[source].passes.get(target, ()):
                dependent.score += weight
                dependent.names[name] = dependent.names.get(name, 0.0) + weight
        for source, whole_package in imported_by.get(target, {}).items():
            if source in excluded:
                continue
            dependent = entry(source)
            if whole_package:
                dependent.score += PACKAGE_IMPORT_WEIGHT
                dependent.package_imports.append(target)
            else:
                dependent.score += IMPORT_WEIGHT
                dependent.imports.append(target)
    changed_names = set(changed)
    top_level = {
        definition[D_NAME]
        for target in targets
        for definition in snapshot.files[target].definitions
        if definition[D_CONTAINER] is None
    }
    for dependent in found.values():
        dependent.changed = sorted(name for name in dependent.names if name in changed_names)
        dependent.members = {name for name in dependent.names if name not in top_level}
    ranked = sorted(
        found.values(),
        key=lambda dependent: (
            not dependent.changed,
            dependent.members_only,
            dependent.through_package_only,
            -dependent.score,
            dependent.path,
        ),
    )
    return ranked[: max(0, limit)], len(ranked)
