"""What a running server is told of a document, as its text-document-sync capabilities ask: didOpen, didChange
(full or incremental), didSave (with or without text) and didClose. Which documents a backend has open, and when,
is the backend's business (`backend.py`); this module only speaks the protocol to one that is running."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.capabilities import save_options, sync_kind, wants_open_close
from lsp_hub.proxy.documents import uri_to_path

if TYPE_CHECKING:
    from lsp_hub.proxy.documents import OpenText
    from lsp_hub.transport.jsonrpc import RawProtocol

FILE_CREATED = 1  # FileChangeType.Created


def send_did_open(protocol: RawProtocol, capabilities: dict[str, Any], document: OpenText) -> None:
    if not wants_open_close(capabilities):
        return
    text_document = {
        "uri": document.uri,
        "languageId": document.language_id,
        "version": document.version,
        "text": document.text,
    }
    protocol.notify("textDocument/didOpen", {"textDocument": text_document})


def send_did_change(
    protocol: RawProtocol, capabilities: dict[str, Any], document: OpenText, changes: list[dict[str, Any]]
) -> None:
    kind = sync_kind(capabilities)
    if kind == 0:
        return
    if kind == 1:
        changes = [{"text": document.text}]
    protocol.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": document.uri, "version": document.version}, "contentChanges": changes},
    )


def send_did_save(
    protocol: RawProtocol, capabilities: dict[str, Any], document: OpenText, params: dict[str, Any]
) -> None:
    wanted, include_text = save_options(capabilities)
    if not wanted:
        return
    payload: dict[str, Any] = {"textDocument": {"uri": document.uri}}
    if include_text:
        payload["text"] = params.get("text", document.text)
    protocol.notify("textDocument/didSave", payload)


def send_did_close(protocol: RawProtocol, capabilities: dict[str, Any], uri: str, *, reannounce: bool) -> None:
    """didClose; with `reannounce`, the file (if it exists) is announced as created again, for a server that
    forgets a closed file's diagnostics otherwise."""
    if not wants_open_close(capabilities):
        return
    protocol.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    path = uri_to_path(uri)
    if reannounce and path is not None and os.path.isfile(path):
        protocol.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri, "type": FILE_CREATED}]})
