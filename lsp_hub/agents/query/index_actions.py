"""The index's questions: `repomap`, `relevant`, `callers` (the index's callers confirmed by the servers of the
definitions' files, opened and waited for first) and `syntax` (the language's own parser, through the hub)."""

from __future__ import annotations

from pathlib import Path
from time import monotonic
from typing import Any

from lsp_hub.agents.query.documents import Workspace, resolve_target
from lsp_hub.agents.query.errors import QueryError
from lsp_hub.agents.query.hub_requests import hub_command, hub_wait_ms, language_entry, languages_of
from lsp_hub.agents.query.options import QueryOptions
from lsp_hub.agents.query.positions import path_uri, uri_path
from lsp_hub.agents.query.rendering import Answer, capped, display

SERVER_CALLERS_SECONDS = 5.0  # at least this long for the servers that confirm `callers`
MIN_WAIT_MS = 200  # a file opened for `callers` is waited for this long at least, once the others took the rest


def open_for_servers(workspace: Workspace, arguments: dict[str, Any]) -> None:
    """Before `lspHub.callers`: open the definitions' files so that their servers run, and wait for each one's
    first report on the file, as project-wide questions do (basedpyright knows the project's other files only
    then). Files no server serves stay closed: the index answers for them alone."""
    if "symbol" in arguments:
        found = hub_command(workspace, "lspHub.callers", {**arguments, "servers": False}) or {}
        paths = [Path(uri_path(definition["uri"])) for definition in found.get("definitions", [])[:4]]
    else:
        paths = [Path(uri_path(arguments["uri"]))]
    languages = languages_of(workspace)
    opened = []
    for path in dict.fromkeys(paths):
        language = language_entry(languages, path) or {}
        served = any(server.get("state") not in ("missing", "disabled") for server in language.get("servers", []))
        if served and path.is_file():
            opened.append(workspace.open(path))
    # Every file opened before the first wait, and one wait's time for them all: their servers start together (four
    # TypeScript projects of vite's playgrounds, each its own root, took 23.6 s one after another; the most it could
    # have taken was four times the query's timeout).
    deadline = monotonic() + hub_wait_ms(workspace.timeout) / 1000
    for uri in opened:
        left_ms = max(MIN_WAIT_MS, int((deadline - monotonic()) * 1000))
        hub_command(workspace, "lspHub.diagnostics", {"uri": uri, "timeoutMs": left_ms})


def index_action(workspace: Workspace, action: str, options: QueryOptions) -> Answer:
    """repomap, relevant, callers, syntax."""
    files = [str(workspace.resolve(name)) for name in options.files]
    if action == "repomap":
        budget = options.budget if options.budget is not None else 1024
        result = hub_command(workspace, "lspHub.repoMap", {"focusFiles": files, "mentionedIdents": options.mention,
                                                        "tokenBudget": budget})
        return Answer(result, result.get("text", "").rstrip("\n"), not result.get("files"))
    if action == "relevant":
        if not options.description:
            raise QueryError("lsp-hub query relevant: give a DESCRIPTION (--description TEXT)")
        result = hub_command(workspace, "lspHub.relevantFiles", {"description": options.description,
                                                              "targets": files, "topN": options.top})
        lines = [f"{entry['score']:7.3f}  {entry['path']}  ({'; '.join(entry['reasons'])})"
                 for entry in result.get("files", [])]
        return Answer(result, "\n".join(lines), not lines)
    if action == "callers":
        if options.symbol is not None:
            arguments: dict[str, Any] = {"symbol": options.symbol}
        else:
            target = resolve_target(workspace, options.location, None)
            arguments = {"uri": path_uri(target.path), "position": target.position}
        if options.index_only:  # at once, whatever servers a monorepo's roots would start
            arguments["servers"] = False
        else:
            open_for_servers(workspace, arguments)
            # The servers get half the query's time: a cold server's first call hierarchy may take a while, and the
            # index's answer still comes back in time when it takes too long.
            arguments["timeoutMs"] = int(max(SERVER_CALLERS_SECONDS, workspace.timeout / 2) * 1000)
        result = hub_command(workspace, "lspHub.callers", {**arguments, "depth": options.depth or 1})
        lines = []
        for caller in result.get("callers", []):
            path = uri_path(caller["location"]["uri"])
            line, column = workspace.position_out(path, caller["location"]["range"]["start"])
            # Where a caller came from, only when the index and a server did not both find it.
            origin = f"  [{caller['origin']}]" if result.get("servers") and caller.get("origin") != "both" else ""
            lines.append(f"{'  ' * (caller['depth'] - 1)}{display(path)}:{line}:{column}  "
                         f"{caller.get('caller') or '(top level)'}{_defined_in(caller)}{origin}")
        late = [server["name"] for server in result.get("servers", []) if not server.get("complete")]
        notes = [f"(incomplete: no answer from {', '.join(late)} in time; the index's callers only)"] if late else []
        if not result.get("definitions"):
            where = f"unknown symbol {options.symbol!r}" if options.symbol is not None else "no function here"
            raise QueryError(f"lsp-hub query callers: {where} (no definition in the index of {workspace.root})")
        if not lines:  # an empty answer says why: who looked
            asked = list(dict.fromkeys(["the index"] + [server["name"] for server in result.get("servers", [])]))
            result["empty_reason"] = "nothing"
            result["empty_detail"] = f"no callers found by {', '.join(asked)}" + (f" {notes[0]}" if notes else "")
        text = "\n".join(capped(lines, options.limit) + notes)
        return Answer(result, text if lines else "", not lines)
    if len(files) != 1:
        raise QueryError("lsp-hub query syntax: give one FILE")
    result = hub_command(workspace, "lspHub.syntaxCheck", {"uri": path_uri(files[0])})
    lines = []
    for error in result.get("errors", []):
        line, column = workspace.position_out(files[0], error["range"]["start"])
        lines.append(f"{display(files[0])}:{line}:{column}: {error['message']}")
    text = "\n".join(lines) if lines else f"{display(files[0])}: " + ("ok" if result.get("checked") else
                                                                      f"not checked ({result.get('reason')})")
    if result.get("checked"):  # which parser judged, and why tree-sitter stood in for the language's own
        note = f"checked by {result.get('checker')}" + (f": {result['fallbackReason']}"
                                                         if result.get("fallbackReason") else "")
        text += f"\n({note})" if lines else f" ({note})"
    # As `lsp-hub syntax`: exit code 1 when there are syntax errors.
    return Answer(result, text, not result.get("ok", True))


def _defined_in(caller: dict[str, Any]) -> str:
    """` (in outer)` for a caller defined in another function's body (fastapi's `app` in `get_request_handler`)."""
    return f" (in {caller['callerIn']})" if caller.get("callerIn") else ""
