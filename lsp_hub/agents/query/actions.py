"""`run_action`: one `QueryOptions` answered through the hub, for `lsp-hub query` and `lsp-hub mcp` alike. Each
action is LSP requests plus `lspHub.*` commands; the point questions (definition ... outgoing-calls, symbols,
format, status, languages) are here, the others in their rooms (`edit_actions`, `diagnostics`, `index_actions`).
An empty point answer says why (`hub_requests.why_empty`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsp_hub.agents.query.documents import Workspace, resolve_target
from lsp_hub.agents.query.errors import QueryError
from lsp_hub.agents.query.hub_requests import (
    check_served,
    covering_references,
    hub_command,
    hub_wait_ms,
    why_empty,
    with_empty_reason,
    with_stand_in_origin,
)
from lsp_hub.agents.query.index_actions import index_action
from lsp_hub.agents.query.navigation_actions import NAVIGATION_ACTIONS, navigation_action, symbols_search
from lsp_hub.agents.query.options import LOCATION_ACTIONS, PROJECT_WIDE_ACTIONS, TARGET_ACTIONS, QueryOptions
from lsp_hub.agents.query.positions import uri_path
from lsp_hub.agents.query.rendering import (
    SYMBOL_KINDS,
    Answer,
    capped,
    display,
    flatten_symbols,
    hover_text,
    locations_json,
    locations_text,
    symbols_text,
    uncovered_note,
)


def run_action(options: QueryOptions, workspace: Workspace) -> Answer:
    """The answer to `options` (QueryError, one line, when it cannot be given). Its text holds `options.limit`
    items and says how many more there are; its JSON holds them all (`cap_items` holds it to the limit too)."""
    options.check()
    action, limit = options.action, options.limit
    connection, timeout = workspace.connection, workspace.timeout
    connection.not_answered.clear()  # only this action's
    if action in TARGET_ACTIONS:
        target = resolve_target(workspace, options.location, options.symbol)
        check_served(workspace, target.path)
        uri = workspace.open(target.path)
        where = {"textDocument": {"uri": uri}, "position": target.position}
        if action in PROJECT_WIDE_ACTIONS:
            # A server that just started answers from the open files only until it has found the project's
            # (basedpyright's first references are the file's own): its first report on the file says it has.
            hub_command(workspace, "lspHub.diagnostics", {"uri": uri, "timeoutMs": hub_wait_ms(timeout)})
        if action == "references":
            return with_empty_reason(_references(workspace, where, limit, target.path), workspace, target.path)
        if action in LOCATION_ACTIONS:
            params = where
            locations = locations_json(workspace, connection.request(LOCATION_ACTIONS[action], params, timeout))
            answer = Answer({"locations": locations, "complete": True}, locations_text(locations, limit), not locations)
            answer = with_stand_in_origin(answer, workspace, target.path, LOCATION_ACTIONS[action])
            return with_empty_reason(answer, workspace, target.path)
        if action == "hover":
            text = hover_text(connection.request("textDocument/hover", where, timeout))
            return with_empty_reason(Answer({"text": text, "complete": True}, text, not text), workspace, target.path)
        if action == "rename":
            from lsp_hub.agents.query.edit_actions import rename_action

            return rename_action(workspace, where, options)
        if action == "code-actions":
            from lsp_hub.agents.query.edit_actions import code_actions_action

            return code_actions_action(workspace, target, uri, options)
        calls = with_stand_in_origin(_calls(workspace, action, where, limit), workspace, target.path,
                                     "textDocument/prepareCallHierarchy")
        return with_empty_reason(calls, workspace, target.path)
    if action in NAVIGATION_ACTIONS:
        return navigation_action(workspace, options)
    if action == "symbols":
        if options.query is not None:
            return symbols_search(workspace, options)
        else:
            if len(options.files) != 1:
                raise QueryError("lsp-hub query symbols: give one FILE or --query Q")
            path = workspace.resolve(options.files[0])
            check_served(workspace, path)
            uri = workspace.open(path)
            result = connection.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}}, timeout)
            symbols = flatten_symbols(workspace, result, str(path))
            answer = Answer({"symbols": symbols}, symbols_text(symbols, limit), not symbols)
            answer = with_stand_in_origin(answer, workspace, path, "textDocument/documentSymbol")
            return with_empty_reason(answer, workspace, path)
        return Answer({"symbols": symbols}, symbols_text(symbols, limit), not symbols)
    if action == "diagnostics":
        from lsp_hub.agents.query.diagnostics import diagnostics_action

        return diagnostics_action(workspace, options)
    if action == "format":
        if len(options.files) != 1:
            raise QueryError("lsp-hub query format: give one FILE")
        path = workspace.resolve(options.files[0])
        check_served(workspace, path)
        uri = workspace.open(path)
        from lsp_hub.agents.format_style import project_style  # standard library only, like this package
        from lsp_hub.agents.query.edits import changes_of, unified_diff, write_changes

        style = project_style(path, workspace.root, workspace.text(path)).lsp_options()
        edits = (
            connection.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": style}, timeout)
            or []
        )
        changes = [change for change in changes_of(workspace, {str(path): edits}) if change.new != change.old]
        diff = unified_diff(changes, workspace)
        if options.apply and changes:
            write_changes(workspace, changes)
        return Answer(
            {"diff": diff, "applied": bool(options.apply and changes)}, diff or "already formatted", not changes
        )
    if action in ("apply", "undo"):
        from lsp_hub.agents.query.edit_actions import verified_write_action

        return verified_write_action(workspace, action, options)
    if action in ("repomap", "relevant", "callers", "syntax"):
        return index_action(workspace, action, options)
    if action == "status":
        status = hub_command(workspace, "lspHub.status")
        lines = [f"{server['name']}  {server['state']}  {server['root']}" for server in status.get("servers", [])]
        for folder in status.get("trust", []):
            lines.append(
                f"workspace {folder['root']}: trusted (its .lsp-hub.toml may choose programs)"
                if folder.get("trusted")
                else f"workspace {folder['root']}: not trusted (its .lsp-hub.toml may not choose programs; the servers"
                f" of your configuration and the built-in defaults start; `lsp-hub trust {folder['root']}` allows it)"
            )
        index = status.get("index") or {}
        lines.append(
            f"index: {index.get('state', 'none')}, {index.get('files', 0)} files; "
            f"{status.get('documents', 0)} open documents"
        )
        lines.extend(f"index error: {error}" for error in index.get("errors", []))
        return Answer(status, "\n".join(lines))
    assert action == "languages"
    languages = hub_command(workspace, "lspHub.languages")
    lines = [
        f"{entry['language']}: " + ", ".join(f"{server['name']} ({server['state']})" for server in entry["servers"])
        for entry in languages.get("languages", [])
    ]
    return Answer(languages, "\n".join(lines), not lines)


def _references(workspace: Workspace, where: dict[str, Any], limit: int, path: Path) -> Answer:
    result = covering_references(workspace, where)
    locations = locations_json(workspace, result.get("locations"))
    uncovered = [uri_path(uri) for uri in result.get("uncovered") or []]
    data: dict[str, Any] = {
        "locations": locations,
        "complete": bool(result.get("complete", True)),
        "uncovered": uncovered,
        "servers": result.get("servers") or [],
    }
    if locations and not data["servers"]:  # the index alone: say which server did not run, and why
        data["complete"] = False
        data["noServer"] = why_empty(workspace, path)[1]
    text = "\n".join(part for part in (locations_text(locations, limit), uncovered_note(data)) if part)
    return Answer(data, text, not locations)


def _calls(workspace: Workspace, action: str, where: dict[str, Any], limit: int) -> Answer:
    connection, timeout = workspace.connection, workspace.timeout
    items = connection.request("textDocument/prepareCallHierarchy", where, timeout) or []
    calls = []
    for item in items[:1]:
        method = "callHierarchy/incomingCalls" if action == "incoming-calls" else "callHierarchy/outgoingCalls"
        for call in connection.request(method, {"item": item}, timeout) or []:
            other = call.get("from") or call.get("to") or {}
            if action == "incoming-calls":  # where the call is: in the caller's file
                path, start = uri_path(other["uri"]), (call.get("fromRanges") or [other["selectionRange"]])[0]
            else:  # where the callee is defined
                path, start = uri_path(other["uri"]), other["selectionRange"]["start"]
                start = {"start": start}
            line, column = workspace.position_out(path, start["start"])
            calls.append(
                {
                    "name": other.get("name", ""),
                    "kind": SYMBOL_KINDS.get(other.get("kind", 0), "symbol"),
                    "path": path,
                    "line": line,
                    "column": column,
                }
            )
    lines = [
        f"{display(call['path'])}:{call['line']}:{call['column']}  {call['kind']} {call['name']}" for call in calls
    ]
    return Answer({"calls": calls}, "\n".join(capped(lines, limit)), not calls)
