"""References recall when the server's analysis scope leaves files out (issue 21, item 6).

A language server answers references only for the files it analyses: flask's own `[tool.pyright] include =
["src", "tests/type_check"]` leaves `tests/` and `examples/` out. For N module-level functions of the analysed
files whose name is written somewhere outside them, this measures against the truth, basedpyright with the whole
tree in scope (a copy of the repository with a `pyrightconfig.json` that includes everything):

- (a) basedpyright alone through the hub, with the repository's own scope (the locations `lspHub.references`
  tags `server` or `both`);
- (b) the hub's merged answer (every location of `lspHub.references`: the server's, and the index's in the files
  the server listed nothing in).

Sites are the same when they start at the same position of the same file. Precision of (b) is printed too: a
location that is not in the truth is one a rename from this answer would wrongly change. Done means merged recall
of at least 0.95.

    python bench/references_recall.py REPO_PATH [--include DIR ...] [--functions N] [--misses N]
    # --include: the analysed directories for (a) and (b) (default: the repository's own configuration)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_hub.agents.query import HubConnection, Workspace, spawn_hub, uri_path

Site = tuple[str, int, int]  # path relative to the copy's root, line, start character
TIMEOUT_SECONDS = 180.0
SKIPPED_DIRECTORIES = {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache", "build", "dist"}


@dataclass
class Function:
    path: str  # relative to the root
    name: str
    line: int  # 0-based, of the name
    character: int


@dataclass
class Tally:
    truth: int = 0
    server_recalled: int = 0
    merged_recalled: int = 0
    merged_found: int = 0
    merged_right: int = 0
    misses: list[str] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)


def python_files(root: Path) -> list[Path]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if not SKIPPED_DIRECTORIES.intersection(path.relative_to(root).parts):
            found.append(path)
    return found


def analysed(path: str, include: list[str]) -> bool:
    return any(path == directory or path.startswith(directory.rstrip("/") + "/") for directory in include)


def own_include(root: Path) -> list[str]:
    """The repository's own analysis scope: `[tool.pyright] include` of its pyproject.toml, or pyrightconfig.json."""
    import tomllib

    config = root / "pyrightconfig.json"
    if config.is_file():
        return list(json.loads(config.read_text()).get("include") or ["."])
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        tool = tomllib.loads(pyproject.read_text()).get("tool", {})
        section = tool.get("pyright") or tool.get("basedpyright") or {}
        return list(section.get("include") or ["."])
    return ["."]


def pick_functions(root: Path, include: list[str], count: int) -> list[Function]:
    """Module-level functions of the analysed files whose name is written in a file outside them (found by text,
    not by the index: the choice must not favour what the index finds), spread evenly over the candidates."""
    outside_text = "\n".join(path.read_text(errors="replace") for path in python_files(root)
                             if not analysed(path.relative_to(root).as_posix(), include))
    candidates: list[Function] = []
    for path in python_files(root):
        relative = path.relative_to(root).as_posix()
        if not analysed(relative, include):
            continue
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except SyntaxError:
            continue
        lines = path.read_text(errors="replace").split("\n")
        named: set[str] = set()
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name.startswith("__"):
                continue
            if node.name in named:
                continue  # `@overload`s of one function: asked once, at the first
            named.add(node.name)
            if not re.search(rf"\b{re.escape(node.name)}\b", outside_text):
                continue
            line = node.lineno - 1
            character = lines[line].find(node.name, lines[line].find("def"))
            candidates.append(Function(relative, node.name, line, character))
    if len(candidates) <= count:
        return candidates
    step = len(candidates) / count
    return [candidates[int(i * step)] for i in range(count)]


class Hub:
    """One hub (`python -m lsp_hub`, basedpyright and ruff by the built-in configuration) on one copy."""

    def __init__(self, root: Path, cache: Path) -> None:
        self.root = root
        self.connection: HubConnection = spawn_hub(root, env={"XDG_CACHE_HOME": str(cache)})
        self.connection.initialize(root, TIMEOUT_SECONDS)
        self.workspace = Workspace(root, TIMEOUT_SECONDS, hub=self.connection)

    def references(self, function: Function) -> list[dict[str, Any]]:
        path = self.root / function.path
        uri = self.workspace.open(path)
        # As `lsp-hub query references` does: the server's first report on the file says it has loaded the project.
        self.command("lspHub.diagnostics", {"uri": uri, "timeoutMs": int(TIMEOUT_SECONDS * 500)})
        result = self.command("lspHub.references", {
            "uri": uri, "position": {"line": function.line, "character": function.character},
            "includeDeclaration": True})
        return list((result or {}).get("locations") or [])

    def command(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.connection.request("workspace/executeCommand", {"command": name, "arguments": [arguments]},
                                       TIMEOUT_SECONDS)

    def site(self, location: dict[str, Any]) -> Site:
        path = Path(uri_path(location["uri"]))
        relative = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)
        start = location["range"]["start"]
        return (relative, start["line"], start["character"])

    def close(self) -> None:
        self.connection.close()


def copy_of(source: Path, destination: Path, include: list[str] | None) -> Path:
    """The repository's files (not its VCS data or caches), with a `pyrightconfig.json` saying what is analysed
    (it takes precedence over pyproject.toml) when `include` is given."""
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns(*SKIPPED_DIRECTORIES))
    if include is not None:
        (destination / "pyrightconfig.json").write_text(json.dumps({"include": include}))
    return destination


def describe(root: Path, site: Site) -> str:
    path, line, character = site
    try:
        text = (root / path).read_text(errors="replace").split("\n")[line].strip()
    except (OSError, IndexError):
        text = ""
    return f"{path}:{line + 1}:{character + 1}  {text[:90]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repository", type=Path)
    parser.add_argument("--include", action="append", help="an analysed directory for (a) and (b) (repeatable)")
    parser.add_argument("--functions", type=int, default=12)
    parser.add_argument("--misses", type=int, default=10, help="missed and extra sites to print")
    options = parser.parse_args()
    source = options.repository.resolve()
    include = options.include or own_include(source)
    functions = pick_functions(source, include, options.functions)
    if not functions:
        sys.exit(f"no module-level function of {', '.join(include)} is named outside them")
    print(f"{source}: {len(functions)} functions of {', '.join(include)} named outside them")
    with tempfile.TemporaryDirectory(prefix="references-recall-") as temporary:
        base = Path(temporary)
        scoped = copy_of(source, base / "scoped", options.include)  # the repository's own scope, or --include
        whole = copy_of(source, base / "whole", ["."])  # the truth: everything analysed
        tally = Tally()
        rows: list[tuple[str, int, int, int, int]] = []
        timings: list[float] = []
        truth_hub = Hub(whole, base / "cache-whole")
        scoped_hub = Hub(scoped, base / "cache-scoped")
        try:
            for function in functions:
                truth = {truth_hub.site(entry) for entry in truth_hub.references(function)
                         if entry.get("origin") in ("server", "both")}
                started = time.perf_counter()
                answer = scoped_hub.references(function)
                timings.append(time.perf_counter() - started)
                server = {scoped_hub.site(entry) for entry in answer if entry.get("origin") in ("server", "both")}
                merged = {scoped_hub.site(entry) for entry in answer}
                tally.truth += len(truth)
                tally.server_recalled += len(truth & server)
                tally.merged_recalled += len(truth & merged)
                tally.merged_found += len(merged)
                tally.merged_right += len(merged & truth)
                tally.misses.extend(f"{function.name}: {describe(whole, site)}" for site in sorted(truth - merged))
                tally.extras.extend(f"{function.name}: {describe(whole, site)}" for site in sorted(merged - truth))
                rows.append((f"{function.path}:{function.name}", len(truth), len(truth & server),
                             len(truth & merged), len(merged)))
        finally:
            truth_hub.close()
            scoped_hub.close()
    width = max(len(row[0]) for row in rows)
    print(f"\n{'function':<{width}}  truth  server  merged  merged-found")
    for name, truth_count, server_count, merged_count, found in rows:
        print(f"{name:<{width}}  {truth_count:5}  {server_count:6}  {merged_count:6}  {found:12}")

    def ratio(part: int, whole_count: int) -> str:
        return f"{part / whole_count:.3f}" if whole_count else "n/a"

    print(f"\nreferences in the truth (basedpyright, whole tree in scope): {tally.truth}")
    print(f"(a) basedpyright alone, own scope:  recall {ratio(tally.server_recalled, tally.truth)} "
          f"({tally.server_recalled}/{tally.truth})")
    print(f"(b) the hub's merged answer:        recall {ratio(tally.merged_recalled, tally.truth)} "
          f"({tally.merged_recalled}/{tally.truth}), precision {ratio(tally.merged_right, tally.merged_found)} "
          f"({tally.merged_right}/{tally.merged_found})")
    timings.sort()
    print(f"lspHub.references (warm server): median {timings[len(timings) // 2] * 1000:.0f} ms, "
          f"max {timings[-1] * 1000:.0f} ms")
    for title, entries in (("missed", tally.misses), ("extra", tally.extras)):
        if entries and options.misses:
            print(f"\n{title} ({len(entries)}):")
            for entry in entries[:options.misses]:
                print(f"  {entry}")


if __name__ == "__main__":
    main()
