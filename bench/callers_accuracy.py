"""How right `lspHub.callers` is, against basedpyright (issue 11).

Corpora: this repository's `lsp_hub` package (copied to a temporary directory, so the checkout's caches and
editors do not matter) and `examples/sample`. For each, one hub runs with the built-in configuration (basedpyright
and ruff); for every function and method the index knows that basedpyright finds at least one reference to, the
truth is basedpyright's call sites: its references whose name is followed by `(`, and the call sites its
`callHierarchy/incomingCalls` lists. Against that truth it prints the recall and precision of the index alone
(`lspHub.callers` with `servers: false`) and of the merged answer (the index with basedpyright running), direct
callers only. Sites are the same when they are on the same line of the same file and their ranges overlap. Among
the misses, `missed property reads` counts the truth's sites not written as a call (`backend.pid`: basedpyright's
call hierarchy lists a property read as a call of its getter), which the index does not look for.

Done means (issue 11): the merged answer finds at least 95% of the call sites with at least 95% precision.

    python bench/callers_accuracy.py [--misses N] [--every-name]
    # --misses N: print up to N missed and N extra sites per answer kind
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_hub.index.callers import opens_a_call
from lsp_hub.index.graph_inputs import COMMON_NAMES
from lsp_hub.index.workspace import WorkspaceIndex
from lsp_hub.transport.rawclient import HubClient

REPOSITORY = Path(__file__).resolve().parent.parent
IN_FLIGHT = 6  # definitions asked about at once (basedpyright answers one at a time; the hub's work overlaps)

Site = tuple[str, int, int, int]  # uri, line, start character, end character (the end on the same line)


@dataclass
class Tally:
    truth: int = 0
    found: int = 0
    right: int = 0  # found sites that are in the truth
    recalled: int = 0  # truth sites that were found
    missed_reads: int = 0  # missed truth sites not written as a call: property reads basedpyright lists as calls
    misses: list[str] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)

    def add(self, truth: list[Site], found: list[Site], describe: Any, written_as_call: Any) -> None:
        self.truth += len(truth)
        self.found += len(found)
        for site in found:
            if any(_same(site, other) for other in truth):
                self.right += 1
            else:
                self.extras.append(describe(site))
        for site in truth:
            if any(_same(site, other) for other in found):
                self.recalled += 1
            else:
                self.misses.append(describe(site))
                self.missed_reads += not written_as_call(site)

    def line(self, label: str) -> str:
        recall = self.recalled / self.truth if self.truth else 1.0
        precision = self.right / self.found if self.found else 1.0
        return (f"{label:<24} recall {recall:7.2%} ({self.recalled}/{self.truth})   "
                f"precision {precision:7.2%} ({self.right}/{self.found})   "
                f"missed property reads {self.missed_reads}")


def _same(a: Site, b: Site) -> bool:
    return a[0] == b[0] and a[1] == b[1] and (a[2] == b[2] or (a[2] < b[3] and b[2] < a[3]))


def _site(location: dict[str, Any]) -> Site:
    start, end = location["range"]["start"], location["range"]["end"]
    end_character = end["character"] if end["line"] == start["line"] else 1 << 30
    return (location["uri"], start["line"], start["character"], end_character)


def _unique(sites: list[Site]) -> list[Site]:
    kept: list[Site] = []
    for site in sites:
        if not any(_same(site, other) for other in kept):
            kept.append(site)
    return kept


class Corpus:
    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root
        self.lines: dict[str, list[str]] = {}

    def line_text(self, uri: str, line: int) -> str:
        if uri not in self.lines:
            path = Path(uri.removeprefix("file://"))
            self.lines[uri] = path.read_text(errors="replace").splitlines() if path.is_file() else []
        lines = self.lines[uri]
        return lines[line] if line < len(lines) else ""

    def written_as_call(self, site: Site) -> bool:
        return opens_a_call(self.line_text(site[0], site[1]), site[3])

    def describe(self, site: Site) -> str:
        relative = site[0].removeprefix(self.root.as_uri() + "/")
        return f"{relative}:{site[1] + 1}:{site[2] + 1}  {self.line_text(site[0], site[1]).strip()[:90]}"


def _definitions(root: Path, every_name: bool = False) -> list[tuple[str, str, dict[str, int]]]:
    """(uri, qualified name, position of the name) of every function and method the index knows; unless
    `every_name`, without special methods (`__init__` is called as the class, `__iter__` by a for loop: not by
    name) and names of built-in types' methods (the index's COMMON_NAMES: `get`, `run`, `close`, ...), for which
    basedpyright's call hierarchy must evaluate every `x.get(...)` of the project: 40 s for `get` alone here."""
    index = WorkspaceIndex(root, use_cache=False)
    index.build()
    snapshot = index.snapshot()
    found = []
    for path, record in sorted(snapshot.files.items()):
        if record.language != "python":
            continue
        for definition in record.file_index().definitions:
            common = definition.name in COMMON_NAMES or (definition.name.startswith("__") and
                                                            definition.name.endswith("__"))
            if definition.kind in ("function", "method") and (every_name or not common):
                name = f"{definition.container}.{definition.name}" if definition.container else definition.name
                position = {"line": definition.name_span.start_line, "character": definition.name_span.start_col}
                found.append(((root / path).as_uri(), name, position))
    index.close()
    return found


async def _measure(corpus: Corpus, cache: Path, every_name: bool) -> tuple[Tally, Tally, int, int]:
    cache.mkdir(exist_ok=True)
    config = cache / "hub.toml"
    # basedpyright's first project-wide answers on a cold project take longer than the default 10 s deadline.
    config.write_text("[hub]\nrequest_timeout_seconds = 300.0\n")
    client = HubClient()
    # Not from the corpus root: `python -m lsp_hub` there would import the copy of lsp_hub being measured.
    log = cache / f"{corpus.name.replace('/', '-')}.log"
    await client.start("--config", str(config), "--log-file", str(log), env={"XDG_CACHE_HOME": str(cache)},
                       cwd=str(cache))
    try:
        await client.initialize(corpus.root)
        definitions = _definitions(corpus.root, every_name)
        # basedpyright answers project-wide questions once it has loaded the project: its first report says so.
        first = next(Path(uri.removeprefix("file://")) for uri, _, _ in definitions)
        uri = client.open(first, "python")
        await client.request("workspace/executeCommand", {"command": "lspHub.diagnostics",
                                                          "arguments": [{"uri": uri, "timeoutMs": 60000}]}, 90)
        index_tally, merged_tally = Tally(), Tally()
        started = time.perf_counter()
        counted = incomplete = 0
        semaphore = asyncio.Semaphore(IN_FLIGHT)

        asked = 0

        async def one(uri: str, position: dict[str, int]) -> None:
            nonlocal counted, incomplete, asked
            async with semaphore:
                asked += 1
                if asked % 100 == 0:
                    print(f"  ... {asked}/{len(definitions)} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
                where = {"textDocument": {"uri": uri}, "position": position}
                references = await client.request("textDocument/references", {
                    **where, "context": {"includeDeclaration": False}}, 120) or []
                if not references:
                    return
                truth = [_site(location) for location in references if opens_a_call(
                    corpus.line_text(location["uri"], location["range"]["end"]["line"]),
                    location["range"]["end"]["character"])]
                for item in (await client.request("textDocument/prepareCallHierarchy", where, 120) or [])[:2]:
                    for call in await client.request("callHierarchy/incomingCalls", {"item": item}, 120) or []:
                        truth.extend(_site({"uri": call["from"]["uri"], "range": called_at})
                                     for called_at in call.get("fromRanges", []))
                truth = _unique(truth)
                arguments = {"uri": uri, "position": position, "depth": 1}
                alone = await _callers(client, {**arguments, "servers": False})
                merged = await _callers(client, {**arguments, "timeoutMs": 60000})
                if not merged.get("complete", True):
                    incomplete += 1
                counted += 1
                index_tally.add(truth, _unique([_site(c["location"]) for c in alone["callers"]]), corpus.describe,
                                corpus.written_as_call)
                merged_tally.add(truth, _unique([_site(c["location"]) for c in merged["callers"]]), corpus.describe,
                                 corpus.written_as_call)

        await asyncio.gather(*(one(uri, position) for uri, _, position in definitions))
        return index_tally, merged_tally, counted, incomplete
    finally:
        await client.stop()


async def _callers(client: HubClient, arguments: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await client.request("workspace/executeCommand", {
        "command": "lspHub.callers", "arguments": [arguments]}, 120)
    return result


def _copy_corpora(directory: Path) -> list[Corpus]:
    hub_copy = directory / "lsp-hub"
    shutil.copytree(REPOSITORY / "lsp_hub", hub_copy / "lsp_hub",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (hub_copy / "pyproject.toml").write_text('[project]\nname = "lsp-hub-copy"\nversion = "0"\n')
    sample_copy = directory / "sample"
    shutil.copytree(REPOSITORY / "examples" / "sample", sample_copy,
                    ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    return [Corpus("lsp_hub", hub_copy), Corpus("examples/sample", sample_copy)]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", type=int, default=0, help="print up to N missed and N extra sites")
    parser.add_argument("--every-name", action="store_true",
                        help="special methods and names of built-in types' methods too (much slower)")
    options = parser.parse_args()
    started = time.perf_counter()
    totals = (Tally(), Tally())
    with tempfile.TemporaryDirectory(prefix="lsp-hub-callers-") as temporary:
        directory = Path(temporary)
        for corpus in _copy_corpora(directory):
            corpus_started = time.perf_counter()
            measured = await _measure(corpus, directory / "cache", options.every_name)
            index_tally, merged_tally, counted, incomplete = measured
            print(f"{corpus.name}: {counted} functions and methods with references "
                  f"({time.perf_counter() - corpus_started:.0f} s; {incomplete} merged answers incomplete)")
            print("  " + index_tally.line("index alone"))
            print("  " + merged_tally.line("index + basedpyright"))
            for total, tally in zip(totals, (index_tally, merged_tally), strict=True):
                for name in ("truth", "found", "right", "recalled", "missed_reads"):
                    setattr(total, name, getattr(total, name) + getattr(tally, name))
                total.misses.extend(tally.misses)
                total.extras.extend(tally.extras)
    print("all:")
    print("  " + totals[0].line("index alone"))
    print("  " + totals[1].line("index + basedpyright"))
    if options.misses:
        for label, tally in (("index alone", totals[0]), ("index + basedpyright", totals[1])):
            print(f"{label}: missed (of {len(tally.misses)})")
            for line in tally.misses[: options.misses]:
                print("   ", line)
            print(f"{label}: not a call site by basedpyright (of {len(tally.extras)})")
            for line in tally.extras[: options.misses]:
                print("   ", line)
    print(f"{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    asyncio.run(main())
