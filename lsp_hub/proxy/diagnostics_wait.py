"""`lspHub.diagnostics`: a document's diagnostics once every server that serves it has reported on its current
content, with who checked it and who could not and why. Never a fixed sleep: it waits on the workspace's
`ReportTracker`, and asks typescript-language-server's tsserver directly (it reports only what changed).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.backends import Backend, State
from lsp_hub.proxy.diagnostics import TSSERVER_DIAGNOSTIC_REQUESTS, tsserver_diagnostics
from lsp_hub.proxy.documents import path_to_uri, uri_to_path
from lsp_hub.proxy.runners import gather
from lsp_hub.proxy.workspace import client_name, under
from lsp_hub.transport.jsonrpc import INVALID_PARAMS, ResponseFailure

if TYPE_CHECKING:
    from lsp_hub.proxy.session import Session

MAX_DIAGNOSTICS_URIS = 200  # documents one lspHub.diagnostics {uris} may wait for together
logger = logging.getLogger(__name__)


async def complete_diagnostics(session: Session, arguments: list[Any]) -> dict[str, Any]:
    """lspHub.diagnostics {uri, text?, timeoutMs?}: the document's diagnostics once every server that serves it
    has reported on its current content (with `text`: that content, applied first). Never a fixed sleep.
    {uris: [...], timeoutMs?}: the same for several documents, waited for together: {reports: [one per uri,
    with `error` instead for a file that cannot be read], complete}."""
    args = arguments[0] if arguments and isinstance(arguments[0], dict) else {}
    uris = args.get("uris")
    if uris is None:
        return await _complete_diagnostics_of(session, args)
    if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris) or \
            len(uris) > MAX_DIAGNOSTICS_URIS or "text" in args:
        raise ResponseFailure(INVALID_PARAMS, "lspHub.diagnostics {uris} needs a list of at most "
                                              f"{MAX_DIAGNOSTICS_URIS} strings (and no text)")

    async def one(uri: str) -> dict[str, Any]:
        try:
            return await _complete_diagnostics_of(session, {**args, "uri": uri})
        except ResponseFailure as failure:
            return {"uri": uri, "diagnostics": [], "complete": False, "pending": [], "checkedBy": [],
                    "notChecked": [], "error": failure.message}

    reports = list(await asyncio.gather(*(one(uri) for uri in uris)))
    return {"reports": reports, "complete": all(report["complete"] for report in reports)}


async def _complete_diagnostics_of(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    uri, text, timeout_ms = args.get("uri"), args.get("text"), args.get("timeoutMs", 5000)
    timeout_ok = isinstance(timeout_ms, int | float) and not isinstance(timeout_ms, bool) and \
        0 <= timeout_ms <= 600_000
    if not isinstance(uri, str) or (text is not None and not isinstance(text, str)) or not timeout_ok:
        raise ResponseFailure(INVALID_PARAMS, "lspHub.diagnostics needs {uri: string, text?: string, "
                                              "timeoutMs?: number of milliseconds up to 600000}")
    if "://" not in uri:  # a path, absolute or relative to the first workspace folder
        uri = path_to_uri(os.path.join(session.folders[0], uri) if session.folders else os.path.abspath(uri))
    document = session.documents.get(uri)
    if text is not None and document is not None:
        session.change_document({"textDocument": {"uri": uri, "version": document.version + 1},
                          "contentChanges": [{"text": text}]})
    elif document is None:
        session.open_document({"textDocument": {"uri": uri, "languageId": "", "version": 1,
                                         "text": text if text is not None else _read_for_diagnostics(session, uri)}})
    document = session.documents.get(uri)
    assert document is not None
    version = document.version
    sent = session.workspace.shared_version(uri)  # what the backends have: the leading session's text
    on = sent if sent is not None else version
    coverage = session.workspace.diagnostics_coverage(uri)
    servers = coverage.backends
    # A server whose diagnostics of this file depend on other files must report after the last change it was
    # told of elsewhere; a per-file server (a linter) only on this file's content.
    reports = session.workspace.reports
    since = {b.uid: reports.last_change_besides(b.uid, uri) if session.workspace.diagnostics_cross_files(b)
             else 0 for b in servers}

    def reported(backend: Backend) -> bool:
        return session.workspace.reports.has_reported_on(backend.uid, uri, on, after=since[backend.uid])

    unanswered: set[int] = set()  # servers whose verdict was asked for and not given: not waited for

    def waiting() -> list[Backend]:
        return [b for b in servers if b.state != State.FAILED and b.uid not in unanswered and not reported(b)]

    stale = waiting()
    asked = [_ask_tsserver(session, backend, uri, on, unanswered) for backend in stale
             if backend.spec.diagnostics_via_tsserver]
    for backend in stale:
        if since[backend.uid] and not backend.spec.diagnostics_via_tsserver:
            session.workspace.pull_now(backend, uri)  # its last pull was before that change (if it pulls)
    try:
        await session.workspace.reports.wait_until(lambda: not waiting(), timeout_ms / 1000)
    finally:
        for task in asked:
            task.cancel()
    checked_by: list[str] = []
    not_checked = list(coverage.cannot)
    pending: list[str] = []
    for backend in servers:
        if reported(backend) and backend.uid not in unanswered:
            checked_by.append(backend.name)
            continue
        pending.append(backend.name)
        if backend.state == State.FAILED:
            not_checked.append({"server": backend.name, "reason": "failed",
                                "detail": backend.failure or "failed while checking"})
        elif backend.uid in unanswered:
            not_checked.append({"server": backend.name, "reason": "failed",
                                "detail": "could not be asked for its diagnostics"})
        elif backend.state in (State.STARTING, State.STOPPED):
            not_checked.append({"server": backend.name, "reason": "starting", "detail": "still starting"})
        else:
            # Its verdict on this content may be stale only because another file changed since (a push
            # server that publishes only what changed): said so, since that is what to look at.
            stale_only = since[backend.uid] and session.workspace.reports.has_reported_on(backend.uid, uri, on)
            not_checked.append({"server": backend.name, "reason": "timeout", "detail": (
                "no report since another file changed" if stale_only else "no report") +
                f" within {timeout_ms / 1000:g} s"})
    checked_by = list(dict.fromkeys(checked_by))
    diagnostics, left_out = session.diagnostics_for_client(uri)
    # Which server said what (by the diagnostics' `source`): a verified write counts an issue as new only from a
    # server that checked the file both before and after it.
    labels = session.workspace.diagnostics.sources(uri)
    sources_of = {backend.name: sorted(labels[backend.uid]) for backend in servers if backend.uid in labels}
    answer = {"uri": uri, "version": version, "language": coverage.language,
              "diagnostics": diagnostics, "complete": not pending and bool(checked_by),
              "pending": pending, "checkedBy": checked_by, "notChecked": not_checked, "sourcesOf": sources_of}
    if left_out:
        leader = session.workspace.leader(uri)
        reason = ("on lines with unsaved changes in another client"
                  f" ({client_name(leader) if leader is not None else 'gone'})")
        answer["leftOut"] = [{"message": d.get("message"), "source": d.get("source"), "reason": reason}
                             for d in left_out]
    return answer


def _ask_tsserver(session: Session, backend: Backend, uri: str, version: int,
                  unanswered: set[int]) -> asyncio.Task[None]:
    """Ask typescript-language-server's tsserver for its diagnostics of `uri` as it is now (sent after the
    change, so about that content) and record them as its report on `version`. A server that cannot answer
    (an older one without `typescript.tsserverRequest`) goes into `unanswered` at once: named as pending, not
    waited for until the timeout."""
    asked_when = session.workspace.reports.now()  # its verdict is about the workspace as it is now
    pendings = [backend.request("workspace/executeCommand", {
        "command": "typescript.tsserverRequest", "arguments": [kind, {"file": uri}]})
        for kind in TSSERVER_DIAGNOSTIC_REQUESTS]

    async def run() -> None:
        diagnostics: list[dict[str, Any]] = []
        for _, result, error in await gather(pendings):
            if error is not None or not isinstance(result, dict) or result.get("success") is False:
                logger.info("%s: no diagnostics from tsserver for %s (%s)", backend.name, uri,
                            error or (result.get("message") if isinstance(result, dict) else result))
                unanswered.add(backend.uid)
                session.workspace.reports.wake()
                return
            diagnostics.extend(tsserver_diagnostics(result.get("body")))
        if session.workspace.shared_version(uri) == version:  # else a newer change is being waited for
            session.workspace.accept_asked_diagnostics(backend, uri, diagnostics, version, asked_when)

    return session.spawn(run())


def _read_for_diagnostics(session: Session, uri: str) -> str:
    """A file no client has open, read from disk: only inside the workspace folders, only UTF-8 text."""
    path = uri_to_path(uri)
    real = os.path.realpath(path) if path else None
    if real is None or not any(under(real, os.path.realpath(folder)) for folder in session.folders):
        raise ResponseFailure(INVALID_PARAMS, f"lspHub.diagnostics: {uri} is outside the workspace folders; "
                                              "send its text to check it")
    try:
        with open(real, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else "not UTF-8 text"
        raise ResponseFailure(INVALID_PARAMS, f"lspHub.diagnostics: cannot read {path}: {reason}") from None
