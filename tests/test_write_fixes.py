"""Fixes applied on request: `[hub] auto_code_actions` after a verified write, and a code action chosen by title."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import find_required_binary
from tests.mcp_client import McpClient

pytestmark = pytest.mark.real_server

UNUSED = "import os\nimport sys\n\nprint(sys.argv)\n"


def _client(root: Path, home: Path, *extra: str) -> McpClient:
    (home / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {"XDG_CONFIG_HOME": str(home / "cfg"), "XDG_CACHE_HOME": str(home / "cache"),
           "XDG_RUNTIME_DIR": str(home / "run")}
    return McpClient("--no-daemon", "--root", str(root), "--timeout", "60", *extra, env=env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    find_required_binary("ruff")
    root = tmp_path / "project"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = \"fixes\"\nversion = \"0\"\n")
    return root


@pytest.fixture
def fixing(project: Path, tmp_path: Path) -> Iterator[McpClient]:
    config = tmp_path / "hub.toml"
    config.write_text("[language.python]\nauto_code_actions = true\n")
    client = _client(project, tmp_path / "home", "--config", str(config))
    yield client
    client.close()


def test_auto_code_actions_apply_the_servers_fixes_and_say_so(fixing: McpClient, project: Path) -> None:
    answer = fixing.call("write_file", {"path": "tool.py", "content": UNUSED})
    assert not answer.is_error, answer.content[0].text
    assert (project / "tool.py").read_text() == "import sys\n\nprint(sys.argv)\n"
    fixes = answer.structured_content["applied_fixes"]
    assert fixes and "tool.py" in fixes[0]
    assert "applied: " in answer.content[0].text


def test_by_default_a_write_changes_only_what_it_wrote_and_a_fix_is_applied_by_title(project: Path,
                                                                                       tmp_path: Path) -> None:
    client = _client(project, tmp_path / "home")
    try:
        answer = client.call("write_file", {"path": "tool.py", "content": UNUSED})
        assert not answer.is_error and "applied_fixes" not in answer.structured_content
        assert (project / "tool.py").read_text() == UNUSED
        listed = client.call("lsp", {"action": "code_actions", "file": "tool.py", "line": 1, "column": 8})
        titles = [action["title"] for action in listed.structured_content["actions"]]
        assert any("Remove unused import" in title for title in titles), titles
        applied = client.call("lsp", {"action": "code_actions", "file": "tool.py", "line": 1, "column": 8,
                                      "apply": "remove unused import"})
        assert not applied.is_error, applied.content[0].text
        assert (project / "tool.py").read_text() == "import sys\n\nprint(sys.argv)\n"
        missing = client.call("lsp", {"action": "code_actions", "file": "tool.py", "line": 1, "column": 8,
                                      "apply": "no such fix"})
        assert missing.is_error and "no action is titled 'no such fix'" in missing.content[0].text
    finally:
        client.close()
