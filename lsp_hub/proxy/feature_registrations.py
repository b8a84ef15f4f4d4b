"""Features whose options differ per language: trigger characters, code action kinds, on-type formatting.

Servers start lazily, after `initialize` was answered, so what they offer is known only when each runs. A client
that registers a feature dynamically gets one registration per (feature, language), with a document selector for
that language and the options of the language's running servers combined; it is replaced whenever they change.
Only one registration per language and feature: two would make the client ask twice and show every item twice.
A client that cannot register gets a static union, and the servers that lack the feature answer it empty.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lsp_hub.config.model import LanguageSpec

logger = logging.getLogger(__name__)

DEFAULT_COMPLETION_TRIGGERS = [".", ":", ">", '"', "'", "/", "@", "<", "#", "*", "$", "`"]
STANDARD_CODE_ACTION_KINDS = ["quickfix", "refactor", "refactor.extract", "refactor.inline", "refactor.rewrite",
                              "source", "source.organizeImports", "source.fixAll"]


def _union(values: Iterable[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        for item in value if isinstance(value, list) else []:
            if item not in seen:
                seen.append(item)
    return seen


def _options(provider: Any) -> dict[str, Any]:
    return provider if isinstance(provider, dict) else {}


def _completion(providers: list[Any]) -> dict[str, Any]:
    options = [_options(p) for p in providers]
    combined: dict[str, Any] = {"resolveProvider": True, "completionItem": {"labelDetailsSupport": True},
                                "triggerCharacters": _union(o.get("triggerCharacters") for o in options)}
    commit = _union(o.get("allCommitCharacters") for o in options)
    if commit:
        combined["allCommitCharacters"] = commit
    return combined


def _signature_help(providers: list[Any]) -> dict[str, Any]:
    options = [_options(p) for p in providers]
    return {"triggerCharacters": _union(o.get("triggerCharacters") for o in options),
            "retriggerCharacters": _union(o.get("retriggerCharacters") for o in options)}


def _on_type_formatting(providers: list[Any]) -> dict[str, Any]:
    # Answered by the first capable server in precedence order (FIRST): its trigger characters, not a union.
    first = _options(providers[0])
    return {key: first[key] for key in ("firstTriggerCharacter", "moreTriggerCharacter") if key in first}


def _code_action(providers: list[Any]) -> dict[str, Any]:
    kinds = _union(_options(p).get("codeActionKinds") for p in providers)
    return {"resolveProvider": True, **({"codeActionKinds": kinds} if kinds else {})}


def _present(providers: list[Any]) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Feature:
    method: str
    client_capability: str  # under ClientCapabilities.textDocument
    provider: str  # the ServerCapabilities key
    static: Any  # advertised at initialize to a client that cannot register the feature
    combine: Callable[[list[Any]], dict[str, Any]]  # providers of a language's servers, in precedence order


FEATURES: tuple[Feature, ...] = (
    Feature("textDocument/completion", "completion", "completionProvider",
            {"resolveProvider": True, "triggerCharacters": DEFAULT_COMPLETION_TRIGGERS,
             "completionItem": {"labelDetailsSupport": True}}, _completion),
    Feature("textDocument/signatureHelp", "signatureHelp", "signatureHelpProvider",
            {"triggerCharacters": ["(", ","], "retriggerCharacters": [")"]}, _signature_help),
    Feature("textDocument/onTypeFormatting", "onTypeFormatting", "documentOnTypeFormattingProvider",
            {"firstTriggerCharacter": "\n", "moreTriggerCharacter": [";", "}", ")", ">", ":"]}, _on_type_formatting),
    Feature("textDocument/codeAction", "codeAction", "codeActionProvider",
            {"resolveProvider": True, "codeActionKinds": STANDARD_CODE_ACTION_KINDS}, _code_action),
    Feature("textDocument/documentColor", "colorProvider", "colorProvider", True, _present),
    Feature("textDocument/inlineValue", "inlineValue", "inlineValueProvider", True, _present),
    Feature("textDocument/moniker", "moniker", "monikerProvider", True, _present),
)


def language_selector(language: LanguageSpec) -> list[dict[str, str]]:
    """A DocumentSelector for a language: its ids, and its file names and extensions for other ids."""
    selector = [{"language": language_id} for language_id in language.ids]
    selector += [{"scheme": "file", "pattern": f"**/*.{extension}"} for extension in language.extensions]
    selector += [{"scheme": "file", "pattern": f"**/{name}"} for name in language.filenames]
    return selector


class FeatureRegistrations:
    """What to advertise at initialize, and the dynamic registrations of one client, kept current."""

    def __init__(self, client_capabilities: dict[str, Any], request: Callable[[str, Any], None]) -> None:
        text_document = client_capabilities.get("textDocument") or {}
        self.dynamic = {feature.method for feature in FEATURES
                        if isinstance(text_document.get(feature.client_capability), dict)
                        and text_document[feature.client_capability].get("dynamicRegistration")}
        self._request = request
        self._registered: dict[str, dict[str, Any]] = {}  # registration id -> its registerOptions

    def static_capabilities(self) -> dict[str, Any]:
        """Provider keys for initialize: static ones for features the client cannot register dynamically."""
        return {feature.provider: feature.static for feature in FEATURES if feature.method not in self.dynamic}

    def update(self, language: LanguageSpec, providers_by_method: dict[str, list[Any]]) -> None:
        """The running servers of `language` offer these providers (per method, in precedence order)."""
        unregister: list[dict[str, str]] = []
        register: list[dict[str, Any]] = []
        for feature in FEATURES:
            if feature.method not in self.dynamic:
                continue
            registration_id = f"lsp-hub/{language.name}/{feature.method}"
            providers = providers_by_method.get(feature.method) or []
            options = ({"documentSelector": language_selector(language), **feature.combine(providers)}
                       if providers else None)
            current = self._registered.get(registration_id)
            if options == current:
                continue
            if current is not None:
                unregister.append({"id": registration_id, "method": feature.method})
                del self._registered[registration_id]
            if options is not None:
                register.append({"id": registration_id, "method": feature.method, "registerOptions": options})
                self._registered[registration_id] = options
        # The spec's own misspelling: "unregisterations".
        if unregister:
            self._request("client/unregisterCapability", {"unregisterations": unregister})
        if register:
            self._request("client/registerCapability", {"registrations": register})
