"""Tests of lsp_hub.proxy.semantic_tokens: the hub legend, per-server index maps, remapping data and delta edits."""

from __future__ import annotations

import random
from typing import Any

from lsp_hub.proxy.semantic_tokens import (
    DELTA,
    FULL,
    RANGE,
    STANDARD_TOKEN_MODIFIERS,
    STANDARD_TOKEN_TYPES,
    HubLegend,
    client_capability_for_servers,
    decode,
    method_for,
    nearest_standard_modifier,
    nearest_standard_type,
    remap_data,
    remap_edits,
    remap_result,
    unwrap_result_id,
    wrap_result_id,
)

# A server legend in its own order, with names of its own (like basedpyright's and clangd's).
SERVER = {"tokenTypes": ["function", "selfParameter", "class", "builtinConstant", "module", "unknown"],
          "tokenModifiers": ["builtin", "readonly", "functionScope", "declaration"]}


def apply_edits(data: list[int], edits: list[dict[str, Any]]) -> list[int]:
    """What a client does with a delta: every edit refers to the previous array; applied from the back."""
    result = list(data)
    for edit in sorted(edits, key=lambda e: e["start"], reverse=True):
        result[edit["start"]:edit["start"] + edit["deleteCount"]] = edit.get("data", [])
    return result


def test_nearest_standard_names() -> None:
    assert nearest_standard_type("function") == "function"
    assert nearest_standard_type("selfParameter") == "parameter"
    assert nearest_standard_type("clsParameter") == "parameter"
    assert nearest_standard_type("typeParameter") == "typeParameter"
    assert nearest_standard_type("enumMember") == "enumMember"
    assert nearest_standard_type("builtinType") == "type"
    assert nearest_standard_type("module") == "namespace"
    assert nearest_standard_type("builtinConstant") == "variable"
    assert nearest_standard_type("bracket") == "operator"
    assert nearest_standard_type("unknown") == "variable"  # nothing resembles it: the fallback
    assert nearest_standard_modifier("builtin") == "defaultLibrary"
    assert nearest_standard_modifier("functionScope") is None
    assert nearest_standard_modifier("constructorOrDestructor") is None


def test_static_legend_is_standard_and_maps_own_names_to_standard_ones() -> None:
    legend = HubLegend(growable=False)
    token_map = legend.map_for(SERVER)
    assert legend.as_lsp() == {"tokenTypes": list(STANDARD_TOKEN_TYPES),
                               "tokenModifiers": list(STANDARD_TOKEN_MODIFIERS)}
    assert legend.version == 0
    types = legend.token_types
    assert [types[i] for i in token_map.types] == ["function", "parameter", "class", "variable", "namespace",
                                                   "variable"]
    modifiers = legend.token_modifiers
    # builtin -> defaultLibrary, functionScope dropped.
    assert token_map.modifiers(0b1111) == (1 << modifiers.index("defaultLibrary")) | (
        1 << modifiers.index("readonly")) | (1 << modifiers.index("declaration"))


def test_growable_legend_appends_and_keeps_earlier_indices() -> None:
    legend = HubLegend(growable=True)
    first = legend.map_for(SERVER)
    assert legend.version == 1
    assert legend.token_types[: len(STANDARD_TOKEN_TYPES)] == list(STANDARD_TOKEN_TYPES)
    assert legend.token_types[len(STANDARD_TOKEN_TYPES):] == ["selfParameter", "builtinConstant", "module", "unknown"]
    before = list(legend.token_types)
    other = {"tokenTypes": ["macro", "concept", "selfParameter"], "tokenModifiers": ["virtual"]}
    second = legend.map_for(other)
    assert legend.version == 2
    assert legend.token_types[: len(before)] == before  # append-only
    assert [legend.token_types[i] for i in second.types] == ["macro", "concept", "selfParameter"]
    assert legend.map_for(SERVER) is first  # cached, and the same indices as before
    assert legend.map_for(other) is second and legend.version == 2  # nothing new: no growth
    assert [legend.token_types[i] for i in first.types] == SERVER["tokenTypes"]


def test_remap_data_maps_types_and_modifiers_only() -> None:
    legend = HubLegend(growable=False)
    token_map = legend.map_for(SERVER)
    data = [0, 4, 5, 0, 0,  # function
            1, 2, 4, 1, 0b1000,  # selfParameter, declaration
            0, 6, 4, 2, 0b0001]  # class, builtin
    remapped = remap_data(data, token_map)
    assert decode(remapped, legend.as_lsp()) == [
        (0, 4, 5, "function", []),
        (1, 2, 4, "parameter", ["declaration"]),
        (1, 8, 4, "class", ["defaultLibrary"]),
    ]
    assert data[3] == 0 and data[8] == 1  # the server's array is not changed in place


def test_identity_map_leaves_data_alone() -> None:
    legend = HubLegend(growable=True)
    token_map = legend.map_for({"tokenTypes": list(STANDARD_TOKEN_TYPES[:5]),
                                "tokenModifiers": list(STANDARD_TOKEN_MODIFIERS)})
    data = [0, 0, 1, 4, 1]
    assert token_map.is_identity and remap_data(data, token_map) is data


def test_unknown_type_index_gets_the_fallback() -> None:
    legend = HubLegend(growable=False)
    token_map = legend.map_for(SERVER)
    assert decode(remap_data([0, 0, 1, 99, 0], token_map), legend.as_lsp())[0][3] == "variable"


def test_remapped_edits_applied_to_remapped_data_equal_the_remapped_new_data() -> None:
    """The client applies the hub's edits to the hub's previous array; that must be the hub's new array."""
    legend = HubLegend(growable=False)
    token_map = legend.map_for(SERVER)
    rng = random.Random(14)
    for _ in range(300):
        previous = [rng.randrange(6) if i % 5 == 3 else rng.randrange(16) for i in range(5 * rng.randrange(1, 12))]
        new = [rng.randrange(6) if i % 5 == 3 else rng.randrange(16) for i in range(5 * rng.randrange(1, 12))]
        edits = _some_edits(previous, new, rng)
        assert apply_edits(previous, edits) == new  # the edits are right for the server's arrays
        hub_edits = remap_edits(edits, token_map)
        assert apply_edits(remap_data(previous, token_map), hub_edits) == remap_data(new, token_map)


def _some_edits(previous: list[int], new: list[int], rng: random.Random) -> list[dict[str, Any]]:
    """Edits turning `previous` into `new`, cut at arbitrary (not token-aligned) places, listed in any order."""
    cuts = sorted(rng.sample(range(len(previous) + 1), min(len(previous) + 1, rng.randrange(1, 4))))
    pieces = sorted(rng.sample(range(len(new) + 1), len(cuts) - 1)) if len(cuts) > 1 else []
    bounds_old = [*cuts, len(previous)]
    bounds_new = [0, *pieces, len(new)]
    edits = []
    for i, start in enumerate(cuts):
        end = bounds_old[i + 1] if i + 1 < len(cuts) else len(previous)
        data = new[bounds_new[i]:bounds_new[i + 1]]
        edit: dict[str, Any] = {"start": start, "deleteCount": end - start}
        if data:
            edit["data"] = data
        edits.append(edit)
    # The prefix before the first cut is kept as it is only if it matches; make the first edit cover it.
    edits[0] = {**edits[0], "start": 0, "deleteCount": edits[0]["deleteCount"] + cuts[0]}
    rng.shuffle(edits)
    return edits


def test_remap_result_handles_full_delta_and_null() -> None:
    legend = HubLegend(growable=False)
    token_map = legend.map_for(SERVER)
    assert remap_result(None, token_map) is None
    full = remap_result({"resultId": "7", "data": [0, 0, 1, 1, 0]}, token_map)
    assert full == {"resultId": "7", "data": [0, 0, 1, STANDARD_TOKEN_TYPES.index("parameter"), 0]}
    delta = remap_result({"resultId": "8", "edits": [{"start": 3, "deleteCount": 1, "data": [2]}]}, token_map)
    assert delta["edits"] == [{"start": 3, "deleteCount": 1, "data": [STANDARD_TOKEN_TYPES.index("class")]}]


def test_result_ids_name_their_issuer() -> None:
    wrapped = wrap_result_id({"resultId": "a:b", "data": []}, 3, 4711)
    assert unwrap_result_id(wrapped["resultId"]) == (3, 4711, "a:b")
    assert wrap_result_id({"data": []}, 3, 1) == {"data": []}
    assert unwrap_result_id("12") is None
    assert unwrap_result_id(None) is None
    assert unwrap_result_id("lsp-hub:x:1:2") is None


def test_method_for_picks_what_the_server_offers() -> None:
    everything = {"legend": {}, "full": {"delta": True}, "range": True}
    assert [method_for(everything, m) for m in (FULL, DELTA, RANGE)] == [FULL, DELTA, RANGE]
    full_only = {"legend": {}, "full": True}
    assert [method_for(full_only, m) for m in (FULL, DELTA, RANGE)] == [FULL, FULL, FULL]
    range_only = {"legend": {}, "range": True}
    assert [method_for(range_only, m) for m in (FULL, RANGE)] == [None, RANGE]


def test_servers_are_told_the_hub_decodes_everything_statically() -> None:
    told = client_capability_for_servers({"dynamicRegistration": True, "tokenTypes": ["class", "x"],
                                          "tokenModifiers": [], "formats": ["relative"], "requests": {"full": True},
                                          "multilineTokenSupport": False})
    assert told is not None
    assert told["dynamicRegistration"] is False
    assert told["requests"] == {"range": True, "full": {"delta": True}}
    assert told["tokenTypes"] == [*STANDARD_TOKEN_TYPES, "x"]
    assert told["multilineTokenSupport"] is False
    assert client_capability_for_servers(None) is None
