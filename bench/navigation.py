"""Navigation commands of the index (issue #24), measured inside the process (library level): the median and p95
time of each `lsp_hub.index.api` navigation function on a tree given as an argument, with the size of its answer
in tokens (characters / 4), beside what an agent does without it: ripgrep run directly for `search`, reading the
whole file for `outline` and `zoom`.

Subjects are picked from the tree itself: the best-ranked files of the repo map, their top-level functions and
classes, identifiers they define as search patterns. Each round asks about another subject; the index is built
(or loaded from its cache) and warmed first, as in a running hub.

    python bench/navigation.py TREE [--rounds N] [--json] [--through-daemon ROUNDS]

With --through-daemon, the same questions also go to a warm daemon of its own (a private runtime directory): each
`lspHub.*` command's round trip over the daemon's socket (the hub's time plus the socket), and `lsp-hub query
ACTION` as a new process each time (what a shell or an agent's tool call pays), side by side in one run.
    # e.g. TREE = $(python3 -c 'import sysconfig;print(sysconfig.get_paths()["stdlib"])')

Targets inside the hub: outline, zoom, imports, symbols <= 20 ms; impact <= 200 ms; context <= 300 ms; search
within 1.2x of ripgrep alone on the same tree.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_hub.index import api
from lsp_hub.index.navigation.common import NavigationError
from lsp_hub.index.navigation.structural_search import AST_GREP_LANGUAGES
from lsp_hub.index.navigation.text_search import ripgrep_binary, ripgrep_command
from lsp_hub.index.ranking import base_pagerank
from lsp_hub.index.workspace import WorkspaceIndex

TARGETS_MS = {"outline": 20.0, "zoom": 20.0, "imports": 20.0, "symbols": 20.0, "impact": 200.0, "context": 300.0}
SEARCH_RATIO_TARGET = 1.2


@dataclass
class Figure:
    name: str
    times: list[float] = field(default_factory=list)  # seconds
    tokens: list[int] = field(default_factory=list)
    baseline_times: list[float] = field(default_factory=list)
    baseline_tokens: list[int] = field(default_factory=list)
    errors: int = 0

    @staticmethod
    def _p95(values: list[float]) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]

    def summary(self) -> dict[str, Any]:
        result: dict[str, Any] = {"command": self.name, "rounds": len(self.times), "errors": self.errors}
        if self.times:
            result.update(medianMs=round(statistics.median(self.times) * 1000, 2),
                          p95Ms=round(self._p95(self.times) * 1000, 2),
                          medianTokens=int(statistics.median(self.tokens)))
        if self.baseline_times:
            result.update(baselineMedianMs=round(statistics.median(self.baseline_times) * 1000, 2),
                          baselineP95Ms=round(self._p95(self.baseline_times) * 1000, 2),
                          baselineMedianTokens=int(statistics.median(self.baseline_tokens)))
        return result


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = call()
    return time.perf_counter() - start, value


def subjects(index: WorkspaceIndex, count: int) -> tuple[list[str], list[str], list[str]]:
    """(files, symbols `Container.name` or names, identifiers) from the best-ranked files."""
    snapshot = index.snapshot()
    ranks = base_pagerank(snapshot)
    files = [path for path in sorted(snapshot.files, key=lambda p: (-ranks.get(p, 0.0), p))
             if snapshot.files[path].definition_count > 3][:count]
    symbols: list[str] = []
    identifiers: list[str] = []
    for path in files:
        for definition in snapshot.files[path].outline().definitions:
            if definition.kind in ("function", "class") and definition.container is None and len(definition.name) > 5:
                symbols.append(f"{path}:{definition.name_span.start_line + 1}:{definition.name_span.start_col + 1}")
                identifiers.append(definition.name)
                break
    return files, symbols, identifiers


def measure(tree: Path, rounds: int) -> list[dict[str, Any]]:
    index = WorkspaceIndex(tree)
    build_seconds, _ = timed(index.build)
    print(f"index of {tree}: {len(index.snapshot().files)} files, ready in {build_seconds:.1f} s", file=sys.stderr)
    files, symbols, identifiers = subjects(index, rounds)
    rg = ripgrep_binary()
    # The tree's most common language that ast-grep knows: `$A.get($B)` reads the same in Python and TypeScript.
    counts = Counter(record.language for record in index.snapshot().files.values()
                     if record.language in AST_GREP_LANGUAGES)
    language = counts.most_common(1)[0][0] if counts else "python"
    figures = {name: Figure(name) for name in ("outline", "zoom", "imports", "symbols", "impact", "context",
                                               "call_tree", "trace", "search", "structural_search")}

    def run(name: str, call: Callable[[], Any]) -> None:
        try:
            seconds, result = timed(call)
        except NavigationError:
            figures[name].errors += 1
            return
        figures[name].times.append(seconds)
        figures[name].tokens.append(len(result.to_text()) // 4)

    # Warm up: the graphs the commands share are built once per index version, as in a running hub.
    api.impact(index, symbols[0])
    api.search(index, identifiers[0])
    api.symbols(index, identifiers[0][:3])
    for position in range(rounds):
        path, symbol, identifier = (files[position % len(files)], symbols[position % len(symbols)],
                                    identifiers[position % len(identifiers)])
        run("outline", lambda path=path: api.outline(index, path))  # type: ignore[misc]
        seconds, text = timed(lambda path=path: (tree / path).read_text(encoding="utf-8", errors="replace"))
        figures["outline"].baseline_times.append(seconds)
        figures["outline"].baseline_tokens.append(len(text) // 4)
        figures["zoom"].baseline_times.append(seconds)
        figures["zoom"].baseline_tokens.append(len(text) // 4)
        run("zoom", lambda symbol=symbol: api.zoom(index, symbol))  # type: ignore[misc]
        run("imports", lambda path=path: api.imports(index, path))  # type: ignore[misc]
        query = identifier[: max(4, len(identifier) // 2)]  # part of a name, as an agent half remembers it
        run("symbols", lambda query=query: api.symbols(index, query))  # type: ignore[misc]
        run("impact", lambda symbol=symbol: api.impact(index, symbol))  # type: ignore[misc]
        run("context", lambda identifier=identifier, path=path: api.context(  # type: ignore[misc]
            index, f"Change how {identifier} behaves", [path]))
        run("call_tree", lambda symbol=symbol: api.call_tree(index, symbol))  # type: ignore[misc]
        run("trace", lambda symbol=symbol: api.trace(index, symbol))  # type: ignore[misc]
        run("search", lambda identifier=identifier: api.search(index, identifier))  # type: ignore[misc]
        if rg is not None:
            command = ripgrep_command(rg, identifier, False, False, ())
            seconds, finished = timed(lambda command=command: subprocess.run(  # type: ignore[misc]
                command, cwd=index.root, stdin=subprocess.DEVNULL, capture_output=True, check=False))
            figures["search"].baseline_times.append(seconds)
            figures["search"].baseline_tokens.append(len(finished.stdout) // 4)
        if position < max(3, rounds // 5):  # ast-grep parses every file of the language: fewer rounds
            run("structural_search", lambda: api.structural_search(index, "$A.get($B)", language, limit=50))
    index.close()
    return [figure.summary() for figure in figures.values()]


def through_daemon(tree: Path, rounds: int) -> list[dict[str, Any]]:
    """Round trips of each command to a warm daemon, and whole `lsp-hub query` processes, on the tree."""
    import os
    import tempfile

    from lsp_hub.agents.query import connect_default

    index = WorkspaceIndex(tree)
    index.build()
    files, symbols, identifiers = subjects(index, rounds)
    index.close()
    private = Path(tempfile.mkdtemp(prefix="navigation-daemon-"))
    (private / "run").mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(private / "run"), "XDG_CONFIG_HOME": str(private / "config")}
    saved = {key: os.environ.get(key) for key in ("XDG_RUNTIME_DIR", "XDG_CONFIG_HOME")}
    os.environ.update({key: env[key] for key in saved})
    hub = connect_default(tree, who="bench")
    rows: list[dict[str, Any]] = []
    try:
        hub.initialize(tree, 120.0)
        hub.request("workspace/executeCommand", {"command": "lspHub.repoMap", "arguments": [{}]}, 300.0)  # warm
        cases: list[tuple[str, Callable[[int], tuple[str, dict[str, Any], list[str]]]]] = [
            ("outline", lambda n: ("lspHub.outline", {"path": str(tree / files[n])}, [str(tree / files[n])])),
            ("zoom", lambda n: ("lspHub.zoom", {"symbol": str(tree / symbols[n])}, [str(tree / symbols[n])])),
            ("imports", lambda n: ("lspHub.imports", {"path": str(tree / files[n])}, [str(tree / files[n])])),
            ("symbols", lambda n: ("lspHub.symbols", {"query": identifiers[n][:4]},
                                   ["--query", identifiers[n][:4]])),
            ("impact", lambda n: ("lspHub.impact", {"target": str(tree / symbols[n])}, [str(tree / symbols[n])])),
            ("context", lambda n: ("lspHub.context", {"description": f"Change how {identifiers[n]} behaves",
                                                      "targets": [str(tree / files[n])]},
                                   ["--description", f"Change how {identifiers[n]} behaves",
                                    "--target", str(tree / files[n])])),
            ("call-tree", lambda n: ("lspHub.callTree", {"symbol": str(tree / symbols[n])},
                                     [str(tree / symbols[n])])),
            ("trace", lambda n: ("lspHub.trace", {"symbol": str(tree / symbols[n])}, [str(tree / symbols[n])])),
            ("search", lambda n: ("lspHub.search", {"pattern": identifiers[n]}, [identifiers[n]])),
        ]
        for action, case in cases:
            in_hub, whole = Figure(action), Figure(action)
            for n in range(min(rounds, len(symbols))):
                command, arguments, argv = case(n)
                seconds, _ = timed(lambda command=command, arguments=arguments: hub.request(  # type: ignore[misc]
                    "workspace/executeCommand", {"command": command, "arguments": [arguments]}, 120.0))
                in_hub.times.append(seconds)
                in_hub.tokens.append(0)
                seconds, _ = timed(lambda argv=argv, action=action: subprocess.run(  # type: ignore[misc]
                    [sys.executable, "-m", "lsp_hub", "query", action, *argv, "--root", str(tree)], env=env,
                    cwd=tree, stdin=subprocess.DEVNULL, capture_output=True, check=False, timeout=300))
                whole.times.append(seconds)
                whole.tokens.append(0)
            rows.append({"command": action, "hubMedianMs": in_hub.summary().get("medianMs"),
                         "hubP95Ms": in_hub.summary().get("p95Ms"), "queryMedianMs": whole.summary().get("medianMs"),
                         "queryP95Ms": whole.summary().get("p95Ms")})
    finally:
        hub.owned = True
        hub.close()
        subprocess.run([sys.executable, "-m", "lsp_hub", "daemon", "stop"], env=env, capture_output=True,
                       timeout=60, check=False)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return rows


def verdict(row: dict[str, Any]) -> str:
    name = row["command"]
    if "medianMs" not in row:
        return "no answer"
    if name in TARGETS_MS:
        return "ok" if row["medianMs"] <= TARGETS_MS[name] else f"over {TARGETS_MS[name]:.0f} ms"
    if name == "search" and "baselineMedianMs" in row:
        ratio = row["medianMs"] / row["baselineMedianMs"]
        return f"{ratio:.2f}x rg " + ("ok" if ratio <= SEARCH_RATIO_TARGET else f"over {SEARCH_RATIO_TARGET}x")
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--through-daemon", type=int, default=0, metavar="ROUNDS",
                        help="also ask a warm daemon of its own, and `lsp-hub query` processes, ROUNDS times each")
    arguments = parser.parse_args()
    rows = measure(arguments.tree.resolve(), arguments.rounds)
    if arguments.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'command':<18} {'median ms':>10} {'p95 ms':>8} {'tokens':>7}   {'baseline ms':>11} {'p95':>7} "
          f"{'tokens':>7}  verdict")
    for row in rows:
        print(f"{row['command']:<18} {row.get('medianMs', '-'):>10} {row.get('p95Ms', '-'):>8} "
              f"{row.get('medianTokens', '-'):>7}   {row.get('baselineMedianMs', '-'):>11} "
              f"{row.get('baselineP95Ms', '-'):>7} {row.get('baselineMedianTokens', '-'):>7}  {verdict(row)}"
              + (f" ({row['errors']} refused)" if row["errors"] else ""))
    if arguments.through_daemon:
        print(f"\nthrough a warm daemon ({arguments.through_daemon} rounds): the command's round trip over the "
              "socket, and `lsp-hub query` as a new process")
        print(f"{'action':<18} {'hub median':>10} {'p95':>8}   {'query median':>12} {'p95':>8}")
        for row in through_daemon(arguments.tree.resolve(), arguments.through_daemon):
            print(f"{row['command']:<18} {row['hubMedianMs']:>10} {row['hubP95Ms']:>8}   "
                  f"{row['queryMedianMs']:>12} {row['queryP95Ms']:>8}")


if __name__ == "__main__":
    main()
