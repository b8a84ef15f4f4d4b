"""Semantic tokens through the hub with fake servers: one legend, remapped indices, deltas to their issuer,
dynamic registration of a growing legend, refresh forwarded."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from lsp_hub.proxy.semantic_tokens import STANDARD_TOKEN_MODIFIERS, STANDARD_TOKEN_TYPES, decode
from lsp_hub.transport.rawclient import DEFAULT_CLIENT_CAPABILITIES
from tests.hub_fixtures import HubUnderTest, StartHub, start_events

pytestmark = pytest.mark.asyncio

FULL = "textDocument/semanticTokens/full"
DELTA = "textDocument/semanticTokens/full/delta"
RANGE = "textDocument/semanticTokens/range"

LEGEND_A = {"tokenTypes": ["class", "function", "selfParameter"], "tokenModifiers": ["builtin", "declaration"]}
LEGEND_B = {"tokenTypes": ["class", "concept"], "tokenModifiers": ["virtual"]}
# fakeA: `greet` a function; `self` a selfParameter (builtin); `Shop` a class (declaration).
TOKENS_A = [0, 4, 5, 1, 0, 1, 2, 4, 2, 1, 1, 6, 4, 0, 2]
# Its next answer as a delta on TOKENS_A: the second token becomes a class; the edit is not token-aligned.
DELTA_A = {"resultId": "a2", "edits": [{"start": 7, "deleteCount": 3, "data": [4, 0, 0]}]}


def provider(legend: dict[str, Any]) -> dict[str, Any]:
    return {"legend": legend, "full": {"delta": True}, "range": True}


def token_server(legend: dict[str, Any], data: list[int], **extra: Any) -> dict[str, Any]:
    return {
        "capabilities": {"textDocumentSync": 2, "semanticTokensProvider": provider(legend)},
        "responses": {FULL: {"result": {"resultId": "{name}-1", "data": data}},
                      DELTA: {"result": DELTA_A},
                      RANGE: {"result": {"data": data[:5]}}},
        **extra,
    }


def client_capabilities(*, dynamic: bool, refresh: bool = False) -> dict[str, Any]:
    capabilities = copy.deepcopy(DEFAULT_CLIENT_CAPABILITIES)
    capabilities["textDocument"]["semanticTokens"] = {
        "dynamicRegistration": dynamic, "requests": {"full": {"delta": True}, "range": True},
        "tokenTypes": list(STANDARD_TOKEN_TYPES), "tokenModifiers": list(STANDARD_TOKEN_MODIFIERS),
        "formats": ["relative"]}
    if refresh:
        capabilities["workspace"]["semanticTokens"] = {"refreshSupport": True}
    return capabilities


def tokens_request(uri: str) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}}


def registrations(hub: HubUnderTest) -> list[tuple[str, dict[str, Any]]]:
    return [(method, entry) for method, params in hub.client.server_requests
            if method in ("client/registerCapability", "client/unregisterCapability")
            for entry in params.get("registrations", params.get("unregisterations", []))
            if entry["method"] == "textDocument/semanticTokens"]


async def test_static_legend_remaps_and_deltas_go_to_their_issuer(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": token_server(LEGEND_A, TOKENS_A),
                           "fakeB": token_server(LEGEND_B, [0, 0, 1, 1, 1])},
                          capabilities=client_capabilities(dynamic=False))
    advertised = hub.extra["initialize"]["capabilities"]["semanticTokensProvider"]
    legend = advertised["legend"]
    assert legend == {"tokenTypes": list(STANDARD_TOKEN_TYPES), "tokenModifiers": list(STANDARD_TOKEN_MODIFIERS)}
    assert advertised["full"] == {"delta": True} and advertised["range"] is True
    uri = hub.client.open(hub.file("shop.alpha", "def greet(self):\n  x\n  class Shop\n"), "alpha")

    full = await hub.client.request(FULL, tokens_request(uri))
    # fakeA comes first for alpha; its own names reach the client as the nearest standard ones.
    assert decode(full["data"], legend) == [
        (0, 4, 5, "function", []),
        (1, 2, 4, "parameter", ["defaultLibrary"]),
        (2, 6, 4, "class", ["declaration"]),
    ]
    assert full["resultId"] != "fakeA-1" and "fakeA-1" in full["resultId"]

    delta = await hub.client.request(DELTA, {**tokens_request(uri), "previousResultId": full["resultId"]})
    assert hub.received("fakeA", DELTA)[-1]["previousResultId"] == "fakeA-1"  # the server's own id
    new_data = list(full["data"])
    for edit in delta["edits"]:
        new_data[edit["start"]:edit["start"] + edit["deleteCount"]] = edit["data"]
    assert [token[3] for token in decode(new_data, legend)] == ["function", "class", "class"]

    ranged = await hub.client.request(RANGE, {**tokens_request(uri), "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}})
    assert decode(ranged["data"], legend) == [(0, 4, 5, "function", [])]

    # An id the hub never issued: a full request to the first server instead, answered as such.
    fallback = await hub.client.request(DELTA, {**tokens_request(uri), "previousResultId": "stale"})
    assert "data" in fallback and len(hub.received("fakeA", FULL)) == 2
    assert "previousResultId" not in hub.received("fakeA", FULL)[-1]

    # Servers are told the hub decodes any legend, and that it reads it from their capabilities.
    told = hub.received("fakeA", "initialize")[0]["capabilities"]["textDocument"]["semanticTokens"]
    assert told["dynamicRegistration"] is False and told["requests"]["full"] == {"delta": True}


async def test_a_delta_for_a_restarted_server_becomes_a_full_request(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": token_server(LEGEND_A, TOKENS_A), "fakeB": {}},
                          capabilities=client_capabilities(dynamic=False))
    uri = hub.client.open(hub.file("r.alpha", "x\n"), "alpha")
    full = await hub.client.request(FULL, tokens_request(uri))
    await hub.client.request("workspace/executeCommand", {"command": "lspHub.restartServer",
                                                          "arguments": [{"name": "fakeA"}]})
    for _ in range(100):  # running again: the old id is refused for being another process's, not for a start
        servers = (await hub.client.status())["servers"]
        if any(s["name"] == "fakeA" and s["state"] == "running" for s in servers):
            break
        await asyncio.sleep(0.1)
    assert len(start_events(hub.records, "fakeA")) == 2
    again = await hub.client.request(DELTA, {**tokens_request(uri), "previousResultId": full["resultId"]})
    assert "data" in again and again["resultId"] != full["resultId"]  # a new process, a new id
    assert not hub.received("fakeA", DELTA)  # the new process never issued the old id


async def test_first_server_that_provides_tokens_answers(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": token_server(LEGEND_B, [0, 0, 4, 0, 1, 0, 5, 3, 1, 0])},
                          capabilities=client_capabilities(dynamic=False))
    legend = hub.extra["initialize"]["capabilities"]["semanticTokensProvider"]["legend"]
    uri = hub.client.open(hub.file("b.alpha", "Shop Conc\n"), "alpha")
    full = await hub.client.request(FULL, tokens_request(uri))
    # fakeA (first for alpha) has no tokens: fakeB answers. "concept" -> type; "virtual" has no standard kin.
    assert decode(full["data"], legend) == [(0, 0, 4, "class", []), (0, 5, 3, "type", [])]
    await hub.client.wait_for(lambda: hub.received("fakeA", "initialized"), what="fakeA running")
    assert await hub.client.request(FULL, tokens_request(uri)) == full
    assert not hub.received("fakeA", FULL)


ONE_SERVER_EACH = {
    "alpha": {"extensions": ["alpha"], "language_ids": ["alpha"], "servers": ["fakeA"]},
    "beta": {"extensions": ["beta"], "language_ids": ["beta"], "servers": ["fakeB"]},
    "gamma": {"extensions": ["gamma"], "language_ids": ["gamma"], "servers": ["fakeC"]},
}


async def test_dynamic_registration_grows_the_legend_append_only(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": token_server(LEGEND_A, TOKENS_A),
                           "fakeB": token_server(LEGEND_B, [0, 0, 4, 1, 1]),
                           "fakeC": token_server({"tokenTypes": ["class"], "tokenModifiers": []}, [0, 0, 1, 0, 0])},
                          languages=ONE_SERVER_EACH, capabilities=client_capabilities(dynamic=True))
    assert "semanticTokensProvider" not in hub.extra["initialize"]["capabilities"]  # registered once known
    alpha = hub.client.open(hub.file("a.alpha", "x\n"), "alpha")
    await hub.client.wait_for(lambda: registrations(hub), what="semantic tokens registration")
    method, first = registrations(hub)[0]
    assert method == "client/registerCapability"
    first_legend = first["registerOptions"]["legend"]
    assert first_legend["tokenTypes"] == [*STANDARD_TOKEN_TYPES, "selfParameter"]
    assert first_legend["tokenModifiers"] == [*STANDARD_TOKEN_MODIFIERS, "builtin"]
    assert first["registerOptions"]["full"] == {"delta": True}
    tokens_a = await hub.client.request(FULL, tokens_request(alpha))
    assert [t[3:] for t in decode(tokens_a["data"], first_legend)] == [
        ("function", []), ("selfParameter", ["builtin"]), ("class", ["declaration"])]

    hub.client.open(hub.file("b.beta", "x\n"), "beta")  # fakeB starts (fakeA already runs)
    await hub.client.wait_for(lambda: len(registrations(hub)) == 3, what="registration of the grown legend")
    (_, _), (unregister, dropped), (register, grown) = registrations(hub)
    assert unregister == "client/unregisterCapability" and dropped["id"] == first["id"]
    assert register == "client/registerCapability" and grown["id"] != first["id"]
    grown_legend = grown["registerOptions"]["legend"]
    assert grown_legend["tokenTypes"] == [*first_legend["tokenTypes"], "concept"]
    assert grown_legend["tokenModifiers"] == [*first_legend["tokenModifiers"], "virtual"]
    # fakeA's tokens keep their meaning under the grown legend.
    assert decode(tokens_a["data"], grown_legend) == decode(tokens_a["data"], first_legend)

    # Another server with nothing new to the legend registers nothing.
    gamma = hub.client.open(hub.file("c.gamma", "x\n"), "gamma")
    assert decode((await hub.client.request(FULL, tokens_request(gamma)))["data"], grown_legend)[0][3] == "class"
    assert len(registrations(hub)) == 3


async def test_semantic_tokens_refresh_reaches_a_client_that_supports_it(start_hub: StartHub) -> None:
    refresh = [{"request": "workspace/semanticTokens/refresh", "params": None}]
    hub = await start_hub({"fakeA": token_server(LEGEND_A, TOKENS_A, on_initialized=refresh), "fakeB": {}},
                          capabilities=client_capabilities(dynamic=False, refresh=True))
    hub.client.open(hub.file("f.alpha", "x\n"), "alpha")
    await hub.client.wait_for(
        lambda: any(m == "workspace/semanticTokens/refresh" for m, _ in hub.client.server_requests), what="refresh")
    await hub.client.wait_for(
        lambda: any(r.get("response_to") == "workspace/semanticTokens/refresh" for r in hub.recorded("fakeA")),
        what="the client's answer back at the server")
