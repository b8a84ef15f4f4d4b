"""Edits: LSP TextEdits and WorkspaceEdits applied to texts, the changes they make per file, their unified diff,
and writing them (through the workspace's `write_through`, the verified write, when it is set; else atomically
under each file's write lock, checked against the disk first)."""

from __future__ import annotations

import contextlib
import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_hub.agents import write_lock
from lsp_hub.agents.query.documents import Workspace
from lsp_hub.agents.query.errors import EXIT_FAILED, HubFailed, QueryError
from lsp_hub.agents.query.positions import character_column, path_uri, uri_path
from lsp_hub.platform.confined_files import ConfinedRoot, FileRefused


def apply_text_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """TextEdits (UTF-16 ranges, non-overlapping) applied to `text`, last first."""
    lines = text.split("\n")

    def offset(position: dict[str, Any]) -> int:
        line = min(int(position["line"]), len(lines))
        if line == len(lines):
            return len(text)
        start = sum(len(item) + 1 for item in lines[:line])
        return start + character_column(lines[line], int(position["character"]))

    spans = sorted(((offset(edit["range"]["start"]), offset(edit["range"]["end"]), edit.get("newText", ""))
                    for edit in edits), key=lambda span: (span[0], span[1]), reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


def workspace_edit_files(edit: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A WorkspaceEdit's text edits per path (`changes` or `documentChanges`; file operations are refused)."""
    files: dict[str, list[dict[str, Any]]] = {}
    for uri, edits in (edit.get("changes") or {}).items():
        files.setdefault(uri_path(uri), []).extend(edits)
    for change in edit.get("documentChanges") or []:
        if "textDocument" not in change:
            raise QueryError(f"lsp-hub query: the edit {change.get('kind', 'operation')}s a file; "
                             "lsp-hub query only applies text edits")
        files.setdefault(uri_path(change["textDocument"]["uri"]), []).extend(change.get("edits", []))
    return files


@dataclass
class Change:
    path: str
    old: str
    new: str
    edits: list[dict[str, Any]]


def changes_of(workspace: Workspace, files: dict[str, list[dict[str, Any]]]) -> list[Change]:
    changes = []
    for path, edits in sorted(files.items()):
        real = os.path.realpath(path)
        if Path(real) != workspace.root and workspace.root not in Path(real).parents:
            raise QueryError(f"lsp-hub query: the edit touches {path}, outside the workspace root {workspace.root}")
        old = workspace.text(real)
        changes.append(Change(real, old, apply_text_edits(old, edits), edits))
    return changes


def unified_diff(changes: list[Change], workspace: Workspace) -> str:
    parts: list[str] = []
    for change in changes:
        name = os.path.relpath(change.path, workspace.root)
        parts.extend(difflib.unified_diff(change.old.splitlines(keepends=True), change.new.splitlines(keepends=True),
                                          f"a/{name}", f"b/{name}"))
    return "".join(part if part.endswith("\n") else part + "\n\\ No newline at end of file\n" for part in parts)


def write_changes(workspace: Workspace, changes: list[Change]) -> None:
    """Atomically (a temporary file beside each, then rename, inside the root whatever races the paths), holding
    each file's write lock and after checking no file changed on disk since the servers read it; then tell the
    servers (didChangeWatchedFiles)."""
    if workspace.write_through is not None:
        workspace.write_through(changes)
        return
    with contextlib.ExitStack() as locks:
        try:
            for change in sorted(changes, key=lambda change: change.path):  # one order: no two writers deadlock
                locks.enter_context(write_lock.exclusive(Path(change.path), workspace.timeout))
        except write_lock.WriteLockError as error:
            raise QueryError(f"lsp-hub query: nothing written: {error}", EXIT_FAILED) from None
        for change in changes:
            try:
                current = workspace.files.read(change.path).data.decode("utf-8", errors="replace")
            except FileRefused as refusal:
                raise QueryError(f"lsp-hub query: cannot read {change.path}: {refusal}") from None
            if current != change.old:
                raise QueryError(f"lsp-hub query: {change.path} changed on disk since the servers read it; "
                                 "nothing written, ask again")
        for change in changes:
            atomic_write(Path(change.path), change.new, workspace.files)
            workspace.texts[change.path] = change.new
    try:
        for change in changes:  # documents the session has open get the new text, and are saved
            uri = path_uri(change.path)
            if uri in workspace.connection.documents:
                workspace.update(uri, change.new)
                workspace.connection.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        workspace.connection.notify("workspace/didChangeWatchedFiles", {
            "changes": [{"uri": path_uri(change.path), "type": 2} for change in changes]})
    except HubFailed as error:  # the files are written: say so, or a retry would apply the edit twice
        names = ", ".join(os.path.relpath(change.path, workspace.root) for change in changes)
        raise HubFailed(f"lsp-hub query: wrote {names}; then {str(error).removeprefix('lsp-hub query: ')} "
                        "(the servers were not told)") from None


def atomic_write(target: Path, text: str, files: ConfinedRoot | None = None) -> None:
    """Write `text` through a temporary file beside `target` and a rename within its directory's descriptor, so
    a reader never sees half of it and no swapped symbolic link redirects it; an existing file keeps its mode, a
    new one gets the umask's. `files`: the root the write must stay in (default: the file's directory)."""
    confined = files if files is not None else ConfinedRoot(target.parent)
    try:
        confined.write(target, text.encode("utf-8"))
    except FileRefused as refusal:
        raise QueryError(f"lsp-hub query: {refusal}", EXIT_FAILED) from None


def files_json(changes: list[Change], workspace: Workspace) -> list[dict[str, Any]]:
    result = []
    for change in changes:
        edits = []
        for edit in change.edits:
            line, column = workspace.position_out(change.path, edit["range"]["start"])
            end_line, end_column = workspace.position_out(change.path, edit["range"]["end"])
            edits.append({"line": line, "column": column, "end_line": end_line, "end_column": end_column,
                          "new_text": edit.get("newText", "")})
        result.append({"path": change.path, "edits": edits})
    return result
