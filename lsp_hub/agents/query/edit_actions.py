"""The questions that change files: `rename` (the servers' edit completed with the index's, in the files no server
analyses, or refused naming what it would miss), `code-actions` (listed, or one applied), and the verified writes
of the shell (`--apply`, `apply --edits`, `undo`: `verified_write.VerifiedWriter`, journaled as the shell's
session; imported when used, standard library only)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_hub.agents.query.documents import Target, Workspace
from lsp_hub.agents.query.edits import Change, changes_of, files_json, unified_diff, workspace_edit_files, write_changes
from lsp_hub.agents.query.errors import EXIT_EMPTY, EXIT_FAILED, QueryError
from lsp_hub.agents.query.hub_requests import covering_references, hub_command, hub_wait_ms
from lsp_hub.agents.query.options import QueryOptions
from lsp_hub.agents.query.positions import character_column, uri_path
from lsp_hub.agents.query.rendering import Answer, as_is, display, uncovered_note
from lsp_hub.platform.confined_files import FileRefused

if TYPE_CHECKING:
    from lsp_hub.agents.undo_journal import UndoJournal
    from lsp_hub.agents.verified_write import VerifiedWriter


@dataclass
class IndexRenameSites:
    """What a rename must also change where no server answered: the index's uses as edits, and the uses it found
    but cannot rename exactly (the text there is not the old name)."""

    edits: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # path -> TextEdits
    missed: list[str] = field(default_factory=list)  # "path:line:column  why"
    uncovered: list[str] = field(default_factory=list)
    incomplete: str = ""  # why the references found are not all there are, if they are not


def index_rename_sites(workspace: Workspace, where: dict[str, Any], old_name: str, new_name: str,
                       server_files: set[str]) -> IndexRenameSites:
    """The index's uses of the renamed definition in the files the servers' references left out: an edit at each
    exact occurrence of `old_name` (a use through an alias keeps the alias: `b` of `import a as b`)."""
    result = covering_references(workspace, where)
    sites = IndexRenameSites(uncovered=[uri_path(uri) for uri in result.get("uncovered") or []])
    late = [server["name"] for server in result.get("servers") or [] if not server.get("complete")]
    if late or result.get("serverError"):
        sites.incomplete = f"no complete answer from {', '.join(late) or 'the servers'}"
    elif result.get("truncated") or result.get("indexState") == "building" or result.get("indexError"):
        sites.incomplete = result.get("truncated") or result.get("indexError") or "the index is still building"
    for location in result.get("locations") or []:
        if location.get("origin") != "index":
            continue
        path = os.path.realpath(uri_path(location["uri"]))
        if path in server_files:
            continue  # the servers' edit covers this file
        start, end = location["range"]["start"], location["range"]["end"]
        line_number, column = workspace.position_out(path, start)
        try:
            line = workspace.text(path).split("\n")[start["line"]]
        except (QueryError, IndexError):
            sites.missed.append(f"{display(path)}:{line_number}:{column}  unreadable")
            continue
        found = line[character_column(line, start["character"]):character_column(line, end["character"])]
        if location.get("name", old_name) != old_name:
            continue  # a use of the name under an alias: the alias stays
        if found != old_name:
            sites.missed.append(f"{display(path)}:{line_number}:{column}  reads {found!r}, not {old_name!r}")
            continue
        sites.edits.setdefault(path, []).append({"range": location["range"], "newText": new_name})
    return sites


_IDENTIFIER = re.compile(r"[\w$]+")


def name_at(workspace: Workspace, uri: str, position: dict[str, Any]) -> str:
    """The identifier at an LSP position of a file."""
    try:
        line = workspace.text(uri_path(uri)).split("\n")[int(position["line"])]
    except (QueryError, IndexError):
        return ""
    column = character_column(line, int(position["character"]))
    for match in _IDENTIFIER.finditer(line):
        if match.start() <= column <= match.end():
            return match.group()
    return ""


def rename_action(workspace: Workspace, where: dict[str, Any], options: QueryOptions) -> Answer:
    """The servers' rename, and the index's edits in the files the servers do not analyse (their references list
    nothing there): a rename applied covers every use found, or is refused naming what it would miss."""
    if not options.new_name:
        raise QueryError("lsp-hub query rename: give NEW_NAME")
    edit = workspace.connection.request("textDocument/rename", {**where, "newName": options.new_name},
                                        workspace.timeout)
    files = workspace_edit_files(edit or {})
    old_name = name_at(workspace, where["textDocument"]["uri"], where["position"])
    index_sites = IndexRenameSites()
    if edit and old_name:  # nothing to complete when no server renames (or no name is there)
        index_sites = index_rename_sites(workspace, where, old_name, options.new_name,
                                         {os.path.realpath(path) for path in files})
        for path, edits in index_sites.edits.items():
            files.setdefault(path, []).extend(edits)
    changes = changes_of(workspace, files)
    diff = unified_diff(changes, workspace)
    index_edits = [{"path": path, "line": workspace.position_out(path, edit["range"]["start"])[0],
                    "column": workspace.position_out(path, edit["range"]["start"])[1]}
                   for path, edits in index_sites.edits.items() for edit in edits]
    refusal = ""
    if index_sites.missed:
        refusal = (f"{len(index_sites.missed)} use(s) found by the index cannot be renamed exactly: "
                   + "; ".join(index_sites.missed[:20]))
    elif index_sites.incomplete:
        refusal = f"the uses found may not be all: {index_sites.incomplete}"
    if options.apply and changes and refusal:
        raise QueryError(f"lsp-hub query rename: nothing written: {refusal}", EXIT_FAILED)
    if options.apply and changes:
        write_changes(workspace, changes)
    data = {"files": files_json(changes, workspace), "diff": diff, "applied": bool(options.apply and changes),
            "from_index": index_edits, "uncovered": index_sites.uncovered, "missed": index_sites.missed}
    notes = [uncovered_note(data)] if index_edits else []
    if refusal:
        notes.append(f"(not safe to apply: {refusal})")
    text = "\n".join(part for part in (diff or "nothing to rename", *notes) if part)
    return Answer(data, text, not changes)


def code_actions_action(workspace: Workspace, target: Target, uri: str, options: QueryOptions) -> Answer:
    connection, timeout = workspace.connection, workspace.timeout
    # The diagnostics on that line, so servers offer their quick fixes (waited for, as `diagnostics` does).
    report = hub_command(workspace, "lspHub.diagnostics", {"uri": uri, "timeoutMs": hub_wait_ms(timeout)})
    line = target.position["line"]
    context = [d for d in (report or {}).get("diagnostics", [])
               if d["range"]["start"]["line"] <= line <= d["range"]["end"]["line"]]
    result = connection.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": target.position, "end": target.position},
        "context": {"diagnostics": context}}, timeout) or []
    servers = _server_names(workspace)
    actions = [{"title": item.get("title", ""), "kind": item.get("kind", ""), "server": _origin(item, servers)}
               for item in result]
    applied: Any = False
    diff = ""
    if options.apply is not None and not isinstance(options.apply, bool):
        number = _action_number(actions, options.apply)
        diff = _apply_action(workspace, result[number - 1])
        applied = number
    lines = [f"{number}. {action['title']}" + (f"  ({action['kind']}, {action['server']})" if action["kind"] else "")
             for number, action in enumerate(actions, 1)]
    return Answer({"actions": actions, "applied": applied, **({"diff": diff} if applied else {})},
                  "\n".join(lines) + (f"\n{diff}" if diff else ""), not actions)


def _action_number(actions: list[dict[str, Any]], choice: int | str) -> int:
    """The 1-based number of the action chosen by number or by title (exact, else the one title containing it)."""
    if isinstance(choice, int):
        if not 1 <= choice <= len(actions):
            raise QueryError(f"lsp-hub query code-actions: --apply takes 1 to {len(actions)}, not {choice}")
        return choice
    exact = [number for number, action in enumerate(actions, 1) if action["title"] == choice]
    near = [number for number, action in enumerate(actions, 1) if choice.lower() in action["title"].lower()]
    chosen = exact or near
    if len(chosen) != 1:
        titles = "; ".join(action["title"] for action in actions) or "none"
        raise QueryError(f"lsp-hub query code-actions: {'no' if not chosen else 'more than one'} action is titled "
                         f"{choice!r} (the actions: {titles})")
    return chosen[0]


def _origin(item: dict[str, Any], servers: dict[int, str]) -> str:
    data = item.get("data")
    uid = data.get("lspHub") if isinstance(data, dict) else None
    return servers.get(uid, "") if isinstance(uid, int) else ""


def _server_names(workspace: Workspace) -> dict[int, str]:
    """Backend uid -> server name, to say which server offered a code action (the hub tags items with the uid)."""
    status = hub_command(workspace, "lspHub.status") or {}
    return {server["uid"]: server["name"] for server in status.get("servers", []) if "uid" in server}


def _apply_action(workspace: Workspace, action: dict[str, Any]) -> str:
    connection, timeout = workspace.connection, workspace.timeout
    if "edit" not in action and "command" in action and isinstance(action["command"], dict):
        action = {"command": action["command"]}  # a Command inside a CodeAction
    elif "edit" not in action and isinstance(action.get("command"), str):
        action = {"command": {"command": action["command"], "arguments": action.get("arguments", [])}}
    elif "edit" not in action:
        action = connection.request("codeAction/resolve", action, timeout) or action
    edits: list[dict[str, Any]] = [action["edit"]] if action.get("edit") else []
    if isinstance(action.get("command"), dict):
        connection.applied_edits.clear()
        connection.accepting_edits = True
        try:
            connection.request("workspace/executeCommand", action["command"], timeout)
        finally:
            connection.accepting_edits = False
        edits.extend(connection.applied_edits)  # a command's edits come back as workspace/applyEdit
    files: dict[str, list[dict[str, Any]]] = {}
    for edit in edits:
        for path, text_edits in workspace_edit_files(edit).items():
            files.setdefault(path, []).extend(text_edits)
    changes = changes_of(workspace, files)
    write_changes(workspace, changes)
    return unified_diff(changes, workspace)


def shell_writer(workspace: Workspace) -> tuple[VerifiedWriter, UndoJournal]:
    """The verified writer of `lsp-hub query`'s writes (--apply, apply, undo), journaled as the shell's session."""
    from lsp_hub.agents.undo_journal import SHELL_SESSION, UndoJournal
    from lsp_hub.agents.verified_write import VerifiedWriter  # standard library only, like this package

    writer = VerifiedWriter(workspace, workspace.files, timeout=workspace.timeout, quote=as_is, display=display)
    journal = UndoJournal(workspace.root, SHELL_SESSION, int(writer.write_options().get("undoDepth", 20)))
    return writer, journal


def write_through_verified(workspace: Workspace, results: list[Any]) -> Callable[[list[Change]], None]:
    """`--apply`: the servers' edits land as one verified write (syntax, dependents, journal)."""
    from lsp_hub.agents.verified_write import FileWrite, WriteRefused

    def write(changes: list[Change]) -> None:
        writer, journal = shell_writer(workspace)
        try:
            results.append(writer.write([FileWrite(Path(change.path), _exactly(change.new), expected=change.old)
                                         for change in changes], journal=journal, format_files=False, fixes=False))
        except WriteRefused as refused:
            raise QueryError(f"lsp-hub query: {refused}") from None
        for change in changes:
            workspace.texts[change.path] = change.new

    return write


def _exactly(text: str) -> Callable[[str | None], str]:
    return lambda _old: text


def verified_write_action(workspace: Workspace, action: str, options: QueryOptions) -> Answer:
    """`apply --edits FILE.json` and `undo`, as the shell's session."""
    from lsp_hub.agents.undo_journal import NothingToUndo
    from lsp_hub.agents.verified_write import WriteRefused, edit_requests, undo_last

    writer, journal = shell_writer(workspace)
    try:
        if action == "undo":
            answer = undo_last(writer, journal)
        else:
            assert options.edits is not None, "QueryOptions.check requires --edits for apply"
            try:
                with open(options.edits, encoding="utf-8") as file:
                    edits = json.load(file)
            except (OSError, ValueError) as error:
                raise QueryError(f"lsp-hub query apply: cannot read --edits {options.edits}: {error}") from None
            edits = edits.get("edits") if isinstance(edits, dict) else edits

            def resolve(name: str, _existing: bool) -> Path:
                # A relative path starts where the query's own file names do (--root when given).
                absolute = name if os.path.isabs(name) else os.path.join(workspace.anchor or os.getcwd(), name)
                try:
                    path, _info = workspace.files.stat(os.path.abspath(absolute))
                except FileRefused as refusal:
                    raise WriteRefused(str(refusal)) from None
                return path

            answer = writer.write(edit_requests(edits, resolve, display), force=options.force, journal=journal)
    except NothingToUndo as nothing:
        raise QueryError(f"lsp-hub query undo: {nothing}", EXIT_EMPTY) from None
    except WriteRefused as refused:
        raise QueryError(f"lsp-hub query {action}: {refused}") from None
    return Answer(answer.data, answer.text)
