"""`[hub] prestart`: an agent's session starts the servers of the languages its workspace holds before anything is
asked, and shows each the project's most defining file (opened and closed at once) so that it loads its project;
"never" starts nothing; an editor's session starts nothing by default."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.agents.agent_tools import AgentTools
from lsp_hub.agents.query import spawn_hub
from lsp_hub.proxy.prestart import wants_prestart
from tests.fake_server import read_record
from tests.hubclient import fake_server_config

SOURCE = "".join(f"def function_{n}():\n    return {n}\n\n" for n in range(6))
TEST_SOURCE = "".join(f"def test_{n}():\n    assert True\n\n" for n in range(12))


class Workspace:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "ws"
        (self.root / ".git").mkdir(parents=True)
        (self.root / "pkg").mkdir()
        (self.root / "pkg" / "core.py").write_text(SOURCE)
        (self.root / "pkg" / "small.py").write_text("def one():\n    return 1\n")
        (self.root / "tests").mkdir()
        (self.root / "tests" / "test_core.py").write_text(TEST_SOURCE)  # more definitions, but a test
        self.records = tmp_path / "records"
        self.records.mkdir()
        self.config_home = tmp_path / "config"
        self.env = {"XDG_CONFIG_HOME": str(self.config_home), "XDG_CACHE_HOME": str(tmp_path / "cache")}
        self.tools: list[AgentTools] = []

    def configure(self, hub: dict[str, Any] | None = None) -> None:
        (self.config_home / "lsp-hub").mkdir(parents=True, exist_ok=True)
        config = fake_server_config(
            {"fakePy": {}}, {"python": {"extensions": ["py"], "servers": ["fakePy"]}}, hub=hub, record_dir=self.records
        )
        (self.config_home / "lsp-hub" / "config.toml").write_text(config)

    def agent(self) -> AgentTools:
        tools = AgentTools(self.root, lambda root: spawn_hub(root, env=self.env), timeout=20.0)
        self.tools.append(tools)
        return tools

    def record(self) -> list[dict[str, Any]]:
        return read_record(self.records / "fakePy.jsonl")

    def wait_for(self, method: str, seconds: float = 15.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            entries = self.record()
            if any(entry.get("method") == method for entry in entries):
                return entries
            time.sleep(0.05)
        raise AssertionError(f"the server was never sent {method}: {self.record()}")


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    made = Workspace(tmp_path)
    yield made
    for tools in made.tools:
        tools.close()


def test_an_agent_session_starts_the_server_and_shows_it_the_most_defining_file(workspace: Workspace) -> None:
    workspace.configure()
    tools = workspace.agent()
    answer = tools.workspace_command("lspHub.outline", {"path": "pkg/small.py"})
    assert "one" in answer.text, answer.text  # nothing of pkg/core.py was asked
    entries = workspace.wait_for("textDocument/didClose")
    assert entries[0]["event"] == "start"
    opened = [entry["params"]["textDocument"] for entry in entries if entry.get("method") == "textDocument/didOpen"]
    assert [document["uri"].rsplit("/", 2)[-2:] for document in opened] == [["pkg", "core.py"]], opened
    assert opened[0]["text"] == SOURCE and opened[0]["languageId"] == "python"
    methods = [entry.get("method") for entry in entries]
    assert methods.index("initialized") < methods.index("textDocument/didOpen") < methods.index("textDocument/didClose")


def test_prestart_never_starts_nothing_until_asked(workspace: Workspace) -> None:
    workspace.configure({"prestart": "never"})
    tools = workspace.agent()
    answer = tools.workspace_command("lspHub.outline", {"path": "pkg/small.py"})
    assert "one" in answer.text, answer.text
    time.sleep(1.0)  # the index is built (the outline needed it): a prestart would have begun by now
    assert workspace.record() == []
    tools.lsp("hover", file="pkg/core.py", line=1, column=5)  # a question starts it as before
    assert workspace.wait_for("initialized")[0]["event"] == "start"


@pytest.mark.parametrize(
    ("policy", "client", "expected"),
    [
        ("agents", {"clientInfo": {"name": "lsp-hub query"}}, True),
        ("agents", {"clientInfo": {"name": "lsp-hub mcp"}}, True),
        ("agents", {"clientInfo": {"name": "Neovim"}}, False),
        ("agents", {}, False),
        ("always", {"clientInfo": {"name": "Neovim"}}, True),
        ("never", {"clientInfo": {"name": "lsp-hub query"}}, False),
    ],
)
def test_which_sessions_prestart(policy: str, client: dict[str, Any], expected: bool) -> None:
    assert wants_prestart(policy, client) is expected


def test_an_invalid_policy_is_one_clear_line(tmp_path: Path) -> None:
    from lsp_hub.config.loader import load_config

    config_file = tmp_path / "config.toml"
    config_file.write_text('[hub]\nprestart = "sometimes"\n')
    loaded = load_config(workspace_roots=[tmp_path], cli_config=config_file)
    problems = " ".join(str(problem) for problem in loaded.problems)
    assert 'hub.prestart: expected one of "agents", "always", "never"' in problems, problems
    assert loaded.config.hub.prestart == "agents"


def test_a_document_opened_without_a_language_id_gets_its_language_s(workspace: Workspace) -> None:
    """`lsp-hub query` opens files with languageId "": the hub names the language its configuration gives the file
    (tsserver told "" answered a definition from a partial view, after 3 s)."""
    workspace.configure({"prestart": "never"})
    workspace.agent().lsp("hover", file="pkg/small.py", line=1, column=5)
    entries = workspace.wait_for("textDocument/didOpen")
    opened = [entry["params"]["textDocument"] for entry in entries if entry.get("method") == "textDocument/didOpen"]
    assert [document["languageId"] for document in opened] == ["python"], opened


async def test_a_shown_server_is_presumed_loading_until_its_progress_ends() -> None:
    """Between the file shown and the server's first progress, a question must wait for the load too."""
    from lsp_hub.proxy.backends.server_progress import ServerProgress

    progress = ServerProgress()
    assert not progress.loading
    progress.expect_load(5.0)
    assert progress.loading  # nothing reported yet
    progress.note("tsserver-1", "begin", "Initializing JS/TS language features")
    assert progress.loading
    progress.note("tsserver-1", "end")
    assert not progress.loading and await progress.wait_loaded(0.1)

    silent = ServerProgress()
    silent.expect_load(0.2)
    assert silent.loading
    assert await silent.wait_loaded(2.0)  # it reported nothing: presumed loaded once the time is up
    assert not silent.loading


async def test_diagnostics_end_only_a_load_the_server_never_reports() -> None:
    """tsserver's syntax-only server publishes diagnostics before the load of a configured project begins: for a
    file with a tsconfig.json above it only the load's report (or the bound) ends the wait; for an inferred
    project's file, whose load it never reports, its diagnostics do."""
    from lsp_hub.proxy.backends.server_progress import ServerProgress

    configured = ServerProgress()
    configured.expect_load(5.0, reported=True)
    configured.note_diagnostics()  # the syntax server's, early
    assert configured.loading
    configured.note("tsserver-1", "begin", "Initializing JS/TS language features")
    configured.note_diagnostics()
    assert configured.loading
    configured.note("tsserver-1", "end")
    assert not configured.loading

    inferred = ServerProgress()
    inferred.expect_load(5.0)
    inferred.note_diagnostics()
    assert not inferred.loading and await inferred.wait_loaded(0.1)

    bounded = ServerProgress()
    bounded.expect_load(0.2, reported=True)
    bounded.note_diagnostics()
    assert await bounded.wait_loaded(2.0)  # a report that never comes: the bound still ends the wait


async def test_a_load_reported_after_the_bound_is_waited_for_all_the_same() -> None:
    """On a busy machine tsserver may begin reporting its project's load after the bound on the wait ran out: that
    load is the one expected, and answers wait for its end again (a definition meanwhile landed on the import line:
    seen once in the suite, under load). A load that ended in time does not make later progress a load."""
    from lsp_hub.proxy.backends.server_progress import ServerProgress

    late = ServerProgress()
    late.expect_load(0.1, reported=True)
    assert await late.wait_loaded(2.0)  # the bound ran out: presumed loaded
    late.note("tsserver-1", "begin", "Initializing JS/TS language features")
    assert late.loading
    late.note("tsserver-1", "end")
    assert not late.loading and await late.wait_loaded(0.1)
    late.note("tsserver-2", "begin", "Something else")
    assert not late.loading  # the late load came and ended: other progress is not one

    in_time = ServerProgress()
    in_time.expect_load(5.0, reported=True)
    in_time.note("tsserver-1", "begin", "Initializing JS/TS language features")
    in_time.note("tsserver-1", "end")
    in_time.note("tsserver-2", "begin", "Something else")
    assert not in_time.loading
