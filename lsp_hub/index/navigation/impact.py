"""`impact`: what may break if a symbol or a file changes. For a symbol: its callers to `depth`, the files that
import it (re-exports among them), subclasses of a class and overrides of a method; for a file: the files that
import it (to `depth`) or use the names it defines. Each file with its reasons, ranked by how directly it depends;
test files listed apart (`tests`), so an agent knows what to run."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsp_hub.index.file_kinds import is_test_file
from lsp_hub.index.graph_inputs import import_bindings, name_tables
from lsp_hub.index.navigation.common import (
    Completeness,
    SymbolRef,
    index_completeness,
    join_lines,
    more_line,
    one_symbol,
    take_snapshot,
    workspace_path,
)
from lsp_hub.index.navigation.imports_graph import import_edges, walk
from lsp_hub.index.reexports import name_origins
from lsp_hub.index.workspace import Snapshot, WorkspaceIndex

if TYPE_CHECKING:
    from lsp_hub.index.callers import CallerLookups

DEFAULT_IMPACT_DEPTH = 2
DEFAULT_IMPACT_LIMIT = 30  # files, and tests, each
MAX_REASONS_SHOWN = 3
MAX_NAMES_SHOWN = 3  # callers named in one reason
CALL_SCORE = {1: 4.0, 2: 2.0}  # by call depth; deeper calls 1.0
SUBCLASS_SCORE = 4.0
IMPORT_SCORE = 2.0
REEXPORT_SCORE = 3.0  # everything importing through it is exposed too
INDIRECT_IMPORT_SCORE = 1.0
USE_SCORE = 2.0  # a use of the symbol's name that is neither a call nor an import (a type in a signature)
PACKAGE_IMPORT_SCORE = 0.1  # a test importing the whole package the target is in (Go)
MEMBER_NAME_SHARE = 0.1  # of a file's weight when only members' names tie it to the target
# With no test among the callers and importers to the depth asked, tests are looked for this deep: an agent asks
# what to run, and ky's tests reach its class `Ky` only through `ky()` at depth 3, where depth 2 said "none".
TEST_SEARCH_DEPTH = 4
PACKAGE_INDEX_FILES = frozenset(("__init__.py", "__init__.pyi", "index.ts", "index.tsx", "index.js", "index.mjs",
                                 "mod.rs", "lib.rs"))


@dataclass(slots=True)
class ImpactedFile:
    path: str
    score: float = 0.0
    reasons: list[str] = field(default_factory=list)

    def add(self, score: float, reason: str) -> None:
        self.score += score
        if reason not in self.reasons:
            self.reasons.append(reason)

    def shown_reasons(self) -> list[str]:
        shown = self.reasons[:MAX_REASONS_SHOWN]
        if len(self.reasons) > MAX_REASONS_SHOWN:
            shown.append(f"and {len(self.reasons) - MAX_REASONS_SHOWN} more")
        return shown

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "reasons": self.shown_reasons()}

    def text(self) -> str:
        return f"  {self.path}: {'; '.join(self.shown_reasons())}"


@dataclass(slots=True)
class ImpactResult:
    target: str  # "method Cart.add at shop/cart.py:10" or a file path
    files: list[ImpactedFile]
    tests: list[ImpactedFile]
    files_omitted: int
    tests_omitted: int
    completeness: Completeness
    depth: int = DEFAULT_IMPACT_DEPTH  # of callers and importers for `files`
    tests_depth: int = DEFAULT_IMPACT_DEPTH  # for `tests`: deeper when none was within `depth`

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"target": self.target, "files": [entry.to_json() for entry in self.files],
                                  "tests": [entry.to_json() for entry in self.tests], "depth": self.depth,
                                  "testsDepth": self.tests_depth}
        if self.files_omitted:
            result["filesOmitted"] = self.files_omitted
        if self.tests_omitted:
            result["testsOmitted"] = self.tests_omitted
        result.update(self.completeness.to_json())
        return result

    def to_text(self) -> str:
        lines = [f"impact of {self.target}", "files:" + ("" if self.files else " (no other file depends on it)")]
        lines.extend(entry.text() for entry in self.files)
        lines.extend(more_line(self.files_omitted, "files"))
        if not self.tests:
            lines.append(f"tests: (no test reaches it within depth {self.tests_depth})")
        elif self.tests_depth > self.depth:
            lines.append(f"tests (none within depth {self.depth}; within depth {self.tests_depth}):")
        else:
            lines.append("tests:")
        lines.extend(entry.text() for entry in self.tests)
        lines.extend(more_line(self.tests_omitted, "tests"))
        lines.append(self.completeness.to_text())
        return join_lines(lines)


class _Impacts:
    def __init__(self) -> None:
        self.files: dict[str, ImpactedFile] = {}

    def add(self, path: str, score: float, reason: str) -> None:
        entry = self.files.get(path)
        if entry is None:
            entry = self.files[path] = ImpactedFile(path)
        entry.add(score, reason)


def _callers(
    snapshot: Snapshot,
    ref: SymbolRef,
    depth: int,
    impacts: _Impacts,
    completeness: Completeness,
    lookups: CallerLookups | None = None,
) -> None:
    """`lookups`: shared by the searches of one impact (the search for tests deeper reads the same files)."""
    from lsp_hub.index.callers import find_callers
    from lsp_hub.index.navigation.calls import snapshot_path

    found = find_callers(snapshot, [(ref.path, ref.definition)], depth, lookups=lookups)
    if found.get("truncated"):
        completeness.add(str(found["truncated"]))
    counts: dict[tuple[str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    shallowest: dict[tuple[str, str], int] = {}  # a caller reaching it at several depths is named at the first
    for caller in found["callers"]:
        path = snapshot_path(snapshot, caller["location"]["uri"])
        if path is not None:
            name = caller["caller"] or "<module>"
            level = shallowest.setdefault((path, name), caller["depth"])
            if level == caller["depth"]:
                counts[path, level][name] += 1
    for (path, level), by_caller in sorted(counts.items(), key=lambda item: item[0][1]):
        names = [name + (f" x{count}" if count > 1 else "") for name, count in by_caller.items()]
        shown = ", ".join(names[:MAX_NAMES_SHOWN]) + (f" +{len(names) - MAX_NAMES_SHOWN}"
                                                       if len(names) > MAX_NAMES_SHOWN else "")
        reason = f"called by {shown}" if level == 1 else f"calls it through its callers (depth {level}): {shown}"
        impacts.add(path, CALL_SCORE.get(level, 1.0) * min(sum(by_caller.values()), 3), reason)


def _importers(snapshot: Snapshot, ref: SymbolRef, impacts: _Impacts) -> None:
    name = ref.definition.name
    if ref.definition.container is not None:
        return  # a member is reached through its class, whose importers are not all its users
    tables = name_tables(snapshot)
    bindings = import_bindings(snapshot)
    candidates = set(tables.referencers.get(name, ())) | set(import_edges(snapshot).imported_by.get(ref.path, ()))
    for path in candidates:
        if path == ref.path:
            continue
        bound = bindings.get(path, {}).get(name)
        if not bound or ref.path not in name_origins(snapshot, bound, name):
            continue
        if path.rpartition("/")[2] in PACKAGE_INDEX_FILES:
            impacts.add(path, REEXPORT_SCORE, f"re-exports {name}")
        else:
            impacts.add(path, IMPORT_SCORE, f"imports {name}")


def _users(snapshot: Snapshot, ref: SymbolRef, impacts: _Impacts) -> None:
    """Files whose uses of the name resolve to the symbol's file and that no caller or import already listed: a type
    in a signature or a composite literal, a function passed as a value, and any use in a language without imports
    of names (Go's `lib.Command`)."""
    from lsp_hub.index.ranking import reference_graph

    name = ref.definition.name
    if ref.definition.container is not None:
        return  # a member's name alone does not say whose it is
    graph = reference_graph(snapshot)
    for source in graph.incoming.get(ref.path, ()):
        if source == ref.path or source in impacts.files:
            continue
        if any(used == name for used, _weight in graph.rows[source].passes.get(ref.path, ())):
            impacts.add(source, USE_SCORE, f"uses {name}")


_BASES = re.compile(r"^\s*(?:export\s+)?(?:abstract\s+)?(?:class|interface|struct)\s+\w+[^(:{]*?"
                    r"(?:\((?P<python>[^)]*)\)|(?P<rest>(?:extends|implements|:)[^{]*))")


def subclasses(snapshot: Snapshot, class_name: str) -> list[SymbolRef]:
    """Classes of the workspace whose definition names `class_name` among its bases (Python `class A(B)`,
    TS/Java `extends`/`implements`, C++/C# `: B`), followed by name."""
    found: list[SymbolRef] = []
    word = re.compile(rf"(?<![\w$]){re.escape(class_name)}(?![\w$])")
    for path in name_tables(snapshot).referencers.get(class_name, ()):
        for definition in snapshot.files[path].outline().definitions:
            if definition.kind not in ("class", "interface") or definition.name == class_name:
                continue
            match = _BASES.match(definition.signature)
            bases = match and (match.group("python") or match.group("rest"))
            if bases and word.search(bases):
                found.append(SymbolRef(path, definition))
    return found


def _hierarchy(snapshot: Snapshot, ref: SymbolRef, impacts: _Impacts) -> None:
    definition = ref.definition
    if definition.kind in ("class", "interface"):
        for subclass in subclasses(snapshot, definition.name):
            impacts.add(subclass.path, SUBCLASS_SCORE, f"{subclass.name} subclasses {definition.name}")
    elif definition.kind == "method" and definition.container is not None:
        for subclass in subclasses(snapshot, definition.container):
            for member in snapshot.files[subclass.path].outline().definitions:
                if member.name == definition.name and member.container == subclass.definition.name:
                    impacts.add(subclass.path, SUBCLASS_SCORE,
                                f"{subclass.definition.name}.{member.name} overrides {ref.name}")


def _file_impact(snapshot: Snapshot, path: str, depth: int, impacts: _Impacts) -> None:
    from lsp_hub.index.dependents import dependents

    found, _total = dependents(snapshot, [path], 10_000)
    for dependent in found:
        # Only a file's own import earns IMPORT_SCORE: an importer of its whole package (in Go, every importer of
        # the package) keeps the small score `dependents` gave it, below every file that uses one of its names.
        # A file tied to it only by members' names (`x.get()` of an unknown x) ranks below any import.
        score = dependent.score * (MEMBER_NAME_SHARE if dependent.members_only else 1.0)
        for reason in dependent.reasons():
            impacts.add(dependent.path, score + (IMPORT_SCORE if dependent.imports else 0.0), reason)
    _indirect_importers(snapshot, path, depth, impacts)


def _indirect_importers(snapshot: Snapshot, path: str, depth: int, impacts: _Impacts) -> None:
    for importer, level in walk(path, import_edges(snapshot).imported_by, depth):
        if level > 1:
            impacts.add(importer, INDIRECT_IMPORT_SCORE, f"imports it through {level - 1} other file"
                        + ("s" if level > 2 else ""))


def _tests_importing(snapshot: Snapshot, path: str, impacts: _Impacts, whole_package_too: bool) -> None:
    """Tests importing the target's file run its code even when the index sees no call. With `whole_package_too`
    (a file's impact), also those importing its whole package, last: they build only while it builds. Not for a
    symbol: its uses through a package import (`lib.Name` in Go) are seen, and a test using none of them would list
    every test of every importer of the package."""
    edges = import_edges(snapshot)
    whole_package_importers = edges.through_package.get(path, frozenset())
    for importer in edges.imported_by.get(path, ()):
        if not is_test_file(importer):
            continue
        if importer not in whole_package_importers:
            impacts.add(importer, INDIRECT_IMPORT_SCORE, f"imports {path}")
        elif whole_package_too:
            impacts.add(importer, PACKAGE_IMPORT_SCORE, f"imports the package of {path}")


def impact(index: WorkspaceIndex, target: str, depth: int = DEFAULT_IMPACT_DEPTH, limit: int = DEFAULT_IMPACT_LIMIT,
           wait: float = 0.0) -> ImpactResult:
    """What depends on `target` (a symbol: `Class.method`, `module.func`, FILE:LINE:COL; or a file path), to
    `depth` (callers, importers), at most `limit` files and `limit` tests (0: all)."""
    snapshot = take_snapshot(index, wait)
    completeness = index_completeness(index, snapshot)
    impacts = _Impacts()
    stripped = target.strip()
    as_path = workspace_path(index, stripped, "target") if ("/" in stripped or "\\" in stripped or stripped.endswith(
        tuple(f".{extension}" for extension in ("py", "ts", "tsx", "js", "go", "rs", "c", "h", "cpp", "java")))) and (
        index.root / stripped).is_file() else None
    depth = max(1, depth)
    ref: SymbolRef | None = None
    lookups: CallerLookups | None = None
    if as_path is not None and as_path in snapshot.files:
        label = as_path
        _file_impact(snapshot, as_path, depth, impacts)
        _tests_importing(snapshot, as_path, impacts, whole_package_too=True)
        impacts.files.pop(as_path, None)
    else:
        ref = one_symbol(index, snapshot, stripped)
        label = f"{ref.label()}"
        from lsp_hub.index.callers import CallerLookups  # with the graphs: loaded by the commands that need them

        lookups = CallerLookups(snapshot)
        _callers(snapshot, ref, depth, impacts, completeness, lookups)
        _importers(snapshot, ref, impacts)
        _hierarchy(snapshot, ref, impacts)
        _users(snapshot, ref, impacts)
        _tests_importing(snapshot, ref.path, impacts, whole_package_too=False)
    tests_depth = depth
    if depth < TEST_SEARCH_DEPTH and not any(is_test_file(path) for path in impacts.files):
        tests_depth = TEST_SEARCH_DEPTH
        deeper = _Impacts()
        if ref is None:
            _indirect_importers(snapshot, label, TEST_SEARCH_DEPTH, deeper)
        else:
            _callers(snapshot, ref, TEST_SEARCH_DEPTH, deeper, completeness, lookups)
        impacts.files.update((path, entry) for path, entry in deeper.files.items() if is_test_file(path))
    ranked = sorted(impacts.files.values(), key=lambda entry: (-entry.score, entry.path))
    files = [entry for entry in ranked if not is_test_file(entry.path)]
    tests = [entry for entry in ranked if is_test_file(entry.path)]
    shown_files = files if limit <= 0 else files[:limit]
    shown_tests = tests if limit <= 0 else tests[:limit]
    if len(shown_files) < len(files) or len(shown_tests) < len(tests):
        completeness.add(f"capped at {limit} files and {limit} tests")
    return ImpactResult(label, shown_files, shown_tests, len(files) - len(shown_files), len(tests) - len(shown_tests),
                        completeness, depth, tests_depth)
