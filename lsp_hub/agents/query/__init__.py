"""`lsp-hub query`: one question to the hub from a shell, for agents and scripts; and the typed API that `lsp-hub
mcp`'s tools call (`QueryOptions` -> `run_action` -> `Answer`).

    lsp-hub query ACTION [FILE:LINE:COL | --symbol NAME] [args] [--json] [--no-daemon | --socket PATH]
                  [--root DIR] [--timeout S] [--limit N]

A client of the hub like any editor, and a light one: the standard library only (no pygls, lsprotocol, networkx,
tree-sitter), so it starts fast. Of lsp-hub it imports the transport-level client (`client_framing`, and
`daemon_client` to find or start the daemon) and the agent-side modules beside it (`confined_files`,
`write_lock`, and, when it writes, `verified_write`, `undo_journal`, `format_style`); never the proxy, session,
workspace or index (pyproject's import contracts). The hub it talks to is, in order: `--socket PATH` (or
$LSP_HUB_SOCKET), else `--no-daemon` (a hub of its own, a child process over pipes, for this one query), else the
user's daemon, started when absent.

Rooms: `options` (QueryOptions), `connection` (HubConnection: LSP to the hub), `positions` (URIs, columns,
FILE:LINE:COL), `documents` (Workspace: root, texts, open documents, targets), `edits` (TextEdits, diffs,
writes), `rendering` (Answer: JSON and text, caps), `hub_requests` (lspHub.* commands, why an answer is empty),
`actions` (run_action and the point questions), `edit_actions` (rename, code actions, apply, undo),
`diagnostics`, `index_actions` (repomap, relevant, callers, syntax), `cli` (query_main).

Positions are 1-based lines and 1-based columns in characters here, 0-based UTF-16 in LSP; both ways are converted
with the file's text. Exit codes (EXIT_CODES, shown by `query --help`): 0 an answer, 1 an empty answer, 2 bad input
or an ambiguous symbol, 3 the hub or a server failed; `diagnostics` follows the linters: 0 checked and clean, 1
issues, 2 not checked by any server.
"""

# `lsp-hub query` imports this package before its one action: each name is imported from its room on first use, so
# a query loads only the rooms its action needs (the edit and diagnostics rooms stay out of a `query outline`).

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lsp_hub.agents.query.actions import run_action
    from lsp_hub.agents.query.cli import EXIT_CODES, options_from, query_main
    from lsp_hub.agents.query.connection import (
        CLIENT_CAPABILITIES,
        NOT_ANSWERED_NOTICE,
        HubConnection,
        connect_default,
        connect_socket,
        spawn_hub,
    )
    from lsp_hub.agents.query.diagnostics import files_under
    from lsp_hub.agents.query.documents import (
        PROJECT_MARKERS,
        REPOSITORY_MARKERS,
        Target,
        Workspace,
        find_root,
        resolve_target,
    )
    from lsp_hub.agents.query.edits import (
        Change,
        apply_text_edits,
        atomic_write,
        changes_of,
        files_json,
        unified_diff,
        workspace_edit_files,
        write_changes,
    )
    from lsp_hub.agents.query.errors import (
        EXIT_ANSWER,
        EXIT_EMPTY,
        EXIT_FAILED,
        EXIT_USAGE,
        HubFailed,
        HubLost,
        HubTimeout,
        QueryError,
    )
    from lsp_hub.agents.query.hub_requests import (
        EMPTY_REASONS,
        hub_command,
        hub_wait_ms,
        language_entry,
        languages_of,
        why_empty,
    )
    from lsp_hub.agents.query.options import (
        ACTIONS,
        DEFAULT_LIMIT,
        DEFAULT_TIMEOUT_SECONDS,
        LOCATION_ACTIONS,
        TARGET_ACTIONS,
        QueryOptions,
    )
    from lsp_hub.agents.query.positions import (
        Location,
        character_column,
        location,
        parse_location,
        path_uri,
        uri_path,
        utf16_column,
    )
    from lsp_hub.agents.query.rendering import (
        Answer,
        DiagnosticsSummary,
        Quote,
        as_is,
        cap_items,
        coverage_notes,
        diagnostics_answer_text,
        diagnostics_json,
        diagnostics_text,
        display,
        locations_json,
        locations_text,
        not_checked_phrase,
        uncovered_note,
    )

_HOMES = {  # name -> the module that defines it
    "run_action": "actions",
    "EXIT_CODES": "cli",
    "options_from": "cli",
    "query_main": "cli",
    "CLIENT_CAPABILITIES": "connection",
    "NOT_ANSWERED_NOTICE": "connection",
    "HubConnection": "connection",
    "connect_default": "connection",
    "connect_socket": "connection",
    "spawn_hub": "connection",
    "files_under": "diagnostics",
    "PROJECT_MARKERS": "documents",
    "REPOSITORY_MARKERS": "documents",
    "Target": "documents",
    "Workspace": "documents",
    "find_root": "documents",
    "resolve_target": "documents",
    "Change": "edits",
    "apply_text_edits": "edits",
    "atomic_write": "edits",
    "changes_of": "edits",
    "files_json": "edits",
    "unified_diff": "edits",
    "workspace_edit_files": "edits",
    "write_changes": "edits",
    "EXIT_ANSWER": "errors",
    "EXIT_EMPTY": "errors",
    "EXIT_FAILED": "errors",
    "EXIT_USAGE": "errors",
    "HubFailed": "errors",
    "HubLost": "errors",
    "HubTimeout": "errors",
    "QueryError": "errors",
    "EMPTY_REASONS": "hub_requests",
    "hub_command": "hub_requests",
    "hub_wait_ms": "hub_requests",
    "language_entry": "hub_requests",
    "languages_of": "hub_requests",
    "why_empty": "hub_requests",
    "ACTIONS": "options",
    "DEFAULT_LIMIT": "options",
    "DEFAULT_TIMEOUT_SECONDS": "options",
    "LOCATION_ACTIONS": "options",
    "TARGET_ACTIONS": "options",
    "QueryOptions": "options",
    "Location": "positions",
    "character_column": "positions",
    "location": "positions",
    "parse_location": "positions",
    "path_uri": "positions",
    "uri_path": "positions",
    "utf16_column": "positions",
    "Answer": "rendering",
    "DiagnosticsSummary": "rendering",
    "Quote": "rendering",
    "as_is": "rendering",
    "cap_items": "rendering",
    "coverage_notes": "rendering",
    "diagnostics_answer_text": "rendering",
    "diagnostics_json": "rendering",
    "diagnostics_text": "rendering",
    "display": "rendering",
    "locations_json": "rendering",
    "locations_text": "rendering",
    "not_checked_phrase": "rendering",
    "uncovered_note": "rendering",
}

__all__ = [
    "ACTIONS",
    "CLIENT_CAPABILITIES",
    "DEFAULT_LIMIT",
    "DEFAULT_TIMEOUT_SECONDS",
    "EMPTY_REASONS",
    "EXIT_ANSWER",
    "EXIT_CODES",
    "EXIT_EMPTY",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "LOCATION_ACTIONS",
    "NOT_ANSWERED_NOTICE",
    "PROJECT_MARKERS",
    "REPOSITORY_MARKERS",
    "TARGET_ACTIONS",
    "Answer",
    "Change",
    "DiagnosticsSummary",
    "HubConnection",
    "HubFailed",
    "HubLost",
    "HubTimeout",
    "Location",
    "QueryError",
    "QueryOptions",
    "Quote",
    "Target",
    "Workspace",
    "apply_text_edits",
    "as_is",
    "atomic_write",
    "cap_items",
    "changes_of",
    "character_column",
    "connect_default",
    "connect_socket",
    "coverage_notes",
    "diagnostics_answer_text",
    "diagnostics_json",
    "diagnostics_text",
    "display",
    "files_json",
    "files_under",
    "find_root",
    "hub_command",
    "hub_wait_ms",
    "language_entry",
    "languages_of",
    "location",
    "locations_json",
    "locations_text",
    "not_checked_phrase",
    "options_from",
    "parse_location",
    "path_uri",
    "query_main",
    "resolve_target",
    "run_action",
    "spawn_hub",
    "uncovered_note",
    "unified_diff",
    "uri_path",
    "utf16_column",
    "why_empty",
    "workspace_edit_files",
    "write_changes",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
