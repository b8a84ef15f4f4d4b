"""Features whose options differ per language: registered per language once servers run, or advertised statically."""

from __future__ import annotations

from typing import Any

import pytest

from tests.hub_fixtures import StartHub

pytestmark = pytest.mark.asyncio

DYNAMIC = {name: {"dynamicRegistration": True} for name in
           ("completion", "signatureHelp", "onTypeFormatting", "codeAction", "colorProvider", "inlineValue",
            "moniker")}
STATIC_PROVIDERS = ("completionProvider", "signatureHelpProvider", "documentOnTypeFormattingProvider",
                    "codeActionProvider", "colorProvider", "inlineValueProvider", "monikerProvider")


def registered(server_requests: list[tuple[str, Any]]) -> dict[str, dict[str, Any]]:
    """What a client holds after applying the hub's register/unregister requests in order: id -> registration."""
    held: dict[str, dict[str, Any]] = {}
    for method, params in server_requests:
        if method == "client/registerCapability":
            held.update({r["id"]: r for r in params["registrations"]})
        elif method == "client/unregisterCapability":
            for r in params["unregisterations"]:
                held.pop(r["id"], None)
    return held


async def test_a_client_that_cannot_register_gets_a_static_union(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}})
    capabilities = hub.extra["initialize"]["capabilities"]
    for provider in STATIC_PROVIDERS:
        assert provider in capabilities, provider
    assert "source.organizeImports" in capabilities["codeActionProvider"]["codeActionKinds"]
    assert "." in capabilities["completionProvider"]["triggerCharacters"]


async def test_features_are_registered_per_language_with_what_its_running_servers_offer(
        start_hub: StartHub) -> None:
    hub = await start_hub({
        "fakeA": {"capabilities": {"textDocumentSync": 2, "completionProvider": {"triggerCharacters": ["."]},
                                   "codeActionProvider": {"codeActionKinds": ["quickfix"]},
                                   "documentOnTypeFormattingProvider": {"firstTriggerCharacter": "}",
                                                                        "moreTriggerCharacter": [";"]}},
                  "responses": {"textDocument/onTypeFormatting": {"result": [{"newText": "{name}", "range": {
                      "start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}}]}}},
        "fakeB": {"capabilities": {"textDocumentSync": 2, "completionProvider": {"triggerCharacters": ["@", "."]},
                                   "codeActionProvider": {"codeActionKinds": ["quickfix", "source.organizeImports"]},
                                   "documentOnTypeFormattingProvider": {"firstTriggerCharacter": "\n"},
                                   "colorProvider": True}},
    }, capabilities={"textDocument": DYNAMIC, "workspace": {"configuration": True}})
    capabilities = hub.extra["initialize"]["capabilities"]
    for provider in STATIC_PROVIDERS:
        assert provider not in capabilities, provider  # registered per language instead
    uri = hub.client.open(hub.file("x.alpha", "a\n"), "alpha")
    hub.client.open(hub.file("x.beta", "b\n"), "beta")

    def by_language_and_method() -> dict[tuple[str, str], dict[str, Any]]:
        return {(r["id"].split("/")[1], r["method"]): r["registerOptions"]
                for r in registered(hub.client.server_requests).values()}

    await hub.client.wait_for(lambda: ("alpha", "textDocument/documentColor") in by_language_and_method()
                              and by_language_and_method()[("alpha", "textDocument/completion")]
                              ["triggerCharacters"] == [".", "@"], what="alpha's registrations from both servers")
    held = by_language_and_method()
    alpha_completion = held[("alpha", "textDocument/completion")]
    assert {"language": "alpha"} in alpha_completion["documentSelector"]
    assert held[("alpha", "textDocument/codeAction")]["codeActionKinds"] == ["quickfix", "source.organizeImports"]
    # on-type formatting is answered by the first capable server: its triggers, not a union
    assert held[("alpha", "textDocument/onTypeFormatting")] == {
        "documentSelector": alpha_completion["documentSelector"], "firstTriggerCharacter": "}",
        "moreTriggerCharacter": [";"]}
    # beta is served by fakeB alone
    assert held[("beta", "textDocument/completion")]["triggerCharacters"] == ["@", "."]
    assert ("beta", "textDocument/moniker") not in held and ("alpha", "textDocument/inlineValue") not in held
    # one registration per (language, method): the client never asks twice
    ids = [r["id"] for r in registered(hub.client.server_requests).values()]
    assert len(ids) == len(set(ids)) == len(held)
    edits = await hub.client.request("textDocument/onTypeFormatting", {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}, "ch": "}",
        "options": {"tabSize": 4, "insertSpaces": True}})
    assert edits[0]["newText"] == "fakeA"
