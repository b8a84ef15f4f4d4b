"""The method table: what the hub does with each LSP request a client sends, one `MethodSpec` per method.

Adding a forwarded method is one entry here: which servers are asked (`strategy`, `targets`), how their answers
are combined (`merge`), which ServerCapabilities path says a server handles it (`capability`; the backends check
it at send time), whether its answer needs the server's whole project (`project_wide`), what the index answers
when no server does (`stand_in`), and how a client whose text differs from the servers' is answered
(`positions`). The runners that carry a spec out are in `runners.py`; the merges are pure (`strategies.py`).
A method not in the table is forwarded (`FORWARD`). No I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.file_operations import merge_workspace_edits
from lsp_hub.proxy.strategies import (
    Strategy,
    concat_tagged,
    merge_completion,
    merge_hover,
    merge_locations,
    merge_symbols,
    tag_item,
    tag_items,
)

if TYPE_CHECKING:
    from lsp_hub.proxy.backends import Backend

Answers = list[tuple["Backend", Any]]  # (server, its answer), in precedence order
Merge = Callable[[Answers], Any]


class Targets(enum.Enum):
    """Which servers a fan-out asks, each with which params."""

    DOCUMENT = "document"  # the document's servers that offer the method (partial results not asked)
    LIVE_SERVERS = "live_servers"  # every running or starting server of the workspace
    OWN_DIAGNOSTICS = "own_diagnostics"  # the document's servers, each with the diagnostics it made (codeAction)
    FILE_FILTERS = "file_filters"  # the running servers whose file-operation filters match, with those files


class Positions(enum.Enum):
    """How a request from a client whose text of the document differs from the servers' is answered."""

    MAPPED = "mapped"  # its positions mapped into the servers' text, the answer's back into the client's
    TOKENS = "tokens"  # semantic tokens: a delta asked as full, the data array mapped back line by line
    OWN = "own"  # answered from the hub's own store, already in each client's text


@dataclass(frozen=True, slots=True)
class MethodSpec:
    strategy: Strategy
    capability: tuple[str, ...] | None = None  # ServerCapabilities path; None: sent on trust
    merge: Merge | None = None  # FAN_OUT: the answers combined
    targets: Targets = Targets.DOCUMENT  # FAN_OUT: who is asked
    raw: bool = False  # answers may stay raw JSON text (passed on untouched when one server answers)
    tags_items: bool = False  # FIRST: the returned items carry their server (hierarchy follow-ups find it)
    project_wide: bool = False  # asked again once a server still loading its project has loaded it
    stand_in: str | None = None  # the index's answer when no server gives one (`index_stand_in.STAND_INS`)
    completed_by_extensions: bool = False  # the merged answer handed to `SessionExtension.complete_references`
    remembers_owner: bool = False  # the one server that answered is remembered (its items go out untagged)
    owner_of: str | None = None  # RESOLVE: an untagged item goes to the server remembered for this method
    feature: str | None = None  # its name in only_features/except_features; None: the method itself
    positions: Positions = Positions.MAPPED

    def feature_name(self, method: str) -> str:
        return self.feature or method


# ---------------------------------------------------------------------------------------------- merges
def _hover(answers: Answers) -> Any:
    return merge_hover([(backend.name, result) for backend, result in answers])


def _completion(answers: Answers) -> Any:
    return merge_completion([(backend.uid, result) for backend, result in answers])


def _concat_tagged(answers: Answers) -> Any:
    return concat_tagged([(backend.uid, result) for backend, result in answers])


def _locations(answers: Answers) -> Any:
    return merge_locations([result for _, result in answers])


def _symbols(answers: Answers) -> Any:
    return merge_symbols([tag_items(result, backend.uid) for backend, result in answers])


def _code_actions(answers: Answers) -> Any:
    merged: list[Any] = []
    for backend, result in answers:
        for action in result or []:
            # A bare Command has no data field to carry an origin; executeCommand finds its owner.
            if isinstance(action, dict) and not isinstance(action.get("command"), str):
                tag_item(action, backend.uid)
            merged.append(action)
    return merged if answers else None


def _workspace_edits(answers: Answers) -> Any:
    return merge_workspace_edits([(backend.name, result) for backend, result in answers])


# ---------------------------------------------------------------------------------------------- the table
def _first(*capability: str, project_wide: bool = False, stand_in: str | None = None) -> MethodSpec:
    return MethodSpec(Strategy.FIRST, capability, project_wide=project_wide, stand_in=stand_in)


def _first_non_empty(*capability: str, project_wide: bool = False, stand_in: str | None = None) -> MethodSpec:
    return MethodSpec(Strategy.FIRST_NON_EMPTY, capability, project_wide=project_wide, stand_in=stand_in)


def _resolve(*capability: str, owner_of: str | None = None) -> MethodSpec:
    return MethodSpec(Strategy.RESOLVE, capability, owner_of=owner_of)


def _fan_out(merge: Merge, *capability: str, **options: Any) -> MethodSpec:
    return MethodSpec(Strategy.FAN_OUT, capability, merge=merge, **options)


def _tokens(*capability: str) -> MethodSpec:
    # Every semantic-tokens request is filtered under one feature name: a server serves all of them or none.
    return MethodSpec(Strategy.SEMANTIC_TOKENS, capability, feature="textDocument/semanticTokens/full",
                      positions=Positions.TOKENS)


def _file_operation(key: str) -> MethodSpec:
    return _fan_out(_workspace_edits, "workspace", "fileOperations", key, targets=Targets.FILE_FILTERS)


def _by_item_origin(*capability: str, project_wide: bool = False, stand_in: str | None = None) -> MethodSpec:
    return MethodSpec(Strategy.BY_ITEM_ORIGIN, capability, project_wide=project_wide, stand_in=stand_in)


METHODS: dict[str, MethodSpec] = {
    "textDocument/definition": _first_non_empty("definitionProvider", project_wide=True, stand_in="definition"),
    "textDocument/declaration": _first_non_empty("declarationProvider", project_wide=True),
    "textDocument/typeDefinition": _first_non_empty("typeDefinitionProvider", project_wide=True),
    "textDocument/implementation": _first_non_empty("implementationProvider", project_wide=True),
    "textDocument/signatureHelp": _first_non_empty("signatureHelpProvider"),
    "textDocument/hover": _fan_out(_hover, "hoverProvider", project_wide=True),
    "textDocument/rename": _first("renameProvider", project_wide=True),
    "textDocument/prepareRename": _first("renameProvider", "prepareProvider", project_wide=True),
    "textDocument/formatting": _first("documentFormattingProvider"),
    "textDocument/rangeFormatting": _first("documentRangeFormattingProvider"),
    "textDocument/rangesFormatting": _first("documentRangeFormattingProvider", "rangesSupport"),
    "textDocument/onTypeFormatting": _first("documentOnTypeFormattingProvider"),
    "textDocument/documentHighlight": _first("documentHighlightProvider"),
    "textDocument/documentSymbol": _first("documentSymbolProvider", stand_in="document_symbol"),
    "textDocument/foldingRange": _first("foldingRangeProvider"),
    "textDocument/selectionRange": _first("selectionRangeProvider"),
    "textDocument/linkedEditingRange": _first("linkedEditingRangeProvider"),
    "textDocument/documentColor": _first("colorProvider"),
    "textDocument/colorPresentation": _first("colorProvider"),
    "textDocument/moniker": _first("monikerProvider"),
    "textDocument/inlineValue": _first("inlineValueProvider"),
    "textDocument/semanticTokens/full": _tokens("semanticTokensProvider", "full"),
    "textDocument/semanticTokens/full/delta": _tokens("semanticTokensProvider", "full", "delta"),
    "textDocument/semanticTokens/range": _tokens("semanticTokensProvider", "range"),
    "textDocument/prepareCallHierarchy": MethodSpec(Strategy.FIRST, ("callHierarchyProvider",), tags_items=True,
                                                    project_wide=True, stand_in="prepare_call_hierarchy"),
    "textDocument/prepareTypeHierarchy": MethodSpec(Strategy.FIRST, ("typeHierarchyProvider",), tags_items=True),
    "callHierarchy/incomingCalls": _by_item_origin("callHierarchyProvider", project_wide=True,
                                                   stand_in="incoming_calls"),
    "callHierarchy/outgoingCalls": _by_item_origin("callHierarchyProvider", project_wide=True),
    "typeHierarchy/supertypes": _by_item_origin("typeHierarchyProvider"),
    "typeHierarchy/subtypes": _by_item_origin("typeHierarchyProvider"),
    "textDocument/completion": _fan_out(_completion, "completionProvider", raw=True, remembers_owner=True),
    "textDocument/codeAction": _fan_out(_code_actions, "codeActionProvider", targets=Targets.OWN_DIAGNOSTICS),
    "textDocument/codeLens": _fan_out(_concat_tagged, "codeLensProvider"),
    "textDocument/inlayHint": _fan_out(_concat_tagged, "inlayHintProvider"),
    "textDocument/documentLink": _fan_out(_concat_tagged, "documentLinkProvider"),
    "textDocument/references": _fan_out(_locations, "referencesProvider", project_wide=True,
                                        completed_by_extensions=True),
    "workspace/symbol": _fan_out(_symbols, "workspaceSymbolProvider", targets=Targets.LIVE_SERVERS,
                                 project_wide=True, stand_in="workspace_symbol"),
    "completionItem/resolve": _resolve("completionProvider", "resolveProvider", owner_of="textDocument/completion"),
    "codeAction/resolve": _resolve("codeActionProvider", "resolveProvider"),
    "codeLens/resolve": _resolve("codeLensProvider", "resolveProvider"),
    "inlayHint/resolve": _resolve("inlayHintProvider", "resolveProvider"),
    "documentLink/resolve": _resolve("documentLinkProvider", "resolveProvider"),
    "workspaceSymbol/resolve": _resolve("workspaceSymbolProvider", "resolveProvider"),
    "workspace/executeCommand": MethodSpec(Strategy.EXECUTE_COMMAND, ("executeCommandProvider",)),
    "textDocument/diagnostic": MethodSpec(Strategy.DOCUMENT_DIAGNOSTIC, ("diagnosticProvider",),
                                          positions=Positions.OWN),
    "workspace/diagnostic": MethodSpec(Strategy.WORKSPACE_DIAGNOSTIC, ("diagnosticProvider", "workspaceDiagnostics"),
                                       positions=Positions.OWN),
    "workspace/willCreateFiles": _file_operation("willCreate"),
    "workspace/willRenameFiles": _file_operation("willRename"),
    "workspace/willDeleteFiles": _file_operation("willDelete"),
}

FORWARDED = MethodSpec(Strategy.FORWARD)  # a method the table does not know: passed on as it is


def spec_for(method: str) -> MethodSpec:
    return METHODS.get(method, FORWARDED)


def strategy_for(method: str) -> Strategy:
    return spec_for(method).strategy


# References as the servers answer them, merged, without the extensions' completion (for `lspHub.references`).
SERVER_REFERENCES = _fan_out(_locations, "referencesProvider", project_wide=True)
