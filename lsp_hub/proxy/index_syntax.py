"""The hub's own syntax diagnostics, for documents no language server is there to check: each root's parsers
(`syntax_parsers.py`: TypeScript's own only in a trusted root, else tree-sitter), their errors put in the
workspace's diagnostic store as the hub's part (`SYNTAX_OWNER`)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.diagnostics import Part
from lsp_hub.proxy.documents import SharedDocument, uri_to_path

if TYPE_CHECKING:
    from lsp_hub.index.syntax_checkers import SyntaxCheckers
    from lsp_hub.index.workspace import WorkspaceIndex
    from lsp_hub.proxy.workspace import Workspace

logger = logging.getLogger(__name__)

SYNTAX_OWNER = 0  # the hub's own diagnostics part (backends have uids from 1)


class SyntaxDiagnostics:
    def __init__(self, workspace: Workspace, index_for: Callable[[str | None], WorkspaceIndex | None]) -> None:
        self.workspace = workspace
        self._index_for = index_for
        self._uris: set[str] = set()  # documents with syntax diagnostics of the hub's in the store
        self._checkers: dict[str, SyntaxCheckers] = {}  # per indexed root: the parsers it may run

    def checkers(self, uri_or_path: str | None) -> SyntaxCheckers:
        """The languages' own parsers the index may run for a file: TypeScript from the workspace only when the
        root holding the file (or, for text from elsewhere, the first root) is trusted (syntax_parsers.py)."""
        from lsp_hub.proxy.syntax_parsers import syntax_checkers_for

        index = self._index_for(uri_or_path)
        if index is not None:
            root = str(index.root)
        elif self.workspace.folders:
            root = self.workspace.folders[0]
        else:  # no project at all: the file's own directory, never trusted unless the user said so
            path = (uri_to_path(uri_or_path) if uri_or_path and "://" in uri_or_path else uri_or_path) or "/"
            root = os.path.dirname(os.path.abspath(path))
        checkers = self._checkers.get(root)
        if checkers is None:
            checkers = syntax_checkers_for(Path(root), trusted=self.workspace.is_trusted(root),
                                           config=self.workspace.config)
            self._checkers[root] = checkers
            if checkers.typescript is None:
                logger.info("TypeScript syntax checks under %s use tree-sitter: %s", root,
                            checkers.typescript_missing)
        return checkers

    def describe(self) -> dict[str, Any]:
        """Which parser judges syntax, per root asked so far (the TypeScript helper's pid once it runs)."""
        return {root: checkers.describe() for root, checkers in self._checkers.items()}

    def clear(self, uri: str) -> None:
        if uri in self._uris:
            self._uris.discard(uri)
            self.workspace.diagnostics.clear_uri(uri, {SYNTAX_OWNER})

    async def check(self, document: SharedDocument, text: bytes) -> None:
        """Syntax errors as diagnostics, for documents no language server is there to check."""
        from lsp_hub.index.syntax_checkers import syntax_check_result, syntax_language_for_path
        from lsp_hub.proxy.backends import State

        path = uri_to_path(document.uri) or document.uri
        language = syntax_language_for_path(path)
        served = any(b.state in (State.RUNNING, State.STARTING)
                     for b in self.workspace.backends_for_uri(document.uri, "diagnostics"))
        if language is None or served:
            self.clear(document.uri)
            return
        source, version = document.source, document.version
        checkers = self.checkers(document.uri)  # the same parser lspHub.syntaxCheck would use
        result = await asyncio.to_thread(syntax_check_result, text, language, path, checkers)
        current = self.workspace.document(document.uri)
        if current is not document or current.source is not source or current.version != version:
            return  # an older text: a newer check is on its way
        diagnostics = [{"range": error["range"], "message": error["message"], "severity": 1, "source": "lsp-hub"}
                       for error in result.get("errors", [])]
        self._uris.add(document.uri)
        self.workspace.diagnostics.put(document.uri, Part(SYNTAX_OWNER, "syntax", "lsp-hub"), diagnostics,
                                       source.version)
