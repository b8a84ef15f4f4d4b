"""What an agent waits for: `lsp-hub query` through the daemon and without it, edit to complete diagnostics, and the
memory of one daemon serving three clients beside three hubs, in one run (issue 8).

- hover: `lsp-hub query hover` on a copy of `examples/sample`, the whole process's wall time (what an agent's tool
  call costs), with a warm daemon and with `--no-daemon`, runs alternating so both see the same machine.
  Target: warm daemon <= 150 ms (median).
- repomap: `lsp-hub query repomap` on the standard library (the root `bench/index_speed.py` indexes), the same two
  ways, after a first query has built the index into the run's cache. Target: warm daemon <= 200 ms.
- diagnostics: one session kept open on a hub over stdio (a `HubClient`); each edit replaces a function at the end
  of `app/service.py` with one that both basedpyright and ruff flag. The waiting client sends the text through
  `lspHub.diagnostics` and times the answer (and checks it is `complete` and holds both servers' new findings);
  beside it a second session sends the same kind of edit as `didChange`, sleeps a fixed 3 s and reads what was
  published (and says whether both servers' findings on that text were there). Edits alternate between the two.
- memory: one daemon serving an editor and two agents (three `lsp-hub --connect` sessions, each with a Python, a
  TypeScript and a C file open and diagnosed), beside three separate `lsp-hub` hubs doing the same: summed RSS (and
  PSS, which counts shared pages once) of the daemon or hubs and all their descendants, from /proc.

Today each daemon connection is its own session with its own servers (the README's "The daemon"): a "warm daemon"
query saves the hub's own start, not the servers'. The benchmark measures whatever the daemon does, so it shows the
gain once sessions share servers, with no change here.

Everything runs in a temporary directory: its own XDG_RUNTIME_DIR (so its own daemon), XDG_CACHE_HOME (index cache)
and XDG_CONFIG_HOME, and a copy of examples/sample. Every daemon and hub it started is stopped on the way out,
Ctrl-C, SIGTERM and errors included. `lsp-hub` is run as `python -m lsp_hub` with this checkout first on PYTHONPATH.
A full run takes about 4.5 minutes on 2 cores; no new run starts after --max-seconds (480), and --quick does 5 of each.

    python bench/agent_latency.py [--runs 20] [--edits 20] [--sections hover,repomap,diagnostics,memory] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.processes import descendants, process_table  # noqa: E402
from lsp_hub.platform.processes import pid_alive  # noqa: E402 - after the path insert, as in the other benchmarks
from lsp_hub.transport.rawclient import HubClient  # noqa: E402

SAMPLE = ROOT / "examples" / "sample"
STDLIB = Path(sysconfig.get_paths()["stdlib"])
HOVER_TARGET = "app/service.py:16:66"  # total_value(...): basedpyright answers with its signature
EDITED = "app/service.py"
MEMORY_FILES = [("app/service.py", "python"), ("web/src/main.ts", "typescript"), ("native/main.c", "c")]
SECTIONS = ("hover", "repomap", "diagnostics", "memory")
SLEEP_SECONDS = 3.0


# ============================================================================================= figures
def percentile(values: list[float], fraction: float) -> float:
    """Nearest rank: p95 of 20 values is the 19th smallest."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))]


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f} ms"


def row(label: str, *cells: str, extra: str = "") -> None:
    print(f"  {label:<34}" + "".join(f"{cell:>18}" for cell in cells) + (f"   {extra}" if extra else ""))


def note(text: str) -> None:
    words, line = text.split(), "  note:"
    for word in words:
        if len(line) + len(word) + 1 > 116:
            print(line)
            line = "       "
        line += " " + word
    print(line)
    print()


def timing_rows(columns: dict[str, list[float]], target: float | None = None) -> None:
    """median, p95, min-max and the count of each column; the target is judged on the first column's median."""
    row("", *columns)
    medians = [statistics.median(values) if values else None for values in columns.values()]
    first = medians[0]
    verdict = ""
    if target is not None and first is not None:
        verdict = f"target <= {target * 1000:.0f} ms: {'met' if first <= target else 'MISSED'}"
    row("median", *(ms(value) for value in medians), extra=verdict)
    row("p95", *(ms(percentile(values, 0.95)) if values else "-" for values in columns.values()))
    row("min - max", *(f"{min(values) * 1000:.0f} - {max(values) * 1000:.0f} ms" if values else "-"
                       for values in columns.values()))
    row("runs", *(str(len(values)) for values in columns.values()))


# ============================================================================================= processes


def pss_bytes(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/smaps_rollup") as handle:
        for line in handle:
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    return 0


def kind_of(pid: int) -> str:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"
    for needle, label in (("basedpyright", "basedpyright"), ("typingsInstaller", "tsserver typings installer"),
                          ("tsserver", "tsserver"), ("typescript-language-server", "ts-language-server"),
                          ("clangd", "clangd"), ("ruff", "ruff"), ("lsp_hub", "lsp-hub (python)")):
        if needle in command:
            return label
    words = command.split()
    return " ".join(Path(word).name for word in words[:2]) or "?"


@dataclass
class TreeMemory:
    rss: int = 0
    pss: int = 0
    processes: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


def tree_memory(roots: list[int]) -> TreeMemory:
    table = process_table()
    memory = TreeMemory()
    for pid in descendants(roots, table):
        memory.rss += table[pid][1]
        memory.pss += pss_bytes(pid)
        memory.processes += 1
        kind = kind_of(pid)
        memory.by_kind[kind] = memory.by_kind.get(kind, 0) + table[pid][1]
    return memory


def settled_memory(roots: list[int], samples: int = 5, interval: float = 0.5) -> TreeMemory:
    """The sample with the median RSS of a few, half a second apart."""
    taken = []
    for number in range(samples):
        if number:
            time.sleep(interval)
        taken.append(tree_memory(roots))
    return sorted(taken, key=lambda memory: memory.rss)[len(taken) // 2]


def megabytes(value: int) -> str:
    return f"{value / (1024 * 1024):.0f} MB"


# ============================================================================================= the run's world
class World:
    """The temporary directory, the environment every lsp-hub process of this run gets, and what must be stopped."""

    def __init__(self, deadline: float) -> None:
        # Short: the daemon's socket path must fit in sun_path.
        self.directory = Path(tempfile.mkdtemp(prefix="lhb-", dir="/tmp"))
        self.sample = self.directory / "sample"
        shutil.copytree(SAMPLE, self.sample, ignore=shutil.ignore_patterns("node_modules", "__pycache__"))
        runtime = self.directory / "run"
        runtime.mkdir(mode=0o700)
        self.env = {key: value for key, value in os.environ.items() if key != "LSP_HUB_SOCKET"}
        self.env.update({
            "XDG_RUNTIME_DIR": str(runtime),
            "XDG_CACHE_HOME": str(self.directory / "cache"),
            "XDG_CONFIG_HOME": str(self.directory / "config"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        })
        self.daemon_pid_file = runtime / "lsp-hub" / "daemon.pid"
        self.clients: list[HubClient] = []
        self.deadline = deadline

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def lsp_hub(self, *args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "lsp_hub", *args], cwd=cwd or ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def timed_query(self, *args: str, cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
        started = time.perf_counter()
        done = self.lsp_hub("query", *args, cwd=cwd)
        return time.perf_counter() - started, done

    def daemon_start(self) -> tuple[float, int]:
        started = time.perf_counter()
        done = self.lsp_hub("daemon", "start", "--json")
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"lsp-hub daemon start failed: {done.stderr.strip()}")
        return seconds, int(json.loads(done.stdout)["pid"])

    def daemon_pid(self) -> int | None:
        done = self.lsp_hub("daemon", "status", "--json", timeout=30)
        if done.returncode != 0:
            return None
        return int(json.loads(done.stdout)["pid"])

    def daemon_stop(self) -> None:
        """`lsp-hub daemon stop`; a daemon that does not stop so is killed (its servers die with it)."""
        pid = None
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int(self.daemon_pid_file.read_text().split()[0])
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.lsp_hub("daemon", "stop", timeout=30)
        if pid is not None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if not pid_alive(pid):
                    break
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
                time.sleep(2)

    async def client(self, *args: str) -> HubClient:
        client = HubClient()
        self.clients.append(client)
        await client.start(*args, cwd=str(self.sample), env=self.env)
        await client.initialize(self.sample)
        return client

    async def stop_clients(self) -> None:
        clients, self.clients = self.clients, []
        for client in clients:
            with contextlib.suppress(Exception):
                await client.stop(timeout=10)

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


# ============================================================================================= sections
def alternate(world: World, runs: int, cwd: Path, daemon_args: list[str]) -> dict[str, list[float]]:
    """`runs` queries each way, alternating; failed queries are reported and left out."""
    columns: dict[str, list[float]] = {"warm daemon": [], "--no-daemon": []}
    for _ in range(runs):
        if world.out_of_time():
            print(f"  (time bound reached: stopped after {len(columns['--no-daemon'])} runs)")
            break
        for column, extra in (("warm daemon", []), ("--no-daemon", ["--no-daemon"])):
            seconds, done = world.timed_query(*daemon_args, *extra, cwd=cwd)
            if done.returncode == 0 and done.stdout.strip():
                columns[column].append(seconds)
            else:
                print(f"  {column}: exit {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}")
    return columns


def bench_hover(world: World, runs: int) -> None:
    print(f"hover: `lsp-hub query hover {HOVER_TARGET}` on a copy of examples/sample, whole process wall time")
    started, pid = world.daemon_start()
    args = ["hover", HOVER_TARGET, "--root", str(world.sample)]
    first, done = world.timed_query(*args, cwd=world.sample)
    lines = [line for line in done.stdout.splitlines() if line.strip() and not line.startswith("```")]
    answer = lines[0][:60] if lines else f"(exit {done.returncode})"
    print(f"  daemon start {ms(started)} (pid {pid}); first query through it {ms(first)}: {answer}")
    world.timed_query(*args, "--no-daemon", cwd=world.sample)  # warm the file cache for the other column too
    timing_rows(alternate(world, runs, world.sample, args), target=0.150)
    note("Whole `lsp-hub query` processes, alternating. Each query is a new session of the daemon's workspace for "
         "this root, whose servers outlive the sessions: a warm query finds basedpyright and ruff running, while "
         "--no-daemon starts its hub and servers every time.")


def bench_repomap(world: World, runs: int) -> None:
    print(f"repomap: `lsp-hub query repomap --budget 1024` on the standard library ({STDLIB})")
    if world.daemon_pid() is None:
        world.daemon_start()
    args = ["repomap", "--budget", "1024", "--root", str(STDLIB)]
    first, done = world.timed_query(*args, cwd=STDLIB)
    if done.returncode != 0:
        print(f"  first query failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    print(f"  first query (cold index built into this run's cache, graphs built) {ms(first)}")
    timing_rows(alternate(world, runs, STDLIB, args), target=0.200)
    note("Whole processes, index cache warm. Through the daemon every query joins the same workspace, whose index "
         "and file graphs stay built between queries (the slowest warm run is the one that built the graphs); "
         "--no-daemon opens the cached index and rebuilds the graphs every time.")


def edit_block(number: int) -> str:
    # basedpyright: the return type (its message quotes 'text_N'); ruff F841: `unused_N` is never used.
    return f"\n\ndef edited_{number}() -> int:\n    unused_{number} = 1\n    return \"text_{number}\"\n"


def sees_edit(diagnostics: list[dict[str, Any]], number: int) -> tuple[bool, bool]:
    """(basedpyright reported on edit `number`, ruff did)."""
    pyright = ruff = False
    for diagnostic in diagnostics:
        source = str(diagnostic.get("source", "")).lower()
        message = str(diagnostic.get("message", ""))
        if "ruff" in source and f"`unused_{number}`" in message:
            ruff = True
        elif "pyright" in source and f"'text_{number}'" in message:
            pyright = True
    return pyright, ruff


async def bench_diagnostics(world: World, edits: int) -> None:
    print(f"diagnostics: edit -> basedpyright's and ruff's verdict on {EDITED}, one open session each, "
          f"{edits} edits each, alternating")
    path = world.sample / EDITED
    base = path.read_text()
    waiting = await world.client()
    sleeping = await world.client()
    uri = path.as_uri()
    command = "workspace/executeCommand"
    for client in (waiting, sleeping):
        client.open(path, "python", text=base)
        first = await client.request(command, {"command": "lspHub.diagnostics",
                                               "arguments": [{"uri": uri, "timeoutMs": 60000}]}, timeout=90)
        if not first.get("complete"):
            print(f"  servers did not report on the opened file within 60 s: pending {first.get('pending')}")
    waited: list[float] = []
    waited_complete = waited_both = 0
    slept_both = slept_pyright = slept_ruff = 0
    arrived: list[float] = []
    version = 1
    for number in range(edits):
        if world.out_of_time():
            print(f"  (time bound reached: stopped after {len(waited)} edits)")
            break
        text = base + edit_block(2 * number)
        started = time.perf_counter()
        answer = await waiting.request(command, {"command": "lspHub.diagnostics",
                                                 "arguments": [{"uri": uri, "text": text, "timeoutMs": 10000}]},
                                       timeout=30)
        waited.append(time.perf_counter() - started)
        waited_complete += bool(answer.get("complete"))
        waited_both += all(sees_edit(answer.get("diagnostics", []), 2 * number))

        edit = 2 * number + 1
        version += 1
        started = time.perf_counter()
        sleeping.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                   "contentChanges": [{"text": base + edit_block(edit)}]})
        # Only watching: when both findings were first there (the client itself just sleeps).
        def both_there(edit: int = edit) -> bool:
            return all(sees_edit(sleeping.diagnostics.get(uri, []), edit))

        with contextlib.suppress(AssertionError):
            await sleeping.wait_for(both_there, timeout=SLEEP_SECONDS, what="both servers' findings")
            arrived.append(time.perf_counter() - started)
        await asyncio.sleep(max(0.0, SLEEP_SECONDS - (time.perf_counter() - started)))
        pyright, ruff = sees_edit(sleeping.diagnostics.get(uri, []), edit)
        slept_both += pyright and ruff
        slept_pyright += pyright
        slept_ruff += ruff
    count = len(waited)
    row("", "lspHub.diagnostics", f"sleep {SLEEP_SECONDS:g} s")
    row("median", ms(statistics.median(waited)) if waited else "-", ms(SLEEP_SECONDS))
    row("p95", ms(percentile(waited, 0.95)) if waited else "-", ms(SLEEP_SECONDS))
    row("min - max", f"{min(waited) * 1000:.0f} - {max(waited) * 1000:.0f} ms" if waited else "-", "")
    row("complete: true", f"{waited_complete}/{count}", "")
    row("both servers' findings there", f"{waited_both}/{count}", f"{slept_both}/{count}")
    row("  basedpyright / ruff", "", f"{slept_pyright}/{count} / {slept_ruff}/{count}")
    if arrived:
        row("(pushed, both there: median)", "", ms(statistics.median(arrived)),
            extra=f"max {ms(max(arrived))}, {len(arrived)}/{count} within {SLEEP_SECONDS:g} s")
    note(f"lspHub.diagnostics sends the text and answers when every server serving the file has reported on it "
         f"(complete: true); the sleeping client sends didChange, sleeps {SLEEP_SECONDS:g} s and reads the last "
         f"publish. 'Findings there': the new function's type error (basedpyright) and unused variable (ruff) are "
         f"in what the client got. The pushed line is when they were first published, watched, not waited for.")
    await world.stop_clients()


async def open_and_settle(client: HubClient, sample: Path) -> bool:
    """Open the memory files and wait for every server's diagnostics on them, then one hover."""
    complete = True
    for relative, language in MEMORY_FILES:
        path = sample / relative
        uri = client.open(path, language)
        answer = await client.request("workspace/executeCommand", {
            "command": "lspHub.diagnostics", "arguments": [{"uri": uri, "timeoutMs": 60000}]}, timeout=90)
        complete = complete and bool(answer.get("complete"))
    where = {"textDocument": {"uri": (sample / "app/service.py").as_uri()}, "position": {"line": 15, "character": 65}}
    await client.request("textDocument/hover", where, timeout=60)
    return complete


async def bench_memory(world: World) -> None:
    print("memory: an editor and two agents on examples/sample (3 sessions, each with a .py, .ts and .c file open)")
    # A fresh daemon: earlier sections' sessions on the standard library must not count here.
    world.daemon_stop()
    _started, daemon = world.daemon_start()
    bridges = [await world.client("--connect") for _ in range(3)]
    complete = [await open_and_settle(client, world.sample) for client in bridges]
    await asyncio.sleep(2)
    shared = settled_memory([daemon])
    bridge_memory = tree_memory([client.process.pid for client in bridges])
    await world.stop_clients()
    world.daemon_stop()

    hubs = [await world.client() for _ in range(3)]
    complete += [await open_and_settle(client, world.sample) for client in hubs]
    await asyncio.sleep(2)
    separate = settled_memory([client.process.pid for client in hubs])
    await world.stop_clients()

    row("", "one daemon", "three hubs")
    row("RSS, process trees", megabytes(shared.rss), megabytes(separate.rss))
    row("PSS, process trees", megabytes(shared.pss), megabytes(separate.pss))
    row("processes", str(shared.processes), str(separate.processes))
    for kind in sorted(set(shared.by_kind) | set(separate.by_kind)):
        row(f"  RSS of {kind}", megabytes(shared.by_kind.get(kind, 0)), megabytes(separate.by_kind.get(kind, 0)))
    row("+ the three --connect bridges", megabytes(bridge_memory.rss), "")
    if not all(complete):
        print("  (some servers did not report on the open files within 60 s)")
    note("RSS of the daemon (or of each hub) and all its descendants, the median of 5 samples over 2 s once every "
         "server had reported on the open files; PSS counts shared pages once. The daemon's three sessions share "
         "one workspace (one set of servers) where three hubs run three; the bridges are the editor's and agents' "
         "`lsp-hub --connect` processes, outside the daemon's tree.")


# ============================================================================================= main
async def with_clients(world: World, section: Coroutine[Any, Any, None]) -> None:
    try:
        await section
    finally:
        await world.stop_clients()


def run(world: World, options: argparse.Namespace) -> None:
    """The sections in order; the query sections outside asyncio, so that Ctrl-C stops them at once."""
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print()
    if "hover" in options.sections:
        bench_hover(world, options.runs)
    if "repomap" in options.sections:
        bench_repomap(world, options.runs)
    if "diagnostics" in options.sections:
        asyncio.run(with_clients(world, bench_diagnostics(world, options.edits)))
    if "memory" in options.sections:
        asyncio.run(with_clients(world, bench_memory(world)))


def interrupted(_signal: int, _frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def world_of(deadline: float) -> Iterator[World]:
    world = World(deadline)
    try:
        yield world
    finally:
        try:
            world.daemon_stop()
        finally:
            world.remove()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="queries per column (hover, repomap)")
    parser.add_argument("--edits", type=int, default=20, help="edits per client (diagnostics)")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated: {', '.join(SECTIONS)}")
    parser.add_argument("--quick", action="store_true", help="5 runs and 5 edits")
    parser.add_argument("--max-seconds", type=float, default=480,
                        help="stop starting new runs after this long (default 480)")
    options = parser.parse_args()
    options.sections = [name.strip() for name in options.sections.split(",") if name.strip()]
    unknown = set(options.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    if options.quick:
        options.runs, options.edits = min(options.runs, 5), min(options.edits, 5)
    signal.signal(signal.SIGTERM, interrupted)  # as Ctrl-C: the daemon this run started is stopped
    with world_of(time.monotonic() + options.max_seconds) as world:
        try:
            run(world, options)
        except KeyboardInterrupt:
            print("interrupted: stopping every daemon and hub this run started", file=sys.stderr)
            return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
