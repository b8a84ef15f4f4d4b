"""The hub's own answers a query leans on: `lspHub.*` commands (`hub_command`), the configured languages, and why
a question about a file got no answer (`why_empty`: no server, missing, failed, starting, busy, nothing, or a line
another client's unsaved text does not share)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsp_hub.agents.query.documents import Workspace
from lsp_hub.agents.query.errors import QueryError
from lsp_hub.agents.query.rendering import Answer, stand_in_note
from lsp_hub.platform.paths import is_within


def hub_wait_ms(timeout: float) -> int:
    """How long the hub may wait (for diagnostics, say) within a request of `timeout` seconds: it must answer, with
    what is still pending, before this side gives up on the request."""
    return int(max(0.2, timeout - min(1.0, timeout / 4)) * 1000)


def hub_command(workspace: Workspace, command: str, arguments: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> Any:
    """One of the hub's own `lspHub.*` commands; `timeout` defaults to the query's."""
    return workspace.connection.request("workspace/executeCommand", {
        "command": command, "arguments": [arguments] if arguments is not None else []},
        workspace.timeout if timeout is None else timeout)


def languages_of(workspace: Workspace) -> list[dict[str, Any]]:
    """The hub's configured languages (`lspHub.languages`)."""
    return list((hub_command(workspace, "lspHub.languages") or {}).get("languages", []))


def language_entry(languages: list[dict[str, Any]], path: Path) -> dict[str, Any] | None:
    """The language (an entry of `lspHub.languages`) of a file, by its name or extension."""
    suffix = path.suffix[1:]
    return next((entry for entry in languages
                 if path.name in entry.get("filenames", []) or suffix in entry.get("extensions", [])), None)


def check_served(workspace: Workspace, path: Path) -> None:
    """A file of a language no configured server serves gets one clear line, not an empty answer."""
    if language_entry(languages_of(workspace), path) is None:
        raise QueryError(f"lsp-hub query: no language server serves {path.name} (no language has the extension "
                         f"{path.suffix or '(none)'}; see `lsp-hub query languages`)")


EMPTY_REASONS = ("no_server", "missing", "disabled", "failed", "starting", "busy", "nothing", "unsaved_elsewhere")


def why_empty(workspace: Workspace, path: Path) -> tuple[str, str]:
    """Why a question about `path` got no answer, as (a word of EMPTY_REASONS, a sentence): no server for the
    language, its servers missing, failed or starting, busy (work in progress, requests waiting), or a server
    that answered with nothing."""
    return _why_empty(path, *_language_and_servers(workspace, path))


def _language_and_servers(workspace: Workspace, path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """`path`'s language (`lspHub.languages`) and, when it has servers, the servers' statuses (`lspHub.status`)."""
    entry = language_entry(languages_of(workspace), path)
    if entry is None or not entry.get("servers"):
        return entry, []
    return entry, (hub_command(workspace, "lspHub.status") or {}).get("servers", [])


def _why_empty(path: Path, entry: dict[str, Any] | None, server_statuses: list[dict[str, Any]]) -> tuple[str, str]:
    if entry is None:
        return "no_server", f"no language server serves {path.name}"
    servers = entry.get("servers", [])
    if not servers:
        return "no_server", f"no language server is configured for {entry.get('language', path.suffix)}"
    states = {server["name"]: server.get("state", "") for server in servers}
    statuses, here = _statuses_for(path, states, server_statuses)
    # The server at this file's root says more than the language's summary, where one that cannot start here (its
    # binary missing, or refused in an untrusted workspace) reads "not started".
    states.update({name: statuses[name]["state"] for name in here if statuses[name].get("state")})
    busy = []
    for name, server in statuses.items():
        work, waiting = server.get("workInProgress") or [], server.get("requestsInFlight") or 0
        if work or waiting:
            parts = ([", ".join(work[:2])] if work else []) + ([f"{waiting} request(s) waiting"] if waiting else [])
            busy.append(f"{name} ({'; '.join(parts)})")
    if busy:
        return "busy", f"no answer yet: {', '.join(busy)} is busy; ask again shortly"
    running = [name for name, state in states.items() if state == "running"]
    if running:
        return "nothing", f"{', '.join(running)} found nothing here"
    for state, word, sentence in (("starting", "starting", "is still starting"), ("failed", "failed", "has failed"),
                                  ("crashed", "failed", "crashed"), ("missing", "missing", "is not installed"),
                                  ("disabled", "disabled", "is disabled")):
        named = [name for name, server_state in states.items() if server_state == state]
        if named:
            error = statuses.get(named[0], {}).get("error")
            if error and state == "missing":
                sentence = "could not be started"  # the error says why: not found, or refused in this workspace
            return word, f"no server answered: {', '.join(named)} {sentence}" + (f" ({error})" if error else "")
    return "nothing", f"no server answered for {path.name} ({', '.join(f'{n}: {s}' for n, s in states.items())})"


def _statuses_for(
    path: Path, names: dict[str, str], servers: list[dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Per server name, its status at the root nearest above `path` (else any of its statuses), and the names
    whose status is of a root holding `path`."""
    chosen: dict[str, tuple[int, dict[str, Any]]] = {}
    for server in servers:
        name = server.get("name")
        if name not in names:
            continue
        root = str(server.get("root") or "")
        depth = len(root) if root and is_within(str(path), root) else -1
        if name not in chosen or depth > chosen[name][0]:
            chosen[name] = (depth, server)
    statuses = {name: server for name, (_depth, server) in chosen.items()}
    return statuses, {name for name, (depth, _server) in chosen.items() if depth >= 0}


def with_empty_reason(answer: Answer, workspace: Workspace, path: Path) -> Answer:
    not_answered = workspace.connection.not_answered
    if not_answered:  # on a line another client's unsaved text does not share: never an answer about another line
        answer.data["complete"] = False
        answer.data["not_answered"] = list(not_answered)
        if answer.empty:
            answer.data["empty_reason"], answer.data["empty_detail"] = "unsaved_elsewhere", not_answered[0]
        else:
            answer.text += "\n" + "\n".join(f"(incomplete: {reason})" for reason in not_answered)
        return answer
    if answer.empty:
        answer.data["empty_reason"], answer.data["empty_detail"] = why_empty(workspace, path)
    return answer


def with_stand_in_origin(answer: Answer, workspace: Workspace, path: Path, method: str) -> Answer:
    """A non-empty answer that the hub's index gave in place of a server (`textDocument/definition`,
    `documentSymbol`, call hierarchy when no server of the language answers `method`) says so: incomplete, with why
    no server answered (`noServer`), and a line after the text."""
    if answer.empty or answer.data.get("noServer"):
        return answer
    entry, server_statuses = _language_and_servers(workspace, path)
    reason, detail = _why_empty(path, entry, server_statuses)
    if reason == "nothing":  # some server of the language runs here: does any answer this question?
        detail = _none_answers(path, entry or {}, server_statuses, method) or ""
    elif reason not in ("no_server", "missing", "failed", "disabled", "starting"):
        detail = ""
    if detail:
        answer.data["complete"], answer.data["noServer"] = False, detail
        answer.text += "\n" + stand_in_note(detail)
    return answer


def _none_answers(path: Path, entry: dict[str, Any], server_statuses: list[dict[str, Any]], method: str) -> str | None:
    """Why no running server of `path`'s language answered `method` (ruff, with basedpyright failed, has no
    definitions), by the servers' `answers` in lspHub.status; None when one does, or the hub does not say."""
    names = {server["name"]: server.get("state", "") for server in entry.get("servers", [])}
    statuses, here = _statuses_for(path, names, server_statuses)
    running = [statuses[name] for name in sorted(here) if statuses[name].get("state") == "running"]
    if not running or any(not isinstance(server.get("answers"), list) or method in server["answers"]
                          for server in running):
        return None
    others = [f"{name} {statuses[name]['state'] if name in statuses else names[name]}" for name in sorted(names)
              if name not in {server["name"] for server in running}]
    return (f"{', '.join(server['name'] for server in running)} {'does' if len(running) == 1 else 'do'} not answer "
            f"{method}" + (f" ({', '.join(others)})" if others else ""))


def covering_references(workspace: Workspace, where: dict[str, Any]) -> dict[str, Any]:
    """`lspHub.references`: the servers' references and the index's uses in the files they listed nothing in."""
    return hub_command(workspace, "lspHub.references", {
        "uri": where["textDocument"]["uri"], "position": where["position"], "includeDeclaration": True}) or {}
