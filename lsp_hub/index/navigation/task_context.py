"""`context`: a ready context block for a task, within a byte budget: the files most relevant to it with their
reasons (`relevance.py`), each target's imports and importers, and the definitions (with signatures) of the
identifiers the description names, as written or spelled by its words ("GZip middleware": `GZipMiddleware`).
With neither target nor description: the repo map (a project summary).

The block is filled in order of use to a model (definitions named, targets' neighbours, relevant files) and cut at
the budget; the JSON lists exactly what the text shows."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lsp_hub.index.navigation.common import (
    Completeness,
    NavigationError,
    index_completeness,
    indexed_file,
    take_snapshot,
)
from lsp_hub.index.navigation.fuzzy_symbols import name_table
from lsp_hub.index.navigation.imports_graph import import_edges
from lsp_hub.index.navigation.zoom import shortened
from lsp_hub.index.workspace import WorkspaceIndex

DEFAULT_CONTEXT_BUDGET = 8000  # bytes
MIN_CONTEXT_BUDGET = 200
RELEVANT_FILES = 12
MAX_DEFINITIONS_PER_NAME = 3
MAX_NEIGHBOURS = 10  # imports and importers listed per target
CONTEXT_HISTORY_COMMITS = 100
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_NAMED_KINDS = frozenset(("class", "interface", "type", "function", "method", "module"))


@dataclass(slots=True)
class ContextResult:
    description: str
    targets: list[dict[str, Any]] = field(default_factory=list)  # {path, imports, importedBy}
    definitions: list[dict[str, Any]] = field(default_factory=list)  # {name, kind, path, line, signature}
    relevant_files: list[dict[str, Any]] = field(default_factory=list)  # {path, reasons}
    summary: str = ""  # the repo map, when there is neither target nor description
    text: str = ""
    completeness: Completeness = field(default_factory=Completeness)

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {"description": self.description}
        if self.summary:
            result["repoMap"] = self.summary
        else:
            result.update({"targets": self.targets, "definitions": self.definitions,
                           "relevantFiles": self.relevant_files})
        result["bytes"] = len(self.text.encode("utf-8"))
        result.update(self.completeness.to_json())
        return result

    def to_text(self) -> str:
        return self.text


class _Block:
    """Lines added while they fit the budget; each section's items kept in step with what is shown."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.lines: list[str] = []
        self.size = 0
        self.cut = False

    def fits(self, lines: list[str]) -> bool:
        size = sum(len(line.encode("utf-8")) + 1 for line in lines)
        if self.cut or self.size + size > self.budget:
            self.cut = True
            return False
        self.lines.extend(lines)
        self.size += size
        return True


def _named_identifiers(description: str) -> list[str]:
    from lsp_hub.index.relevance import STOP_WORDS

    seen: dict[str, None] = {}
    for found in _IDENTIFIER.findall(description):
        for part in (found, found.rsplit(".", 1)[-1]):
            if len(part) >= 3 and part.lower() not in STOP_WORDS:
                seen.setdefault(part, None)
    return list(seen)


def context(index: WorkspaceIndex, description: str = "", targets: Sequence[str] = (),
            budget: int = DEFAULT_CONTEXT_BUDGET, wait: float = 0.0) -> ContextResult:
    """The context block for a task described by `description` about the files `targets`, at most `budget` bytes."""
    if budget < MIN_CONTEXT_BUDGET:
        raise NavigationError(f"budget must be at least {MIN_CONTEXT_BUDGET} bytes, not {budget}")
    snapshot = take_snapshot(index, wait)
    completeness = index_completeness(index, snapshot)
    target_paths = [indexed_file(index, snapshot, target, "target") for target in targets]
    result = ContextResult(description.strip(), completeness=completeness)
    if not result.description and not target_paths:
        from lsp_hub.index.repomap import repo_map

        summary = repo_map(snapshot, (), (), max(1, budget // 4))["text"]  # tokens: about four bytes each
        result.summary = result.text = summary.encode("utf-8")[:budget].decode("utf-8", "ignore")
        if not summary:
            result.text = "(the index holds no files yet)"
        return result
    block = _Block(budget)
    table = name_table(snapshot)
    definitions_section = False
    from lsp_hub.index.relevance import names_spelled_by

    written = _named_identifiers(result.description)
    spelled = [name for name in names_spelled_by(snapshot, result.description) if name not in written]
    # Written as code first (`user_cache`, `Session.send`), then what several words spell, then a plain word that
    # happens to be a name ("middleware").
    as_code = [name for name in written if name != name.lower() or "_" in name or "." in name]
    shown: set[tuple[str, int]] = set()  # "subscription.stop" and "stop" may name the same definitions
    for name in [*as_code, *spelled, *(name for name in written if name not in as_code)]:
        bare = name.rsplit(".", 1)[-1]
        places = sorted(  # the project's own first, a function's locals last (stable: in path order among equals)
            (place for place in table.places.get(bare, ()) if place[1] in _NAMED_KINDS), key=lambda place: place[4]
        )
        if "." in name:
            qualifier = name.rsplit(".", 2)[-2]
            places = [place for place in places if place[2] == qualifier] or places
        for path, kind, container, line, _standing in places[:MAX_DEFINITIONS_PER_NAME]:
            if (path, line) in shown:
                continue
            definition = next((d for d in snapshot.files[path].outline().definitions
                               if d.span.start_line == line and d.kind == kind), None)
            signature = definition.signature if definition is not None else ""
            qualified = f"{container}.{bare}" if container else bare
            entry = {"name": qualified, "kind": kind, "path": path, "line": line + 1, "signature": signature}
            header = [] if definitions_section else ["## definitions named in the task"]
            if not block.fits([*header, f"{path}:{line + 1} {shortened(signature) or kind + ' ' + qualified}"]):
                break
            definitions_section = True
            shown.add((path, line))
            result.definitions.append(entry)
    edges = import_edges(snapshot)
    for path in target_paths:
        imports = list(edges.imports.get(path, ()))[:MAX_NEIGHBOURS]
        importers = list(edges.imported_by.get(path, ()))[:MAX_NEIGHBOURS]
        lines = [f"## target {path}", "imports: " + (", ".join(imports) or "(no workspace file)"),
                 "importedBy: " + (", ".join(importers) or "(none)")]
        if not block.fits(lines):
            break
        result.targets.append({"path": path, "imports": imports, "importedBy": importers})
    from lsp_hub.index.relevance import relevant_files

    ranked = relevant_files(snapshot, result.description, target_paths, RELEVANT_FILES, CONTEXT_HISTORY_COMMITS)
    for position, entry in enumerate(ranked["files"]):
        header = ["## relevant files"] if position == 0 else []
        if not block.fits([*header, f"{entry['path']}: {'; '.join(entry['reasons'])}"]):
            break
        result.relevant_files.append({"path": entry["path"], "reasons": entry["reasons"]})
    if block.cut:
        completeness.add(f"cut at the budget of {budget} bytes")
    if not block.lines:
        block.lines.append("nothing in the index matches the task: name a file as a target, or a symbol")
    result.text = "\n".join([*block.lines, completeness.to_text()]).rstrip()
    return result
