"""Verified writes against the real servers, through `lsp-hub mcp` and the MCP SDK's client: what an edit broke in
the files that depend on it, multi-file edits that land whole or not at all, undo, and two agents on one file."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import isolated_env, require_real_servers
from tests.mcp_client import McpClient

pytestmark = pytest.mark.real_server

LIB_PY = "def price(amount: int) -> int:\n    return amount * 2\n"
ONE_PY = "from shop.lib import price\n\n\ndef one() -> int:\n    return price(1)\n"
TWO_PY = "from shop import lib\n\n\ndef two() -> int:\n    return lib.price(2)\n"
# Broken before any write: its error is not the write's doing, so never reported as new.
THREE_PY = "from shop.lib import price\n\n\ndef three() -> int:\n    return price(3)\n\n\nbad: int = \"x\"\n"
OTHER_PY = "def other() -> int:\n    return 0\n"

LIB_TS = "export function price(amount: number): number {\n  return amount * 2;\n}\n"
ONE_TS = "import { price } from \"./lib\";\n\nexport function one(): number {\n  return price(1);\n}\n"
TWO_TS = "import * as lib from \"./lib\";\n\nexport function two(): number {\n  return lib.price(2);\n}\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dependents") / "project"
    (root / "shop").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = \"shop\"\nversion = \"0\"\n")
    (root / ".git").mkdir()
    for name, text in (("__init__.py", ""), ("lib.py", LIB_PY), ("one.py", ONE_PY), ("two.py", TWO_PY),
                       ("three.py", THREE_PY), ("other.py", OTHER_PY)):
        (root / "shop" / name).write_text(text)
    web = root / "web"
    web.mkdir()
    (web / "tsconfig.json").write_text(json.dumps({"compilerOptions": {"strict": True, "target": "es2020",
                                                                       "module": "commonjs"}}))
    for name, text in (("lib.ts", LIB_TS), ("one.ts", ONE_TS), ("two.ts", TWO_TS)):
        (web / name).write_text(text)
    return root


@pytest.fixture(scope="module")
def mcp(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpClient]:
    require_real_servers()
    client = McpClient("--no-daemon", "--root", str(project), "--timeout", "60",
                       env=isolated_env(tmp_path_factory.mktemp("home"), runtime=True))
    yield client
    client.close()


def _checked_before(mcp: McpClient, *files: str) -> None:
    """Let the servers give their verdict on the dependents first: a server still starting when the write comes
    gives none within the budget before it, and its issues are then of unknown age, not new
    (tests/test_write_dependents_baseline.py); what these tests check is what a warm server says."""
    for file in files:
        answer = mcp.call("lsp", {"action": "diagnostics", "file": file})
        assert not answer.is_error and answer.structured_content["complete"], answer.content[0].text


def _new_paths(answer: Any) -> list[str]:
    return sorted({diagnostic["path"] for diagnostic in answer.structured_content["dependents"]["new"]})


def test_a_signature_change_is_answered_with_what_it_broke_in_other_files_and_the_fix_with_it_resolved(
        mcp: McpClient, project: Path) -> None:
    _checked_before(mcp, "shop/one.py", "shop/two.py", "shop/three.py")
    changed = mcp.call("edit_file", {"path": "shop/lib.py", "old_text": "def price(amount: int)",
                                     "new_text": "def price(amount: int, rate: int)"})
    assert not changed.is_error, changed.content[0].text
    dependents = changed.structured_content["dependents"]
    assert {"shop/one.py", "shop/two.py", "shop/three.py"} <= set(dependents["checked"])
    assert "shop/other.py" not in dependents["checked"]  # it neither imports lib nor uses price
    assert _new_paths(changed) == ["shop/one.py", "shop/three.py", "shop/two.py"]
    assert all(d["source"] == "basedpyright" for d in dependents["new"])
    assert not any("bad" in d["message"] or d["line"] == 8 for d in dependents["new"])  # three.py's old error
    text = changed.content[0].text
    errors = [d for d in dependents["new"] if d["severity"] == "error"]
    assert sorted(d["path"] for d in errors) == ["shop/one.py", "shop/three.py", "shop/two.py"]
    assert all('Argument missing for parameter "rate"' in d["message"] for d in errors)
    assert f"[dependents] {len(dependents['new'])} new issue(s) in 3 other file(s):" in text
    assert 'shop/one.py:5:12 — Argument missing for parameter "rate" [basedpyright]' in text

    fixed = mcp.call("edit_file", {"path": "shop/lib.py", "old_text": "def price(amount: int, rate: int)",
                                   "new_text": "def price(amount: int)"})
    assert not fixed.is_error, fixed.content[0].text
    assert fixed.structured_content["dependents"]["new"] == []
    resolved = fixed.structured_content["dependents"]["resolved"]
    assert len(resolved) == len(dependents["new"])
    assert f"[dependents] {len(resolved)} issue(s) resolved in other files" in fixed.content[0].text


def test_typescript_dependents_are_checked_by_typescript_language_server(mcp: McpClient) -> None:
    _checked_before(mcp, "web/one.ts", "web/two.ts")
    changed = mcp.call("edit_file", {"path": "web/lib.ts", "old_text": "price(amount: number)",
                                     "new_text": "price(amount: number, rate: number)"})
    assert not changed.is_error, changed.content[0].text
    assert _new_paths(changed) == ["web/one.ts", "web/two.ts"]
    fixed = mcp.call("edit_file", {"path": "web/lib.ts", "old_text": "price(amount: number, rate: number)",
                                   "new_text": "price(amount: number)"})
    assert not fixed.is_error and fixed.structured_content["dependents"]["new"] == []
    assert len(fixed.structured_content["dependents"]["resolved"]) == len(changed.structured_content["dependents"][
        "new"])


def test_apply_edits_writes_all_or_nothing_and_undo_takes_writes_back(mcp: McpClient, project: Path) -> None:
    one, other = project / "shop" / "one.py", project / "shop" / "other.py"
    before = {path: path.read_bytes() for path in (one, other)}
    refused = mcp.call("apply_edits", {"edits": [
        {"path": "shop/other.py", "old_text": "return 0", "new_text": "return 10"},
        {"path": "shop/one.py", "old_text": "return price(1)", "new_text": "return price(1"}]})
    assert refused.is_error and "shop/one.py would have a syntax error" in refused.content[0].text
    assert {path: path.read_bytes() for path in before} == before  # neither file written

    applied = mcp.call("apply_edits", {"edits": [
        {"path": "shop/other.py", "old_text": "return 0", "new_text": "return 10"},
        {"path": "shop/new.py", "content": "NEW = 1\n"},
        {"path": "shop/one.py", "old_text": "return price(1)", "new_text": "return price(11)"}]})
    assert not applied.is_error, applied.content[0].text
    data = applied.structured_content
    assert data["written"] is True and [item["path"].rsplit("/", 1)[-1] for item in data["files"]] == [
        "other.py", "new.py", "one.py"]
    assert "return 10" in other.read_text() and "price(11)" in one.read_text()

    undone = mcp.call("undo", {})
    assert not undone.is_error, undone.content[0].text
    assert {path: path.read_bytes() for path in before} == before
    assert not (project / "shop" / "new.py").exists()  # the write created it: undo removes it
    assert sorted(undone.structured_content["undone"]) == ["shop/new.py", "shop/one.py", "shop/other.py"]

    mcp.call("edit_file", {"path": "shop/other.py", "old_text": "return 0", "new_text": "return 5"})
    other.write_text(other.read_text() + "# the user's own line\n")  # changed since that write
    refused_undo = mcp.call("undo", {})
    assert refused_undo.is_error and "shop/other.py changed since that write" in refused_undo.content[0].text
    assert other.read_text().endswith("# the user's own line\n")
    other.write_bytes(before[other])


# Each agent's verified edits, interleaved with the other's: each waits for the real servers' diagnostics (about a
# second here), so a dozen each overlap a dozen times. Twenty each took 20-23 s of a suite near its 10-minute bound.
EDITS_EACH = 12


def test_two_agents_editing_one_file_at_once_lose_nothing(project: Path,
                                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    target = project / "shop" / "many.py"
    target.write_text("".join(f"def a{index}() -> int:\n    return 0\n\n\ndef b{index}() -> int:\n    return 0\n\n\n"
                              for index in range(EDITS_EACH)))
    env = isolated_env(tmp_path_factory.mktemp("agents"), runtime=True)
    agents = [McpClient("--no-daemon", "--root", str(project), "--timeout", "60", env=env) for _ in range(2)]
    failures: list[str] = []

    def edit(agent: McpClient, name: str) -> None:
        for index in range(EDITS_EACH):
            answer = agent.call("edit_file", {"path": "shop/many.py",
                                              "old_text": f"def {name}{index}() -> int:\n    return 0",
                                              "new_text": f"def {name}{index}() -> int:\n    return 1"})
            if answer.is_error:
                failures.append(answer.content[0].text)

    try:
        threads = [threading.Thread(target=edit, args=(agent, name)) for agent, name in zip(agents, "ab",
                                                                                            strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
    finally:
        for agent in agents:
            agent.close()
    assert failures == []
    text = target.read_text()
    assert text.count("return 1") == 2 * EDITS_EACH and "return 0" not in text
