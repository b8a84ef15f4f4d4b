"""The index on a monorepo: a synthetic repository of N files (issue 25), generated deterministically.

The repository: Python services, TypeScript web apps and Go modules beside shared libraries, each file importing a
few modules of its own package and a few of the shared libraries (popularity falling off as a power law, as real
`utils` and `models` modules are imported everywhere), defining classes and functions that call what they import;
sizes drawn from a log-normal distribution (median about 90 lines, a long tail to 1,500). Every file is distinct.

Measured, each as a whole `python -m lsp_hub repomap ROOT` process with its own XDG_CACHE_HOME, peak memory as the
largest sum of resident memory over the process and its descendants (sampled every 50 ms from /proc):

- cold (empty cache), and cold on half the files, for linearity (2x files <= 2.2x time);
- warm (the cold run's cache) <= 1.5 s, the median of three runs (this machine's speed varies by a third from one
  run to the next);
- a new worktree: a copy of the tree at another path, with the same cache (the shared records) <= 5 s;
- peak memory during the cold build <= 2 GB;

and in one long-lived process standing in for the daemon (`--child daemon`): its memory after a warm build and a
map (<= 600 MB), a repoMap after an edit, and a query after 1,000 files change on disk (<= 300 ms), watched
(`IndexWatcher`) beside the walk it replaces.

    python bench/monorepo.py [--files 20000] [--skip-half] [--keep DIR] [--only cold,warm,worktree,daemon]
                             [--warm-runs 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))

from bench.processes import tree_rss  # noqa: E402
from lsp_hub.index import pending_save  # noqa: E402

MB = 1024 * 1024
SEED = 25
FILES_PER_PACKAGE = 40
SHARED_SHARE = 0.04  # of the files: the shared libraries everyone imports
CHANGED_ON_DISK = 1000
PHASES = ("cold", "warm", "worktree", "daemon")

# ---------------------------------------------------------------------------------------------------- generation


def _lines(rng: random.Random) -> int:
    return max(8, min(1500, int(rng.lognormvariate(math.log(90), 0.9))))


def _popular(rng: random.Random, count: int) -> int:
    """An index in [0, count) with a power-law preference for the first ones."""
    return min(count - 1, int(count * rng.random() ** 3))


class _Layout:
    """Where file number `n` lives and what it is called, for any language."""

    def __init__(self, file_count: int) -> None:
        self.file_count = file_count
        self.shared = max(10, int(file_count * SHARED_SHARE))

    def language(self, number: int) -> str:
        share = number * 2654435761 % 100
        return "py" if share < 45 else "ts" if share < 80 else "go"

    def package(self, number: int) -> str:
        if number < self.shared:
            return f"libs/common{number // FILES_PER_PACKAGE:03d}"
        group = number // (FILES_PER_PACKAGE * 25)
        return f"services/svc{group:03d}/pkg{number // FILES_PER_PACKAGE:05d}"

    def module(self, number: int) -> str:
        return f"m{number:06d}"


def _python(layout: _Layout, number: int, rng: random.Random, imports: list[int]) -> str:
    out = [f'"""Module {number}: generated for the monorepo benchmark."""', "from __future__ import annotations", ""]
    for other in imports:
        dotted = layout.package(other).replace("/", ".") + "." + layout.module(other)
        out.append(f"from {dotted} import helper_{other}, Service{other}")
    out += ["", ""]
    target = _lines(rng)
    block = 0
    while len(out) < target:
        callee = imports[block % len(imports)] if imports else number
        out += [
            f"class Service{number}{'' if block == 0 else f'_{block}'}:",
            f'    """Handles requests of kind {block} for module {number}."""',
            "",
            "    def __init__(self, limit: int = 10) -> None:",
            "        self.limit = limit",
            f"        self.backend = Service{callee}()",
            "",
            f"    def handle_{block}(self, value: int) -> int:",
            "        total = 0",
            "        for step in range(self.limit):",
            f"            total += helper_{callee}(value + step)",
            "        return total",
            "",
            "",
        ]
        if block == 0:
            out += [f"def helper_{number}(value: int) -> int:", f"    return value * {number % 7 + 2}", "", ""]
        block += 1
    return "\n".join(out) + "\n"


def _typescript(layout: _Layout, number: int, rng: random.Random, imports: list[int]) -> str:
    here = layout.package(number).count("/") + 1
    out = [f"// Module {number}: generated for the monorepo benchmark."]
    for other in imports:
        relative = "../" * here + layout.package(other) + "/" + layout.module(other)
        out.append(f'import {{ helper{other}, Service{other} }} from "{relative}";')
    out.append("")
    target = _lines(rng)
    block = 0
    while len(out) < target:
        callee = imports[block % len(imports)] if imports else number
        out += [
            f"export class Service{number}{'' if block == 0 else f'_{block}'} {{",
            "  private count = 0;",
            f"  handle{block}(input: number): number {{",
            "    for (let step = 0; step < 10; step++) {",
            f"      this.count += helper{callee}(input + step);",
            "    }",
            "    return this.count;",
            "  }",
            "}",
            "",
        ]
        if block == 0:
            out += [
                f"export function helper{number}(value: number): number {{",
                f"  return value * {number % 5 + 2};",
                "}",
                "",
            ]
        block += 1
    return "\n".join(out) + "\n"


def _go(layout: _Layout, number: int, rng: random.Random, imports: list[int]) -> str:
    out = [f"// Module {number}: generated for the monorepo benchmark.", f"package p{number}", ""]
    if imports:
        out.append("import (")
        out += [f'\tq{other} "example.com/mono/{layout.package(other)}/{layout.module(other)}"' for other in imports]
        out += [")", ""]
    target = _lines(rng)
    block = 0
    while len(out) < target:
        callee = f"q{imports[block % len(imports)]}.Helper{imports[block % len(imports)]}" if imports else "len"
        out += [
            f"type Service{number}x{block} struct {{ count int }}",
            "",
            f"func (s *Service{number}x{block}) Handle(input int) int {{",
            "\tfor step := 0; step < 10; step++ {",
            f"\t\ts.count += {callee}(input + step)",
            "\t}",
            "\treturn s.count",
            "}",
            "",
        ]
        if block == 0:
            out += [f"func Helper{number}(value int) int {{", f"\treturn value * {number % 3 + 2}", "}", ""]
        block += 1
    return "\n".join(out) + "\n"


def generate(root: Path, file_count: int) -> int:
    """Write the repository; returns its size in bytes. The same arguments give the same bytes."""
    layout = _Layout(file_count)
    written = 0
    made: set[str] = set()
    (root / "go").mkdir(parents=True, exist_ok=True)
    for number in range(file_count):
        rng = random.Random(SEED * 1_000_003 + number)
        language = layout.language(number)
        package = layout.package(number)
        directory = root / package
        if package not in made:
            directory.mkdir(parents=True, exist_ok=True)
            made.add(package)
        base = number - number % FILES_PER_PACKAGE
        neighbours = [base + rng.randrange(FILES_PER_PACKAGE) for _ in range(rng.randint(1, 4))]
        shared = [_popular(rng, layout.shared) for _ in range(rng.randint(0, 4))]
        imports = sorted(
            {
                other
                for other in neighbours + shared
                if other != number and other < file_count and layout.language(other) == language
            }
        )
        writer = {"py": _python, "ts": _typescript, "go": _go}[language]
        text = writer(layout, number, rng, imports)
        (directory / f"{layout.module(number)}.{language}").write_text(text)
        written += len(text)
    (root / "go.mod").write_text("module example.com/mono\n\ngo 1.22\n")
    (root / "package.json").write_text('{"name": "mono", "private": true}\n')
    return written


# ---------------------------------------------------------------------------------------------------- measuring


class PeakSampler:
    """The largest summed RSS of a process tree, sampled every `interval` seconds."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            self._stop.wait(self.interval)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def _environment(cache_home: Path) -> dict[str, str]:
    """The measured processes' environment: their own cache, this checkout's code, and compiled bytecode kept
    (beside the cache, not in the tree) as an installed lsp-hub has it, whatever this shell says."""
    python_path = os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")]))
    environment = {
        **os.environ,
        "XDG_CACHE_HOME": str(cache_home),
        "PYTHONPATH": python_path,
        "PYTHONPYCACHEPREFIX": str(cache_home.parent / "pycache"),
    }
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    return environment


def repomap_process(root: Path, cache_home: Path) -> tuple[float, int]:
    """`python -m lsp_hub repomap ROOT`: seconds from spawn to exit, and the peak memory of its process tree."""
    cache_home.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "lsp_hub", "repomap", str(root), "--budget", "1024"],
        env=_environment(cache_home),
        cwd=REPOSITORY,  # `-m lsp_hub` finds the current directory's first: this checkout's, whatever the shell's
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    sampler = PeakSampler(process.pid)
    _out, errors = process.communicate()
    seconds = time.perf_counter() - started
    peak = sampler.stop()
    if process.returncode != 0:
        raise RuntimeError(f"repomap of {root} failed ({process.returncode}): {errors.decode(errors='replace')}")
    pending_save.wait_for_saves(cache_home / "lsp-hub")  # a save handed to a child (Linux): the next run starts after
    return seconds, peak


def _shown(value: float, unit: str) -> str:
    if unit == "MB":
        return f"{value / MB:.0f} MB"
    if unit == "ms":
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f}x" if unit == "x" else f"{value:.2f} s"


def report(label: str, value: float, target: float | None, unit: str) -> dict[str, Any]:
    shown = _shown(value, unit)
    goal = ""
    if target is not None:
        goal = f"   target <= {_shown(target, unit)}  {'ok' if value <= target else 'MISSED'}"
    print(f"  {label:<58} {shown:>10}{goal}", flush=True)
    return {"label": label, "value": value, "unit": unit, "target": target}


def _settle() -> None:
    os.sync()
    time.sleep(1.0)


# ---------------------------------------------------------------------------------------------------- the daemon


def daemon_child(root: Path, cache_home: Path) -> None:
    """A long-lived process holding the index: memory after a warm build and a map, a map after an edit, a query
    after CHANGED_ON_DISK files change on disk. Prints one JSON line."""
    os.environ["XDG_CACHE_HOME"] = str(cache_home)
    from lsp_hub.index import api, background
    from lsp_hub.index.watch import IndexWatcher
    from lsp_hub.index.workspace import WorkspaceIndex

    background.collect_less_often()  # as a hub does once it keeps indexes (proxy/index_shared.py)
    figures: dict[str, float] = {}
    index = WorkspaceIndex(root)
    started = time.perf_counter()
    index.build()
    api.repo_map(index, {"tokenBudget": 1024})
    figures["warm_build_and_map"] = time.perf_counter() - started
    # What the hub does in idle time after answering from a stored ranking: build the graphs the next change will
    # update (proxy/index_shared.py `_prepare_graphs`), so no question waits for them.

    started = time.perf_counter()
    background.prepare_graphs(index)
    figures["idle_graphs"] = time.perf_counter() - started
    gc.collect()
    figures["rss_after"] = _rss()  # with the graphs, as a daemon holds them
    figures["rss_peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    paths = sorted(path for path in index.snapshot().files if path.endswith(".py"))
    # relevantFiles for a task at a target, warm (its graphs built by a first question, as in a running hub).
    targets = paths[:: max(1, len(paths) // 6)][:6]
    api.relevant_files(index, {"description": "change how orders are priced", "targets": [str(root / targets[0])]})
    times = []
    for target in targets[1:]:
        started = time.perf_counter()
        api.relevant_files(index, {"description": "change how orders are priced", "targets": [str(root / target)]})
        times.append(time.perf_counter() - started)
    figures["relevant_files_warm"] = sorted(times)[len(times) // 2]

    edited = root / paths[len(paths) // 2]
    kept = [*paths[: 2 * CHANGED_ON_DISK], paths[len(paths) // 2]]
    originals = {path: (root / path).read_bytes() for path in kept}
    edited.write_text(edited.read_text() + "\n\ndef added_by_the_benchmark() -> int:\n    return 1\n")
    started = time.perf_counter()
    index.update_file(edited)
    api.repo_map(index, {"tokenBudget": 1024})
    figures["map_after_edit"] = time.perf_counter() - started

    watcher = IndexWatcher(index)
    started = time.perf_counter()
    figures["watching"] = float(watcher.start())
    figures["watch_setup"] = time.perf_counter() - started
    watcher.ensure_fresh()  # the one walk after the watch began
    # Twice, 1,000 other files each time: with the graphs' update left to the query (what it costs), then with the
    # watcher updating them after each burst as the hub's does (what a query right after the last burst waits).
    per_round = min(CHANGED_ON_DISK, len(paths) // 2)  # a small repository (the tests') changes half each time
    for rounds, (name, keep_graphs) in enumerate((("", False), ("_watcher_updates", True))):
        watcher.keep_graphs = keep_graphs  # an attribute older versions ignore
        changed = paths[rounds * per_round : (rounds + 1) * per_round]
        applied, query, walked, answered = _changes_then_query(index, watcher, root, changed, rounds)
        figures[f"changes_applied{name}"] = applied
        figures[f"query_after_changes{name}"] = query
        figures[f"query_walked{name}"] = walked
        figures[f"query_answered{name}"] = answered
    watcher.stop()
    started = time.perf_counter()
    index.build()  # what each query cost before: the walk
    figures["walk_instead"] = time.perf_counter() - started
    for path, original in originals.items():  # the tree as it was, for the next run (--keep), and its cache too
        (root / path).write_bytes(original)
    index.build()
    api.repo_map(index, {"tokenBudget": 1024})  # its ranking stored, as the warm runs expect
    background.keep_graphs(index)
    index.close()
    print(json.dumps(figures), flush=True)


def _changes_then_query(
    index: Any, watcher: Any, root: Path, changed: list[str], round_number: int
) -> tuple[float, float, float, float]:
    """Append a function to each of `changed` on disk; wait until the watcher has applied the last; then time a
    query. Returns (seconds to apply, seconds of the query, whether it walked, whether it answered)."""
    from lsp_hub.index import api

    started = time.perf_counter()
    marker = f"changed_on_disk_{round_number}_"
    for number, path in enumerate(changed):
        with open(root / path, "a") as handle:
            handle.write(f"\n\ndef {marker}{number}() -> int:\n    return {number}\n")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        record = index.snapshot().files.get(changed[-1])
        if record is not None and any(d[0].startswith(marker) for d in record.definitions):
            break
        time.sleep(0.005)
    applied = time.perf_counter() - started
    started = time.perf_counter()
    fresh = watcher.ensure_fresh()
    answer = api.repo_map(index, {"tokenBudget": 1024})
    return applied, time.perf_counter() - started, float(fresh["walked"]), float(bool(answer))


def _rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def daemon(root: Path, cache_home: Path) -> dict[str, float]:
    process = subprocess.run(
        [sys.executable, __file__, "--child", "daemon", str(root), str(cache_home)],
        env=_environment(cache_home),
        capture_output=True,
        text=True,
        check=False,
    )
    if process.returncode != 0:
        raise RuntimeError(f"daemon child failed: {process.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(process.stdout.strip().splitlines()[-1])
    return figures


# ---------------------------------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--skip-half", action="store_true", help="no cold run on half the files (linearity)")
    parser.add_argument("--warm-runs", type=int, default=3, help="warm repomap processes, the median reported")
    parser.add_argument("--keep", type=Path, help="generate into (and keep) this directory, the cache beside it")
    parser.add_argument(
        "--only",
        type=lambda text: set(text.split(",")),
        default=set(PHASES),
        help=f"run only these phases, comma-separated, of {','.join(PHASES)} (with --keep: the "
        "cache a cold run kept serves the others)",
    )
    parser.add_argument("--child", choices=("daemon",), help=argparse.SUPPRESS)
    parser.add_argument("arguments", nargs="*", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child == "daemon":
        daemon_child(Path(options.arguments[0]), Path(options.arguments[1]))
        return 0
    if options.warm_runs < 1:
        parser.error("--warm-runs: at least 1")
    if options.files < 100:
        parser.error("--files: at least 100")
    if not options.only <= set(PHASES):
        parser.error(f"--only: phases are {', '.join(PHASES)}")
    scratch = Path(tempfile.mkdtemp(prefix="lsp-hub-monorepo-"))
    base = options.keep or scratch
    results: list[dict[str, Any]] = []
    try:
        one, five, _fifteen = os.getloadavg()
        print(f"monorepo benchmark, {options.files} files  [load {one:.2f} {five:.2f}, {os.cpu_count()} CPUs]")
        root = base / f"mono-{options.files}"
        if not root.exists():
            started = time.perf_counter()
            size = generate(root, options.files)
            print(f"  generated {options.files} files, {size / MB:.0f} MB, in {time.perf_counter() - started:.1f} s")
        half_seconds = None
        if not options.skip_half and "cold" in options.only:
            half = base / f"mono-{options.files // 2}"
            if not half.exists():
                generate(half, options.files // 2)
            _settle()
            half_seconds, _peak = repomap_process(half, scratch / "cache-half")
            results.append(report(f"cold repomap, {options.files // 2} files", half_seconds, None, "s"))
            shutil.rmtree(scratch / "cache-half", ignore_errors=True)
        cache = base / f"cache-{options.files}" if options.keep else scratch / "cache"
        if "cold" in options.only:
            shutil.rmtree(cache, ignore_errors=True)
            _settle()
            cold, cold_peak = repomap_process(root, cache)
            results.append(report(f"cold repomap, {options.files} files", cold, None, "s"))
            if half_seconds is not None:
                results.append(report("  cold time ratio, 2x files", cold / half_seconds, 2.2, "x"))
            results.append(report("  peak memory during the cold build (process tree)", cold_peak, 2048 * MB, "MB"))
        elif not cache.exists():
            parser.error(f"no cache at {cache}: run the cold phase first (with --keep)")
        if "warm" in options.only:
            _settle()  # the cold run's writes go to disk first, not while the warm ones are timed
            runs = [repomap_process(root, cache) for _run in range(options.warm_runs)]
            seconds = sorted(run[0] for run in runs)
            print(f"  warm runs: {', '.join(f'{value:.2f} s' for value in seconds)}")
            results.append(report(f"warm repomap (median of {len(runs)})", seconds[len(runs) // 2], 1.5, "s"))
            results.append(report("  peak memory, warm (process tree)", max(run[1] for run in runs), None, "MB"))
        if "worktree" in options.only:
            results += new_worktree(root, base / f"mono-{options.files}-worktree", cache)
        if "daemon" in options.only:
            results += daemon_figures(root, cache)
        print(json.dumps(results))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # caches and copies; --keep's repositories and cache stay
    return 0


def new_worktree(root: Path, worktree: Path, cache: Path) -> list[dict[str, Any]]:
    """A copy of the tree at another path, mapped with the cache of the original: what it finds in the shared
    records. The copy's own per-root cache is removed after, so that the next run measures a new worktree again."""
    from lsp_hub.index.store import database_path

    shutil.rmtree(worktree, ignore_errors=True)
    shutil.copytree(root, worktree)
    _settle()
    copied, copied_peak = repomap_process(worktree, cache)
    for companion in ("", "-wal", "-shm"):
        Path(f"{database_path(worktree.resolve(), cache / 'lsp-hub')}{companion}").unlink(missing_ok=True)
    return [
        report("new worktree (a copy, the shared records), repomap", copied, 5.0, "s"),
        report("  peak memory, new worktree (process tree)", copied_peak, None, "MB"),
    ]


def daemon_figures(root: Path, cache: Path) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    figures = daemon(root, cache)
    results.append(report("daemon: warm build + first map", figures["warm_build_and_map"], None, "s"))
    results.append(report("daemon: graphs prepared in idle time after it", figures["idle_graphs"], None, "s"))
    results.append(report("daemon: memory with them (RSS)", figures["rss_after"], 600 * MB, "MB"))
    results.append(
        report("daemon: relevantFiles at a target, warm (median of 5)", figures["relevant_files_warm"], 0.1, "ms")
    )
    results.append(report("daemon: repoMap after an edit (update_file + map)", figures["map_after_edit"], None, "ms"))
    print(f"  watching: {bool(figures['watching'])} (set up in {figures['watch_setup']:.2f} s)")
    results.append(
        report(
            f"{CHANGED_ON_DISK} files changed on disk: applied by the watcher", figures["changes_applied"], None, "s"
        )
    )
    results.append(report("  then a query (ensure_fresh + repoMap)", figures["query_after_changes"], 0.3, "ms"))
    if "query_after_changes_watcher_updates" in figures:
        results.append(
            report(
                f"{CHANGED_ON_DISK} other files, the watcher updating the graphs: applied",
                figures["changes_applied_watcher_updates"],
                None,
                "s",
            )
        )
        results.append(
            report(
                "  then a query, right after its last burst", figures["query_after_changes_watcher_updates"], None, "ms"
            )
        )
    results.append(report("  the walk each query did before", figures["walk_instead"], None, "ms"))
    return results


if __name__ == "__main__":
    raise SystemExit(main())
