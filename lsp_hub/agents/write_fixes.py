"""A verified write's automatic fixes (`verified_write`), with auto_code_actions on for a file's language: the
code actions its servers mark preferred or offer as source.fixAll / source.organizeImports, applied to the written
text, checked and written. Standard library only, like `query`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

from lsp_hub.agents import query
from lsp_hub.agents.query import QueryError
from lsp_hub.agents.write_outcome import Planned
from lsp_hub.platform.confined_files import ConfinedRoot, FileRefused

AUTO_FIX_KINDS = ("source.fixAll", "source.organizeImports")


class FixingWriter(Protocol):
    """What the fixes ask of the writer (`verified_write.VerifiedWriter`)."""

    workspace: query.Workspace
    files: ConfinedRoot
    timeout: float

    def command(self, command: str, arguments: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> Any: ...

    def display(self, path: str | Path) -> str: ...

    def language_of(self, target: Path) -> dict[str, Any] | None: ...

    def syntax_problem(self, path: Path, text: str) -> str | None: ...


def auto_fixes(writer: FixingWriter, planned: list[Planned], deadline: float) -> list[str]:
    """With auto_code_actions on for a file's language: the code actions its servers mark preferred or offer
    as source.fixAll / source.organizeImports, applied to the written text, checked and written; their titles."""
    applied: list[str] = []
    for plan in planned:
        if not plan.outcome.written or plan.request.remove or plan.too_large:
            continue
        language = writer.language_of(plan.request.target) or {}
        if not language.get("autoCodeActions"):
            continue
        applied.extend(_fix_file(writer, plan, deadline))
    return applied


def _fix_file(writer: FixingWriter, plan: Planned, deadline: float) -> list[str]:
    connection, target = writer.workspace.connection, plan.request.target
    text = plan.content
    lines = text.split("\n")
    whole = {"start": {"line": 0, "character": 0},
             "end": {"line": len(lines) - 1, "character": len(lines[-1].encode("utf-16-le")) // 2}}
    diagnostics = [diagnostic for diagnostic in raw_diagnostics(writer, plan.uri)]
    try:
        actions = connection.request("textDocument/codeAction", {
            "textDocument": {"uri": plan.uri}, "range": whole,
            "context": {"diagnostics": diagnostics, "only": ["quickfix", *AUTO_FIX_KINDS]}},
            max(0.5, min(writer.timeout, deadline - time.monotonic()))) or []
    except QueryError:
        return []
    applied: list[str] = []
    for action in actions:
        if not isinstance(action, dict) or "edit" not in action:
            continue
        kind = str(action.get("kind") or "")
        if not (action.get("isPreferred") or any(kind == wanted or kind.startswith(wanted + ".")
                                                 for wanted in AUTO_FIX_KINDS)):
            continue
        edits = query.workspace_edit_files(action["edit"]).get(str(target))
        if not edits:
            continue
        try:
            fixed = query.apply_text_edits(text, edits)
        except (KeyError, TypeError, ValueError):
            continue
        if fixed == text or writer.syntax_problem(target, fixed) is not None:
            continue
        text = fixed
        applied.append(f"{action.get('title', kind)} ({writer.display(target)})")
        break  # the other actions' ranges were computed on the text before this one: ask again next write
    if not applied:
        return []
    try:
        writer.files.write(target, text.encode("utf-8"), force=True)
    except FileRefused:
        return []
    plan.content = text
    writer.workspace.texts[str(target)] = text
    writer.workspace.update(plan.uri, text)
    connection.notify("textDocument/didSave", {"textDocument": {"uri": plan.uri}})
    return applied


def raw_diagnostics(writer: FixingWriter, uri: str) -> list[dict[str, Any]]:
    """The hub's diagnostics of `uri` as LSP objects (code actions are asked with them)."""
    try:
        report = writer.command("lspHub.diagnostics", {"uri": uri, "timeoutMs": 0}) or {}
    except QueryError:
        return []
    return list(report.get("diagnostics") or [])
