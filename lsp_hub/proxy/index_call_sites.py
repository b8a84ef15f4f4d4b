"""What the servers say about a definition's direct callers, to confirm and complete the index's
(`lspHub.callers`): call hierarchy and references that are call sites, where a running server offers them. Servers
are asked all at once within a time budget; none is started for this."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.documents import uri_to_path
from lsp_hub.proxy.runners import ask_backend

if TYPE_CHECKING:
    from lsp_hub.proxy.backends import Backend
    from lsp_hub.proxy.workspace import Workspace

logger = logging.getLogger(__name__)

PREPARE_CALL_HIERARCHY = "textDocument/prepareCallHierarchy"
INCOMING_CALLS = "callHierarchy/incomingCalls"
REFERENCES = "textDocument/references"
MAX_DEFINITIONS_ASKED = 4  # a name with more definitions is a question for the index; servers get the first ones
MAX_ITEMS_FOLLOWED = 2  # call hierarchy items of one position whose incoming calls are asked


@dataclass
class ServerCallSites:
    """What the servers said about the direct callers: their call sites (`{location, caller}`, caller as the
    server names it) and, per server asked, `{name, method, complete}` (complete: it answered in time)."""

    sites: list[dict[str, Any]] = field(default_factory=list)
    servers: list[dict[str, Any]] = field(default_factory=list)


def _confirming_asks(workspace: Workspace, uri: str) -> list[tuple[Backend, str]]:
    """The running server that can list a definition's callers, and how: the first in precedence order that
    offers call hierarchy or references, with both when it offers both. Each misses what the other finds:
    typescript-language-server's call hierarchy lists no call of a class field holding a function (`c.text()`),
    and references miss calls written without the name (`obj[name]()`)."""
    from lsp_hub.proxy.backends import State

    for method in (PREPARE_CALL_HIERARCHY, REFERENCES):
        for backend in workspace.backends_for_uri(uri, method):
            if (
                backend.state == State.RUNNING
                and backend.supports(method)
                and (method != PREPARE_CALL_HIERARCHY or backend.supports(INCOMING_CALLS))
            ):
                if method == REFERENCES:
                    return [(backend, REFERENCES)]
                with_references = backend.supports(REFERENCES)
                return [(backend, INCOMING_CALLS)] + ([(backend, REFERENCES)] if with_references else [])
    return []


async def server_call_sites(workspace: Workspace, definitions: list[dict[str, Any]], timeout: float) -> ServerCallSites:
    """Ask the running servers of the definitions' files for their direct call sites, all at once, for at most
    `timeout` seconds: a server still busy then is cancelled and reported incomplete (its sites are missing,
    the index's stand). Servers that were never started are not started for this."""
    asks: list[tuple[Backend, str, asyncio.Task[list[dict[str, Any]]]]] = []
    for definition in definitions[:MAX_DEFINITIONS_ASKED]:
        for backend, method in _confirming_asks(workspace, definition["uri"]):
            asks.append((backend, method, asyncio.ensure_future(_call_sites(workspace, backend, method, definition))))
    answer = ServerCallSites()
    if not asks:
        return answer
    try:
        _done, late = await asyncio.wait([task for _, _, task in asks], timeout=timeout)
    finally:
        for _, _, task in asks:
            task.cancel()  # late ones (their requests are cancelled at the server), or all when we are cancelled
    complete_by_server: dict[tuple[str, str], bool] = {}
    for backend, method, task in asks:
        failure = None if task in late or task.cancelled() else task.exception()
        complete = task not in late and not task.cancelled() and failure is None
        if complete:
            answer.sites.extend(task.result())
        elif failure is not None:
            logger.info("%s could not list callers: %s", backend.name, failure)
        key = (backend.name, method)
        complete_by_server[key] = complete_by_server.get(key, True) and complete
    answer.servers = [
        {"name": name, "method": method, "complete": complete}
        for (name, method), complete in complete_by_server.items()
    ]
    return answer


async def _call_sites(
    workspace: Workspace, backend: Backend, method: str, definition: dict[str, Any]
) -> list[dict[str, Any]]:
    """One server's direct call sites of the definition at `definition` (a Location of its name)."""
    where = {"textDocument": {"uri": definition["uri"]}, "position": definition["range"]["start"]}
    if method == REFERENCES:
        found = await ask_backend(backend, REFERENCES, {**where, "context": {"includeDeclaration": False}})
        locations = [location for location in found or [] if isinstance(location, dict) and "uri" in location]
        calls = await asyncio.to_thread(_calls_among, workspace, locations)
        return [{"location": location, "caller": None} for location in calls]
    sites: list[dict[str, Any]] = []
    items = await ask_backend(backend, PREPARE_CALL_HIERARCHY, where) or []
    for item in items[:MAX_ITEMS_FOLLOWED]:
        for call in await ask_backend(backend, INCOMING_CALLS, {"item": item}) or []:
            source = call.get("from") or {}
            for called_at in call.get("fromRanges") or []:
                sites.append({"location": {"uri": source.get("uri"), "range": called_at}, "caller": source.get("name")})
    return [site for site in sites if isinstance(site["location"]["uri"], str)]


def _calls_among(workspace: Workspace, locations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The references that are call sites (the name is followed by `(`), read from the text the servers see, or
    the file on disk."""
    from lsp_hub.index.callers import opens_a_call

    lines_of: dict[str, list[str]] = {}
    calls = []
    for location in locations:
        uri = location["uri"]
        if uri not in lines_of:
            document = workspace.document(uri)
            text = document.text if document is not None else read_quietly(uri_to_path(uri))
            lines_of[uri] = text.splitlines()
        lines = lines_of[uri]
        end = location["range"]["end"]
        if end["line"] < len(lines) and opens_a_call(lines[end["line"]], end["character"]):
            calls.append(location)
    return calls


def read_quietly(path: str | None) -> str:
    if path is None:
        return ""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError:
        return ""
