"""Server-to-client traffic: requests forwarded and answered back, ids and tokens kept unique per server."""

from __future__ import annotations

import pytest

from tests.hub_fixtures import StartHub

pytestmark = pytest.mark.asyncio

EDIT = {"edit": {"changes": {}}, "label": "from {name}"}


async def test_server_requests_reach_the_client_and_answers_come_back(start_hub: StartHub) -> None:
    actions = [
        {"request": "workspace/configuration", "params": {"items": [{"section": "fake.level"}, {"section": "editor"}]}},
        {"request": "workspace/applyEdit", "params": EDIT},
        {"request": "window/showMessageRequest", "params": {"type": 3, "message": "pick", "actions": [{"title": "A"}]}},
    ]
    hub = await start_hub({
        "fakeA": {"capabilities": {"textDocumentSync": 2, "executeCommandProvider": {"commands": ["fake.trigger"]}},
                  "on_command": {"fake.trigger": actions},
                  "_config": {"settings": {"fake": {"level": 3}}}},
        "fakeB": {},
    })
    hub.client.answers["workspace/configuration"] = lambda params: [{"tabSize": 2} for _ in params["items"]]
    hub.client.answers["workspace/applyEdit"] = {"applied": True}
    hub.client.answers["window/showMessageRequest"] = {"title": "A"}
    hub.client.open(hub.file("f.alpha", "x\n"), "alpha")
    await hub.client.wait_for(lambda: hub.received("fakeA", "initialized"), what="fakeA running")
    answers = await hub.client.request("workspace/executeCommand", {"command": "fake.trigger"})
    # The first item comes from the server's configured settings, the second from the client.
    assert answers[0] == [3, {"tabSize": 2}]
    assert answers[1] == {"applied": True}
    assert answers[2] == {"title": "A"}
    asked = [params for method, params in hub.client.server_requests if method == "workspace/configuration"]
    assert asked == [{"items": [{"section": "editor"}]}]
    # The fake fills in "{name}": the client gets the edit as that server sent it.
    assert ("workspace/applyEdit", {**EDIT, "label": "from fakeA"}) in hub.client.server_requests


async def test_a_configured_table_is_laid_over_the_clients(start_hub: StartHub) -> None:
    """A section the configuration holds as a table (an untrusted root's pinned `python.pythonPath`) still gets the
    editor's other keys: it was answered from the configuration alone, and the editor's settings were lost."""
    actions = [{"request": "workspace/configuration",
                "params": {"items": [{"section": "python"}, {"section": "python.analysis"}]}}]
    hub = await start_hub({
        "fakeA": {"capabilities": {"textDocumentSync": 2, "executeCommandProvider": {"commands": ["fake.trigger"]}},
                  "on_command": {"fake.trigger": actions},
                  "_config": {"settings": {"python": {"pythonPath": "/usr/bin/python3",
                                                      "analysis": {"extraPaths": ["/ws/.venv/site"]}}}}},
        "fakeB": {},
    })
    editor = {"python": {"pythonPath": "/elsewhere/python", "venvPath": "/x",
                         "analysis": {"typeCheckingMode": "strict", "extraPaths": ["/mine"]}}}
    hub.client.answers["workspace/configuration"] = lambda params: [
        editor["python"] if item["section"] == "python" else editor["python"]["analysis"] for item in params["items"]]
    hub.client.open(hub.file("f.alpha", "x\n"), "alpha")
    await hub.client.wait_for(lambda: hub.received("fakeA", "initialized"), what="fakeA running")
    [answers] = await hub.client.request("workspace/executeCommand", {"command": "fake.trigger"})
    assert answers[0] == {"pythonPath": "/usr/bin/python3", "venvPath": "/x",
                          "analysis": {"typeCheckingMode": "strict", "extraPaths": ["/ws/.venv/site"]}}
    assert answers[1] == {"typeCheckingMode": "strict", "extraPaths": ["/ws/.venv/site"]}


async def test_progress_tokens_are_unique_per_server_and_logs_are_labelled(start_hub: StartHub) -> None:
    def progress(name: str) -> list[dict]:
        return [
            {"request": "window/workDoneProgress/create", "params": {"token": 1}},
            {"notify": "$/progress", "params": {"token": 1, "value": {"kind": "begin", "title": f"{name} indexing"}}},
            {"notify": "window/logMessage", "params": {"type": 3, "message": "hello"}},
        ]

    hub = await start_hub({"fakeA": {"on_initialized": progress("A")}, "fakeB": {"on_initialized": progress("B")}})
    hub.client.open(hub.file("p.alpha", "x\n"), "alpha")
    def servers_progress(items: list) -> list:  # the hub reports its own indexing under lsp-hub/index
        return [p["token"] for m, p in items if m.endswith("progress") or m.endswith("/create")
                if p["token"] != "lsp-hub/index"]

    await hub.client.wait_for(
        lambda: len(servers_progress([n for n in hub.client.notifications if n[0] == "$/progress"])) == 2,
        what="progress")
    created = servers_progress([r for r in hub.client.server_requests if r[0] == "window/workDoneProgress/create"])
    reported = servers_progress([n for n in hub.client.notifications if n[0] == "$/progress"])
    assert len(set(created)) == 2 and set(reported) == set(created)  # both servers used token 1
    await hub.client.wait_for(
        lambda: len([n for n in hub.client.notifications if n[0] == "window/logMessage"]) == 2, what="logs")
    logs = sorted(p["message"] for m, p in hub.client.notifications if m == "window/logMessage")
    assert logs == ["[fakeA] hello", "[fakeB] hello"]


async def test_watched_file_registrations_are_forwarded_with_unique_ids(start_hub: StartHub) -> None:
    def register(name: str) -> list[dict]:
        return [{"request": "client/registerCapability", "params": {"registrations": [
            {"id": "watch", "method": "workspace/didChangeWatchedFiles",
             "registerOptions": {"watchers": [{"globPattern": f"**/*.{name}"}]}},
            {"id": "fmt", "method": "textDocument/formatting", "registerOptions": {}},
        ]}}]

    hub = await start_hub({"fakeA": {"on_initialized": register("a")}, "fakeB": {"on_initialized": register("b")}})
    hub.client.open(hub.file("w.alpha", "x\n"), "alpha")
    await hub.client.wait_for(
        lambda: len([m for m, _ in hub.client.server_requests if m == "client/registerCapability"]) >= 3,
        what="registrations")
    registrations = [r for m, p in hub.client.server_requests if m == "client/registerCapability"
                     for r in p["registrations"]]
    watchers = [r for r in registrations if r["method"] == "workspace/didChangeWatchedFiles"
                and r["id"] != "lsp-hub/index-watcher"]  # the hub's own, for its index
    assert len(watchers) == 2 and len({r["id"] for r in watchers}) == 2
    # Formatting is a feature the hub routes itself: the client is not asked to register it twice.
    assert not [r for r in registrations if r["method"] == "textDocument/formatting"]
    changed = hub.file("w.alpha", "y\n").as_uri()
    hub.client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": changed, "type": 2}]})
    await hub.client.wait_for(lambda: hub.received("fakeA", "workspace/didChangeWatchedFiles")
                              and hub.received("fakeB", "workspace/didChangeWatchedFiles"), what="fan-out")
