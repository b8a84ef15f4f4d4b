"""End to end through `lsp-hub` against the real servers `make setup` installs (built-in default configuration)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from lsp_hub.transport.rawclient import HubClient, position_of
from tests.conftest import EXAMPLES_DIR

pytestmark = [pytest.mark.asyncio, pytest.mark.real_server]

SLOW = 90.0  # first answers of a cold basedpyright/tsserver on a loaded 2-core machine




@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A private copy of examples/sample (servers write caches into a project)."""
    target = tmp_path / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", target, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    return target


async def test_python_merges_basedpyright_and_ruff(sample: Path, hub_at, require_binary) -> None:  # type: ignore[no-untyped-def]
    require_binary("basedpyright-langserver")
    require_binary("ruff")
    badly_formatted = sample / "app" / "messy.py"
    badly_formatted.write_text("import sys\nx=1\ndef f( a ):\n    return a+x\n")
    client: HubClient = await hub_at(sample)
    broken_uri = client.open(sample / "app" / "broken.py", "python")
    merged = await client.wait_diagnostics(
        broken_uri, lambda d: {x.get("source") for x in d} >= {"basedpyright", "Ruff"}, timeout=SLOW)
    codes = {(d["source"], d.get("code")) for d in merged}
    assert ("Ruff", "F401") in codes  # unused import, from ruff
    assert ("basedpyright", "reportReturnType") in codes  # int returned as str, from basedpyright

    service_path = sample / "app" / "service.py"
    service = service_path.read_text()
    service_uri = client.open(service_path, "python")
    hover = await client.request("textDocument/hover", {
        "textDocument": {"uri": service_uri}, "position": position_of(service, "total_value(inventory)")},
        timeout=SLOW)
    assert "def total_value(inventory: Inventory) -> float" in hover["contents"]["value"]
    assert "**basedpyright**" not in hover["contents"]["value"]  # only one server had something to say

    definition = await client.request("textDocument/definition", {
        "textDocument": {"uri": service_uri}, "position": position_of(service, "Inventory()")}, timeout=SLOW)
    assert definition[0]["uri"].endswith("app/models.py")

    messy_uri = client.open(badly_formatted, "python")
    edits = await client.request("textDocument/formatting", {
        "textDocument": {"uri": messy_uri}, "options": {"tabSize": 4, "insertSpaces": True}}, timeout=SLOW)
    assert edits, "ruff proposes formatting edits"
    new_text = "".join(edit["newText"] for edit in edits)
    assert "x = 1" in new_text

    actions = await client.request("textDocument/codeAction", {
        "textDocument": {"uri": broken_uri},
        "range": next(d["range"] for d in merged if d.get("code") == "F401"),
        "context": {"diagnostics": [d for d in merged if d.get("code") == "F401"]}}, timeout=SLOW)
    assert any("os" in action["title"] for action in actions)

    status = await client.status()
    assert {s["name"] for s in status["servers"] if s["state"] == "running"} >= {"basedpyright", "ruff"}


async def test_readme_example_ruff_only_for_formatting_still_formats(  # type: ignore[no-untyped-def]
        sample: Path, tmp_path: Path, hub_at, require_binary) -> None:
    """The README's own example: ruff limited to formatting, code actions and diagnostics."""
    require_binary("ruff")
    user_config = tmp_path / "cfg" / "lsp-hub" / "config.toml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text('[server.ruff]\n'
                           'only_features = ["textDocument/formatting", "textDocument/codeAction", "diagnostics"]\n'
                           '[language.python]\nservers = ["ruff"]\n')
    messy = sample / "app" / "messy.py"
    messy.write_text("import os\nx=1\n")
    client: HubClient = await hub_at(sample)
    uri = client.open(messy, "python")
    # An unsaved change: ruff must format the buffer, which it only knows if it received the document.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": "import os\ny=2\n"}]})
    edits = await client.request("textDocument/formatting", {
        "textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": True}}, timeout=SLOW)
    assert edits and "y = 2" in "".join(edit["newText"] for edit in edits), edits
    diagnostics = await client.wait_diagnostics(uri, lambda d: any(x.get("code") == "F401" for x in d), timeout=SLOW)
    assert {d.get("source") for d in diagnostics} == {"Ruff"}


async def test_dedupe_shows_ruff_and_basedpyright_unused_import_once(  # type: ignore[no-untyped-def]
        sample: Path, tmp_path: Path, hub_at, require_binary) -> None:
    require_binary("basedpyright-langserver")
    require_binary("ruff")
    user_config = tmp_path / "cfg" / "lsp-hub" / "config.toml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text("[language.python]\ndedupe_diagnostics = true\n")
    unused = sample / "app" / "unused.py"
    unused.write_text("import os\n\n\ndef f() -> int:\n    return undefined_name\n")
    client: HubClient = await hub_at(sample)
    uri = client.open(unused, "python")
    # Both servers have spoken once basedpyright's undefined name and ruff's F821 twin are in.
    merged = await client.wait_diagnostics(
        uri, lambda d: any(x.get("source") == "basedpyright" for x in d), timeout=SLOW)
    await asyncio.sleep(2.0)  # let ruff's part arrive too, if it was not first
    merged = client.diagnostics[uri]
    codes = sorted((d.get("source"), d.get("code")) for d in merged)
    assert ("basedpyright", "reportUnusedImport") in codes and ("Ruff", "F401") not in codes, codes
    assert ("basedpyright", "reportUndefinedVariable") in codes and ("Ruff", "F821") not in codes, codes


async def test_complete_diagnostics_of_an_edit_from_basedpyright_and_ruff(  # type: ignore[no-untyped-def]
        sample: Path, hub_at, require_binary) -> None:
    """An agent's edit loop: send the new text, get every server's diagnostics on exactly that text."""
    require_binary("basedpyright-langserver")
    require_binary("ruff")
    client: HubClient = await hub_at(sample)
    target = sample / "app" / "edited.py"
    target.write_text("def f() -> int:\n    return 1\n")

    async def check(text: str | None) -> dict:
        args = {"uri": target.as_uri(), "timeoutMs": SLOW * 1000, **({"text": text} if text is not None else {})}
        return await client.request("workspace/executeCommand", {"command": "lspHub.diagnostics",
                                                                 "arguments": [args]}, timeout=SLOW + 5)

    clean = await check(None)
    assert clean["complete"] and clean["pending"] == [] and clean["diagnostics"] == [], clean
    broken = await check("import os\n\n\ndef f() -> int:\n    return 'one'\n")
    assert broken["complete"] and broken["version"] == 2
    codes = {(d["source"], d.get("code")) for d in broken["diagnostics"]}
    assert ("Ruff", "F401") in codes and ("basedpyright", "reportReturnType") in codes, codes
    fixed = await check("def f() -> int:\n    return 1\n")
    assert fixed["complete"] and fixed["diagnostics"] == [], fixed


async def test_references_find_a_file_that_was_open_and_closed(  # type: ignore[no-untyped-def]
        sample: Path, hub_at, require_binary) -> None:
    """basedpyright forgets a file it had open once it closes; an agent's next query (a new daemon session, which
    closes the previous one's documents) must still find the references in it."""
    require_binary("basedpyright-langserver")
    client: HubClient = await hub_at(sample)

    async def opened(path: Path) -> str:
        uri = client.open(path, "python")
        await client.request("workspace/executeCommand", {"command": "lspHub.diagnostics",
                                                          "arguments": [{"uri": uri, "timeoutMs": SLOW * 1000}]},
                             timeout=SLOW + 5)
        return uri

    service = await opened(sample / "app" / "service.py")
    client.notify("textDocument/didClose", {"textDocument": {"uri": service}})
    models_path = sample / "app" / "models.py"
    models = await opened(models_path)
    references = await client.request("textDocument/references", {
        "textDocument": {"uri": models}, "position": position_of(models_path.read_text(), "total_value"),
        "context": {"includeDeclaration": True}}, timeout=SLOW)
    assert {Path(r["uri"]).name for r in references} >= {"models.py", "service.py"}, references


async def test_typescript_definition_and_references(sample: Path, hub_at, require_binary) -> None:  # type: ignore[no-untyped-def]
    require_binary("typescript-language-server")
    client: HubClient = await hub_at(sample)
    main_path = sample / "web" / "src" / "main.ts"
    main_text = main_path.read_text()
    main_uri = client.open(main_path, "typescript")
    position = position_of(main_text, "formatPrice({")
    files: set[str] = set()
    # typescript-language-server answers from a syntax-only tsserver until the project has loaded: those first
    # answers know only the open file. Ask again until the semantic server answers (bounded).
    for _ in range(60):
        references = await client.request("textDocument/references", {
            "textDocument": {"uri": main_uri}, "position": position, "context": {"includeDeclaration": True}},
            timeout=SLOW)
        files = {Path(r["uri"]).name for r in references}
        if "util.ts" in files:
            break
        await asyncio.sleep(0.5)
    assert files == {"main.ts", "util.ts"}
    definition = await client.request("textDocument/definition", {
        "textDocument": {"uri": main_uri}, "position": position}, timeout=SLOW)
    assert any(d.get("uri", d.get("targetUri", "")).endswith("util.ts") for d in definition)


async def test_renaming_a_typescript_module_updates_its_importers(  # type: ignore[no-untyped-def]
        sample: Path, hub_at, require_binary) -> None:
    require_binary("typescript-language-server")
    client: HubClient = await hub_at(sample)
    main_path = sample / "web" / "src" / "main.ts"
    main_text = main_path.read_text()
    main_uri = client.open(main_path, "typescript")
    util, renamed = sample / "web" / "src" / "util.ts", sample / "web" / "src" / "format.ts"
    files = [{"oldUri": util.as_uri(), "newUri": renamed.as_uri()}]
    edits: dict = {}
    for _ in range(60):  # until the project has loaded (the syntax-only server knows no importers)
        edit = await client.request("workspace/willRenameFiles", {"files": files}, timeout=SLOW)
        edits = (edit or {}).get("changes") or {e["textDocument"]["uri"]: e["edits"]
                                               for e in (edit or {}).get("documentChanges", []) if "edits" in e}
        if edits:
            break
        await asyncio.sleep(0.5)
    assert list(edits) == [main_uri], edits
    import_line = main_text.splitlines()[0]
    assert [e["newText"] for e in edits[main_uri]] == ["./format"], (import_line, edits)
    util.rename(renamed)
    client.notify("workspace/didRenameFiles", {"files": files})


async def test_a_typescript_file_outside_any_tsconfig_gets_the_definition_its_import_names(  # type: ignore[no-untyped-def]
        tmp_path: Path, hub_at, require_binary) -> None:
    """tsserver reports no project load for a file no tsconfig.json holds, and its syntax-only server answers
    meanwhile with the import line: the hub waits for its first diagnostics and asks again."""
    require_binary("typescript-language-server")
    project = tmp_path / "loose"
    project.mkdir()
    (project / "package.json").write_text('{"name": "loose"}\n')
    (project / "util.ts").write_text("export function price(n: number): string {\n  return n.toFixed(2);\n}\n")
    main_text = 'import { price } from "./util";\n\nconsole.log(price(3));\n'
    (project / "main.ts").write_text(main_text)
    client: HubClient = await hub_at(project)
    uri = client.open(project / "main.ts", "typescript")
    definition = await client.request("textDocument/definition", {
        "textDocument": {"uri": uri}, "position": position_of(main_text, "price(3")}, timeout=SLOW)
    assert [Path(location["uri"]).name for location in definition] == ["util.ts"], definition


async def test_clangd_on_a_c_file(sample: Path, hub_at, require_binary) -> None:  # type: ignore[no-untyped-def]
    require_binary("clangd")
    client: HubClient = await hub_at(sample)
    c_path = sample / "native" / "main.c"
    text = c_path.read_text()
    uri = client.open(c_path, "c")
    hover = await client.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": position_of(text, "gcd(84")}, timeout=SLOW)
    assert "gcd" in hover["contents"]["value"]
    definition = await client.request("textDocument/definition", {
        "textDocument": {"uri": uri}, "position": position_of(text, "gcd(84")}, timeout=SLOW)
    assert Path(definition[0]["uri"]).name in {"math.h", "math.c"}


async def test_monorepo_gets_a_basedpyright_per_project(tmp_path: Path, hub_at, require_binary) -> None:  # type: ignore[no-untyped-def]
    require_binary("basedpyright-langserver")
    monorepo = tmp_path / "monorepo"
    shutil.copytree(EXAMPLES_DIR / "monorepo", monorepo, ignore=shutil.ignore_patterns(".ruff_cache"))
    (monorepo / ".git").mkdir()
    client: HubClient = await hub_at(monorepo)
    alpha = monorepo / "projects" / "alpha" / "alpha" / "greet.py"
    beta = monorepo / "projects" / "beta" / "beta" / "counter.py"
    for path in (alpha, beta):
        text = path.read_text()
        uri = client.open(path, "python")
        needle = "greeting(name)" if path == alpha else "word_counts(text)"
        hover = await client.request("textDocument/hover", {
            "textDocument": {"uri": uri}, "position": position_of(text, needle)}, timeout=SLOW)
        assert hover and "def " in hover["contents"]["value"]
    roots = sorted(s["root"] for s in (await client.status())["servers"] if s["name"] == "basedpyright")
    assert roots == [str(monorepo / "projects" / "alpha"), str(monorepo / "projects" / "beta")]


async def test_callers_are_confirmed_and_completed_by_basedpyright(tmp_path: Path, hub_at, require_binary) -> None:  # type: ignore[no-untyped-def]
    require_binary("basedpyright-langserver")
    project = tmp_path / "shopping"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "shopping"\nversion = "0"\n')
    (project / "shop.py").write_text(
        "class Shop:\n    def pay(self) -> int:\n        return 1\n\n\n"
        "class Bank:\n    def pay(self) -> int:\n        return 2\n\n\n"
        "def registry() -> dict[str, Shop]:\n    return {'main': Shop()}\n")
    # The first call's receiver is an expression whose type only a type checker knows (`pay` has two classes);
    # the second's is an annotated parameter, which the index reads too.
    (project / "checkout.py").write_text(
        "from shop import Shop, registry\n\n\n"
        "def checkout() -> int:\n    return registry()['main'].pay()\n\n\n"
        "def direct(shop: Shop) -> int:\n    return shop.pay()\n")
    client: HubClient = await hub_at(project)
    uri = client.open(project / "shop.py", "python")
    await client.request("workspace/executeCommand", {"command": "lspHub.diagnostics", "arguments": [
        {"uri": uri, "timeoutMs": int(SLOW * 1000)}]}, timeout=SLOW)
    result = await client.request("workspace/executeCommand", {"command": "lspHub.callers", "arguments": [
        {"symbol": "Shop.pay", "timeoutMs": int(SLOW * 1000)}]}, timeout=SLOW + 10)
    found = [(c["caller"], c["location"]["range"]["start"]["line"], c["origin"]) for c in result["callers"]]
    assert found == [("checkout", 4, "server"), ("direct", 8, "both")], json.dumps(result)
    assert result["complete"] is True
    # Both asked, merged (call hierarchy alone missed calls through members in typescript-language-server).
    assert sorted(result["servers"], key=lambda server: server["method"]) == [
        {"name": "basedpyright", "method": "callHierarchy/incomingCalls", "complete": True},
        {"name": "basedpyright", "method": "textDocument/references", "complete": True}]


async def test_a_query_is_answered_about_the_disk_while_an_editor_has_unsaved_lines(  # type: ignore[no-untyped-def]
        tmp_path: Path, require_binary) -> None:
    """Issue #22: an editor inserts three unsaved lines at the top of mod.py; an agent (a long session opened from
    disk, and `lsp-hub query hover`) asks about `def beta` at its disk line 5; the editor keeps its own text."""
    import contextlib
    import os
    import subprocess
    import sys
    import tempfile

    from tests.hubclient import REPO_ROOT

    require_binary("basedpyright-langserver")
    runtime = Path(tempfile.mkdtemp(prefix="lhu-", dir="/tmp"))  # a short socket path
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    disk = 'import os\n\nprint(os.sep)\n\ndef beta() -> str:\n    return "b"\n'
    path = root / "mod.py"
    path.write_text(disk)
    uri = path.as_uri()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "XDG_RUNTIME_DIR": str(runtime),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    bridge = [sys.executable, "-m", "lsp_hub", "--connect"]
    editor, agent = HubClient(), HubClient()
    try:
        await editor.start(command=bridge, env=env, cwd=str(root))
        await editor.initialize(root)
        editor.open(path, "python")
        editor.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 9}},
            "text": "a = 1\nb = 2\nc = 3\nimport os, sys"}]})  # and the disk's first line changed

        async def hover(client: HubClient, line: int) -> str:
            answer = await client.request("textDocument/hover", {
                "textDocument": {"uri": uri}, "position": {"line": line, "character": 4}}, timeout=SLOW)
            return str((answer or {}).get("contents", {}).get("value", ""))

        assert "def beta() -> str" in await hover(editor, 7)
        await agent.start(command=bridge, env=env, cwd=str(root))
        await agent.initialize(root)
        agent.open(path, "python")
        assert "def beta() -> str" in await hover(agent, 4)  # its line 5, the servers' line 8
        assert "def beta() -> str" in await hover(editor, 7)  # the agent's open did not replace the editor's text
        editor.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{
            "range": {"start": {"line": 0, "character": 5}, "end": {"line": 0, "character": 5}}, "text": "0"}]})
        assert "def beta() -> str" in await hover(agent, 4)  # after the editor typed again

        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "lsp_hub", "query", "hover", "mod.py:5:5", "--json"],
            env=env, capture_output=True, text=True, timeout=SLOW, cwd=str(root))
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert "def beta() -> str" in answer.get("result", answer)["text"]
        unmapped = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "lsp_hub", "query", "hover", "mod.py:1:8", "--json"],
            env=env, capture_output=True, text=True, timeout=SLOW, cwd=str(root))
        refused = json.loads(unmapped.stdout)
        refused = refused.get("result", refused)
        assert refused["complete"] is False and refused["empty_reason"] == "unsaved_elsewhere", refused
        assert "def beta() -> str" in await hover(editor, 7)
    finally:
        for client in (agent, editor):
            with contextlib.suppress(Exception):
                await client.stop()
        subprocess.run([sys.executable, "-m", "lsp_hub", "daemon", "stop"], env=env, capture_output=True,
                       timeout=60)
        shutil.rmtree(runtime, ignore_errors=True)
