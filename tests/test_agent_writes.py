"""The agent tools' writes (what `lsp-hub mcp` runs) in front of fake servers: answers that match what happened,
edits that change only what they edit, clear refusals, and two writers that both land."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.agents.agent_tools import AgentTools, ToolFailure
from lsp_hub.agents.query import HubConnection, spawn_hub
from tests.hubclient import fake_server_config

RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
REPORTS = {"diagnostics_on_open_and_change": [{"range": RANGE, "message": "bad", "when_text_contains": "bad"}]}
RENAMES = {"capabilities": {"textDocumentSync": 2, "renameProvider": True},
           "responses": {"textDocument/rename": {"result": {"documentChanges": [{
               "textDocument": {"uri": "{uri}", "version": None},
               "edits": [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 1}},
                          "newText": "renamed"}]}]}}},
           **REPORTS}


class Agents:
    """AgentTools over hubs of their own (each a `python -m lsp_hub` child) in front of the fake servers."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.root = tmp_path / "ws"
        self.root.mkdir()
        self.made: list[AgentTools] = []

    def tools(self, servers: dict[str, dict[str, Any]], *, timeout: float = 20.0,
              language: tuple[str, str] = ("alpha", "alpha")) -> AgentTools:
        """Tools whose hub serves `language` (name, extension) with the fake `servers`."""
        config_home = self.tmp_path / "config"
        (config_home / "lsp-hub").mkdir(parents=True, exist_ok=True)
        name, extension = language
        languages = {name: {"extensions": [extension], "language_ids": [name], "servers": list(servers)}}
        (config_home / "lsp-hub" / "config.toml").write_text(fake_server_config(servers, languages))
        env = {"XDG_CONFIG_HOME": str(config_home), "XDG_CACHE_HOME": str(self.tmp_path / "cache")}

        def connect(root: Path) -> HubConnection:
            return spawn_hub(root, env=env)

        tools = AgentTools(self.root, connect, timeout=timeout)
        self.made.append(tools)
        return tools


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Agents]:
    made = Agents(tmp_path)
    yield made
    for tools in made.made:
        tools.close()


# ================================================================================================ what happened
def test_a_write_whose_diagnostics_never_come_is_answered_written_before_the_deadline(agents: Agents) -> None:
    tools = agents.tools({"fakeA": {}}, timeout=4.0)  # fakeA never publishes diagnostics
    tools.check_syntax("warm.alpha", "x\n")  # the hub runs
    started = time.monotonic()
    answer = tools.write_file("a.alpha", "x = 1\n")
    took = time.monotonic() - started
    assert (agents.root / "a.alpha").read_text() == "x = 1\n"
    assert answer.data["written"] is True and answer.data["complete"] is False
    assert answer.data["pending"] == ["fakeA"]
    assert "no report from fakeA" in answer.text
    assert took < 4.0, took  # the hub answered before this side's own deadline


def test_a_hub_lost_after_the_write_still_answers_written_and_the_next_call_works(agents: Agents) -> None:
    tools = agents.tools({"fakeA": {**REPORTS, "diagnostics_delay": 3.0}}, timeout=30.0)
    tools.check_syntax("warm.alpha", "x\n")
    answers: list[Any] = []
    writer = threading.Thread(target=lambda: answers.append(_outcome(tools.write_file, "b.alpha", "y = 2\n")))
    writer.start()
    target = agents.root / "b.alpha"
    deadline = time.monotonic() + 20
    while not (target.exists() and target.read_text() == "y = 2\n") and time.monotonic() < deadline:
        time.sleep(0.01)
    connection = tools._connection
    assert connection is not None and connection.process is not None
    connection.process.kill()  # the hub dies while the write waits for diagnostics
    writer.join(30)
    [answer] = answers
    assert not isinstance(answer, ToolFailure), answer
    assert answer.data["written"] is True and answer.data["complete"] is False
    assert "diagnostics not checked" in answer.text and answer.data["diagnostics_error"]
    assert tools.write_file("c.alpha", "z = 3\n").data["written"] is True  # a new session serves the next call


def _outcome(function: Any, *args: Any) -> Any:
    try:
        return function(*args)
    except ToolFailure as failure:
        return failure


# ===================================================================================== edits change only what they edit
def test_crlf_files_keep_their_line_ends_through_edits_writes_and_renames(agents: Agents) -> None:
    tools = agents.tools({"fakeA": RENAMES})
    target = agents.root / "w.alpha"
    target.write_bytes(b"first\r\nsecond\r\nthird\r\n")
    tools.edit_file("w.alpha", "second\n", "second\nadded\n")  # the agent writes "\n"
    assert target.read_bytes() == b"first\r\nsecond\r\nadded\r\nthird\r\n"
    tools.edit_file("w.alpha", "added\r\nthird", "added\r\nlast")  # ... or copies "\r\n"
    assert target.read_bytes() == b"first\r\nsecond\r\nadded\r\nlast\r\n"
    own = target.read_bytes()
    answer = tools.write_file("w.alpha", own.decode())
    assert target.read_bytes() == own and answer.data["unchanged"] is True
    tools.write_file("w.alpha", "one\ntwo")  # no final newline, "\n": the file's form is kept
    assert target.read_bytes() == b"one\r\ntwo\r\n"
    tools.lsp("rename", file="w.alpha", line=2, column=1, new_name="renamed", apply=True)
    assert target.read_bytes() == b"one\r\nrenamedwo\r\n"  # the server's edit, on the text as it is on disk


def test_refusals_are_one_sentence_and_force_replaces_a_read_only_file(agents: Agents) -> None:
    tools = agents.tools({"fakeA": REPORTS})
    frozen = agents.root / "frozen.alpha"
    frozen.write_text("old\n")
    frozen.chmod(0o444)
    with pytest.raises(ToolFailure, match="read-only") as refused:
        tools.write_file("frozen.alpha", "new\n")
    assert "\n" not in str(refused.value) and frozen.read_text() == "old\n"
    assert tools.edit_file("frozen.alpha", "old", "new", force=True).data["written"] is True
    assert frozen.read_text() == "new\n"
    with pytest.raises(ToolFailure, match="255"):
        tools.write_file("x" * 300 + ".alpha", "x\n")
    assert tools.write_file("~notes.alpha", "x\n").data["written"] is True
    assert (agents.root / "~notes.alpha").read_text() == "x\n"
    assert not any(name.startswith(".lsp-hub-") for name in os.listdir(agents.root))


# ================================================================================================ two writers
def test_two_agents_editing_one_file_at_once_both_land(agents: Agents) -> None:
    target = agents.root / "shared.alpha"
    target.write_text("".join(f"a{index} = 0\nb{index} = 0\n" for index in range(12)))
    first, second = agents.tools({"fakeA": REPORTS}), agents.tools({"fakeA": REPORTS})
    failures: list[BaseException] = []

    def edit(tools: AgentTools, name: str) -> None:
        try:
            for index in range(12):
                tools.edit_file("shared.alpha", f"{name}{index} = 0\n", f"{name}{index} = 1\n")
        except BaseException as error:  # reported by the assertion below
            failures.append(error)

    threads = [threading.Thread(target=edit, args=(first, "a")), threading.Thread(target=edit, args=(second, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == []
    text = target.read_text()
    assert [line for line in text.splitlines() if line.endswith("= 0")] == [], text
    assert text.count("= 1\n") == 24


# ================================================================================================ honest answers
def test_an_empty_point_answer_says_why(agents: Agents) -> None:
    busy = {"on_initialized": [
        {"request": "window/workDoneProgress/create", "params": {"token": "load"}},
        {"notify": "$/progress",
         "params": {"token": "load", "value": {"kind": "begin", "title": "Indexing 40 files"}}}]}
    (agents.root / "m.alpha").write_text("alpha beta\n")
    quiet = agents.tools({"fakeA": REPORTS})
    answer = quiet.lsp("hover", file="m.alpha", line=1, column=1)
    assert answer.data["empty_reason"] == "nothing"
    assert answer.text == "no hover information here: fakeA found nothing here"
    loaded = agents.tools({"fakeB": {**REPORTS, **busy}})
    deadline = time.monotonic() + 10
    while True:  # the progress arrives after the server's start
        answer = loaded.lsp("hover", file="m.alpha", line=1, column=1)
        if answer.data.get("empty_reason") == "busy" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert answer.data["empty_reason"] == "busy", answer.text
    assert "fakeB (Indexing 40 files) is busy" in answer.text
    with pytest.raises(ToolFailure, match=r"no language server serves m\.txt"):
        (agents.root / "m.txt").write_text("x\n")
        quiet.lsp("hover", file="m.txt", line=1, column=1)


def test_a_file_over_the_check_limit_is_written_and_says_why_it_was_not_checked(agents: Agents) -> None:
    tools = agents.tools({"fakeA": REPORTS})
    big = "x = 1\n" * 200_000  # 1.2 MB, over the default 1 MB limit
    answer = tools.write_file("big.py", big)
    assert (agents.root / "big.py").read_text() == big
    assert answer.data["written"] is True and answer.data["syntax_ok"] is None
    assert answer.data["syntax_skipped_reason"] == "big.py is 1.2 MB, over the 1.0 MB limit for checks " \
        "([hub] max_document_bytes)"
    assert "syntax not checked (big.py is 1.2 MB" in answer.text
    assert answer.data["complete"] is False and "not sent to the servers" in answer.text


def test_an_import_a_write_breaks_in_another_file_is_reported_at_once_by_the_index(agents: Agents) -> None:
    """The fake server finds nothing anywhere: the break is the index's (lspHub.dependents before the write,
    lspHub.importedNames after), known without any server checking the importer."""
    (agents.root / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (agents.root / "pkg").mkdir()
    (agents.root / "pkg" / "__init__.py").write_text("")
    (agents.root / "pkg" / "utils.py").write_text("def make_str(value):\n    return str(value)\n")
    (agents.root / "pkg" / "core.py").write_text("from pkg.utils import make_str\n\nprint(make_str(1))\n")
    (agents.root / "pkg" / "cli.py").write_text("from pkg import utils\n\nprint(utils.make_str(2))\n")
    tools = agents.tools({"fakeA": REPORTS}, language=("python", "py"))
    answer = tools.edit_file("pkg/utils.py", "def make_str(", "def make_string(")
    new = sorted(answer.data["dependents"]["new"], key=lambda issue: issue["path"])
    assert new == [{"path": "pkg/cli.py", "line": 3, "column": 13, "end_line": 3, "end_column": 21,
                    "severity": "error", "source": "lsp-hub", "code": "broken-import",
                    "message": "uses utils.make_str from pkg/utils.py, which no longer provides it"},
                   {"path": "pkg/core.py", "line": 1, "column": 1, "end_line": 1, "end_column": 31,
                    "severity": "error", "source": "lsp-hub", "code": "broken-import",
                    "message": "imports make_str from pkg/utils.py, which no longer provides it"}], answer.text
    assert ("[dependents] 2 new issue(s) in 2 other file(s):\n  pkg/cli.py:3:13 — uses utils.make_str from "
            "pkg/utils.py, which no longer provides it [lsp-hub]\n  pkg/core.py:1:1 — imports make_str from "
            "pkg/utils.py, which no longer provides it [lsp-hub]") in answer.text
    fixed = tools.edit_file("pkg/core.py", "import make_str", "import make_string as make_str")
    assert fixed.data["dependents"]["new"] == []
    (agents.root / "pkg" / "cli.py").unlink()
    back = tools.edit_file("pkg/utils.py", "def make_string(", "def make_str(")
    assert back.data["dependents"]["new"][0]["message"] == (
        "imports make_string from pkg/utils.py, which no longer provides it")
