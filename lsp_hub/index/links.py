"""Each file's links: where its uses of names point, the part of the reference graph that file contributes.

A link is `(name used, uses, target files)`: the file uses `name` `uses` times with one receiver (an alias counts
for the name it imports), and `UseResolver` says those uses may mean the definitions in `target files` (the file
itself left out). Names defined in more than MAX_DEFINERS files are left out, as the graph leaves them out.

A file's links depend on more than the file: on which files define each name it uses, on what its imports resolve
to, and on what the files it imports from re-export. After a change they are therefore recomputed for the changed
files and for every file whose links could have moved (`affected_files`), and taken from the anchor snapshot for
all others; the result equals recomputing every file's links (tests check it on a real corpus).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from lsp_hub.index.graph import SELF_RECEIVERS, FileLinks, Link, UseResolver, use_resolver
from lsp_hub.index.graph_cache import graph_state
from lsp_hub.index.graph_inputs import MAX_DEFINERS, GraphChanges, GraphInputs, graph_inputs, imported_files
from lsp_hub.index.records import definition_names
from lsp_hub.index.reexports import MAX_REEXPORT_DEPTH, renamed_users
from lsp_hub.index.walk import IndexingCancelled
from lsp_hub.index.workspace import GRAPH_ANCHOR_KEY, Snapshot

STOP_CHECK_FILES = 64  # files linked between checks for a stopping index

__all__ = ["FileLinks", "Link", "affected_files", "file_links", "links_of"]


def file_links(snapshot: Snapshot) -> Mapping[str, FileLinks]:
    """Every file's links, updated from the anchor snapshot's where there is one."""
    return snapshot.derived(GRAPH_ANCHOR_KEY, _file_links)


def _file_links(snapshot: Snapshot) -> Mapping[str, FileLinks]:
    inputs = graph_inputs(snapshot)
    resolver = use_resolver(snapshot)
    changes = inputs.changes
    anchor = changes.anchor if changes is not None else None
    if changes is None or anchor is None or not anchor.has_derived(GRAPH_ANCHOR_KEY):
        state = graph_state(snapshot)
        stored = state.take("links") if state is not None else None
        if stored is not None and isinstance(stored[0], dict):
            snapshot.anchor = None
            stored_links: Mapping[str, FileLinks] = stored[0]
            return stored_links
        links = {}
        for count, path in enumerate(snapshot.files):
            if count % STOP_CHECK_FILES == 0 and snapshot.stopped():
                raise IndexingCancelled  # the index is closing: a build of the graphs can take seconds
            links[path] = links_of(resolver, inputs, path)
    else:
        # The anchor's links, copied whole (a loop over every file cost 0.1 s at 100,000), with the affected files'
        # made again and the removed files' taken out.
        links = dict(file_links(anchor))
        affected = affected_files(snapshot, inputs, changes)
        for path in changes.changed - affected:
            links.pop(path, None)
        for path in affected:
            links[path] = links_of(resolver, inputs, path)
        changes.relinked = frozenset(affected)
    snapshot.anchor = None  # this snapshot is an anchor itself now: the chain behind it can go
    if changes is not None and (anchor is None or not anchor.has_derived("reference_graph")):
        # Only a reference graph updated from the anchor's still needs the anchor, and it can be updated only from
        # an anchor that has one. Kept, it would hold the anchor's own changes' anchor, and so on back through every
        # snapshot whose links were asked for: a chain of whole snapshots that grows with each edit.
        changes.anchor = None
    return links


def links_of(resolver: UseResolver, inputs: GraphInputs, source: str) -> FileLinks:
    definers_of = inputs.tables.definers
    record = resolver.snapshot.files[source]
    renames = resolver.renames.get(source, {})  # an alias counts for the name it imports (`imported_name`)
    bindings = resolver.bindings.get(source, {})
    targets_of = resolver.targets
    # Uses the resolver can only send to the file itself or nowhere make no link, and are passed over without
    # asking it: a plain name or `self.name` the file defines, a plain name neither defined, imported nor
    # star-imported here: 20,000 of the standard library's 84,000 uses. Its links took 0.31 s against 0.38 s
    # (median of 8, alternated in one process), the same links.
    own = definition_names(record)
    plain_local = resolver.plain_names_local(source)
    macros = resolver.macro_names(source)  # a Rust crate's macros: plain names that need no `use`
    links: list[Link] = []
    for name, by_receiver in record.reference_uses().items():
        own_name = name in own
        for receiver, uses in by_receiver.items():
            if receiver is None:
                if (own_name or (plain_local and name not in macros)) and name not in renames and name not in bindings:
                    continue
                used = renames.get(name, name)
            elif own_name and receiver in SELF_RECEIVERS:
                continue
            else:
                used = name
            definers = definers_of.get(used)
            if not definers and bindings.get(name if receiver is None else receiver):
                # Imported from a workspace file that does not define it: a re-export may have renamed it
                # (`export { a as b } from './m'`), and the uses count for the name the origin defines.
                used = resolver.imported_name(source, name, receiver)
                definers = definers_of.get(used)
            if not definers or len(definers) > MAX_DEFINERS:
                continue
            targets = targets_of(source, name, receiver)
            if source in targets:  # else the resolver's tuple itself, shared by every link to the same files
                targets = tuple(target for target in targets if target != source)
            if targets:
                if targets[0] not in definers:  # reached through a re-export that renamed it (another file's own)
                    used = resolver.imported_name(source, name, receiver)
                links.append((used, uses, targets))
    return tuple(links)


def affected_files(snapshot: Snapshot, inputs: GraphInputs, changes: GraphChanges) -> set[str]:
    """The files whose links may differ from the anchor's: the changed files; files using a name whose definers
    changed (by that name, an alias of it or a field typed with it); and files importing, directly or through
    re-exports, a file whose imports changed."""
    files = snapshot.files
    affected = {path for path in changes.changed if path in files}
    referencers, dependents = inputs.tables.referencers, inputs.dependents
    for name in changes.names:
        affected.update(referencers.get(name, ()))
        affected.update(dependents.get(name, ()))
    # Files using a name under the name a re-export gave it: their links point at the name's definers.
    affected.update(source for source, _local in renamed_users(snapshot, changes.names))
    if changes.rewired:
        affected.update(_importers(inputs, changes.rewired))
    return {path for path in affected if path in files}


def _importers(inputs: GraphInputs, files: frozenset[str]) -> set[str]:
    """Files that import any of `files` directly or through up to MAX_REEXPORT_DEPTH + 1 re-exporting files: the
    files a change of those files' imports can reach through `name_origins`."""
    imported_by: dict[str, set[str]] = defaultdict(set)
    for path, imports in inputs.resolved.items():
        for resolved in imports:
            for target in imported_files(resolved):
                imported_by[target].add(path)
    found: set[str] = set()
    frontier = set(files)
    for _depth in range(MAX_REEXPORT_DEPTH + 2):
        frontier = {importer for path in frontier for importer in imported_by.get(path, ())} - found
        if not frontier:
            break
        found.update(frontier)
    return found
