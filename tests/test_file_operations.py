"""File operations: which servers hear of a rename, create or delete, and one WorkspaceEdit from their answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_hub.proxy.file_operations import filter_matches, glob_regex, merge_workspace_edits
from tests.hub_fixtures import StartHub


def edit(line: int, start: int, end: int, text: str) -> dict:
    return {"range": {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}},
            "newText": text}


def test_lsp_globs() -> None:
    cases = {
        ("**/*.{ts,tsx}", "/w/src/a.ts"): True,
        ("**/*.{ts,tsx}", "/w/src/a.tsx"): True,
        ("**/*.{ts,tsx}", "/w/src/a.js"): False,
        ("**/*", "/w/a"): True,
        ("/w/*.py", "/w/a.py"): True,
        ("/w/*.py", "/w/sub/a.py"): False,
        ("**/test_?.py", "/w/test_1.py"): True,
        ("**/[!a]*.py", "/w/b.py"): True,
        ("**/[!a]*.py", "/w/a.py"): False,
        ("**/node_modules/**", "/w/node_modules/x/y.js"): True,
    }
    for (glob, path), expected in cases.items():
        assert (glob_regex(glob).match(path) is not None) is expected, (glob, path)
    assert glob_regex("**/*.TS", ignore_case=True).match("/w/a.ts")


def test_filters_by_scheme_and_kind(tmp_path: Path) -> None:
    uri = (tmp_path / "a.ts").as_uri()
    files = {"scheme": "file", "pattern": {"glob": "**/*.ts", "matches": "file"}}
    assert filter_matches(files, uri, is_folder=False)
    assert not filter_matches(files, uri, is_folder=True)
    assert filter_matches(files, uri, is_folder=None)  # a deleted path: kind unknown
    assert not filter_matches({"scheme": "untitled", "pattern": {"glob": "**/*"}}, uri, is_folder=False)
    assert not filter_matches({"pattern": "not a pattern"}, uri, is_folder=False)


def test_merged_edits_keep_order_and_drop_overlaps() -> None:
    first = {"changes": {"file:///m.ts": [edit(0, 0, 5, "a"), edit(2, 0, 1, "b")]}}
    second = {"changes": {"file:///m.ts": [edit(0, 3, 8, "overlaps"), edit(1, 0, 0, "c"), edit(2, 0, 1, "b")],
                          "file:///n.ts": [edit(0, 0, 0, "d")]}}
    merged = merge_workspace_edits([("first", first), ("none", None), ("second", second)])
    assert merged == {"changes": {"file:///m.ts": [edit(0, 0, 5, "a"), edit(2, 0, 1, "b"), edit(1, 0, 0, "c")],
                                  "file:///n.ts": [edit(0, 0, 0, "d")]}}
    assert merge_workspace_edits([("only", first)]) is first
    assert merge_workspace_edits([("a", None), ("b", {"changes": {}})]) is None
    # documentChanges from one server and changes from another become documentChanges, one entry per file
    rename = {"kind": "rename", "oldUri": "file:///u.ts", "newUri": "file:///f.ts"}
    with_document_changes = {"documentChanges": [
        {"textDocument": {"uri": "file:///m.ts", "version": 3}, "edits": [edit(0, 0, 1, "x")]}, rename]}
    merged = merge_workspace_edits([("one", with_document_changes),
                                    ("two", {"changes": {"file:///m.ts": [edit(0, 0, 1, "y"), edit(4, 0, 0, "z")]}})])
    assert merged == {"documentChanges": [
        {"textDocument": {"uri": "file:///m.ts", "version": 3}, "edits": [edit(0, 0, 1, "x"), edit(4, 0, 0, "z")]},
        rename]}


@pytest.mark.asyncio
async def test_will_rename_goes_to_the_servers_whose_filters_match_and_their_edits_merge(
        start_hub: StartHub) -> None:
    def server(glob: str, edits: list[dict]) -> dict:
        operations = {key: {"filters": [{"scheme": "file", "pattern": {"glob": glob}}]}
                      for key in ("willRename", "didRename")}
        return {"capabilities": {"textDocumentSync": 2, "workspace": {"fileOperations": operations}},
                "responses": {"workspace/willRenameFiles": {"result": {"changes": {"file:///importer": edits}}}}}

    hub = await start_hub({
        "fakeA": server("**/*.alpha", [edit(0, 0, 4, "from fakeA")]),
        "fakeB": server("**/*.{alpha,beta}", [edit(0, 2, 6, "overlapping"), edit(3, 0, 0, "from fakeB")]),
    })
    hub.client.open(hub.file("x.alpha", "a\n"), "alpha")
    await hub.client.wait_for(lambda: hub.received("fakeA", "initialized") and hub.received("fakeB", "initialized"),
                              what="both servers running")
    capabilities = hub.extra["initialize"]["capabilities"]
    assert capabilities["workspace"]["fileOperations"]["willRename"]["filters"]
    alpha = {"oldUri": (hub.workspace / "x.alpha").as_uri(), "newUri": (hub.workspace / "y.alpha").as_uri()}
    beta = {"oldUri": (hub.workspace / "x.beta").as_uri(), "newUri": (hub.workspace / "y.beta").as_uri()}
    merged = await hub.client.request("workspace/willRenameFiles", {"files": [alpha, beta]})
    assert merged == {"changes": {"file:///importer": [edit(0, 0, 4, "from fakeA"), edit(3, 0, 0, "from fakeB")]}}
    assert hub.received("fakeA", "workspace/willRenameFiles") == [{"files": [alpha]}]
    assert hub.received("fakeB", "workspace/willRenameFiles") == [{"files": [alpha, beta]}]
    hub.client.notify("workspace/didRenameFiles", {"files": [beta]})
    await hub.client.wait_for(lambda: hub.received("fakeB", "workspace/didRenameFiles"), what="didRename")
    assert hub.received("fakeB", "workspace/didRenameFiles") == [{"files": [beta]}]
    assert hub.received("fakeA", "workspace/didRenameFiles") == []
    assert await hub.client.request("workspace/willDeleteFiles", {"files": [{"uri": alpha["oldUri"]}]}) is None
