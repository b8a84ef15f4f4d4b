"""`imports`: the import graph around a file, breadth-first both ways: what it imports (`imports`), what imports
it (`importedBy`), each file with its depth, and its own imports that resolve to no workspace file (`external`).
An import of a whole package (Go, Java's `a.b.*`, C#'s namespaces) is also named once in `packages` with its files,
and the text shows it as one line instead of a line per file.
Edges are the resolver's (`resolve.py`: per language, as its tooling resolves), including submodules named by a
from-import."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lsp_hub.index.graph_inputs import imported_kinds, package_files, resolved_imports
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
    # file -> those of its importers that import it only as one file of a package they import whole (Go)
    through_package: Mapping[str, frozenset[str]]


def import_edges(snapshot: Snapshot) -> ImportEdges:
    def build(s: Snapshot) -> ImportEdges:
        imports: dict[str, tuple[str, ...]] = {}
        importers: dict[str, list[str]] = defaultdict(list)
        external: dict[str, tuple[str, ...]] = {}
        through_package: dict[str, set[str]] = defaultdict(set)
        for path, resolved_list in resolved_imports(s).items():
            for target, whole_package in imported_kinds(resolved_list).items():
                if whole_package and target != path:
                    through_package[target].add(path)
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
        return ImportEdges(
            imports,
            {path: tuple(sorted(found)) for path, found in importers.items()},
            external,
            {path: frozenset(found) for path, found in through_package.items()},
        )

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
    packages: list[tuple[str, list[str]]] = field(default_factory=list)  # (module, its files) imported whole
    unresolved: list[str] = field(default_factory=list)  # relative imports that lead to no indexed file

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"path": self.path, "direction": self.direction, "depth": self.depth}
        if self.direction in ("down", "both"):
            result["imports"] = [{"path": path, "depth": level} for path, level in self.imports]
            result["external"] = self.external
            if self.unresolved:
                result["unresolved"] = self.unresolved
            if self.packages:
                result["packages"] = [{"module": module, "files": files} for module, files in self.packages]
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
            lines.extend(self._import_lines())
            lines.extend(more_line(self.imports_omitted, "files"))
            if self.external:
                lines.append("external: " + ", ".join(self.external))
            if self.unresolved:
                lines.append("unresolved (a file the index leaves out, or none): " + ", ".join(self.unresolved))
        if self.direction in ("up", "both"):
            lines.append("importedBy:" + ("" if self.imported_by else " (no workspace file imports it)"))
            lines.extend(f"  {level} {path}" for path, level in self.imported_by)
            lines.extend(more_line(self.imported_by_omitted, "files"))
        lines.append(self.completeness.to_text())
        return join_lines(lines)

    def _import_lines(self) -> list[str]:
        """A line per imported file, the files of a package imported whole in one line where the first of them is."""
        grouped = {path: (module, files) for module, files in self.packages for path in files}
        lines: list[str] = []
        shown: set[str] = set()
        for path, level in self.imports:
            package = grouped.get(path) if level == 1 else None
            if package is None:
                lines.append(f"  {level} {path}")
            elif package[0] not in shown:
                shown.add(package[0])
                module, files = package
                directory = path.rpartition("/")[0] or "."
                lines.append(f"  1 {module} (package: {len(files)} files in {directory}/)")
        return lines


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
    outside = list(edges.external.get(relative, ())) if direction != "up" else []
    # A relative import that leads to no indexed file is no package: a file the walk left out (vendor/) or missing.
    unresolved = [module for module in outside if module.startswith((".", "/"))]
    external = [module for module in outside if not module.startswith((".", "/"))]
    shown_files = {path for path, _level in shown_down}
    packages = []
    if direction != "up":
        for resolved in resolved_imports(snapshot).get(relative, ()):
            files = sorted(package_files(resolved) - {relative})
            if files and all(path in shown_files for path in files):
                packages.append((resolved.module, files))
    return ImportsResult(relative, direction, depth, shown_down, shown_up, external,
                         omitted_down, omitted_up, completeness, packages, unresolved)
