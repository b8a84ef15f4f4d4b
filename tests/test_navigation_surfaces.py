"""The index's navigation (issue #24) on its three surfaces: each `lspHub.*` command answers through the hub, each
`lsp-hub query` action prints its text (its JSON with --json, `complete` always there) with the exit codes of the
other actions, and each MCP tool of `lsp-hub mcp` answers the same text and structuredContent. No language server is
needed: the fake server here answers nothing about these files, and `symbols --query` still finds them."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.agents.mcp_tools import Tools, build_server
from lsp_hub.agents.query import HubConnection, query_main, spawn_hub
from tests.hubclient import fake_server_config, recorded

LANGUAGES = {"python": {"extensions": ["py"], "language_ids": ["python"], "servers": ["fakeA"]}}
FILES = {
    "shop/models.py": "class Cart:\n    def total(self):\n        return sum(self.prices())\n\n"
                      "    def prices(self):\n        return [1, 2]\n",
    "shop/service.py": "from shop.models import Cart\n\n\ndef checkout():\n    cart = Cart()\n"
                       "    return cart.total()\n",
    "tests/test_service.py": "from shop.service import checkout\n\n\ndef test_checkout():\n"
                             "    assert checkout() == 3\n",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, HubConnection, dict[str, str]]]:
    base = tmp_path_factory.mktemp("navigation")
    root = base / "ws"
    (root / ".git").mkdir(parents=True)
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "shop" / "__init__.py").write_text("")
    config = base / "config" / "lsp-hub" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(fake_server_config({"fakeA": {"diagnostics_on_open_and_change": [],
                                                    "responses": {"workspace/symbol": {"result": []}}}}, LANGUAGES))
    env = {"XDG_CONFIG_HOME": str(base / "config"), "XDG_CACHE_HOME": str(base / "cache")}
    connection = spawn_hub(root, env=env, owned=False)
    connection.initialize(root, 60.0)
    yield root, connection, env
    connection.owned = True
    connection.close()


def ask(connection: HubConnection, root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = query_main([*argv, "--root", str(root), "--timeout", "60"], out=out, err=err, connection=connection)
    return code, out.getvalue(), err.getvalue()


def test_each_action_answers_from_the_index(project: tuple[Path, HubConnection, dict[str, str]]) -> None:
    root, connection, _ = project
    code, text, err = ask(connection, root, "outline", str(root / "shop" / "models.py"))
    assert code == 0, err
    assert "class Cart" in text and "def total(self):" in text and "def prices(self):" in text

    code, text, err = ask(connection, root, "zoom", "--symbol", "Cart.total")
    assert code == 0, err
    assert "return sum(self.prices())" in text and "checkout" in text  # its source and its caller

    code, printed, err = ask(connection, root, "imports", str(root / "shop" / "service.py"), "--json")
    assert code == 0, err
    answer = json.loads(printed)
    assert answer["complete"] is True
    assert [entry["path"] for entry in answer["imports"]] == ["shop/models.py"]
    assert [entry["path"] for entry in answer["importedBy"]] == ["tests/test_service.py"]

    code, printed, err = ask(connection, root, "impact", "--symbol", "Cart.total", "--json")
    assert code == 0, err
    answer = json.loads(printed)
    assert "shop/service.py" in [entry["path"] for entry in answer["files"]]
    assert "tests/test_service.py" in [entry["path"] for entry in answer["tests"]]

    code, text, err = ask(connection, root, "search", "cart.total")
    assert code == 0, err
    assert "[checkout]" in text and "shop/service.py" in text  # the hit with its enclosing definition

    code, text, err = ask(connection, root, "call-tree", "--symbol", "checkout")
    assert code == 0, err
    assert "Cart.total" in text or "cart.total" in text

    code, text, err = ask(connection, root, "trace", "--symbol", "Cart.prices")
    assert code == 0, err
    assert "test_checkout" in text and "checkout" in text

    code, text, err = ask(connection, root, "context", "--description", "make checkout total the cart",
                          "--target", str(root / "shop" / "service.py"))
    assert code == 0, err
    assert "shop/models.py" in text

    code, printed, err = ask(connection, root, "symbols", "--query", "check", "--json")
    assert code == 0, err
    found = json.loads(printed)["symbols"]
    assert found and found[0]["name"] == "checkout" and found[0]["origin"] in ("index", "both")


def test_bad_input_gets_one_line_and_exit_2(project: tuple[Path, HubConnection, dict[str, str]]) -> None:
    root, connection, _ = project
    code, text, err = ask(connection, root, "zoom", "--symbol", "no_such_thing")
    assert code == 2 and not text and len(err.strip().splitlines()) == 1 and "unknown symbol" in err
    assert err.startswith("lsp-hub query: unknown symbol 'no_such_thing'"), err  # no protocol method before it
    code, text, err = ask(connection, root, "outline", "/etc/hostname")
    assert code == 2 and "outside the workspace" in err
    code, text, err = ask(connection, root, "search", "--structural", "$A.total()")
    assert code == 2 and "--lang" in err
    code, text, err = ask(connection, root, "search", "no such text anywhere")
    assert code == 1 and text.startswith("no match for 'no such text anywhere'")  # empty, and says so


async def test_the_mcp_tools_answer_the_same(project: tuple[Path, HubConnection, dict[str, str]],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    root, _, env = project
    monkeypatch.chdir(root.parent)
    tools = Tools(root, lambda workspace: spawn_hub(workspace, env=env), timeout=60.0, fenced=False)
    try:
        app = build_server(tools)
        listed = {tool.name for tool in await app.list_tools()}
        assert {"outline", "zoom", "imports", "impact", "search", "find_symbol", "context", "call_tree",
                "trace"} <= listed
        outline = await app.call_tool("outline", {"path": "shop/models.py"})
        assert not outline.is_error and "class Cart" in outline.content[0].text
        assert outline.structured_content["complete"] is True
        found = await app.call_tool("find_symbol", {"query": "Cart"})
        assert found.structured_content["symbols"][0]["name"] == "Cart"
        hits = await app.call_tool("search", {"pattern": "prices"})
        assert hits.structured_content["totalMatches"] == 2
        outside = await app.call_tool("outline", {"path": "../elsewhere.py"})
        assert outside.is_error and "\n" not in outside.content[0].text
    finally:
        tools.close()


def test_a_query_session_watches_files_instead_of_walking(project: tuple[Path, HubConnection, dict[str, str]]
                                                          ) -> None:
    root, connection, _ = project
    ask(connection, root, "outline", str(root / "shop" / "models.py"))  # the session has asked: the index is built
    deadline = time.monotonic() + 20
    watching: dict[str, Any] = {}
    while time.monotonic() < deadline and not watching:
        status = connection.request("workspace/executeCommand", {"command": "lspHub.status", "arguments": []}, 30)
        watching = status["index"].get("watching", {})
        time.sleep(0.2)
    assert watching and all(entry["watching"] for entry in watching.values()), watching
    (root / "shop" / "coupons.py").write_text("def apply_coupon(cart):\n    return cart\n")
    deadline = time.monotonic() + 5  # the watcher applies a change 20-120 ms after it (no walk, no wait per query)
    code, text, err = ask(connection, root, "symbols", "--query", "apply_coupon")
    while "shop/coupons.py" not in text and time.monotonic() < deadline:
        time.sleep(0.05)
        code, text, err = ask(connection, root, "symbols", "--query", "apply_coupon")
    assert code == 0 and "shop/coupons.py" in text, err


def test_symbols_open_a_file_for_a_server_that_answers_only_for_open_projects(tmp_path: Path) -> None:
    """tsserver answers `workspace/symbol` only for the projects of open files ("No Project"), and a query session
    has none open: the query opens the file of the index's best match and asks again, and the servers' symbols
    join the index's, the answer complete (before, every TypeScript query said the servers had failed)."""
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "shop").mkdir()
    (root / "shop" / "models.py").write_text(FILES["shop/models.py"])
    records = tmp_path / "records"
    records.mkdir()
    no_project = {"error": {"code": -32603, "message": "<semantic> TypeScript Server Error (5.9.3) No Project."}}
    found = {"result": [{"name": "Cart", "kind": 5, "location": {
        "uri": (root / "shop" / "models.py").as_uri(),
        "range": {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 10}}}}]}
    config = tmp_path / "config" / "lsp-hub" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(fake_server_config({"fakeA": {"diagnostics_on_open_and_change": [],
                                                    "responses": {"workspace/symbol": [no_project, found]}}},
                                         LANGUAGES, record_dir=records))
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    connection = spawn_hub(root, env=env)
    try:
        connection.initialize(root, 60.0)
        code, printed, err = ask(connection, root, "symbols", "--query", "Cart", "--json")
    finally:
        connection.close()
    assert code == 0, err
    answer = json.loads(printed)
    assert answer["complete"] is True and "reason" not in answer
    cart = next(entry for entry in answer["symbols"] if entry["name"] == "Cart")
    assert cart["origin"] == "both" and cart["column"] == 7
    methods = [message.get("method") for message in recorded(records, "fakeA")]
    asked = [index for index, method in enumerate(methods) if method == "workspace/symbol"]
    assert len(asked) == 2 and "textDocument/didOpen" in methods[asked[0]:asked[1]]
