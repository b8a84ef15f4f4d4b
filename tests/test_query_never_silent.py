"""`lsp-hub query diagnostics` and the MCP tools in front of fake servers: never a silent clean. Who checked and who
could not is in the answer; exit codes follow the linters (0 clean, 1 issues, 2 not checked); a directory is
checked file by file."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.agents.agent_tools import AgentTools
from lsp_hub.agents.query import HubConnection, query_main, spawn_hub
from tests.hubclient import REPO_ROOT, fake_server_config

RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
CHECKER = {"diagnostics_on_open_and_change": [{"range": RANGE, "message": "bad here", "when_text_contains": "bad"}]}
MISSING = {"_config": {"command": "/nonexistent/ghost-language-server"}}


class Project:
    """A workspace with a configuration of fake servers (the user's config file), and hubs over it."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "ws"
        self.root.mkdir()
        (self.root / ".git").mkdir()
        self.config_home = tmp_path / "config"
        self.env = {"XDG_CONFIG_HOME": str(self.config_home), "XDG_CACHE_HOME": str(tmp_path / "cache")}
        self.connections: list[HubConnection] = []
        self.tools: list[AgentTools] = []

    def configure(self, servers: dict[str, dict[str, Any]], languages: dict[str, Any]) -> None:
        (self.config_home / "lsp-hub").mkdir(parents=True, exist_ok=True)
        (self.config_home / "lsp-hub" / "config.toml").write_text(fake_server_config(servers, languages))

    def file(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def ask(self, *argv: str) -> tuple[int, str, str]:
        connection = spawn_hub(self.root, env=self.env)
        self.connections.append(connection)
        out, err = io.StringIO(), io.StringIO()
        code = query_main([*argv, "--root", str(self.root), "--timeout", "20"], out=out, err=err,
                          connection=connection)
        return code, out.getvalue(), err.getvalue()

    def agent(self) -> AgentTools:
        tools = AgentTools(self.root, lambda root: spawn_hub(root, env=self.env), timeout=20.0)
        self.tools.append(tools)
        return tools


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    made = Project(tmp_path)
    yield made
    for tools in made.tools:
        tools.close()


def alpha(*servers: str) -> dict[str, Any]:
    return {"alpha": {"extensions": ["alpha"], "servers": list(servers)}}


def test_a_file_whose_only_server_is_missing_is_not_checked_exit_2(project: Project) -> None:
    project.configure({"fakeA": MISSING}, alpha("fakeA"))
    broken = project.file("app/broken.alpha", "bad\n")
    code, out, err = project.ask("diagnostics", str(broken))
    assert code == 2, (code, out, err)
    assert "no issues" not in out
    assert out.startswith("not checked for ") and "broken.alpha: no alpha server ran — fakeA is not installed" in out
    [line] = err.splitlines()
    assert line.startswith("lsp-hub query diagnostics: not checked") and "fakeA is not installed" in line, err
    code, out, _ = project.ask("diagnostics", str(broken), "--json")
    answer = json.loads(out)
    assert code == 2 and answer["complete"] is False and answer["checkedBy"] == []
    assert [(entry["server"], entry["reason"]) for entry in answer["notChecked"]] == [("fakeA", "missing")]


def test_exit_codes_follow_the_linters(project: Project) -> None:
    project.configure({"fakeA": CHECKER, "fakeB": MISSING}, alpha("fakeA", "fakeB"))
    clean, broken = project.file("clean.alpha", "fine\n"), project.file("broken.alpha", "bad\n")
    code, out, err = project.ask("diagnostics", str(clean))
    assert code == 0 and out.splitlines()[0] == "no issues", (code, out, err)
    assert "(not checked by fakeB: it is not installed)" in out  # a server that could not check is named, still
    code, out, err = project.ask("diagnostics", str(broken))
    assert code == 1 and "bad here" in out and err == "", (code, out, err)
    code, out, err = project.ask("diagnostics", str(project.file("notes.zeta", "bad\n")))
    assert code == 2 and "no language is configured for notes.zeta" in err, (code, out, err)


def test_a_directory_is_checked_file_by_file(project: Project) -> None:
    project.configure({"fakeA": CHECKER}, alpha("fakeA"))
    project.file("src/one.alpha", "bad\n")
    project.file("src/deep/two.alpha", "ok\nbad\n")
    project.file("src/fine.alpha", "fine\n")
    project.file("src/readme.txt", "bad\n")  # no language: not a file to check
    project.file("node_modules/dep/x.alpha", "bad\n")  # skipped directories
    project.file(".hidden/y.alpha", "bad\n")
    project.file("build/z.alpha", "bad\n")
    code, out, err = project.ask("diagnostics", str(project.root), "--json")
    answer = json.loads(out)
    assert code == 1, (code, out, err)
    assert sorted(Path(d["path"]).relative_to(project.root).as_posix() for d in answer["diagnostics"]) == [
        "src/deep/two.alpha", "src/one.alpha"]
    assert answer["files"] == 3 and answer["complete"] is True and answer["checkedBy"] == ["fakeA"]
    # --limit caps the files checked: the answer says the rest was not.
    code, out, err = project.ask("diagnostics", str(project.root / "src"), "--limit", "2", "--json")
    answer = json.loads(out)
    assert answer["files"] == 2 and answer["complete"] is False and answer["skippedFiles"]["limit"] == 1
    code, out, err = project.ask("diagnostics", str(project.root / "src"), "--limit", "2")
    assert "1 more file(s) past --limit 2" in out, out
    # A directory with nothing a server serves is not a clean one.
    project.file("docs/readme.txt", "bad\n")
    code, out, err = project.ask("diagnostics", str(project.root / "docs"), "--json")
    assert code == 2 and json.loads(out)["complete"] is False and "no file here" in err, (code, out, err)


def test_a_directory_with_a_missing_server_says_so(project: Project) -> None:
    project.configure({"fakeA": MISSING}, alpha("fakeA"))
    project.file("a.alpha", "bad\n")
    project.file("b.alpha", "bad\n")
    code, out, err = project.ask("diagnostics", str(project.root))
    assert code == 2, (code, out, err)
    assert out.startswith("not checked for 2 files (") and "b.alpha): no alpha server ran — fakeA is not installed" \
        in out, out
    assert err.count("\n") == 1 and "fakeA is not installed" in err


def test_the_command_line_exits_2_with_the_line_on_stderr(project: Project) -> None:
    project.configure({"fakeA": MISSING}, alpha("fakeA"))
    project.file("broken.alpha", "bad\n")
    env = {**os.environ, **project.env, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-m", "lsp_hub", "query", "diagnostics", "broken.alpha", "--no-daemon"],
                          cwd=project.root, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "fakeA is not installed" in done.stderr and "no issues" not in done.stdout
    helped = subprocess.run([sys.executable, "-m", "lsp_hub", "query", "--help"], env=env, capture_output=True,
                            text=True, timeout=60)
    assert "exit codes" in helped.stdout and "2 a file no server checked" in helped.stdout


def test_mcp_diagnostics_and_writes_say_not_checked(project: Project) -> None:
    project.configure({"fakeA": MISSING}, alpha("fakeA"))
    project.file("broken.alpha", "bad\n")
    tools = project.agent()
    answer = tools.lsp("diagnostics", file="broken.alpha")
    assert answer.text.startswith("not checked") and "fakeA is not installed" in answer.text, answer.text
    assert answer.data["checkedBy"] == [] and answer.data["notChecked"][0]["reason"] == "missing"
    written = tools.write_file("new.alpha", "bad again\n")
    assert written.data["written"] is True and written.data["complete"] is False
    assert "no issues" not in written.text and "fakeA is not installed" in written.text, written.text


def test_a_clean_clone_without_the_servers_on_path_is_not_checked(tmp_path: Path) -> None:
    """Issue #21: the sample's broken file, the built-in configuration, no server installed: exit 2, not `no issues`.
    (lsp-hub finds the servers of its own environment whatever PATH says, so "not installed" is a command that
    exists nowhere.)"""
    from tests.conftest import copy_sample

    sample = copy_sample(tmp_path / "sample")
    (tmp_path / "cfg" / "lsp-hub").mkdir(parents=True)
    (tmp_path / "cfg" / "lsp-hub" / "config.toml").write_text(
        '[server.basedpyright]\ncommand = "basedpyright-langserver-absent"\n'
        '[server.ruff]\ncommand = "ruff-absent"\n')
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin",
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "lsp_hub", "query", "diagnostics", "app/broken.py", "--no-daemon"],
                          cwd=sample, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "no issues" not in done.stdout
    assert "no python server ran — basedpyright is not installed; ruff is not installed" in done.stderr, done.stderr


class _CannedHub:
    """A query's connection to a hub that answers lspHub.languages and lspHub.status from canned replies."""

    def __init__(self, replies: dict[str, Any]) -> None:
        self.replies = replies

    def request(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        assert method == "workspace/executeCommand"
        return self.replies[params["command"]]


def test_an_empty_answer_names_why_the_server_at_the_files_root_did_not_start(tmp_path: Path) -> None:
    """The language's summary reads "not started" for a server that cannot start at this file's root (refused in
    an untrusted workspace, say); the server's status there says why, and the answer says it."""
    from types import SimpleNamespace

    from lsp_hub.agents.query.hub_requests import why_empty

    web, other = tmp_path / "web", tmp_path / "other"
    refused = "lsp-hub: tsls was not started for web: the workspace is not trusted; run `lsp-hub trust web`"
    hub = _CannedHub({
        "lspHub.languages": {"languages": [{"language": "typescript", "extensions": ["ts"],
                                            "servers": [{"name": "tsls", "state": "not started"}]}]},
        "lspHub.status": {"servers": [
            {"name": "tsls", "root": str(other), "state": "running"},
            {"name": "tsls", "root": str(web), "state": "missing", "error": refused},
        ]},
    })
    workspace: Any = SimpleNamespace(connection=hub, timeout=5.0)
    assert why_empty(workspace, web / "src" / "main.ts") == (
        "missing", f"no server answered: tsls could not be started ({refused})")
    # A file under the other root: the server there runs, and found nothing.
    assert why_empty(workspace, other / "main.ts") == ("nothing", "tsls found nothing here")
    # A file under neither root: the language's summary, as before.
    assert why_empty(workspace, tmp_path / "main.ts")[0] == "nothing"


def test_empty_index_answers_say_why_once(project: Project) -> None:
    """`callers` of an unknown name printed nothing at all and exited 1; `search` said "no match" on stdout and
    again on stderr."""
    project.configure({"fakeA": CHECKER}, {"python": {"extensions": ["py"], "servers": ["fakeA"]}})
    project.file("app.py", "def pay() -> int:\n    return 1\n")
    code, out, err = project.ask("callers", "--symbol", "nope")
    assert (code, out) == (2, "") and err.startswith("lsp-hub query callers: unknown symbol 'nope' (no definition"), err
    code, out, err = project.ask("callers", "--symbol", "pay")
    assert (code, out) == (1, "") and err == "lsp-hub query callers: no callers found by the index, fakeA\n", err
    code, out, err = project.ask("search", "zzz_nothing")
    assert (code, out, err) == (1, "no match for 'zzz_nothing' (literal)\n", "")


def test_diagnostics_and_writes_in_an_uninstalled_project_say_what_it_lacks(project: Project) -> None:
    project.configure({"fakeA": CHECKER}, {"typescript": {"extensions": ["ts"], "servers": ["fakeA"]}})
    project.file("tsconfig.json", '{"extends": "@tsconfig/node20"}')
    checked = project.file("src/a.ts", "bad\n")
    note = ('tsconfig.json extends "@tsconfig/node20", which is not installed: TypeScript checks with its default '
            "options, so expect errors a set-up project would not have; install the project's dependencies")
    code, out, err = project.ask("diagnostics", str(checked))
    assert code == 1 and out.endswith(f"\n(setup: {note})\n"), (code, out, err)
    code, out, _ = project.ask("diagnostics", str(checked), "--json")
    assert json.loads(out)["setupNotes"] == [note]
    written = project.agent().write_file("src/b.ts", "export const b = 1;\n")
    assert written.data["setupNotes"] == [note] and f"(setup: {note})" in written.text


def test_a_python_project_without_its_dependencies_says_so(project: Project) -> None:
    """basedpyright's missing imports of a declared package: one note, with where the package would be found."""
    unresolved = {"range": RANGE, "message": 'Import "urllib3.exceptions" could not be resolved',
                  "code": "reportMissingImports", "when_text_contains": "urllib3"}
    project.configure({"fakeA": {"diagnostics_on_open_and_change": [unresolved]}},
                      {"python": {"extensions": ["py"], "servers": ["fakeA"]}})
    project.file("pyproject.toml", '[project]\nname = "p"\ndependencies = ["urllib3>=2"]\n')
    checked = project.file("src/p/adapters.py", "from urllib3.exceptions import HTTPError\n")
    note = ("fakeA cannot import urllib3, which pyproject.toml declares: no environment it uses has them; install "
            "the project's dependencies into .venv, where it looks; expect errors that follow from these imports "
            "(unknown types), not from the code")
    code, out, err = project.ask("diagnostics", str(checked), "--json")
    assert code == 1 and json.loads(out)["setupNotes"] == [note], (out, err)
    written = project.agent().write_file("src/p/more.py", "import urllib3\n")
    assert written.data["setupNotes"] == [note] and f"(setup: {note})" in written.text


def test_references_from_the_index_alone_say_which_server_did_not_run(project: Project) -> None:
    """With gopls not installed, cobra's references came from the index with `complete: true` and "no server listed
    anything in 2 file(s)", as if a server had looked."""
    project.configure({"fakeA": MISSING}, {"python": {"extensions": ["py"], "servers": ["fakeA"]}})
    project.file("lib.py", "def pay() -> int:\n    return 1\n")
    project.file("app.py", "from lib import pay\n\npay()\n")
    code, out, err = project.ask("references", "lib.py:1:5", "--json")
    data = json.loads(out)
    assert code == 0 and data["complete"] is False, (out, err)
    assert len(data["locations"]) >= 2 and {entry["origin"] for entry in data["locations"]} == {"index"}
    assert data["noServer"].startswith("no server answered: fakeA could not be started"), data["noServer"]
    code, out, _ = project.ask("references", "lib.py:1:5")
    assert out.rstrip("\n").endswith(f"(from the index alone, by name: {data['noServer']})"), out
    # A definition and a file's symbols, which the index gives in place of the server, say so too.
    code, out, _ = project.ask("definition", "app.py:3:1", "--json")
    definition = json.loads(out)
    assert code == 0 and definition["locations"][0]["path"].endswith("lib.py"), out
    assert definition["complete"] is False and definition["noServer"] == data["noServer"]
    code, out, _ = project.ask("symbols", "lib.py")
    assert code == 0 and out.rstrip("\n").endswith(f"(from the index alone, by name: {data['noServer']})"), out


def test_a_stand_in_answer_is_marked_when_the_running_server_does_not_answer_that_question(project: Project) -> None:
    """basedpyright failed, ruff runs: a definition came from the index's stand-in, and read as ruff's answer."""
    linter = {"capabilities": {"textDocumentSync": 2}}  # no definitions, like ruff
    project.configure({"fakeA": MISSING, "fakeB": linter},
                      {"python": {"extensions": ["py"], "servers": ["fakeA", "fakeB"]}})
    project.file("lib.py", "def pay() -> int:\n    return 1\n")
    project.file("app.py", "from lib import pay\n\npay()\n")
    code, out, err = project.ask("definition", "app.py:3:1", "--json")
    data = json.loads(out)
    assert code == 0 and data["locations"][0]["path"].endswith("lib.py"), (out, err)
    assert data["complete"] is False
    assert data["noServer"] == "fakeB does not answer textDocument/definition (fakeA missing)", data["noServer"]
