"""`imports`: the import graph around a file, breadth-first both ways: what it imports (`imports`), what imports
it (`importedBy`), each file with its depth, and its own imports that resolve to no workspace file (`external`).
Edges are the resolver's (`resolve.py`: per language, as its tooling resolves), including submodules named by a
from-import."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lsp_hub.index.graph_inputs import resolved_imports
from lsp_hub.index.navigation.common import (
    Completeness,
    NavigationError,
    index_completeness,
    indexed_file,
    join_lines,
    more_line,
    take_snapshot,
)
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

DIRECTIONS = ("up", "down", "both")
DEFAULT_IMPORTS_DEPTH = 1
DEFAULT_IMPORTS_LIMIT = 100  # files per direction


@dataclass(frozen=True, slots=True)
class ImportEdges:
    imports: Mapping[str, tuple[str, ...]]  # file -> workspace files it imports
    imported_by: Mapping[str, tuple[str, ...]]  # file -> workspace files importing it
    external: Mapping[str, tuple[str, ...]]  # file -> its imports that resolve to no workspace file


def import_edges(snapshot: Snapshot) -> ImportEdges:
    def build(s: Snapshot) -> ImportEdges:
        imports: dict[str, tuple[str, ...]] = {}
        importers: dict[str, list[str]] = defaultdict(list)
        external: dict[str, tuple[str, ...]] = {}
        for path, resolved_list in resolved_imports(s).items():
            targets: dict[str, None] = {}
            outside: dict[str, None] = {}
            for resolved in resolved_list:
                files = set(resolved.files)
                for _name, name_files in resolved.names:
                    files.update(name_files)
                files.discard(path)
                if files:
                    targets.update(dict.fromkeys(sorted(files)))
                elif not resolved.files:
                    outside[resolved.module] = None
            imports[path] = tuple(targets)
            external[path] = tuple(outside)
            for target in targets:
                importers[target].append(path)
        return ImportEdges(imports, {path: tuple(sorted(found)) for path, found in importers.items()}, external)

    return snapshot.derived("navigation_import_edges", build)


def walk(start: str, edges: Mapping[str, tuple[str, ...]], depth: int) -> list[tuple[str, int]]:
    """(file, depth) breadth-first from `start` (excluded), to `depth` (0: unlimited)."""
    seen = {start}
    found: list[tuple[str, int]] = []
    queue: deque[tuple[str, int]] = deque([(start, 0)])
    while queue:
        path, level = queue.popleft()
        if depth and level >= depth:
            continue
        for neighbour in edges.get(path, ()):
            if neighbour not in seen:
                seen.add(neighbour)
                found.append((neighbour, level + 1))
                queue.append((neighbour, level + 1))
    return found


@dataclass(slots=True)
class ImportsResult:
    path: str
    direction: str
    depth: int
    imports: list[tuple[str, int]]
    imported_by: list[tuple[str, int]]
    external: list[str]
    imports_omitted: int
    imported_by_omitted: int
    completeness: Completeness

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"path": self.path, "direction": self.direction, "depth": self.depth}
        if self.direction in ("down", "both"):
            result["imports"] = [{"path": path, "depth": level} for path, level in self.imports]
            result["external"] = self.external
            if self.imports_omitted:
                result["importsOmitted"] = self.imports_omitted
        if self.direction in ("up", "both"):
            result["importedBy"] = [{"path": path, "depth": level} for path, level in self.imported_by]
            if self.imported_by_omitted:
                result["importedByOmitted"] = self.imported_by_omitted
        result.update(self.completeness.to_json())
        return result

    def to_text(self) -> str:
        lines = [f"{self.path} (depth {self.depth or 'unlimited'})"]
        if self.direction in ("down", "both"):
            lines.append("imports:" + ("" if self.imports else " (no workspace file)"))
            lines.extend(f"  {level} {path}" for path, level in self.imports)
            lines.extend(more_line(self.imports_omitted, "files"))
            if self.external:
                lines.append("external: " + ", ".join(self.external))
        if self.direction in ("up", "both"):
            lines.append("importedBy:" + ("" if self.imported_by else " (no workspace file imports it)"))
            lines.extend(f"  {level} {path}" for path, level in self.imported_by)
            lines.extend(more_line(self.imported_by_omitted, "files"))
        lines.append(self.completeness.to_text())
        return join_lines(lines)


def imports(index: WorkspaceIndex, path: str, direction: str = "both", depth: int = DEFAULT_IMPORTS_DEPTH,
            limit: int = DEFAULT_IMPORTS_LIMIT, wait: float = 0.0) -> ImportsResult:
    """The files `path` imports (down) and that import it (up), breadth-first to `depth` (0: unlimited), at most
    `limit` per direction (0: all)."""
    if direction not in DIRECTIONS:
        raise NavigationError(f"direction must be up, down or both, not {direction!r}")
    if depth < 0:
        raise NavigationError(f"depth must be 0 (unlimited) or more, not {depth}")
    snapshot = take_snapshot(index, wait)
    relative = indexed_file(index, snapshot, path, "path")
    completeness = index_completeness(index, snapshot)
    edges = import_edges(snapshot)
    down = walk(relative, edges.imports, depth) if direction != "up" else []
    up = walk(relative, edges.imported_by, depth) if direction != "down" else []
    shown_down = down if limit <= 0 else down[:limit]
    shown_up = up if limit <= 0 else up[:limit]
    omitted_down, omitted_up = len(down) - len(shown_down), len(up) - len(shown_up)
    if omitted_down or omitted_up:
        completeness.add(f"capped at {limit} files per direction")
    external = list(edges.external.get(relative, ())) if direction != "up" else []
    return ImportsResult(relative, direction, depth, shown_down, shown_up, external,
                         omitted_down, omitted_up, completeness)
