"""What a server can do, read from its ServerCapabilities (the paths come from `methods.METHODS`), and what the hub
advertises to its client."""

from __future__ import annotations

from typing import Any

from lsp_hub.proxy.file_operations import ALL_FILES, FILE_OPERATIONS
from lsp_hub.proxy.methods import METHODS

# The ServerCapabilities path that says a server handles a method, from the method table. Methods not listed are
# forwarded on trust.
CAPABILITY_PATHS: dict[str, tuple[str, ...]] = {
    method: spec.capability for method, spec in METHODS.items() if spec.capability
}


def has_capability(capabilities: dict[str, Any], path: tuple[str, ...]) -> bool:
    value: Any = capabilities
    for key in path:
        if not isinstance(value, dict):
            # `"full": true` answers a deeper question (delta) with no.
            return False
        value = value.get(key)
    return bool(value)


def sync_kind(capabilities: dict[str, Any]) -> int:
    """The didChange kind a server asked for: 0 none, 1 full, 2 incremental."""
    sync = capabilities.get("textDocumentSync")
    if isinstance(sync, int):
        return sync
    if isinstance(sync, dict):
        change = sync.get("change")
        return change if isinstance(change, int) else 0
    return 0


def wants_open_close(capabilities: dict[str, Any]) -> bool:
    sync = capabilities.get("textDocumentSync")
    if isinstance(sync, dict):
        return bool(sync.get("openClose", False))
    return isinstance(sync, int) and sync > 0


def save_options(capabilities: dict[str, Any]) -> tuple[bool, bool]:
    """(send didSave, include the text)."""
    sync = capabilities.get("textDocumentSync")
    if isinstance(sync, dict):
        save = sync.get("save")
        if isinstance(save, dict):
            return True, bool(save.get("includeText"))
        return bool(save), False
    return isinstance(sync, int) and sync > 0, False


def command_names(capabilities: dict[str, Any]) -> list[str]:
    provider = capabilities.get("executeCommandProvider")
    if isinstance(provider, dict):
        return [c for c in provider.get("commands", []) if isinstance(c, str)]
    return []


def hub_capabilities(command_list: list[str], *, pull_diagnostics: bool = False,
                     per_language: dict[str, Any] | None = None,
                     semantic_tokens: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the hub advertises: every feature it can route. Backends that lack one answer it empty.

    `per_language` holds the static providers of the features whose options differ per language (completion,
    signature help, code actions, on-type formatting...; `feature_registrations`): those the client registers
    dynamically are absent, registered once the servers that offer them run.

    `semantic_tokens` is the static SemanticTokensOptions; None when the hub registers them dynamically instead.

    With `pull_diagnostics` (the client pulls) the merged diagnostics are offered by pull; the hub cannot know
    yet what servers that have not started say, so it claims what the common type checkers need: other files
    matter (interFileDependencies), and diagnostics of files that are not open exist (workspaceDiagnostics)."""
    capabilities: dict[str, Any] = {
        "positionEncoding": "utf-16",
        "textDocumentSync": {
            "openClose": True,
            "change": 2,
            "save": {"includeText": False},
            "willSave": False,
            "willSaveWaitUntil": False,
        },
        "hoverProvider": True,
        "declarationProvider": True,
        "definitionProvider": True,
        "typeDefinitionProvider": True,
        "implementationProvider": True,
        "referencesProvider": True,
        "documentHighlightProvider": True,
        "documentSymbolProvider": True,
        "codeLensProvider": {"resolveProvider": True},
        "documentLinkProvider": {"resolveProvider": True},
        "documentFormattingProvider": True,
        "documentRangeFormattingProvider": True,
        "renameProvider": {"prepareProvider": True},
        "foldingRangeProvider": True,
        "selectionRangeProvider": True,
        "linkedEditingRangeProvider": True,
        "callHierarchyProvider": True,
        "typeHierarchyProvider": True,
        "inlayHintProvider": {"resolveProvider": True},
        "workspaceSymbolProvider": True,
        "executeCommandProvider": {"commands": command_list},
        "workspace": {
            "workspaceFolders": {"supported": True, "changeNotifications": True},
            "fileOperations": {key: ALL_FILES for key in FILE_OPERATIONS.values()},
        },
    }
    capabilities.update(per_language or {})
    if pull_diagnostics:
        capabilities["diagnosticProvider"] = {"interFileDependencies": True, "workspaceDiagnostics": True}
    if semantic_tokens is not None:
        capabilities["semanticTokensProvider"] = semantic_tokens
    return capabilities
