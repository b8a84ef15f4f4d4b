"""Semantic tokens from several servers under one legend: the hub's legend, and remapping each server's indices.

A server encodes a token as five integers (deltaLine, deltaStart, length, tokenType, tokenModifiers); the type is
an index into the server's legend and the modifiers a bit set over it. The client knows one legend, the hub's:
the standard types and modifiers first, then (when the client accepts dynamic registration) what servers' legends
add, appended so an index once given out keeps its meaning. Without dynamic registration the legend stays the
standard one and a server's own types map to the nearest standard type. Pure: no I/O, no LSP session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# LSP 3.17 SemanticTokenTypes and SemanticTokenModifiers, in the specification's order.
STANDARD_TOKEN_TYPES: tuple[str, ...] = (
    "namespace", "type", "class", "enum", "interface", "struct", "typeParameter", "parameter", "variable",
    "property", "enumMember", "event", "function", "method", "macro", "keyword", "modifier", "comment", "string",
    "number", "regexp", "operator", "decorator",
)
STANDARD_TOKEN_MODIFIERS: tuple[str, ...] = (
    "declaration", "definition", "readonly", "static", "deprecated", "abstract", "async", "modification",
    "documentation", "defaultLibrary",
)
FALLBACK_TOKEN_TYPE = "variable"  # for a type no standard name resembles: most tokens are names of things

# Non-standard names servers use, read as contained words: "builtinConstant" contains "constant".
_TYPE_ALIASES: dict[str, str] = {
    "module": "namespace",
    "package": "namespace",
    "constant": "variable",
    "field": "property",
    "member": "property",
    "attribute": "property",
    "constructor": "method",
    "concept": "type",
    "bracket": "operator",
    "punctuation": "operator",
    "annotation": "decorator",
}
_MODIFIER_ALIASES: dict[str, str] = {
    "builtin": "defaultLibrary",
    "mutable": "modification",
}

RESULT_ID_PREFIX = "lsp-hub"

# The hub's own methods, and the name a server registers them under.
FULL = "textDocument/semanticTokens/full"
DELTA = "textDocument/semanticTokens/full/delta"
RANGE = "textDocument/semanticTokens/range"
REGISTRATION_METHOD = "textDocument/semanticTokens"


def nearest_standard_type(name: str) -> str:
    """A standard type for a server's own type: the same name, else the longest standard name or alias the
    name contains (selfParameter -> parameter, builtinType -> type), else FALLBACK_TOKEN_TYPE."""
    return _nearest(name, STANDARD_TOKEN_TYPES, _TYPE_ALIASES) or FALLBACK_TOKEN_TYPE


def nearest_standard_modifier(name: str) -> str | None:
    """A standard modifier for a server's own modifier, or None: a modifier nothing resembles is dropped."""
    return _nearest(name, STANDARD_TOKEN_MODIFIERS, _MODIFIER_ALIASES)


def _nearest(name: str, standard: tuple[str, ...], aliases: dict[str, str]) -> str | None:
    if name in standard:
        return name
    lowered = name.lower()
    words = {word.lower(): word for word in standard} | {alias: target for alias, target in aliases.items()}
    contained = [word for word in words if word in lowered]
    if not contained:
        return None
    return words[max(contained, key=len)]


@dataclass(frozen=True)
class TokenMap:
    """One server's indices in the hub's legend: type index -> hub type index, modifier bit -> hub bit (or -1)."""

    types: tuple[int, ...]
    modifier_bits: tuple[int, ...]
    fallback_type: int
    _modifier_sets: dict[int, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_identity(self) -> bool:
        return self.types == tuple(range(len(self.types))) and self.modifier_bits == tuple(
            range(len(self.modifier_bits)))

    def token_type(self, index: int) -> int:
        return self.types[index] if 0 <= index < len(self.types) else self.fallback_type

    def modifiers(self, bits: int) -> int:
        """A server's modifier bit set in the hub's bits (cached: a file uses few distinct sets)."""
        mapped = self._modifier_sets.get(bits)
        if mapped is None:
            mapped = 0
            for server_bit, hub_bit in enumerate(self.modifier_bits):
                if bits >> server_bit & 1 and hub_bit >= 0:
                    mapped |= 1 << hub_bit
            self._modifier_sets[bits] = mapped
        return mapped

    def value_at(self, position: int, value: int) -> int:
        """The hub's value for the integer at `position` of a data array (its field is position mod 5)."""
        kind = position % 5
        if kind == 3:
            return self.token_type(value)
        if kind == 4:
            return self.modifiers(value)
        return value


class HubLegend:
    """The legend the client decodes every server's tokens with. With `growable`, a server's own names are
    appended (and `version` counts the growths, so the hub knows to register the legend again); without, they
    map to the nearest standard names."""

    def __init__(self, *, growable: bool) -> None:
        self.growable = growable
        self.token_types: list[str] = list(STANDARD_TOKEN_TYPES)
        self.token_modifiers: list[str] = list(STANDARD_TOKEN_MODIFIERS)
        self.version = 0
        self._maps: dict[tuple[tuple[str, ...], tuple[str, ...]], TokenMap] = {}

    def as_lsp(self) -> dict[str, list[str]]:
        return {"tokenTypes": list(self.token_types), "tokenModifiers": list(self.token_modifiers)}

    def map_for(self, server_legend: Any) -> TokenMap:
        """The TokenMap for a server's legend (a SemanticTokensLegend dict), growing the hub legend if allowed."""
        types = tuple(_names(server_legend, "tokenTypes"))
        modifiers = tuple(_names(server_legend, "tokenModifiers"))
        cached = self._maps.get((types, modifiers))
        if cached is not None:
            return cached
        grew = False
        if self.growable:
            for name in types:
                if name not in self.token_types:
                    self.token_types.append(name)
                    grew = True
            for name in modifiers:
                if name not in self.token_modifiers:
                    self.token_modifiers.append(name)
                    grew = True
        if grew:
            self.version += 1
        type_index = {name: i for i, name in enumerate(self.token_types)}
        modifier_index = {name: i for i, name in enumerate(self.token_modifiers)}
        mapped_types = tuple(
            type_index[name] if name in type_index else type_index[nearest_standard_type(name)] for name in types
        )
        mapped_modifiers = []
        for name in modifiers:
            nearest = name if name in modifier_index else nearest_standard_modifier(name)
            mapped_modifiers.append(modifier_index[nearest] if nearest is not None else -1)
        token_map = TokenMap(mapped_types, tuple(mapped_modifiers), type_index[FALLBACK_TOKEN_TYPE])
        self._maps[(types, modifiers)] = token_map
        return token_map


def _names(legend: Any, key: str) -> list[str]:
    names = legend.get(key) if isinstance(legend, dict) else None
    return [str(name) for name in names] if isinstance(names, list) else []


# ---------------------------------------------------------------------------------------------- remapping
def remap_data(data: list[int], token_map: TokenMap) -> list[int]:
    """A whole data array (SemanticTokens.data) in the hub's indices: one pass, 5 integers per token."""
    if token_map.is_identity:
        return data
    remapped = list(data)
    for position in range(3, len(remapped) - 1, 5):
        remapped[position] = token_map.token_type(remapped[position])
        remapped[position + 1] = token_map.modifiers(remapped[position + 1])
    return remapped


def remap_edits(edits: list[dict[str, Any]], token_map: TokenMap) -> list[dict[str, Any]]:
    """SemanticTokensDelta edits in the hub's indices. Edits refer to the previous array and need not start at a
    token boundary; an inserted integer's field is its index in the new array mod 5, and that index is its edit's
    start shifted by what the edits before it inserted and deleted."""
    if token_map.is_identity:
        return edits
    shift = 0
    remapped: list[tuple[int, dict[str, Any]]] = []
    for order, edit in sorted(enumerate(edits), key=lambda entry: int(entry[1].get("start", 0))):
        data = edit.get("data")
        if isinstance(data, list) and data:
            new_start = int(edit.get("start", 0)) + shift
            edit = {**edit, "data": [token_map.value_at(new_start + i, value) for i, value in enumerate(data)]}
        shift += len(data or []) - int(edit.get("deleteCount", 0))
        remapped.append((order, edit))
    return [edit for _, edit in sorted(remapped, key=lambda entry: entry[0])]


def remap_result(result: Any, token_map: TokenMap) -> Any:
    """A SemanticTokens or SemanticTokensDelta answer (or null) in the hub's indices."""
    if not isinstance(result, dict):
        return result
    if isinstance(result.get("data"), list):
        return {**result, "data": remap_data(result["data"], token_map)}
    if isinstance(result.get("edits"), list):
        return {**result, "edits": remap_edits(result["edits"], token_map)}
    return result


# ---------------------------------------------------------------------------------------------- result ids
def wrap_result_id(result: Any, uid: int, generation: int) -> Any:
    """The answer with its resultId naming the backend (and the process) that issued it, so a delta request goes
    back to it; a restarted server never sees an id its predecessor issued."""
    if isinstance(result, dict) and isinstance(result.get("resultId"), str):
        return {**result, "resultId": f"{RESULT_ID_PREFIX}:{uid}:{generation}:{result['resultId']}"}
    return result


def unwrap_result_id(result_id: Any) -> tuple[int, int, str] | None:
    """(backend uid, generation, the server's own resultId) from a wrapped id, or None if it is not one."""
    if not isinstance(result_id, str):
        return None
    parts = result_id.split(":", 3)
    if len(parts) != 4 or parts[0] != RESULT_ID_PREFIX or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return int(parts[1]), int(parts[2]), parts[3]


# ---------------------------------------------------------------------------------------------- capabilities
def server_provider(capabilities: dict[str, Any], registered: dict[str, Any] | None) -> dict[str, Any] | None:
    """A server's SemanticTokensOptions (registered or static), or None if it provides no tokens."""
    provider = registered if registered is not None else capabilities.get("semanticTokensProvider")
    if not isinstance(provider, dict) or not isinstance(provider.get("legend"), dict):
        return None
    return provider


def method_for(provider: dict[str, Any], wanted: str) -> str | None:
    """The method to ask a server for `wanted`: itself if offered, else the next best (a whole document for a
    range or a delta), else None."""
    full = provider.get("full")
    has_full = bool(full)
    has_delta = isinstance(full, dict) and bool(full.get("delta"))
    has_range = bool(provider.get("range"))  # like Backend.supports, which would refuse a range `{}`
    if wanted == DELTA and has_delta:
        return DELTA
    if wanted == RANGE and has_range:
        return RANGE
    return FULL if has_full else None


def hub_provider(legend: HubLegend) -> dict[str, Any]:
    """The SemanticTokensOptions the hub offers: every request kind (it asks a server for what that one offers)."""
    return {"legend": legend.as_lsp(), "full": {"delta": True}, "range": True}


def client_capability_for_servers(client: Any) -> dict[str, Any] | None:
    """textDocument.semanticTokens as the hub tells servers: the client's, widened to what the hub decodes (any
    type or modifier, all request kinds), and static registration only, since the hub reads the legend at start."""
    if not isinstance(client, dict):
        return None
    types = list(dict.fromkeys([*STANDARD_TOKEN_TYPES, *_names(client, "tokenTypes")]))
    modifiers = list(dict.fromkeys([*STANDARD_TOKEN_MODIFIERS, *_names(client, "tokenModifiers")]))
    return {
        **client,
        "dynamicRegistration": False,
        "requests": {"range": True, "full": {"delta": True}},
        "tokenTypes": types,
        "tokenModifiers": modifiers,
        "formats": ["relative"],
    }


def decode(data: list[int], legend: dict[str, list[str]]) -> list[tuple[int, int, int, str, list[str]]]:
    """(line, start, length, type, modifiers) per token: what an editor does with the data; for tests and tools."""
    tokens = []
    line = start = 0
    types, modifiers = legend["tokenTypes"], legend["tokenModifiers"]
    for i in range(0, len(data) - 4, 5):
        delta_line, delta_start, length, token_type, bits = data[i:i + 5]
        line += delta_line
        start = start + delta_start if delta_line == 0 else delta_start
        names = [name for bit, name in enumerate(modifiers) if bits >> bit & 1]
        tokens.append((line, start, length, types[token_type] if token_type < len(types) else "?", names))
    return tokens
