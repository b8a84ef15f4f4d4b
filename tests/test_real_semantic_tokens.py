"""Semantic tokens from the real servers through `lsp-hub`, decoded with the legend the hub gave the client."""

from __future__ import annotations

import asyncio
import copy
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from lsp_hub.proxy.semantic_tokens import STANDARD_TOKEN_MODIFIERS, STANDARD_TOKEN_TYPES, decode
from lsp_hub.transport.rawclient import DEFAULT_CLIENT_CAPABILITIES, HubClient, position_of
from tests.conftest import EXAMPLES_DIR

pytestmark = [pytest.mark.asyncio, pytest.mark.real_server]

SLOW = 90.0  # first answers of a cold basedpyright/tsserver on a loaded 2-core machine
FULL = "textDocument/semanticTokens/full"
DELTA = "textDocument/semanticTokens/full/delta"

# One function `greet` and one class `Shop` per language, used once each.
SOURCES = {
    "app/shop.py": ("python", "class Shop:\n    pass\n\n\ndef greet(name: str) -> str:\n"
                              "    return name\n\n\nshop = Shop()\ngreet('x')\n"),
    "web/src/shop.ts": ("typescript", "export class Shop {}\n\nexport function greet(name: string): string {\n"
                                      "  return name;\n}\n\nconst shop = new Shop();\ngreet('x');\n"),
    "native/cpp/shop.cpp": ("cpp", "class Shop {};\n\nint greet(int x) { return x; }\n\n"
                               "int main() { Shop shop; (void)shop; return greet(1); }\n"),
}


def token_capabilities(*, dynamic: bool) -> dict[str, Any]:
    capabilities = copy.deepcopy(DEFAULT_CLIENT_CAPABILITIES)
    capabilities["textDocument"]["semanticTokens"] = {
        "dynamicRegistration": dynamic, "requests": {"full": {"delta": True}, "range": True},
        "tokenTypes": list(STANDARD_TOKEN_TYPES), "tokenModifiers": list(STANDARD_TOKEN_MODIFIERS),
        "formats": ["relative"], "multilineTokenSupport": False, "overlappingTokenSupport": False}
    capabilities["workspace"]["semanticTokens"] = {"refreshSupport": True}
    return capabilities


@pytest.fixture
def shop_sample(tmp_path: Path) -> Path:
    """A private copy of examples/sample with the test's own files added."""
    target = tmp_path / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", target, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    for relative, (_, text) in SOURCES.items():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).write_text(text)
    # The sample's C flags (-std=c11) would make clang refuse a C++ file.
    (target / "native" / "cpp" / "compile_flags.txt").write_text("-std=c++17\n")
    return target


StartTokensHub = Callable[[Path, bool], Awaitable[tuple[HubClient, dict[str, Any]]]]


@pytest_asyncio.fixture
async def tokens_hub(tmp_path: Path) -> AsyncIterator[StartTokensHub]:
    """start(root, dynamic) -> (an initialized hub whose client does semantic tokens, the initialize answer)."""
    clients: list[HubClient] = []

    async def start(root: Path, dynamic: bool) -> tuple[HubClient, dict[str, Any]]:
        client = HubClient()
        env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
        await client.start("--log-file", str(tmp_path / "hub.log"), "-v", env=env, cwd=str(root))
        clients.append(client)
        answer = await client.initialize(root, capabilities=token_capabilities(dynamic=dynamic))
        return client, answer

    yield start
    for client in clients:
        await client.stop()


def registered_legend(client: HubClient) -> dict[str, list[str]] | None:
    """The legend of the hub's latest textDocument/semanticTokens registration."""
    legends = [entry["registerOptions"]["legend"] for method, params in client.server_requests
               if method == "client/registerCapability" for entry in params["registrations"]
               if entry["method"] == "textDocument/semanticTokens"]
    return legends[-1] if legends else None


def token_at(tokens: list[tuple[int, int, int, str, list[str]]], text: str, needle: str) -> tuple[str, list[str]]:
    position = position_of(text, needle)
    for line, start, length, token_type, modifiers in tokens:
        if line == position["line"] and start == position["character"] and length == len(needle):
            return token_type, modifiers
    raise AssertionError(f"no token at {needle!r} {position}: {tokens}")


async def tokens_of(client: HubClient, uri: str, legend: dict[str, list[str]], text: str) -> dict[str, Any]:
    """Full tokens, asked until the server names both `greet` and `Shop` (servers answer once they analysed)."""
    answer: dict[str, Any] = {}
    for _ in range(60):
        answer = await client.request(FULL, {"textDocument": {"uri": uri}}, timeout=SLOW) or {}
        tokens = decode(answer.get("data") or [], legend)
        try:
            token_at(tokens, text, "greet")
            token_at(tokens, text, "Shop")
            return answer
        except AssertionError:
            await asyncio.sleep(0.5)
    return answer


@pytest.mark.parametrize(("server", "relative", "greet_type", "dynamic"), [
    ("basedpyright-langserver", "app/shop.py", "function", False),
    ("typescript-language-server", "web/src/shop.ts", "function", True),
    ("clangd", "native/cpp/shop.cpp", "function", False),
])
async def test_tokens_name_greet_a_function_and_shop_a_class(  # type: ignore[no-untyped-def]
        shop_sample: Path, tokens_hub: StartTokensHub, require_binary,
        server: str, relative: str, greet_type: str, dynamic: bool) -> None:
    require_binary(server)
    client, answer = await tokens_hub(shop_sample, dynamic)
    language, text = SOURCES[relative]
    uri = client.open(shop_sample / relative, language)
    if dynamic:
        assert "semanticTokensProvider" not in answer["capabilities"]
        legend = await client.wait_for(lambda: registered_legend(client), timeout=SLOW, what="registration")
    else:
        legend = answer["capabilities"]["semanticTokensProvider"]["legend"]
    tokens = await tokens_of(client, uri, legend, text)
    decoded = decode(tokens.get("data") or [], legend)
    assert token_at(decoded, text, "greet")[0] == greet_type
    assert token_at(decoded, text, "Shop")[0] == "class"


async def test_clangd_delta_through_the_hub_with_its_own_legend(  # type: ignore[no-untyped-def]
        shop_sample: Path, tokens_hub: StartTokensHub, require_binary) -> None:
    """A client that registers dynamically gets clangd's own modifiers, and clangd's deltas apply to the hub's
    remapped data."""
    require_binary("clangd")
    client, _ = await tokens_hub(shop_sample, True)
    relative = "native/cpp/shop.cpp"
    language, text = SOURCES[relative]
    uri = client.open(shop_sample / relative, language)
    legend = await client.wait_for(lambda: registered_legend(client), timeout=SLOW, what="registration")
    assert legend["tokenTypes"][: len(STANDARD_TOKEN_TYPES)] == list(STANDARD_TOKEN_TYPES)
    first = await tokens_of(client, uri, legend, text)
    assert token_at(decode(first["data"], legend), text, "greet") == (
        "function", ["declaration", "definition", "globalScope"])  # globalScope: clangd's own modifier

    new_text = "// a comment line\n" + text
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": new_text}]})
    delta = await client.request(DELTA, {"textDocument": {"uri": uri}, "previousResultId": first["resultId"]},
                                 timeout=SLOW)
    assert "edits" in delta, delta  # clangd answered a delta, so the hub sent it to clangd with clangd's own id
    data = list(first["data"])
    for edit in sorted(delta["edits"], key=lambda e: e["start"], reverse=True):
        data[edit["start"]:edit["start"] + edit["deleteCount"]] = edit.get("data", [])
    tokens = decode(data, legend)
    assert token_at(tokens, new_text, "greet")[0] == "function"
    assert token_at(tokens, new_text, "Shop")[0] == "class"
