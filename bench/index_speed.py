"""How fast the code index is, in one run: whole `lsp-hub repomap` processes (cold and warm cache), the first
lspHub.repoMap after an edit inside a running hub, the same work in one process through the library, the in-process
build (parallel, and in one process with one worker), incremental update, repoMap latency, memory.

Targets (issue 10, on a 2-core machine, on the standard library):

- `lsp-hub repomap ROOT` as a whole process: cold cache <= 3.5 s, warm cache <= 0.5 s (median of the runs);
- peak memory of that process and all its descendants <= 250 MB;
- the first `lspHub.repoMap` after an edit, timed inside a running hub (the request alone) <= 100 ms.

Older targets (issue 3) stay on the in-process figures: incremental update < 30 ms, repoMap (graphs warm) < 200 ms,
peak memory < 400 MB at 20,000 files.

Corpora: the standard library of the running interpreter (sysconfig's stdlib path: about 1,800 files, 31 MB,
available offline) and a synthetic repository of 20,000 Python and TypeScript files generated in a temporary
directory.

How:

- Whole process: `python -m lsp_hub repomap ROOT` (what the `lsp-hub` script runs) as a subprocess with its own
  XDG_CACHE_HOME: cold = an empty cache directory (each cold run gets a new one), warm = the cache the last cold
  run left. Timed from spawn to exit by a small launcher process. Peak memory is the largest sum of resident
  memory over the command and all its descendants (the parser workers are children of multiprocessing's fork
  server), sampled every 20 ms from /proc in separate, untimed runs (the sampler costs this process a tenth of a
  core); beside it, wait4's ru_maxrss of the timed runs, which is the largest single process among those reaped
  inside the command's tree, not their sum. (The launcher is there because a child's ru_maxrss starts from its
  parent's peak: run from this process, every command would look as large as this process has been.)
- In the hub: `python -m lsp_hub` over stdio with a configuration that gives Python no language server (so no
  basedpyright competes for the two cores, and documentSymbol is answered by the index), initialized with the
  standard library as its workspace folder and its index cache taken from the warm runs above. After the index is
  ready and one repoMap has built the graphs, each round edits json/decoder.py in memory (didChange: add a
  function, rename the class JSONDecodeError, remove an added function; nothing is written to disk), waits until
  the index has the edit (documentSymbol polled every 10 ms; the hub applies a change still waiting out its
  debounce before it answers an index query), then asks lspHub.repoMap once: the request alone, and didChange to
  its answer.
- One process: the same edits through `WorkspaceIndex.update_file` and `api.repo_map`, each timed.
- In-process builds (as before, in a fresh process of their own): the cold build several times, each into an
  empty cache, and the same build in one process with one worker and no cache beside it (this machine's speed
  drifts from minute to minute, so the ratio of the two is the figure that does not drift); the warm start;
  repoMap latency; callers of five names defined and called all over the library (the index alone); incremental
  update. The synthetic repository's in-process figures come from a fresh process too.

Issue 25 adds: a new worktree of the indexed standard library (a copy at another path with the same cache: the
shared records) as a whole process, target <= 1.0 s; and the scaling of the cold build in one process with 1, 2
and all cores — parsing (and the building thread's CPU taking the results in meanwhile), then the serial part
(graphs and map, the graphs stored in a thread beside them, the wait for that save) — with the target cold map <=
parse time on one core / cores + 0.5 s, judged on the medians of `--scaling-rounds` builds that take turns.

The machine is shared: the load average is printed at the start, before each part and at the end.

    python bench/index_speed.py [--rounds 6] [--cold-runs 3] [--warm-runs 3] [--synthetic-files 20000]
                                [--skip-synthetic] [--skip-in-process] [--skip-scaling] [--scaling-rounds 3]
                                [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import cProfile
import functools
import gc
import json
import os
import pstats
import re
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.processes import descendants_cpu, tree_rss
from lsp_hub.index import api, background, pending_save
from lsp_hub.index.workspace import WorkspaceIndex
from lsp_hub.platform import detached
from lsp_hub.transport.rawclient import HubClient

REPOSITORY = Path(__file__).resolve().parent.parent  # the checkout whose lsp_hub is measured

T = TypeVar("T")
MB = 1024 * 1024
STDLIB = "stdlib"
SYNTHETIC = "synthetic"

# The edited module of the hub and one-process rounds: ranked about 600th of 1,800 in the standard library's map,
# and the class whose definition the rename rounds rename (json/__init__.py and others refer to it).
STDLIB_EDITED = "json/decoder.py"
STDLIB_RENAMED = "JSONDecodeError"
MAP_ARGUMENTS = {"tokenBudget": 1024}
COMMON_CALLEES = ("get", "close", "encode", "decode", "write")
POLL_SECONDS = 0.01


# --- figures ----------------------------------------------------------------------------------------------------


@dataclass
class Figure:
    key: str
    corpus: str
    value: float  # seconds, or bytes when unit is "MB"
    unit: str  # "s", "ms" or "MB"
    target: float | None = None


FIGURES: list[Figure] = []


def shown(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value * 1000:.1f} ms"
    if unit == "MB":
        return f"{value / MB:.0f} MB"
    return f"{value:.2f} s"


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "MISSED"


def report(
    label: str,
    value: float,
    target: float | None = None,
    unit: str = "s",
    key: str | None = None,
    corpus: str = STDLIB,
    note: str = "",
) -> None:
    goal = f"   target <= {shown(target, unit)}  {verdict(value, target)}" if target is not None else ""
    print(f"  {label:<56} {shown(value, unit):>10}{goal}{note}")
    if key is not None:
        FIGURES.append(Figure(key, corpus, value, unit, target))


def loadavg(when: str) -> None:
    one, five, fifteen = os.getloadavg()
    print(f"[load average {when}: {one:.2f} {five:.2f} {fifteen:.2f}, {os.cpu_count()} CPUs]")


def spread(values: list[float], unit: str) -> str:
    return f"median of {len(values)}, range {shown(min(values), unit)} .. {shown(max(values), unit)}"


# --- memory -----------------------------------------------------------------------------------------------------


class MemorySampler:
    """Peak summed RSS of a process (this one by default) and its descendants, from /proc (Linux only); with
    `include_root` false, of its descendants only."""

    def __init__(self, interval: float = 0.02, root_pid: int | None = None, include_root: bool = True) -> None:
        self.interval = interval
        self.root_pid = os.getpid() if root_pid is None else root_pid
        self.include_root = include_root
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        if Path("/proc/self/stat").exists():
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes, tree_rss(self.root_pid, self.include_root))
            self._stop.wait(self.interval)


class CpuSampler:
    """CPU seconds spent by this process and, while the sampler runs, by its descendants (the parse workers, the
    forkserver), from /proc (Linux only): each descendant's last reading less its first, so a forkserver kept from
    an earlier build counts only what it spent meanwhile. A worker's last `interval` before it ends can be missed."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._own = 0.0
        self._baseline = True  # the first reading: processes already running count from here
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CpuSampler:
        self._own = time.process_time()
        if Path("/proc/self/stat").exists():
            self._read()
            self._baseline = False
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._own = time.process_time() - self._own
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
            self._read()

    @property
    def own_seconds(self) -> float:
        return self._own

    @property
    def descendants_seconds(self) -> float:
        return sum(seconds - self._first.get(pid, 0.0) for pid, seconds in self._last.items())

    def _read(self) -> None:
        for pid, seconds in descendants_cpu(os.getpid()).items():
            self._first.setdefault(pid, seconds if self._baseline else 0.0)
            self._last[pid] = seconds

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._read()


def timed(function: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = function()
    return value, time.perf_counter() - started


def settle() -> None:
    """Let the kernel write back what the previous build wrote (its 25 MB cache) before timing the next one, which
    would otherwise share the CPU with that writeback."""
    os.sync()
    time.sleep(1.0)


# --- in-process index (the library in this process) -------------------------------------------------------------


def bench_standard_library(cache: Path, cold_runs: int) -> None:
    root = Path(sysconfig.get_paths()["stdlib"])
    print(f"\nin-process index of the standard library: {root}")
    loadavg("now")
    # This machine's speed drifts by a third or more from minute to minute (a shared virtual machine), so the cold
    # build runs several times, each into an empty cache, and the same work in one process is timed beside it: the
    # ratio of the two is the figure that does not drift.
    # Peak memory from a cold build of its own, first, while this process is fresh: the sampler reads /proc every
    # 20 ms, which costs this process a tenth of a core, so the timed builds run without it.
    memory_index = WorkspaceIndex(root, cache_dir=cache / "memory")
    with MemorySampler() as memory:
        memory_index.build()
    memory_index.close()
    del memory_index
    shutil.rmtree(cache / "memory", ignore_errors=True)
    peak = memory.peak_bytes
    colds: list[float] = []
    statistics_cold: dict[str, object] = {}
    for run in range(cold_runs):
        run_cache = cache / f"cold-{run}"
        settle()
        cold_index = WorkspaceIndex(root, cache_dir=run_cache)
        statistics_cold, cold = timed(cold_index.build)
        cold_index.close()
        colds.append(cold)
        if run < cold_runs - 1:
            shutil.rmtree(run_cache, ignore_errors=True)
    shutil.move(str(cache / f"cold-{cold_runs - 1}"), str(cache / "stdlib"))
    cache = cache / "stdlib"
    files = statistics_cold["files"]
    assert isinstance(files, int)
    cold = statistics.median(colds)
    report(
        f"cold index ({files} files, {statistics_cold['symbols']} symbols), median",
        cold,
        key="build_parallel",
        note=f"   ({spread(colds, 's')})",
    )
    print(f"  {'files per second':<56} {files / cold:>10.0f}")
    report("peak memory, cold build (process tree)", peak, unit="MB", key="build_memory")
    single = WorkspaceIndex(root, use_cache=False, max_workers=1)
    _stats, single_seconds = timed(single.build)
    single.close()
    report("same build in one process, one worker, no cache", single_seconds, key="build_single")
    print(f"  {'speed-up of the parallel cold build':<56} {single_seconds / cold:>9.2f}x   ({os.cpu_count()} CPUs)")

    warm_index = WorkspaceIndex(root, cache_dir=cache)
    statistics_warm, warm = timed(warm_index.build)
    report(f"warm start ({statistics_warm['parsedFiles']} files parsed)", warm, key="build_warm")

    _first, first_map = timed(lambda: api.repo_map(warm_index, MAP_ARGUMENTS))
    report("repoMap, first (builds the graphs)", first_map, unit="ms", key="map_first")
    runs = [timed(lambda: api.repo_map(warm_index, MAP_ARGUMENTS))[1] for _ in range(5)]
    report("repoMap 1024 tokens, graphs warm (median of 5)", statistics.median(runs), 0.2, unit="ms", key="map_steady")
    focused = [
        timed(
            lambda: api.repo_map(
                warm_index,
                {"tokenBudget": 1024, "focusFiles": ["json/decoder.py"], "mentionedIdents": ["JSONDecodeError"]},
            )
        )[1]
        for _ in range(5)
    ]
    report(
        "repoMap with focus and mentions (median of 5)", statistics.median(focused), 0.2, unit="ms", key="map_focused"
    )
    # Names defined and called all over the library: each asks the same questions of ~1,000 call sites for dozens
    # of definitions (the index alone; lspHub.callers then asks the language server within its timeout).
    callers = [timed(lambda name=name: api.callers(warm_index, {"symbol": name}))[1] for name in COMMON_CALLEES]
    report(
        f"callers of {', '.join(COMMON_CALLEES)} (median)", statistics.median(callers), unit="ms", key="callers_common"
    )
    report("the same, slowest", max(callers), unit="ms", key="callers_common_max")

    target = root / "json" / "decoder.py"
    text = target.read_bytes()
    updates = []
    for number in range(20):
        edited = text + f"\n\ndef added_{number}():\n    return {number}\n".encode()
        updates.append(timed(functools.partial(warm_index.update_file, str(target), edited))[1])
    report(
        "incremental update of json/decoder.py (median of 20)",
        statistics.median(updates),
        0.03,
        unit="ms",
        key="update",
    )
    _after, after_map = timed(lambda: api.repo_map(warm_index, MAP_ARGUMENTS))
    report("repoMap right after an update (graphs updated)", after_map, 0.1, unit="ms")
    warm_index.close()


# --- whole `lsp-hub repomap` processes ----------------------------------------------------------------------------


@dataclass
class ProcessRun:
    seconds: float
    max_rss: int  # wait4's ru_maxrss: the largest single process reaped inside the command's tree
    tree_peak: int | None  # the sampled peak of the summed tree, when sampled


# Runs the command and reports its time and wait4's rusage. A small process of its own between this one and the
# command, because a child's ru_maxrss starts from its parent's peak at fork (Linux carries the forked memory's
# high-water mark over exec): from this process, grown by the in-process parts, every command would look as large.
LAUNCHER = """
import json, os, sys, time
report, argv = sys.argv[1], sys.argv[2:]
started = time.perf_counter()
pid = os.posix_spawn(argv[0], argv, os.environ)
_pid, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - started
with open(report, "w") as handle:
    json.dump({"seconds": seconds, "code": os.waitstatus_to_exitcode(status), "maxrss": usage.ru_maxrss}, handle)
"""


def run_repomap_process(root: Path, cache_home: Path, sample_memory: bool = False) -> ProcessRun:
    """`python -m lsp_hub repomap ROOT` with XDG_CACHE_HOME=cache_home, timed from spawn to exit."""
    cache_home.mkdir(parents=True, exist_ok=True)
    python_path = os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), "PYTHONPATH": python_path}
    argv = [sys.executable, "-m", "lsp_hub", "repomap", str(root)]
    with tempfile.TemporaryDirectory(prefix="lsp-hub-bench-run-") as directory:
        report_file, out_file, err_file = (Path(directory) / name for name in ("report.json", "out", "err"))
        with out_file.open("wb") as out, err_file.open("wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-c", LAUNCHER, str(report_file), *argv],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=str(cache_home),
            )
            # The launcher's descendants: the command, its fork server and the parser workers.
            sampler = MemorySampler(root_pid=process.pid, include_root=False) if sample_memory else None
            with sampler or contextlib.nullcontext():
                code = process.wait()
        printed, errors = out_file.read_bytes(), err_file.read_bytes()
        result = json.loads(report_file.read_text()) if code == 0 and report_file.exists() else {"code": code}
    if result["code"] != 0 or (not printed and any(root.iterdir())):
        raise RuntimeError(f"{' '.join(argv)} failed ({result['code']}): {errors.decode(errors='replace')}")
    pending_save.wait_for_saves(cache_home / "lsp-hub")  # a save handed to a child (Linux): the next run starts after
    return ProcessRun(result["seconds"], result["maxrss"] * 1024, sampler.peak_bytes if sampler else None)


def bench_repomap_process(root: Path, scratch: Path, corpus: str, cold_runs: int, warm_runs: int) -> Path:
    """Cold and warm whole-process repo maps of `root`; returns the XDG_CACHE_HOME holding its warm cache."""
    targets = corpus == STDLIB
    print(f"\n`lsp-hub repomap {root}` as a whole process ({corpus})")
    loadavg("now")
    colds: list[ProcessRun] = []
    for run in range(cold_runs):
        cache_home = scratch / f"{corpus}-cold-{run}"
        settle()
        colds.append(run_repomap_process(root, cache_home))
        if run < cold_runs - 1:
            shutil.rmtree(cache_home, ignore_errors=True)
    warm_home = scratch / f"{corpus}-cold-{cold_runs - 1}"
    settle()
    warms = [run_repomap_process(root, warm_home) for _ in range(warm_runs)]
    cold_memory = run_repomap_process(root, scratch / f"{corpus}-memory", sample_memory=True)
    shutil.rmtree(scratch / f"{corpus}-memory", ignore_errors=True)
    warm_memory = run_repomap_process(root, warm_home, sample_memory=True)
    cold_seconds = [run.seconds for run in colds]
    warm_seconds = [run.seconds for run in warms]
    report(
        "cold cache (empty XDG_CACHE_HOME), spawn to exit",
        statistics.median(cold_seconds),
        3.5 if targets else None,
        key="cli_cold",
        corpus=corpus,
        note=f"   ({spread(cold_seconds, 's')})",
    )
    report(
        "warm cache (a previous run's), spawn to exit",
        statistics.median(warm_seconds),
        0.5 if targets else None,
        key="cli_warm",
        corpus=corpus,
        note=f"   ({spread(warm_seconds, 's')})",
    )
    assert cold_memory.tree_peak is not None and warm_memory.tree_peak is not None
    report(
        "peak memory, cold run (process tree, sampled)",
        cold_memory.tree_peak,
        250 * MB if targets else None,
        unit="MB",
        key="cli_cold_memory",
        corpus=corpus,
    )
    report(
        "peak memory, warm run (process tree, sampled)",
        warm_memory.tree_peak,
        250 * MB if targets else None,
        unit="MB",
        key="cli_warm_memory",
        corpus=corpus,
    )
    report("largest single process, cold runs (wait4 ru_maxrss)", max(run.max_rss for run in colds), unit="MB")
    report("largest single process, warm runs (wait4 ru_maxrss)", max(run.max_rss for run in warms), unit="MB")
    return warm_home


# --- the first repoMap after an edit: in the hub, and in one process ---------------------------------------------


def position_at(text: str, index: int) -> dict[str, int]:
    """The LSP position (UTF-16 column) of character `index` of `text`."""
    line_start = text.rfind("\n", 0, index) + 1
    return {"line": text.count("\n", 0, index), "character": len(text[line_start:index].encode("utf-16-le")) // 2}


@dataclass
class Edit:
    """One edit of the document: its LSP change, what it does, and how to see it in the document's symbols."""

    kind: str
    description: str
    change: dict[str, Any]  # a TextDocumentContentChangeEvent with a range
    text: str  # the whole document after it
    marker: str  # a definition name that appears (present) or disappears with the edit
    present: bool


@dataclass
class EditScript:
    """Edits of one module in turn: add a function, rename a definition (back and forth), remove an added one."""

    text: str
    renamed: str  # a top-level class or function of the module
    added: list[str] = field(default_factory=list)
    is_renamed: bool = False

    def _replace(self, start: int, end: int, new: str) -> dict[str, Any]:
        change = {"range": {"start": position_at(self.text, start), "end": position_at(self.text, end)}, "text": new}
        self.text = self.text[:start] + new + self.text[end:]
        return change

    def next(self, number: int) -> Edit:
        kind = ("add", "rename", "remove")[number % 3]
        if kind == "remove" and not self.added:
            kind = "add"
        if kind == "add":
            name = f"added_{number}"
            block = f"\n\ndef {name}():\n    return {number}\n"
            self.added.append(block)
            change = self._replace(len(self.text), len(self.text), block)
            return Edit(kind, f"add def {name}()", change, self.text, name, True)
        if kind == "rename":
            old, new = self.renamed, f"{self.renamed}Renamed"
            if self.is_renamed:
                old, new = new, old
            found = re.search(rf"^(?:class|def|async def)\s+({re.escape(old)})\b", self.text, re.MULTILINE)
            if found is None:
                raise ValueError(f"no definition of {old} in the edited module")
            self.is_renamed = not self.is_renamed
            change = self._replace(found.start(1), found.end(1), new)
            return Edit(kind, f"rename {old} -> {new}", change, self.text, new, True)
        block = self.added.pop()
        start = self.text.rindex(block)
        name = block.split("def ", 1)[1].split("(", 1)[0]
        change = self._replace(start, start + len(block), "")
        return Edit(kind, f"remove def {name}()", change, self.text, name, False)


@dataclass
class Round:
    edit: str
    applied: float  # didChange sent -> the index has it (documentSymbol shows it), seconds
    map_alone: float  # the repoMap request alone
    change_to_map: float  # didChange sent -> repoMap answered


@dataclass
class HubFigures:
    ready: float  # initialize -> index ready (warm cache)
    first_map: float  # the first repoMap (builds the graphs)
    steady: list[float]  # repoMap without an edit, graphs warm
    rounds: list[Round]
    rss: int  # the hub's process tree after the rounds
    files: int


async def hub_command(client: HubClient, name: str, argument: dict[str, Any], timeout: float = 120.0) -> Any:
    return await client.request("workspace/executeCommand", {"command": name, "arguments": [argument]}, timeout=timeout)


async def wait_index_ready(client: HubClient, timeout: float) -> dict[str, Any]:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        index = (await client.status()).get("index", {})
        if index.get("state") == "ready":
            return dict(index)
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the hub's index was not ready within {timeout:.0f} s")


def symbol_names(symbols: Any) -> set[str]:
    names: set[str] = set()
    stack = list(symbols or [])
    while stack:
        symbol = stack.pop()
        names.add(symbol["name"])
        stack.extend(symbol.get("children") or [])
    return names


async def wait_for_symbol(client: HubClient, uri: str, name: str, present: bool, timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        symbols = await client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        if (name in symbol_names(symbols)) == present:
            return
        await asyncio.sleep(POLL_SECONDS)
    raise TimeoutError(f"the index never {'showed' if present else 'dropped'} {name} in {uri}")


async def hub_after_edit(
    root: Path, edited: str, renamed: str, rounds: int, cache_home: Path, work: Path, ready_timeout: float = 300.0
) -> HubFigures:
    """A hub over stdio with `root` as its workspace folder and no language server for Python: the first repoMap
    after each of `rounds` in-memory edits of `edited` (a workspace-relative path)."""
    config = work / "hub.toml"
    config.write_text(
        "# Python without servers: nothing but the hub's index works on the edits.\n[language.python]\nservers = []\n"
    )
    client = HubClient()
    await client.start(
        "--config",
        str(config),
        "--log-file",
        str(work / "hub.log"),
        cwd=str(work),
        env={"XDG_CACHE_HOME": str(cache_home), "XDG_CONFIG_HOME": str(work / "config"), "PYTHONPATH": str(REPOSITORY)},
    )
    try:
        started = time.perf_counter()
        await client.initialize(root)
        index = await wait_index_ready(client, ready_timeout)
        ready = time.perf_counter() - started
        started = time.perf_counter()
        await hub_command(client, "lspHub.repoMap", MAP_ARGUMENTS)
        first_map = time.perf_counter() - started
        path = root / edited
        script = EditScript(path.read_text(encoding="utf-8"), renamed)
        uri = client.open(path, "python", text=script.text)
        version = 1

        async def one_round(edit: Edit) -> Round:
            nonlocal version
            version += 1
            changed = time.perf_counter()
            client.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [edit.change]},
            )
            await wait_for_symbol(client, uri, edit.marker, edit.present)
            applied = time.perf_counter()
            await hub_command(client, "lspHub.repoMap", MAP_ARGUMENTS)
            answered = time.perf_counter()
            return Round(edit.description, applied - changed, answered - applied, answered - changed)

        # Not counted: the opened document's own update, then graphs warm for the text as it now stands.
        await one_round(script.next(0))
        steady = []
        for _ in range(3):
            started = time.perf_counter()
            await hub_command(client, "lspHub.repoMap", MAP_ARGUMENTS)
            steady.append(time.perf_counter() - started)
        measured = [await one_round(script.next(number)) for number in range(1, rounds + 1)]
        rss = tree_rss(client.process.pid)
        return HubFigures(ready, first_map, steady, measured, rss, int(index.get("files", 0)))
    finally:
        await client.stop()


@dataclass
class LibraryRound:
    update: float  # WorkspaceIndex.update_file
    map: float  # api.repo_map right after it


@contextlib.contextmanager
def cache_home_set(cache_home: Path) -> Iterator[None]:
    """XDG_CACHE_HOME set for this process (the index's default cache directory is under it)."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache_home)
    try:
        yield
    finally:
        if before is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = before


def library_after_edit(
    root: Path, edited: str, renamed: str, rounds: int, cache_home: Path, profile: cProfile.Profile | None = None
) -> list[LibraryRound]:
    """The same edits as `hub_after_edit`, in this process: update_file, then repo_map, each timed. The index
    cache is the one under `cache_home`, as in the hub."""
    with cache_home_set(cache_home):
        index = WorkspaceIndex(root)
    try:
        with cache_home_set(cache_home):
            index.build()
        path = root / edited
        script = EditScript(path.read_text(encoding="utf-8"), renamed)

        def one_round(edit: Edit) -> LibraryRound:
            _changed, update = timed(lambda: index.update_file(path, edit.text.encode("utf-8")))
            _map, seconds = timed(lambda: api.repo_map(index, MAP_ARGUMENTS))
            return LibraryRound(update, seconds)

        api.repo_map(index, MAP_ARGUMENTS)
        one_round(script.next(0))  # as in the hub: not counted
        measured = [one_round(script.next(number)) for number in range(1, rounds + 1)]
        if profile is not None:  # more rounds of the same, untimed: the profiler triples their time
            for number in range(rounds + 1, 2 * rounds + 1):
                edit = script.next(number)
                profile.enable()
                one_round(edit)
                profile.disable()
        return measured
    finally:
        index.close()


def bench_after_edit(root: Path, cache_home: Path, rounds: int, work: Path, profile: bool) -> None:
    print(
        f"\nthe first repoMap after an edit of {STDLIB_EDITED} ({rounds} rounds), in a hub over stdio and in one "
        "process"
    )
    loadavg("now")
    before = sorted(os.listdir(root))
    hub = asyncio.run(hub_after_edit(root, STDLIB_EDITED, STDLIB_RENAMED, rounds, cache_home, work))
    if sorted(os.listdir(root)) != before:
        print(f"  WARNING: the hub changed the listing of {root}")
    profiler = cProfile.Profile() if profile else None
    library = library_after_edit(root, STDLIB_EDITED, STDLIB_RENAMED, rounds, cache_home, profiler)
    print(
        f"  {'':4}{'edit':<50}{'hub: index has it':>18}{'repoMap':>10}{'change->map':>13}"
        f"{'1 process: update':>19}{'repo_map':>10}"
    )
    for number, (in_hub, alone) in enumerate(zip(hub.rounds, library, strict=True), 1):
        print(
            f"  {number:<4}{in_hub.edit:<50}{shown(in_hub.applied, 'ms'):>18}{shown(in_hub.map_alone, 'ms'):>10}"
            f"{shown(in_hub.change_to_map, 'ms'):>13}{shown(alone.update, 'ms'):>19}{shown(alone.map, 'ms'):>10}"
        )
    report(f"hub: initialize -> index ready ({hub.files} files, warm cache)", hub.ready)
    report("hub: first repoMap (builds the graphs)", hub.first_map, unit="ms", key="hub_map_first")
    report(
        "hub: repoMap, no edit, graphs warm (median of 3)",
        statistics.median(hub.steady),
        unit="ms",
        key="hub_map_steady",
    )
    maps = [entry.map_alone for entry in hub.rounds]
    report(
        "hub: first repoMap after an edit, request alone (median)",
        statistics.median(maps),
        0.1,
        unit="ms",
        key="hub_map_after_edit",
    )
    report(
        "hub: first repoMap after an edit, request alone (max)", max(maps), 0.1, unit="ms", key="hub_map_after_edit_max"
    )
    applied = [entry.applied for entry in hub.rounds]
    report(
        "hub: didChange -> index has it (median; debounce included)",
        statistics.median(applied),
        unit="ms",
        key="hub_applied",
    )
    to_map = [entry.change_to_map for entry in hub.rounds]
    report("hub: didChange -> repoMap answered (median)", statistics.median(to_map), unit="ms", key="hub_change_to_map")
    report("hub: didChange -> repoMap answered (max)", max(to_map), unit="ms", key="hub_change_to_map_max")
    report("hub: resident memory after the rounds (process tree)", hub.rss, unit="MB", key="hub_memory")
    library_maps = [entry.map for entry in library]
    report(
        "one process: update_file (median)",
        statistics.median([entry.update for entry in library]),
        0.03,
        unit="ms",
        key="lib_update",
    )
    report(
        "one process: repo_map right after update_file (median)",
        statistics.median(library_maps),
        0.1,
        unit="ms",
        key="lib_map_after_edit",
    )
    report(
        "one process: repo_map right after update_file (max)",
        max(library_maps),
        0.1,
        unit="ms",
        key="lib_map_after_edit_max",
    )
    if profiler is not None:
        print(f"\n  cProfile of {rounds} more one-process rounds (update_file + repo_map, untimed), top 25:")
        sys.stdout.flush()
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(25)


# --- the synthetic repository ------------------------------------------------------------------------------------


def generate_synthetic(root: Path, file_count: int) -> None:
    """Packages of Python and TypeScript modules that import and call each other."""
    per_package = 50
    for number in range(file_count):
        package = number // per_package
        directory = root / f"pkg{package:04d}"
        directory.mkdir(parents=True, exist_ok=True)
        other = (number * 7919 + 13) % file_count
        other_package = other // per_package
        if number % 4 == 3:
            lines = [f'import {{ helper{other} }} from "../pkg{other_package:04d}/mod{other}";', ""]
            lines += [
                f"export class Service{number} {{",
                "  private count = 0;",
                f"  run{number}(input: number): number {{",
                "    this.count += input;",
                f"    return helper{other}(input) + this.count;",
                "  }",
                "}",
                "",
                f"export function helper{number}(value: number): number {{",
                "  return value * 2;",
                "}",
            ]
            (directory / f"mod{number}.ts").write_text("\n".join(lines) + "\n")
        else:
            lines = [f"from pkg{other_package:04d}.mod{other} import helper{other}", "", ""]
            lines += [
                f"class Service{number}:",
                "    def __init__(self) -> None:",
                "        self.count = 0",
                "",
                f"    def run{number}(self, value: int) -> int:",
                "        self.count += value",
                f"        return helper{other}(value) + self.count",
                "",
                "",
                f"def helper{number}(value: int) -> int:",
                "    return value * 2",
            ]
            (directory / f"mod{number}.py").write_text("\n".join(lines) + "\n")
        if number % per_package == 0:
            (directory / "__init__.py").write_text("")


def bench_synthetic(cache: Path, root: Path) -> None:
    """The in-process index of the synthetic repository (run in a fresh process: its memory figure is its own)."""
    file_count = sum(1 for _ in root.rglob("mod*"))
    print(f"\nin-process index of the synthetic repository ({file_count} files)")
    loadavg("now")
    index = WorkspaceIndex(root, cache_dir=cache)
    with MemorySampler() as memory:
        result, cold = timed(index.build)
        _map, first_map = timed(lambda: api.repo_map(index, MAP_ARGUMENTS))
    report(f"cold index ({result['files']} files)", cold, key="build_parallel", corpus=SYNTHETIC)
    print(f"  {'files per second':<56} {result['files'] / cold:>10.0f}")
    report("repoMap, first (builds the graphs)", first_map, unit="ms", key="map_first", corpus=SYNTHETIC)
    runs = [timed(lambda: api.repo_map(index, MAP_ARGUMENTS))[1] for _ in range(3)]
    report(
        "repoMap 1024 tokens, graphs warm (median of 3)",
        statistics.median(runs),
        unit="ms",
        key="map_steady",
        corpus=SYNTHETIC,
    )
    report(
        "peak memory, build + map (process tree)",
        memory.peak_bytes,
        400 * MB,
        unit="MB",
        key="build_memory",
        corpus=SYNTHETIC,
    )
    index.close()
    warm = WorkspaceIndex(root, cache_dir=cache)
    _stats, warm_seconds = timed(warm.build)
    report("warm start", warm_seconds, key="build_warm", corpus=SYNTHETIC)
    warm.close()


# --- scaling and the serial part (issue 25) ---------------------------------------------------------------------


def worker_counts() -> list[int]:
    return sorted({1, 2, os.cpu_count() or 1})


class _MapWritten:
    """When the map was handed on to be written (the program prints it then)."""

    at = 0.0

    def write(self, _map: dict[str, Any]) -> None:
        self.at = time.perf_counter()


def bench_scaling(scratch: Path, rounds: int = 1) -> None:
    """The cold build of the standard library with 1, 2 and all cores, in this process, each into an empty cache,
    then the map as `lsp-hub repomap` makes it (the cyclic collector off, as that program runs a one-shot verb):
    parsing (in workers; beside it, the CPU the building thread spends taking their results in, which runs while
    they parse), then the serial part in one thread as the program runs it (`background.map_then_store`) — the
    graphs and the map, then the save: handed to a child that outlives the program on Linux (the hand-over
    timed), else stored beside the map and after it. The target: the whole cold map within parse time on one core /
    cores + 0.5 s.

    With `rounds` > 1 the worker counts take turns, their order reversed each round, and the target is judged on
    the medians: this machine's speed moves by a third between consecutive builds, so one build on one core and
    one on all, a minute apart, compare the moments as much as the code."""
    root = Path(sysconfig.get_paths()["stdlib"])
    print(f"\nscaling of the cold build ({root}), in one process, the cyclic collector off as in `lsp-hub repomap`")
    gc.disable()
    loadavg("now")
    print(
        f"  {'round':>6}{'workers':>8}{'parse':>10}{'(taking in)':>13}{'parse CPU':>11}{'graphs+map':>12}"
        f"{'save wait':>11}"
        f"{'total':>10}{'serial share':>14}"
    )
    counts = worker_counts()
    cores = max(counts)
    parses: dict[int, list[float]] = {workers: [] for workers in counts}
    totals: dict[int, list[float]] = {workers: [] for workers in counts}
    serials: dict[int, list[float]] = {workers: [] for workers in counts}
    build_cpus: dict[int, list[float]] = {workers: [] for workers in counts}
    after_exit = detached.run_after_exit if detached.available() else None
    for round_number in range(rounds):
        for workers in counts if round_number % 2 == 0 else counts[::-1]:
            settle()
            cache = scratch / f"scaling-{round_number}-{workers}"
            index = WorkspaceIndex(root, cache_dir=cache, max_workers=workers)
            cpu_before = time.thread_time()
            with CpuSampler() as cpu:
                _stats, parse = timed(index.build)
            taking_in = time.thread_time() - cpu_before
            build_cpu = cpu.own_seconds + cpu.descendants_seconds
            started = time.perf_counter()
            mapped = _MapWritten()
            background.map_then_store(index, dict(MAP_ARGUMENTS), mapped.write, after_exit)
            graphs = mapped.at - started
            save_wait = time.perf_counter() - started - graphs
            # A save handed to a child: waited for before the next build, untimed (the program has ended by then).
            pending_save.wait_for_saves(cache)
            index.close()
            shutil.rmtree(cache, ignore_errors=True)
            serial = graphs + save_wait
            total = parse + serial
            parses[workers].append(parse)
            totals[workers].append(total)
            serials[workers].append(serial)
            build_cpus[workers].append(build_cpu)
            print(
                f"  {round_number + 1:>6}{workers:>8}{parse:>9.2f}s{taking_in:>12.2f}s{build_cpu:>10.2f}s"
                f"{graphs:>11.2f}s{save_wait:>10.2f}s{total:>9.2f}s{serial / total:>13.0%}",
                flush=True,
            )
        if rounds > 1:
            met = totals[cores][-1] <= parses[1][-1] / cores + 0.5
            print(
                f"         round {round_number + 1}: {totals[cores][-1]:.2f} s on {cores} cores against"
                f" {parses[1][-1] / cores + 0.5:.2f} s: {'met' if met else 'missed'}"
            )
    gc.enable()
    # What the target cannot see: the parse on N cores does more work than on one (this process decodes what the
    # workers send, the forkserver and the workers start), and all of it shares the N cores with the workers. Per
    # round: the CPU of the build on all cores over the CPU of the build on one.
    per_round = [many / one for many, one in zip(build_cpus[cores], build_cpus[1], strict=True) if one > 0]
    if cores > 1 and per_round:
        print(
            f"  parse CPU on {cores} cores / on one core, per round: median {statistics.median(per_round):.2f}"
            f" ({', '.join(f'{ratio:.2f}' for ratio in per_round)}; in seconds, so with this machine's speed in"
            f" it: callgrind counts 1.04 on 2 cores, bench/results/parse-overhead-callgrind.txt)"
        )
    for workers in counts:
        FIGURES.append(Figure(f"scaling_{workers}", STDLIB, statistics.median(totals[workers]), "s"))
    of = f" (median of {rounds})" if rounds > 1 else ""
    report(
        f"serial part on all cores (graphs, map, save wait){of}",
        statistics.median(serials[cores]),
        0.5,
        key="scaling_serial",
    )
    report(
        f"cold map on {cores} cores (parse + serial part){of}",
        statistics.median(totals[cores]),
        statistics.median(parses[1]) / cores + 0.5,
        key="scaling_target",
    )


def bench_new_worktree(stdlib: Path, scratch: Path, warm_home: Path, runs: int) -> None:
    """A copy of the indexed standard library at another path, with the same cache (the shared records): the
    whole `lsp-hub repomap` process, each run on a new copy."""
    print("\na new worktree of an indexed checkout (a copy at another path, same cache), whole process")
    loadavg("now")
    seconds = []
    for run in range(runs):
        copy = scratch / f"worktree-{run}"
        shutil.copytree(stdlib, copy, ignore=shutil.ignore_patterns("__pycache__", "site-packages"))
        settle()
        seconds.append(run_repomap_process(copy, warm_home).seconds)
        shutil.rmtree(copy, ignore_errors=True)
    report(
        "new worktree, spawn to exit",
        statistics.median(seconds),
        1.0,
        key="cli_worktree",
        note=f"   ({spread(seconds, 's')})",
    )


# --- summary ----------------------------------------------------------------------------------------------------

SUMMARY = (
    ("cli_cold", "lsp-hub repomap, cold cache (whole process)"),
    ("cli_warm", "lsp-hub repomap, warm cache (whole process)"),
    ("cli_worktree", "lsp-hub repomap, a new worktree (whole process)"),
    ("scaling_target", "cold map on all cores, in one process"),
    ("scaling_serial", "  its serial part (graphs, map, save wait)"),
    ("cli_cold_memory", "  peak memory, cold (process tree)"),
    ("cli_warm_memory", "  peak memory, warm (process tree)"),
    ("hub_map_after_edit", "first lspHub.repoMap after an edit, in hub (median)"),
    ("hub_map_after_edit_max", "  the same, max"),
    ("hub_change_to_map", "  didChange -> that repoMap answered (median)"),
    ("lib_map_after_edit", "one process: repo_map after update_file (median)"),
    ("lib_map_after_edit_max", "  the same, max"),
    ("hub_map_steady", "lspHub.repoMap without an edit, in hub (median)"),
    ("map_steady", "one process: repo_map, graphs warm (median)"),
    ("map_first", "one process: first repo_map (builds the graphs)"),
    ("callers_common", "one process: callers of a common name (median of 5)"),
    ("callers_common_max", "  the same, slowest"),
    ("build_parallel", "in-process cold build, parallel workers (median)"),
    ("build_single", "in-process cold build, one process, one worker"),
    ("build_warm", "in-process warm start"),
    ("lib_update", "incremental update (update_file, median)"),
    ("build_memory", "in-process cold build, peak memory (tree)"),
)


def print_summary() -> None:
    print("\nsummary (targets of issue 10 on the standard library; issue 3's on the in-process figures)")
    print(f"  {'':<54}{'stdlib':>18}{'synthetic':>18}{'target':>12}")
    by_key: dict[tuple[str, str], Figure] = {(figure.key, figure.corpus): figure for figure in FIGURES}
    for key, label in SUMMARY:
        cells = []
        target_cell = ""
        for corpus in (STDLIB, SYNTHETIC):
            figure = by_key.get((key, corpus))
            if figure is None:
                cells.append(f"{'-':>18}")
                continue
            mark = ""
            if figure.target is not None:
                mark = " " + verdict(figure.value, figure.target)
                target_cell = target_cell or f"<= {shown(figure.target, figure.unit)}"
            cells.append(f"{shown(figure.value, figure.unit) + mark:>18}")
        if any(cell.strip() != "-" for cell in cells):
            print(f"  {label:<54}{''.join(cells)}{target_cell:>12}")


# --- main -------------------------------------------------------------------------------------------------------


def light_main_command() -> list[str]:
    """This script's command line with `-c` as the main module, as light as `lsp-hub`'s own script: a worker that
    multiprocessing starts imports the main module first (as `__mp_main__`), and this script's imports (the hub's
    client, the background saves, asyncio) held each parse worker of a build measured here 60 ms longer than a
    worker of `lsp-hub repomap`, whose main module imports only `lsp_hub.cli`."""
    launch = (
        f"import sys; sys.path.insert(0, {str(REPOSITORY)!r}); from bench.index_speed import main; sys.exit(main())"
    )
    return [sys.executable, "-c", launch]


def run_child(scratch: Path, part: str, *arguments: str) -> None:
    """This script in a fresh process for one part (so its memory figure is that part's alone); its figures join
    this process's."""
    figures_file = scratch / f"{part}-figures.json"
    sys.stdout.flush()
    subprocess.run(
        [*light_main_command(), "--child", part, "--figures-file", str(figures_file), *arguments], check=True
    )
    FIGURES.extend(Figure(**entry) for entry in json.loads(figures_file.read_text()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rounds", type=int, default=6, help="edits followed by a repoMap, in the hub and in one process (default 6)"
    )
    parser.add_argument("--cold-runs", type=int, default=3, help="cold runs on the standard library (default 3)")
    parser.add_argument("--warm-runs", type=int, default=3, help="warm `lsp-hub repomap` runs (default 3)")
    parser.add_argument("--synthetic-files", type=int, default=20_000)
    parser.add_argument(
        "--synthetic-cold-runs",
        type=int,
        default=1,
        help="cold `lsp-hub repomap` runs on the synthetic repository (default 1)",
    )
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument(
        "--skip-in-process",
        action="store_true",
        help="leave out the in-process builds of the standard library (a quicker run)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="print cProfile's top functions of the one-process edit rounds"
    )
    # A part run in a fresh process of its own (its memory figures its own), its figures written to a file.
    parser.add_argument("--skip-scaling", action="store_true", help="leave out the scaling curve (1, 2, all cores)")
    parser.add_argument(
        "--scaling-rounds",
        type=int,
        default=3,
        help="builds per worker count for the scaling curve, taking turns; judged on the medians (default 3)",
    )
    parser.add_argument("--child", choices=("in-process", "synthetic", "scaling"), help=argparse.SUPPRESS)
    parser.add_argument("--child-root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--figures-file", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args()
    counts = (options.rounds, options.cold_runs, options.warm_runs, options.synthetic_cold_runs, options.scaling_rounds)
    if min(counts) < 1:
        parser.error("--rounds and the run counts must be at least 1")
    scratch = Path(tempfile.mkdtemp(prefix="lsp-hub-bench-"))
    try:
        if options.child is not None:
            if options.child == "synthetic":
                bench_synthetic(scratch / "cache", options.child_root)
            elif options.child == "scaling":
                bench_scaling(scratch, options.scaling_rounds)
            else:
                bench_standard_library(scratch / "cache", options.cold_runs)
            if options.figures_file is not None:
                options.figures_file.write_text(json.dumps([asdict(figure) for figure in FIGURES]))
            return 0
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, lsp_hub from {REPOSITORY}")
        # lsp-hub as installed, compiled (make setup does this too): with PYTHONDONTWRITEBYTECODE set and stale or
        # missing bytecode, every whole-process run would also time Python compiling lsp_hub (0.2 s).
        compileall.compile_dir(str(REPOSITORY / "lsp_hub"), quiet=1)
        loadavg("at the start")
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        # Not timed: compiles this checkout's modules once and brings the interpreter's files into the page cache.
        (scratch / "empty").mkdir()
        run_repomap_process(scratch / "empty", scratch / "warm-up")
        warm_home = bench_repomap_process(stdlib, scratch, STDLIB, options.cold_runs, options.warm_runs)
        bench_new_worktree(stdlib, scratch, warm_home, options.warm_runs)
        bench_after_edit(stdlib, warm_home, options.rounds, scratch, options.profile)
        if not options.skip_scaling:
            run_child(scratch, "scaling", "--scaling-rounds", str(options.scaling_rounds))
        if not options.skip_in_process:
            run_child(scratch, "in-process", "--cold-runs", str(options.cold_runs))
        if not options.skip_synthetic:
            synthetic = scratch / "synthetic"
            _none, generated = timed(lambda: generate_synthetic(synthetic, options.synthetic_files))
            print(
                f"\nsynthetic repository: {options.synthetic_files} files (+ package __init__ files), generated "
                f"in {generated:.1f} s"
            )
            bench_repomap_process(synthetic, scratch, SYNTHETIC, options.synthetic_cold_runs, options.warm_runs)
            run_child(scratch, "synthetic", "--child-root", str(synthetic))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print_summary()
    usage_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    usage_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(
        f"getrusage max RSS: this process {shown(usage_self, 'MB')}, largest waited-for child "
        f"{shown(usage_children, 'MB')}"
    )
    loadavg("at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
