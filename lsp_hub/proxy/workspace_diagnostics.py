"""A workspace's diagnostics (`workspace.Workspace`): what the servers push and what is pulled from them, per
document, into the diagnostic store, deduplicated by the servers' precedence where the language asks; pulls
scheduled after changes and on a server's refresh."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from lsp_hub.config.model import Config
from lsp_hub.proxy.backends import Backend, State
from lsp_hub.proxy.client_view import ClientView
from lsp_hub.proxy.diagnostics import DiagnosticStore, Part, ReportTracker
from lsp_hub.proxy.documents import Document, SharedDocument, uri_to_path
from lsp_hub.proxy.routing import Router
from lsp_hub.transport.jsonrpc import ResponseFailure, materialize

logger = logging.getLogger("lsp_hub.proxy.workspace")


class DiagnosticsPulling:
    """The diagnostics part of `Workspace`; the workspace sets these attributes."""

    config: Config
    router: Router
    sessions: list[ClientView]
    diagnostics: DiagnosticStore
    reports: ReportTracker
    _documents: dict[str, SharedDocument]
    _holders: dict[str, dict[ClientView, Document]]
    _pull_timers: dict[tuple[int, str], asyncio.TimerHandle]
    _pull_result_ids: dict[tuple[int, str], str]

    if TYPE_CHECKING:
        def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]: ...

    # ================================================================================================ diagnostics
    def _diagnostic_precedence(self, uri: str) -> Callable[[Part], int] | None:
        """For a document whose language dedupes diagnostics: a part's rank, from its server's precedence."""
        document = self._documents.get(uri)
        language = self.router.language(language_id=document.language_id if document else None,
                                        path=uri_to_path(uri) or uri)
        if language is None or not language.dedupe_diagnostics:
            return None
        order = {name: index for index, name in enumerate(language.servers)}
        return lambda part: order.get(part.label, len(order))  # the hub's own parts come last

    def _publish_diagnostics(self, uri: str, diagnostics: list[dict[str, Any]], version: int | None) -> None:
        """To every session that has the document open; one that nobody has open, to every session."""
        holders = self._holders.get(uri)
        for session in list(holders) if holders else list(self.sessions):
            if session.state != "closed":
                session.publish_diagnostics(uri, diagnostics)

    def accept_pushed_diagnostics(self, backend: Backend, params: dict[str, Any]) -> None:
        if not backend.spec.allows("diagnostics"):
            return
        uri = params.get("uri")
        diagnostics = params.get("diagnostics")
        if isinstance(uri, str) and isinstance(diagnostics, list):
            version = params.get("version")
            # An unversioned push may be a part (typescript-language-server: the syntax before the types) or about
            # older content: from a server whose verdict lspHub.diagnostics asks for, or one still loading its
            # project (a syntax-only view), it is shown but does not count as its report on the content.
            if isinstance(version, int) or not (backend.loading_project or backend.spec.diagnostics_via_tsserver):
                self.reports.reported(backend.uid, uri, version if isinstance(version, int) else None)
            self.diagnostics.put(uri, Part(backend.uid, "push", backend.name), diagnostics, params.get("version"))

    def accept_asked_diagnostics(self, backend: Backend, uri: str, diagnostics: list[dict[str, Any]],
                                 version: int, asked_when: int) -> None:
        """A server's verdict on `version` of a document, asked for by the hub (`diagnostics_via_tsserver`) at
        `asked_when` (on the report tracker's clock): it replaces the server's pushed diagnostics and counts as its
        report on that version, made then."""
        if not backend.spec.allows("diagnostics"):
            return
        self.reports.reported(backend.uid, uri, version, asked=True, when=asked_when)
        self.diagnostics.put(uri, Part(backend.uid, "push", backend.name), diagnostics, version)

    def _schedule_pull(self, backend: Backend, uri: str, delay: float | None = None) -> None:
        """Pull diagnostics from servers that offer textDocument/diagnostic, debounced per document."""
        if backend.state != State.RUNNING or not backend.spec.allows("diagnostics"):
            return
        if not backend.supports("textDocument/diagnostic"):
            return
        key = (backend.uid, uri)
        timer = self._pull_timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        wait = self.config.hub.diagnostics_debounce_seconds if delay is None else delay
        self._pull_timers[key] = asyncio.get_running_loop().call_later(
            wait, lambda: self.spawn(self._pull(backend, uri))
        )

    def pull_now(self, backend: Backend, uri: str) -> None:
        """Pull `uri`'s diagnostics from `backend` at once (if it pulls): a report made from here on."""
        self._schedule_pull(backend, uri, delay=0.0)

    async def refresh_pulled_diagnostics(self, backend: Backend) -> None:
        for uri in list(backend.open_documents):
            self._schedule_pull(backend, uri, delay=0.0)

    async def _pull(self, backend: Backend, uri: str) -> None:
        key = (backend.uid, uri)
        self._pull_timers.pop(key, None)
        if uri not in backend.open_documents:
            return
        params: dict[str, Any] = {"textDocument": {"uri": uri}}
        options = backend.registered_options("textDocument/diagnostic") or backend.capabilities.get(
            "diagnosticProvider"
        )
        if isinstance(options, dict) and options.get("identifier"):
            params["identifier"] = options["identifier"]
        if key in self._pull_result_ids:
            params["previousResultId"] = self._pull_result_ids[key]
        document = self._documents.get(uri)
        pulled_version = document.version if document else None
        pulled_when = self.reports.now()  # the report is about the workspace as it is now
        try:
            # A large report arrives as text (RawResult): parsed here.
            report = materialize(await backend.request("textDocument/diagnostic", params).future)
        except ResponseFailure as exc:
            logger.info("%s: pulling diagnostics for %s failed: %s", backend.name, uri, exc.message)
            return
        if not isinstance(report, dict) or uri not in backend.open_documents:
            return
        if document is not self._documents.get(uri):
            # Closed (and maybe opened again) meanwhile: this report is about a document that is gone, and so is
            # its resultId. Kept, it let the next pull of the reopened document be answered "unchanged" against
            # diagnostics the close had cleared: a clean verdict from a server that had not checked it (seen with
            # basedpyright on click, whose pulls outlast a short `query diagnostics`).
            return
        if isinstance(report.get("resultId"), str):
            self._pull_result_ids[key] = report["resultId"]
        if pulled_version is not None:
            self.reports.reported(backend.uid, uri, pulled_version, when=pulled_when)
        if report.get("kind") == "full":
            self.diagnostics.put(uri, Part(backend.uid, "pull", backend.name), report.get("items") or [])
