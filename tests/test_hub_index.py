"""The code index through the hub: commands, freshness after edits, syntax diagnostics and stand-in answers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.proxy.index_roots import project_root
from lsp_hub.transport.jsonrpc import INVALID_PARAMS, ResponseFailure
from tests.hub_fixtures import HubUnderTest, StartHub

pytestmark = pytest.mark.asyncio

# Python routed to a fake server (so no real server starts); Ruby has no server at all.
LANGUAGES = {"python": {"extensions": ["py"], "language_ids": ["python"], "servers": ["fakeA"]},
             "alpha": {"extensions": ["alpha"], "servers": ["fakeA"]}}


async def command(hub: HubUnderTest, name: str, argument: dict[str, Any]) -> Any:
    return await hub.client.request("workspace/executeCommand", {"command": name, "arguments": [argument]})


async def ready(hub: HubUnderTest) -> dict[str, Any]:
    for _ in range(200):
        status = await hub.client.status()
        if status.get("index", {}).get("state") == "ready":
            return status
        await asyncio.sleep(0.05)
    raise AssertionError("the index never became ready")


async def small_package(start_hub: StartHub) -> tuple[HubUnderTest, Path, dict[str, Any]]:
    """A hub on a three-file package (pkg/user.py calls pkg/core.py's compute_total), its index ready: the hub,
    user.py and the hub's status."""
    hub = await start_hub({"fakeA": {}, "fakeB": {}}, languages=LANGUAGES, initialize=False)
    hub.file("pkg/__init__.py", "")
    hub.file("pkg/core.py", "def compute_total(items):\n    return sum(items)\n")
    user = hub.file("pkg/user.py",
                    "from pkg.core import compute_total\n\n\ndef report():\n    return compute_total([1])\n")
    await hub.client.initialize(hub.workspace)
    return hub, user, await ready(hub)


async def test_index_commands_follow_an_edit_made_in_the_editor(start_hub: StartHub) -> None:
    hub, user, status = await small_package(start_hub)
    assert status["index"]["files"] == 3 and status["index"]["languages"] == {"python": 3}
    callers = await command(hub, "lspHub.callers", {"symbol": "compute_total"})
    assert [c["caller"] for c in callers["callers"]] == ["report"] and callers["complete"] is True

    uri = hub.client.open(user, "python")
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 0}},
         "text": "\ndef summarize_everything():\n    return compute_total([2])\n"}]})

    async def callers_now() -> list[str]:
        found = await command(hub, "lspHub.callers", {"symbol": "compute_total"})
        return sorted(c["caller"] for c in found["callers"])

    for _ in range(100):
        if await callers_now() == ["report", "summarize_everything"]:
            break
        await asyncio.sleep(0.05)
    assert await callers_now() == ["report", "summarize_everything"]  # unsaved text, seen through the hub
    repo_map = await command(hub, "lspHub.repoMap", {"tokenBudget": 200, "mentionedIdents": ["summarize_everything"]})
    assert "summarize_everything" in repo_map["text"] and repo_map["tokens"] <= 200
    relevant = await command(hub, "lspHub.relevantFiles", {"description": "change compute_total", "topN": 3})
    assert relevant["files"][0]["path"] == "pkg/core.py" and relevant["files"][0]["reasons"]
    # Closing the document without saving: the index goes back to the file on disk.
    hub.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    for _ in range(100):
        if await callers_now() == ["report"]:
            break
        await asyncio.sleep(0.05)
    assert await callers_now() == ["report"]


async def test_a_repo_map_asked_right_after_an_edit_includes_it(start_hub: StartHub) -> None:
    """An agent edits and asks at once: the hub applies the change still waiting out its debounce first."""
    hub, user, _status = await small_package(start_hub)
    before = await command(hub, "lspHub.repoMap", {"tokenBudget": 400})
    assert "def report" in before["text"] and "freshly_added" not in before["text"]
    uri = hub.client.open(user, "python")
    for version, name in enumerate(("freshly_added", "freshly_renamed"), start=2):
        hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                     "contentChanges": [{"text": (
            "from pkg.core import compute_total\n\n\ndef report():\n    return compute_total([1])\n\n\n"
            f"def {name}():\n    return compute_total([2])\n")}]})
        after = await command(hub, "lspHub.repoMap", {"tokenBudget": 400, "mentionedIdents": [name]})
        assert f"def {name}" in after["text"]  # no sleep, no polling: the answer has the edit
        assert version == 2 or "freshly_added" not in after["text"]


async def test_a_language_without_server_gets_syntax_diagnostics_and_index_answers(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}}, languages=LANGUAGES)
    ruby = hub.file("lib/shapes.rb", "class Square\n  def area(side)\n    side * side\n  end\nend\n")
    uri = hub.client.open(ruby, "ruby", text="class Square\n  def area(side\n    side * side\n  end\nend\n")
    diagnostics = await hub.client.wait_diagnostics(uri, lambda d: len(d) > 0)
    assert {d["source"] for d in diagnostics} == {"lsp-hub"}
    assert diagnostics[0]["range"]["start"]["line"] in (1, 2)
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": ruby.read_text()}]})
    await hub.client.wait_diagnostics(uri, lambda d: d == [])
    await ready(hub)
    symbols = await hub.client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    names = {s["name"] for s in symbols} | {c["name"] for s in symbols for c in s.get("children", [])}
    assert {"Square", "area"} <= names
    found = await hub.client.request("workspace/symbol", {"query": "Squ"})
    assert any(s["name"] == "Square" for s in found)
    checked = await command(hub, "lspHub.syntaxCheck", {"uri": uri})
    assert checked == {"ok": True, "checked": True, "language": "ruby", "checker": "tree-sitter", "errors": []}
    unsupported = await command(hub, "lspHub.syntaxCheck", {"uri": hub.file("notes.txt", "x").as_uri()})
    assert unsupported["checked"] is False and unsupported["reason"] == "unsupported_language"


async def test_a_running_server_answers_before_the_index(start_hub: StartHub) -> None:
    symbol = {"name": "fromServer", "kind": 12, "location": {"uri": "file:///x.py", "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}}}
    hub = await start_hub({"fakeA": {"responses": {"workspace/symbol": {"result": [symbol]}}}, "fakeB": {}},
                          languages=LANGUAGES)
    hub.file("m.py", "def fromIndex():\n    pass\n")
    uri = hub.client.open(hub.workspace / "m.py", "python")
    await ready(hub)
    assert [s["name"] for s in await hub.client.request("workspace/symbol", {"query": "from"})] == ["fromServer"]
    # A document a server serves gets no syntax diagnostics from the hub, even when it is broken.
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": "def broken(:\n"}]})
    await asyncio.sleep(1.0)
    assert not [d for d in hub.client.diagnostics.get(uri, []) if d.get("source") == "lsp-hub"]


async def test_syntax_check_refuses_to_read_files_outside_the_workspace(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}}, languages=LANGUAGES, initialize=False)
    secret = hub.workspace.parent / "secret" / "keys.py"
    secret.parent.mkdir()
    secret.write_text("api_token = (\n")  # a syntax error, whose message would quote the file
    hub.file("ok.py", "x = 1\n")
    (hub.workspace / "link.py").symlink_to(secret)
    await hub.client.initialize(hub.workspace)
    await ready(hub)
    for uri in (secret.as_uri(), (hub.workspace / "link.py").as_uri(), "../secret/keys.py"):
        with pytest.raises(ResponseFailure) as refused:
            await command(hub, "lspHub.syntaxCheck", {"uri": uri})
        assert refused.value.code == INVALID_PARAMS and uri in refused.value.message
        assert "api_token" not in refused.value.message
    # Text the client sends itself is checked wherever it comes from; files inside are read as before.
    sent = await command(hub, "lspHub.syntaxCheck", {"uri": secret.as_uri(), "text": "x = (\n"})
    assert sent["checked"] is True and sent["ok"] is False
    assert (await command(hub, "lspHub.syntaxCheck", {"uri": "ok.py"}))["ok"] is True


async def test_a_document_over_the_size_cap_gets_no_syntax_check_and_the_user_is_told_once(
        start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}}, languages=LANGUAGES)
    path = hub.file("lib/huge.rb", "x = 1\n")
    filler = "value = 1\n" * 110_000  # 1.1 MB, over the 1 MB default
    uri = hub.client.open(path, "ruby", text=f"{filler}def only_in_editor(\n")
    for version in (2, 3):
        hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                     "contentChanges": [{"text": f"{filler}def broken(\n"}]})
    told = await hub.client.wait_for(lambda: [params["message"] for method, params in hub.client.notifications
                                              if method == "window/showMessage" and "huge.rb" in params["message"]])
    await asyncio.sleep(1.0)  # past the debounce of every change: a check would have published by now
    assert not [d for d in hub.client.diagnostics.get(uri, []) if d.get("source") == "lsp-hub"]
    assert len([m for method, m in hub.client.notifications
                if method == "window/showMessage" and "huge.rb" in m["message"]]) == 1
    assert "max_document_bytes" in told[0]
    # Back under the cap, the document is checked again.
    hub.client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 4},
                                                 "contentChanges": [{"text": "def broken(\n"}]})
    await hub.client.wait_diagnostics(uri, lambda d: any(x.get("source") == "lsp-hub" for x in d))


async def test_without_a_workspace_folder_the_index_covers_the_open_files_projects_not_the_cwd(
        start_hub: StartHub, tmp_path: Path) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}}, languages=LANGUAGES, initialize=False)
    for number in range(30):  # the hub's current directory: what it used to index
        hub.file(f"cwd_module_{number}.rb", f"def in_the_cwd_{number}\nend\n")
    project = tmp_path / "project"
    write_file(project / "Gemfile.lock", "")
    write_file(project / ".git" / "HEAD", "ref: refs/heads/main\n")
    write_file(project / "lib" / "tool.rb", "class ProjectTool\n  def run\n  end\nend\n")
    main = write_file(project / "lib" / "main.rb", "require 'tool'\n")
    loose = write_file(tmp_path / "loose" / "script.rb", "def loose(\n")
    await hub.client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    hub.client.notify("initialized", {})
    status = (await hub.client.status())["index"]
    assert status["state"] == "none" and status["files"] == 0 and "no workspace folder" in status["reason"]
    loose_uri = hub.client.open(loose, "ruby")
    # A file in no project is still syntax-checked, and status says why it is not indexed.
    await hub.client.wait_diagnostics(loose_uri, lambda d: any(x.get("source") == "lsp-hub" for x in d))
    status = (await hub.client.status())["index"]
    assert status["files"] == 0 and status["unindexedFiles"][0]["uri"] == loose_uri
    assert "no project root marker" in status["unindexedFiles"][0]["reason"]
    hub.client.open(main, "ruby")
    status = await ready(hub)
    assert status["index"]["roots"] == [str(project.resolve())] and status["index"]["files"] == 2
    found = await hub.client.request("workspace/symbol", {"query": "ProjectTool"})
    assert [s["name"] for s in found] == ["ProjectTool"]
    assert await hub.client.request("workspace/symbol", {"query": "in_the_cwd"}) in ([], None)


def write_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def test_the_home_directory_is_never_a_project_root_even_with_a_marker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    write_file(home / ".git" / "HEAD", "")  # a dotfiles repository
    notes = write_file(home / "notes" / "todo.py", "x = 1\n")
    tool = write_file(home / "code" / "tool" / "src" / "main.py", "x = 1\n")
    write_file(home / "code" / "tool" / "pyproject.toml", "")
    assert project_root(str(notes), (".git", "pyproject.toml"))[0] is None
    assert project_root(str(tool), (".git", "pyproject.toml"))[0] == str((home / "code" / "tool").resolve())


async def test_the_document_size_cap_is_the_users_to_set(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}}, languages=LANGUAGES, hub={"max_document_bytes": 2048})
    uri = hub.client.open(hub.file("lib/small.rb", "x = 1\n"), "ruby", text="value = 1\n" * 300 + "def broken(\n")
    told = await hub.client.wait_for(lambda: [params["message"] for method, params in hub.client.notifications
                                              if method == "window/showMessage" and "small.rb" in params["message"]])
    assert "2,048 bytes" in told[0]
    assert not [d for d in hub.client.diagnostics.get(uri, []) if d.get("source") == "lsp-hub"]


async def test_index_commands_answer_wrong_argument_shapes_with_invalid_params(start_hub: StartHub) -> None:
    hub = await start_hub({"fakeA": {}, "fakeB": {}}, languages=LANGUAGES)
    await ready(hub)
    with pytest.raises(ResponseFailure) as refused:
        await command(hub, "lspHub.repoMap", {"focusFiles": [3]})
    assert refused.value.code == INVALID_PARAMS and "focusFiles" in refused.value.message


async def test_the_hub_fits_relevance_weights_to_the_repository_when_idle(start_hub: StartHub) -> None:
    from lsp_hub.index import relevance_tuning
    from tests.index.test_history import Repository

    hub = await start_hub({"fakeA": {}, "fakeB": {}}, languages=LANGUAGES, initialize=False)
    # core/m<i>.py and extras/p<i>.py: only their history pairs them, in 30 two-file commits.
    repository = Repository(Path(hub.workspace))
    pairs = [(f"core/m{i}.py", f"extras/p{i}.py") for i in range(10)]
    repository.commit(*(path for pair in pairs for path in pair), message="initial")
    for _ in range(3):
        for module, partner in pairs:
            repository.commit(module, partner, message=f"change {module}")
    await hub.client.initialize(hub.workspace)
    await ready(hub)
    target = {"description": "", "targets": [str(Path(hub.workspace) / "core/m3.py")]}
    try:
        first = await command(hub, "lspHub.relevantFiles", target)
        assert first["weights"] == "default"  # asked before any idle time
        for _ in range(200):  # the query leaves the hub tuning in the background
            answer = await command(hub, "lspHub.relevantFiles", target)
            if answer["weights"] == "repository":
                break
            await asyncio.sleep(0.05)
        assert answer["weights"] == "repository"
        assert answer["files"][0]["path"] == "extras/p3.py"
    finally:
        relevance_tuning.forget(Path(hub.workspace))
