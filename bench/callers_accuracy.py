"""How right `lspHub.callers` is, against basedpyright and typescript-language-server (issues 11 and 27).

Corpora: this repository's `lsp_hub` package (copied to a temporary directory, so the checkout's caches and editors
do not matter) and `examples/sample`; or, given as paths, other git repositories (cloned to a temporary directory,
so a bare mirror works): Python ones are checked against basedpyright, TypeScript ones against
typescript-language-server, by which language has more source files. In an external repository the functions asked
about are the `--functions` most called, by the number of call sites of their name in the repository (half methods,
half functions, once per name, none defined in tests; names of built-in types' methods and special methods left out;
ties by path). For each, one hub runs with the built-in configuration, every asked definition's file open; for every
function and method asked about that the server finds at least one reference to, the truth is the server's call
sites: its own references (`lspHub.references` without the index's additions) whose name is followed by `(` (after
type arguments, if any) or opens a JSX element, definitions left out, and the call sites its
`callHierarchy/incomingCalls` lists. Against that truth it prints the recall and precision of the index alone
(`lspHub.callers` with `servers: false`) and of the merged answer (the index with the server running), direct
callers only. Sites are the same when they are on the same line of the same file and their ranges overlap. Among the
misses, `missed property reads` counts the truth's sites not written as a call (`backend.pid`: basedpyright's call
hierarchy lists a property read as a call of its getter), which the index does not look for.

In a Python repository the truth is asked a second time, in a clone whose tests' and fixtures' fixture parameters
are annotated with their fixtures' types (`bench/fixture_types.py`): basedpyright cannot type `def test_x(app):
app.route()`, so its first truth leaves out most calls in tests. Both are reported, the second as "fixtures typed".

The side-by-side table adds a third figure, the precision in the files where the server lists at least one call of
the definition: a site the server lists nowhere in its file is mostly a call it cannot type (a pytest fixture's
`app.route()`, a file outside every tsconfig), where the index is often right.

Done means (issue 11): the merged answer finds at least 95% of the call sites with at least 95% precision.
Issue 27: the index alone at least 95% at 98% precision on external repositories; with the server, TypeScript
methods at least 95% at 98%. The last table puts every corpus's figures side by side, methods apart.

    python bench/callers_accuracy.py [--misses N] [--every-name]
    python bench/callers_accuracy.py /work/.mirror/pallets+flask/repo /work/.mirror/honojs+hono/repo [--functions 24]
    # --misses N: print up to N missed and N extra sites per answer kind
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.callers_tally import Site, Tally, add_tally, figures, site_of, unique_sites
from bench.fixture_types import annotate_fixtures
from lsp_hub.index.callers import opens_a_call
from lsp_hub.index.file_kinds import is_test_file
from lsp_hub.index.graph_inputs import COMMON_NAMES
from lsp_hub.index.model import Definition
from lsp_hub.index.workspace import WorkspaceIndex
from lsp_hub.transport.jsonrpc import ResponseFailure
from lsp_hub.transport.rawclient import HubClient

REPOSITORY = Path(__file__).resolve().parent.parent
IN_FLIGHT = 6  # definitions asked about at once (basedpyright answers one at a time; the hub's work overlaps)

LANGUAGES = {
    "python": ("python", "basedpyright"),
    "typescript": ("typescript", "typescript-language-server"),
    "tsx": ("typescript", "typescript-language-server"),
}
SUFFIXES = {".py": "python", ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript"}


class Corpus:
    def __init__(self, name: str, root: Path, language: str = "python", most_called: int | None = None) -> None:
        self.name = name
        self.root = root
        self.language = language  # the index's language name of the files whose functions are asked about
        self.most_called = most_called  # None: every function and method
        self.lines: dict[str, list[str]] = {}
        # (uri, line, character) of every definition's name: a method that implements or overrides the one asked
        # about is among its references, and followed by `(`, but is no call
        self.definition_sites: set[tuple[str, int, int]] = set()

    @property
    def server(self) -> str:
        return LANGUAGES[self.language][1]

    def line_text(self, uri: str, line: int) -> str:
        if uri not in self.lines:
            path = Path(uri.removeprefix("file://"))
            self.lines[uri] = path.read_text(errors="replace").splitlines() if path.is_file() else []
        lines = self.lines[uri]
        return lines[line] if line < len(lines) else ""

    def is_call(self, location: dict[str, Any]) -> bool:
        """Whether a reference is a call site: its name is followed by `(` (after type arguments, if any), or opens
        a JSX element (`<Suspense fallback=...>` calls the component; the index counts it as a call)."""
        start, end = location["range"]["start"], location["range"]["end"]
        if (location["uri"], start["line"], start["character"]) in self.definition_sites:
            return False
        if opens_a_call(self.line_text(location["uri"], end["line"]), end["character"]):
            return True
        after = self.line_text(location["uri"], end["line"])[end["character"] :]
        if self.language == "typescript" and after.startswith("`"):
            return True  # a tagged template: html`<p>${name}</p>` calls html
        before = self.line_text(location["uri"], start["line"])[: start["character"]]
        return self.language == "typescript" and before.endswith("<") and not before.endswith("<<")

    def written_as_call(self, site: Site) -> bool:
        return opens_a_call(self.line_text(site[0], site[1]), site[3])

    def describe(self, site: Site) -> str:
        relative = site[0].removeprefix(self.root.as_uri() + "/")
        return f"{relative}:{site[1] + 1}:{site[2] + 1}  {self.line_text(site[0], site[1]).strip()[:90]}"


def _is_asked(definition: Definition, every_name: bool) -> bool:
    common = definition.name in COMMON_NAMES or (definition.name.startswith("__") and definition.name.endswith("__"))
    return definition.kind in ("function", "method") and definition.name != "constructor" and (every_name or not common)


def _definitions(corpus: Corpus, every_name: bool = False) -> list[tuple[str, str, dict[str, int], str]]:
    """(uri, qualified name, position of the name, kind) of every function and method the index knows in the
    corpus's language, or of the `most_called` ones; unless `every_name`, without special methods (`__init__` is
    called as the class, `__iter__` by a for loop: not by name) and names of built-in types' methods (the index's
    COMMON_NAMES: `get`, `run`, `close`, ...), for which the server's call hierarchy must evaluate every
    `x.get(...)` of the project: 40 s for `get` alone here."""
    root = corpus.root
    index = WorkspaceIndex(root, use_cache=False)
    index.build()
    snapshot = index.snapshot()
    found = []
    calls_of_name: dict[str, int] = {}
    for path, record in sorted(snapshot.files.items()):
        for reference in record.file_index().references:
            if reference.is_call:
                calls_of_name[reference.name] = calls_of_name.get(reference.name, 0) + 1
        if record.language not in LANGUAGES or LANGUAGES[record.language][0] != corpus.language:
            continue
        for definition in record.file_index().definitions:
            start = definition.name_span
            corpus.definition_sites.add(((root / path).as_uri(), start.start_line, start.start_col))
            if _is_asked(definition, every_name):
                name = f"{definition.container}.{definition.name}" if definition.container else definition.name
                position = {"line": definition.name_span.start_line, "character": definition.name_span.start_col}
                kind = "method" if definition.container else "function"
                found.append(((root / path).as_uri(), name, position, kind))
    index.close()
    if corpus.most_called is None:
        return found
    # Once per name and not in tests (helpers of one test file): the most called of what the project defines.
    distinct: dict[str, tuple[str, str, dict[str, int], str]] = {}
    for entry in found:
        if not is_test_file(entry[0].removeprefix(root.as_uri() + "/")):
            distinct.setdefault(entry[1], entry)
    chosen = []
    for kind in ("method", "function"):
        of_kind = [entry for entry in distinct.values() if entry[3] == kind]
        of_kind.sort(key=lambda entry: (-calls_of_name.get(entry[1].rsplit(".", 1)[-1], 0), entry[0], entry[1]))
        chosen.extend(of_kind[: (corpus.most_called + (kind == "method")) // 2])
    return chosen


Tallies = dict[tuple[str, str], Tally]  # (answer, kind: "all" | "method") -> tally
# Answers: "index" (alone) and "merged" (with the server) against the server's truth; in a Python corpus also
# "index typed" and "merged typed", against the truth of the server asked in a copy whose tests' fixture
# parameters are annotated with their fixtures' types (bench/fixture_types.py).
ANSWERS = ("index", "merged", "index typed", "merged typed")
ANSWER_LABELS = ("index alone", "index + server", "index alone, fixtures typed", "index + server, fixtures typed")
Asked = tuple[str, str, dict[str, int], str]  # uri, qualified name, position of the name, kind


async def _start_hub(corpus: Corpus, cache: Path, hub_path: Path | None, label: str = "") -> HubClient:
    cache.mkdir(exist_ok=True)
    config = cache / "hub.toml"
    # basedpyright's first project-wide answers on a cold project take longer than the default 10 s deadline.
    config.write_text("[hub]\nrequest_timeout_seconds = 300.0\n")
    client = HubClient()
    # Not from the corpus root: `python -m lsp_hub` there would import the copy of lsp_hub being measured.
    log = cache / f"{corpus.name.replace('/', '-')}{label}.log"
    env = {"XDG_CACHE_HOME": str(cache)}
    if hub_path is not None:  # another version of lsp-hub answers, asked about the same definitions
        env["PYTHONPATH"] = str(hub_path)
    await client.start("--config", str(config), "--log-file", str(log), env=env, cwd=str(cache))
    await client.initialize(corpus.root)
    return client


async def _open_and_wait(client: HubClient, corpus: Corpus, definitions: list[Asked]) -> None:
    """Each definition's file open, as in an editor; for TypeScript every file: in a solution-style tsconfig
    (hono's: one project for the sources, one for the tests), typescript-language-server looks for references only
    in the projects it has loaded, and it loads a project when one of its files is opened. A server answers
    project-wide questions once it has loaded the project: its first report says so."""
    opened = {uri for uri, _, _, _ in definitions}
    if corpus.language == "typescript":
        opened.update(
            path.as_uri()
            for path in corpus.root.rglob("*")
            if SUFFIXES.get(path.suffix) == "typescript" and not {".git", "node_modules"} & set(path.parts)
        )
    for uri in sorted(opened):
        path = Path(unquote(uri.removeprefix("file://")))
        client.open(path, "typescriptreact" if path.suffix == ".tsx" else corpus.language)
    await client.request(
        "workspace/executeCommand",
        {"command": "lspHub.diagnostics", "arguments": [{"uri": definitions[0][0], "timeoutMs": 60000}]},
        90,
    )


async def _truth(client: HubClient, corpus: Corpus, uri: str, position: dict[str, int]) -> list[Site] | None:
    """The server's call sites of the definition at `position`; None when it finds no reference to it."""
    where = {"textDocument": {"uri": uri}, "position": position}
    # The server's own references: `textDocument/references` through the hub is completed with the index's uses
    # in files the server listed nothing in, which would make the index its own truth.
    covered = await client.request(
        "workspace/executeCommand",
        {
            "command": "lspHub.references",
            "arguments": [{"uri": uri, "position": position, "includeDeclaration": False}],
        },
        120,
    )
    references = [entry for entry in covered.get("locations", []) if entry.get("origin") != "index"]
    if not references:
        return None
    truth = [site_of(location) for location in references if corpus.is_call(location)]
    truth.extend(await _incoming_calls(client, where))
    return unique_sites(truth)


async def _typed_truth(
    corpus: Corpus, directory: Path, cache: Path, definitions: list[Asked], hub_path: Path | None
) -> dict[str, list[Site] | None]:
    """The server's call sites of each definition (by uri and name) in a copy of the corpus whose pytest fixture
    parameters are annotated with their fixtures' types, as sites of the corpus itself (the annotations move no
    line); empty when no parameter could be annotated."""
    typed = Corpus(corpus.name, directory / f"{corpus.root.name}-typed", corpus.language, corpus.most_called)
    subprocess.run(["git", "clone", "--quiet", str(corpus.root), str(typed.root)], check=True)
    shutil.copy(corpus.root / "pyrightconfig.json", typed.root / "pyrightconfig.json")
    files, parameters = annotate_fixtures(typed.root)
    print(f"{corpus.name}: {parameters} fixture parameters annotated in {files} files", file=sys.stderr)
    if not parameters:
        return {}
    prefix, original = typed.root.as_uri(), corpus.root.as_uri()
    typed.definition_sites = {
        (uri.replace(original, prefix, 1), line, character) for uri, line, character in corpus.definition_sites
    }
    client = await _start_hub(typed, cache, hub_path, "-typed")
    try:
        moved = [(uri.replace(original, prefix, 1), name, position, kind) for uri, name, position, kind in definitions]
        await _open_and_wait(client, typed, moved)
        semaphore = asyncio.Semaphore(IN_FLIGHT)

        async def one(uri: str, position: dict[str, int]) -> list[Site] | None:
            async with semaphore:
                sites = await _truth(client, typed, uri, position)
            return None if sites is None else [(site[0].replace(prefix, original, 1), *site[1:]) for site in sites]

        found = await asyncio.gather(*(one(uri, position) for uri, _name, position, _kind in moved))
        return {f"{uri} {name}": sites for (uri, name, _position, _kind), sites in zip(definitions, found, strict=True)}
    finally:
        await client.stop()


async def _measure(
    corpus: Corpus, directory: Path, every_name: bool, each: bool, hub_path: Path | None = None
) -> tuple[Tallies, int, int]:
    cache = directory / "cache"
    definitions = _definitions(corpus, every_name)
    typed_truth = {}
    if corpus.language == "python" and corpus.most_called is not None:
        typed_truth = await _typed_truth(corpus, directory, cache, definitions, hub_path)
    client = await _start_hub(corpus, cache, hub_path)
    try:
        await _open_and_wait(client, corpus, definitions)
        answers = ANSWERS if typed_truth else ANSWERS[:2]
        tallies: Tallies = {(answer, kind): Tally() for answer in answers for kind in ("all", "method")}
        started = time.perf_counter()
        counted = incomplete = 0
        semaphore = asyncio.Semaphore(IN_FLIGHT)

        asked = 0

        async def one(uri: str, name: str, position: dict[str, int], kind: str) -> None:
            nonlocal counted, incomplete, asked
            async with semaphore:
                asked += 1
                if asked % 100 == 0:
                    print(f"  ... {asked}/{len(definitions)} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
                truth = await _truth(client, corpus, uri, position)
                if truth is None:
                    if each:
                        print(f"  {name}: no references", file=sys.stderr)
                    return
                arguments = {"uri": uri, "position": position, "depth": 1, "limit": 5000}
                alone = await _callers(client, {**arguments, "servers": False})
                merged = await _callers(client, {**arguments, "timeoutMs": 60000})
                if not merged.get("complete", True):
                    incomplete += 1
                counted += 1
                if each:
                    print(
                        f"  {name}: truth {len(truth)}, index {len(alone['callers'])}, merged "
                        f"{len(merged['callers'])} {merged.get('servers')}",
                        file=sys.stderr,
                    )
                # The typed copy's truth, and the server's own where it found no reference there.
                typed = typed_truth.get(f"{uri} {name}")
                typed = truth if typed is None else typed
                for answer, result, against in (
                    ("index", alone, truth),
                    ("merged", merged, truth),
                    ("index typed", alone, typed),
                    ("merged typed", merged, typed),
                ):
                    found = unique_sites([site_of(c["location"]) for c in result["callers"]])
                    for kinds in ("all", kind):
                        if (answer, kinds) in tallies:
                            tallies[answer, kinds].add(against, found, corpus.describe, corpus.written_as_call)

        await asyncio.gather(*(one(uri, name, position, kind) for uri, name, position, kind in definitions))
        return tallies, counted, incomplete
    finally:
        await client.stop()


async def _incoming_calls(client: HubClient, where: dict[str, Any]) -> list[Site]:
    """The call sites the server's call hierarchy lists; none when it offers no call hierarchy."""
    sites: list[Site] = []
    try:
        for item in (await client.request("textDocument/prepareCallHierarchy", where, 120) or [])[:2]:
            for call in await client.request("callHierarchy/incomingCalls", {"item": item}, 120) or []:
                sites.extend(
                    site_of({"uri": call["from"]["uri"], "range": called_at})
                    for called_at in call.get("fromRanges", [])
                )
    except ResponseFailure:
        return sites  # the server does not offer it: its references stand
    return sites


async def _callers(client: HubClient, arguments: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await client.request(
        "workspace/executeCommand", {"command": "lspHub.callers", "arguments": [arguments]}, 120
    )
    return result


def _copy_corpora(directory: Path) -> list[Corpus]:
    hub_copy = directory / "lsp-hub"
    shutil.copytree(REPOSITORY / "lsp_hub", hub_copy / "lsp_hub", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (hub_copy / "pyproject.toml").write_text('[project]\nname = "lsp-hub-copy"\nversion = "0"\n')
    sample_copy = directory / "sample"
    shutil.copytree(
        REPOSITORY / "examples" / "sample", sample_copy, ignore=shutil.ignore_patterns("__pycache__", "node_modules")
    )
    return [Corpus("lsp_hub", hub_copy), Corpus("examples/sample", sample_copy)]


def _clone_corpus(source: Path, directory: Path, most_called: int) -> Corpus | None:
    """A git repository (a work tree or a bare mirror) cloned under `directory`, as a corpus in the language most
    of its files are in; None, with one line on stderr, when it cannot be."""
    name = (source.name if source.name not in ("repo", ".git") else source.parent.name).replace("+", "-")
    destination = directory / name
    cloned = subprocess.run(
        ["git", "clone", "--quiet", str(source), str(destination)], capture_output=True, text=True, check=False
    )
    if cloned.returncode != 0:
        print(f"{source}: not a git repository to clone ({cloned.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
        return None
    counts: dict[str, int] = {}
    for path in destination.rglob("*"):
        language = SUFFIXES.get(path.suffix)
        if language is not None and ".git" not in path.parts and "node_modules" not in path.parts:
            counts[language] = counts.get(language, 0) + 1
    if not counts:
        print(f"{source}: no Python or TypeScript files", file=sys.stderr)
        return None
    language = max(counts, key=lambda language: counts[language])
    pyright_config = destination / "pyrightconfig.json"
    if language == "python" and not pyright_config.exists():
        # basedpyright looks for references only among the files its configuration includes (flask's pyproject:
        # src/flask and tests/type_check), while the index reads every file: the truth must cover them all.
        pyright_config.write_text('{"include": ["."]}\n')
    return Corpus(name, destination, language, most_called)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "repositories",
        nargs="*",
        type=Path,
        help="git repositories (paths; bare mirrors too) instead of this repository's corpora",
    )
    parser.add_argument(
        "--functions",
        type=int,
        default=24,
        help="in an external repository: how many of the most-called functions and methods",
    )
    parser.add_argument(
        "--hub-path",
        type=Path,
        help="the directory holding the lsp_hub package the hub runs from (an older checkout, for a before figure)",
    )
    parser.add_argument("--each", action="store_true", help="print each definition's counts on stderr")
    parser.add_argument("--misses", type=int, default=0, help="print up to N missed and N extra sites")
    parser.add_argument(
        "--every-name",
        action="store_true",
        help="special methods and names of built-in types' methods too (much slower)",
    )
    options = parser.parse_args()
    started = time.perf_counter()
    totals: Tallies = {(answer, "all"): Tally() for answer in ANSWERS}
    rows: list[tuple[str, Tallies]] = []
    with tempfile.TemporaryDirectory(prefix="lsp-hub-callers-") as temporary:
        directory = Path(temporary)
        if options.repositories:
            corpora = [_clone_corpus(source, directory, options.functions) for source in options.repositories]
        else:
            corpora = list(_copy_corpora(directory))
        for corpus in corpora:
            if corpus is None:
                continue
            corpus_started = time.perf_counter()
            tallies, counted, incomplete = await _measure(
                corpus, directory, options.every_name, options.each, options.hub_path
            )
            print(
                f"{corpus.name} ({corpus.language}): {counted} functions and methods with references "
                f"({time.perf_counter() - corpus_started:.0f} s; {incomplete} merged answers incomplete)"
            )
            for answer, label in zip(ANSWERS, ANSWER_LABELS, strict=True):
                if (answer, "all") in tallies:
                    print("  " + tallies[answer, "all"].line(label.replace("server", corpus.server)))
                    add_tally(totals[answer, "all"], tallies[answer, "all"])
            rows.append((corpus.name, tallies))
    print("all:")
    for answer, label in zip(ANSWERS, ANSWER_LABELS, strict=True):
        if totals[answer, "all"].truth:
            print("  " + totals[answer, "all"].line(label))
    print("\nrecall / precision / precision in the files where the server lists a call (call sites in the truth)")
    print("(fixtures typed: the truth of the server in a copy whose test fixtures' parameters are annotated)")
    print(f"{'':<48} {'index alone':<34} {'index + server':<34}")
    for name, tallies in rows:
        for truth, suffix in (("", ""), (" typed", " (fixtures typed)")):
            for kind, label in (("all", "all"), ("method", "methods")):
                if ("index" + truth, kind) in tallies:
                    index, merged = tallies["index" + truth, kind], tallies["merged" + truth, kind]
                    print(f"{name + ', ' + label + suffix:<48} {figures(index):<34} {figures(merged)}")
    if options.misses:
        for answer, label in zip(ANSWERS, ANSWER_LABELS, strict=True):
            tally = totals[answer, "all"]
            print(f"{label}: missed (of {len(tally.misses)})")
            for line in tally.misses[: options.misses]:
                print("   ", line)
            print(f"{label}: not a call site by the server (of {len(tally.extras)})")
            for line in tally.extras[: options.misses]:
                print("   ", line)
    print(f"{time.perf_counter() - started:.0f} s in all")


if __name__ == "__main__":
    asyncio.run(main())
