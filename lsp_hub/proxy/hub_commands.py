"""The hub's own commands (`lspHub.*` through `workspace/executeCommand`): thin adapters, arguments -> the
workspace's or a library's answer -> result, in one table (`HUB_COMMANDS`). A new command is one entry; the
extensions add theirs (`SessionExtension.commands`). Arguments are one JSON object; a bad one is refused in one
sentence (INVALID_PARAMS).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_hub import __version__
from lsp_hub.proxy.backends import State
from lsp_hub.proxy.diagnostics_wait import complete_diagnostics
from lsp_hub.transport.jsonrpc import INVALID_PARAMS, ResponseFailure

if TYPE_CHECKING:
    from lsp_hub.proxy.session import Session

HubCommand = Callable[["Session", list[Any]], Any]


def status(session: Session, arguments: list[Any]) -> dict[str, Any]:
    """lspHub.status: the workspace's servers, this session's documents and folders, the hub, the configuration's
    problems, whether each folder is trusted, and what the extensions add (the index)."""
    result: dict[str, Any] = {
        "servers": session.workspace.server_statuses(),
        "documents": len(session.documents),
        "workspaceFolders": session.folders,
        "hub": {"version": __version__, "pid": os.getpid()},
        "configProblems": session.config_problems,
        # Whether each folder's own `.lsp-hub.toml` may choose programs (`lsp-hub trust`): servers start either way,
        # those of the user's configuration and the built-in defaults, which an untrusted project may only re-order,
        # disable or configure.
        "trust": [{"root": folder, "trusted": session.workspace.is_trusted(folder)} for folder in session.folders],
    }
    for extension in session.extensions:
        result.update(extension.status(session))
    return result


def unsaved_elsewhere(session: Session, arguments: list[Any]) -> list[dict[str, str]]:
    """lspHub.unsavedElsewhere {uris}: [{uri, client}] for each of the files another session of this workspace
    has unsaved changes in (changed since opened or saved, and unlike the disk)."""
    args = arguments[0] if arguments and isinstance(arguments[0], dict) else {}
    uris = args.get("uris")
    if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
        raise ResponseFailure(INVALID_PARAMS, "lspHub.unsavedElsewhere needs {uris: [string]}")
    return session.workspace.unsaved_elsewhere(session, uris)


async def restart_server(session: Session, arguments: list[Any]) -> dict[str, Any]:
    """lspHub.restartServer {name, root?}: stop the matching servers and start them again (a failed one too)."""
    args = arguments[0] if arguments and isinstance(arguments[0], dict) else {}
    name, root = args.get("name"), args.get("root")
    if not isinstance(name, str):
        raise ResponseFailure(INVALID_PARAMS, "lspHub.restartServer needs {name: string, root?: string}")
    matching = [b for b in session.workspace.pool if b.name == name and (root is None or b.root == root)]
    if not matching:
        raise ResponseFailure(INVALID_PARAMS, f"no server {name!r} at {root or 'any root'}")
    for backend in matching:
        await backend.restart()
    return {"restarted": [{"name": b.name, "root": b.root, "state": b.state.value} for b in matching]}


def languages(session: Session, arguments: list[Any]) -> dict[str, Any]:
    """lspHub.languages: each configured language, its extensions, whether verified writes format it
    (`formatOnWrite`) and apply the servers' preferred fixes (`autoCodeActions`), and its servers in precedence
    order, each `running` (or another backend state) if it runs at some root, else `disabled`, `missing` (no
    binary found) or `not started`, with the binary it would run and, once it runs, whether it formats
    documents (`formats`) and ranges of them (`formatsRanges`). `writes`: the [hub] options of verified
    writes."""
    from lsp_hub.config.resolve import resolve_command

    root = Path(session.folders[0]) if session.folders else Path.cwd()
    languages = []
    for language in session.workspace.config.languages.values():
        servers = []
        for name in language.servers:
            spec = session.workspace.config.servers.get(name)
            backends = [backend for backend in session.workspace.pool if backend.name == name]
            binary = None
            if spec is not None and not spec.disabled:
                binary = resolve_command(spec, root, trusted=session.workspace.is_trusted(str(root))).path
            state = ("disabled" if spec is None or spec.disabled else backends[0].state.value if backends
                     else "missing" if binary is None else "not started")
            running = [backend for backend in backends if backend.state == State.RUNNING]
            # Whether it formats documents, and ranges of them: known once it runs (its capabilities), else null.
            formats, formats_ranges = ((spec is not None and spec.allows(method)
                                        and any(backend.supports(method) for backend in running)
                                        ) if running else None
                                       for method in ("textDocument/formatting", "textDocument/rangeFormatting"))
            servers.append({"name": name, "state": state, "binary": binary, "formats": formats,
                            "formatsRanges": formats_ranges})
        format_on_write = language.format_on_write
        auto_code_actions = language.auto_code_actions
        languages.append({"language": language.name, "extensions": list(language.extensions),
                          "filenames": list(language.filenames), "servers": servers,
                          "formatOnWrite": session.workspace.config.hub.format_on_write if format_on_write is None
                          else format_on_write,
                          "autoCodeActions": session.workspace.config.hub.auto_code_actions if auto_code_actions is None
                          else auto_code_actions})
    hub = session.workspace.config.hub
    return {"languages": languages,
            "writes": {"dependentsLimit": hub.dependents_limit, "dependentsTimeoutMs": hub.dependents_timeout_ms,
                       "undoDepth": hub.undo_depth, "autoCodeActions": hub.auto_code_actions}}


HUB_COMMANDS: dict[str, HubCommand] = {
    "lspHub.status": status,
    "lspHub.restartServer": restart_server,
    "lspHub.diagnostics": complete_diagnostics,
    "lspHub.languages": languages,
    "lspHub.unsavedElsewhere": unsaved_elsewhere,
}
