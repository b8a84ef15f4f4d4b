"""A scripted editor session through `lsp-hub` against examples/sample, printing what each step returns.

Run with `make demo` (which installs the servers first). It shows: hover and definition from basedpyright,
diagnostics from basedpyright and ruff merged into one list, a definition from typescript-language-server,
clangd on a C file, the hub's own repo map, and `lspHub.status` (which servers run, where, in which state). Then an
agent's session through `lsp-hub mcp` (the MCP SDK's client) on a copy of the sample: a broken write refused, a
write answered with basedpyright's error, and the fix answered clean.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsp_hub.transport.jsonrpc import ResponseFailure
from lsp_hub.transport.rawclient import HubClient, position_of

SAMPLE = Path(__file__).resolve().parent / "sample"




def heading(title: str) -> None:
    print(f"\n\033[1m== {title}\033[0m")


def show_location(location: Any) -> str:
    if isinstance(location, list):
        location = location[0] if location else None
    if not location:
        return "(none)"
    uri = location.get("uri") or location.get("targetUri")
    start = (location.get("range") or location.get("targetSelectionRange"))["start"]
    path = Path(uri.removeprefix("file://"))
    shown = path.relative_to(SAMPLE) if path.is_relative_to(SAMPLE) else path
    return f"{shown}:{start['line'] + 1}:{start['character'] + 1}"


def _apply_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """Apply LSP TextEdits (non-overlapping) to a text; enough for a demo of formatting."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: dict[str, int]) -> int:
        return offsets[min(position["line"], len(lines))] + position["character"]

    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        start, end = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        text = text[:start] + edit["newText"] + text[end:]
    return text


async def main() -> int:
    client = HubClient()
    await client.start("--log-file", str(Path("/tmp") / "lsp-hub-demo.log"), "-v", cwd=str(SAMPLE))
    started = time.perf_counter()
    result = await client.initialize(SAMPLE)
    print(f"{result['serverInfo']['name']} {result['serverInfo']['version']} started and answered initialize in "
          f"{1000 * (time.perf_counter() - started):.0f} ms (mostly Python start-up; no server waited for)")
    try:
        service_path = SAMPLE / "app" / "service.py"
        service = service_path.read_text()
        service_uri = client.open(service_path, "python")
        broken_uri = client.open(SAMPLE / "app" / "broken.py", "python")
        # Opened early: typescript-language-server loads its project in the background meanwhile.
        main_path = SAMPLE / "web" / "src" / "main.ts"
        main_text = main_path.read_text()
        main_uri = client.open(main_path, "typescript")

        heading("hover on `total_value` in app/service.py (basedpyright)")
        hover = await client.request("textDocument/hover", {
            "textDocument": {"uri": service_uri}, "position": position_of(service, "total_value(inventory)")},
            timeout=60)
        print(hover["contents"]["value"] if hover else "(no hover)")

        heading("definition of `Inventory` (basedpyright)")
        definition = await client.request("textDocument/definition", {
            "textDocument": {"uri": service_uri}, "position": position_of(service, "Inventory()")})
        print(show_location(definition))

        heading("diagnostics of app/broken.py, merged from basedpyright and ruff")
        merged = await client.wait_diagnostics(
            broken_uri, lambda d: {x.get("source") for x in d} >= {"basedpyright", "Ruff"}, timeout=60)
        for diagnostic in sorted(merged, key=lambda d: d["range"]["start"]["line"]):
            start = diagnostic["range"]["start"]
            code = f" [{diagnostic['code']}]" if diagnostic.get("code") else ""
            print(f"  {start['line'] + 1}:{start['character'] + 1} {diagnostic['source']}{code}: "
                  f"{diagnostic['message'].splitlines()[0]}")

        heading("formatting an unsaved buffer app/scratch.py (ruff)")
        scratch = "def area( w,h ):\n  return w*h\nprint( area(2,3) )\n"
        scratch_uri = client.open(SAMPLE / "app" / "scratch.py", "python", text=scratch)
        edits = await client.request("textDocument/formatting", {
            "textDocument": {"uri": scratch_uri}, "options": {"tabSize": 4, "insertSpaces": True}})
        print("before:\n" + scratch.rstrip())
        print("after:\n" + _apply_edits(scratch, edits or []).rstrip())

        heading("definition of `formatPrice` in web/src/main.ts (typescript-language-server)")
        needle = "formatPrice({"
        try:
            ts_definition = await client.request("textDocument/definition", {
                "textDocument": {"uri": main_uri}, "position": position_of(main_text, needle)}, timeout=60)
            print(show_location(ts_definition))
        except ResponseFailure as failure:
            print(f"typescript-language-server: {failure.message}")

        heading("hover on `gcd` in native/main.c (clangd)")
        c_path = SAMPLE / "native" / "main.c"
        c_text = c_path.read_text()
        c_uri = client.open(c_path, "c")
        c_hover = await client.request("textDocument/hover", {
            "textDocument": {"uri": c_uri}, "position": position_of(c_text, "gcd(84")}, timeout=60)
        print((c_hover or {}).get("contents", {}).get("value", "(no hover)").strip()[:300])

        status = await client.status()
        if "index" in status:
            heading("lspHub.repoMap (the hub's own tree-sitter index), 300 tokens")
            repo_map = await client.request("workspace/executeCommand", {
                "command": "lspHub.repoMap", "arguments": [{"tokenBudget": 300}]}, timeout=60)
            print(repo_map["text"])
            status = await client.status()

        heading("lspHub.status")
        for server in status["servers"]:
            root = Path(server["root"])
            shown = root.relative_to(SAMPLE) if root.is_relative_to(SAMPLE) else root
            print(f"  {server['name']:<28} {server['state']:<9} pid={server['pid']!s:<8} "
                  f"restarts={server['restarts']} root={shown}")
        if "index" in status:
            print(f"  index: {json.dumps(status['index'])}")
    finally:
        code = await client.stop()
        print(f"\nlsp-hub exited with code {code}")
    return await agent_session()


async def agent_session() -> int:
    """What a coding agent sees through `lsp-hub mcp`: verified writes, on a copy of the sample."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    with tempfile.TemporaryDirectory(prefix="lsp-hub-demo-") as directory:
        workspace = Path(directory) / "sample"
        shutil.copytree(SAMPLE, workspace, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
        server = StdioServerParameters(command=sys.executable, args=["-m", "lsp_hub", "mcp", "--no-daemon",
                                                                     "--root", str(workspace)])
        calls = [("write_file", {"path": "app/discount.py",
                                 "content": "def discount(price: float) -> float\n    return price * 0.9\n"}),
                 ("write_file", {"path": "app/discount.py",
                                 "content": "def discount(price: float) -> str:\n    return price*0.9\n"}),
                 ("edit_file", {"path": "app/discount.py", "old_text": "-> str:", "new_text": "-> float:"})]
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for tool, arguments in calls:
                heading(f"lsp-hub mcp: {tool} {json.dumps(arguments)}")
                result = await session.call_tool(tool, arguments)
                print(("(refused) " if result.is_error else "") + "\n".join(
                    getattr(block, "text", "") for block in result.content))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
