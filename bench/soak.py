"""One daemon for an editor and agents at once, for minutes (issue 22): does anything grow, is anyone answered about
the wrong text, does the log stay quiet.

On a copy of `examples/sample` (or `--repo DIR`), with a daemon of its own (a private XDG_RUNTIME_DIR), it runs
side by side until `--minutes` have passed:

- an editor: one LSP connection to the daemon's socket that types into `app/service.py` every 250 ms (a comment line
  added and removed, and every 30 s three unsaved lines at the top kept for 10 s), with a hover and a completion
  after each change;
- two agents: `AgentTools` sessions (what `lsp-hub mcp` runs) looping over hover by position on the disk's text,
  references by symbol, diagnostics, the repo map, and an edit_file of a file of their own;
- a shell user: `lsp-hub query hover` every 10 s, as a new process.

Each minute it prints the daemon's process-tree RSS and its own RSS, open descriptors and children, the latency
p50/p95 per call type, errors, and wrong answers: an agent's hover at the position of `def report` on disk that
does not name `report` (the editor's unsaved lines shifted the server's text). At the end: the daemon's RSS growth
from minute 2 to the last, and the ERROR lines its log gained.

    python bench/soak.py [--minutes 20] [--repo DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from processes import tree_rss  # noqa: E402

from lsp_hub.agents import query  # noqa: E402
from lsp_hub.agents.agent_tools import AgentTools, ToolFailure  # noqa: E402

EDITED = "app/service.py"
HOVER_FILE, HOVER_NAME = "app/service.py", "report"  # an agent hovers the name of `def report` as it is on disk
TYPE_EVERY = 0.25
UNSAVED_EVERY, UNSAVED_FOR = 30.0, 10.0
SHELL_EVERY = 10.0


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.wrong = 0
        self.error_samples: list[str] = []

    def timed(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.latencies[kind].append(seconds)

    def failed(self, kind: str, message: str) -> None:
        with self.lock:
            self.errors[kind] += 1
            if len(self.error_samples) < 5:
                self.error_samples.append(f"{kind}: {message[:200]}")

    def take(self) -> tuple[dict[str, list[float]], dict[str, int], int]:
        with self.lock:
            taken = (dict(self.latencies), dict(self.errors), self.wrong)
            self.latencies, self.errors, self.wrong = defaultdict(list), defaultdict(int), 0
            return taken


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


# ============================================================================================= the clients
def editor(socket_path: str, root: Path, stop: threading.Event, stats: Stats) -> None:
    connection = query.connect_socket(socket_path)
    connection.initialize(root, 30.0)
    path = root / EDITED
    uri = query.path_uri(path)
    disk = path.read_text()
    connection.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": disk}})
    version, started, typed = 1, time.monotonic(), 0
    try:
        while not stop.is_set():
            elapsed = time.monotonic() - started
            unsaved = (elapsed % UNSAVED_EVERY) < UNSAVED_FOR and elapsed > UNSAVED_EVERY
            head = "# unsaved 1\n# unsaved 2\n# unsaved 3\n" if unsaved else ""
            typed += 1
            text = head + disk + (f"# typed {typed}\n" if typed % 2 else "")
            version += 1
            connection.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                         "contentChanges": [{"text": text}]})
            line = text.count("\n") - (1 if typed % 2 else 0)
            for kind, method, position in (
                    ("editor hover", "textDocument/hover", {"line": 1 + (3 if unsaved else 0), "character": 8}),
                    ("editor completion", "textDocument/completion", {"line": max(0, line - 1), "character": 0})):
                asked = time.perf_counter()
                try:
                    connection.request(method, {"textDocument": {"uri": uri}, "position": position}, 30.0)
                    stats.timed(kind, time.perf_counter() - asked)
                except query.QueryError as error:
                    stats.failed(kind, str(error))
            stop.wait(TYPE_EVERY)
    finally:
        connection.close()


def agent(number: int, socket_path: str, root: Path, stop: threading.Event, stats: Stats) -> None:
    tools = AgentTools(root, lambda _root: query.connect_socket(socket_path), timeout=30.0)
    own = f"app/agent_{number}.py"
    (root / own).write_text(f"VALUE_{number} = 0\n")
    disk = (root / HOVER_FILE).read_text().split("\n")
    line = next(index for index, text in enumerate(disk) if f"def {HOVER_NAME}" in text)
    column = disk[line].index(HOVER_NAME) + 1
    calls = [
        ("agent hover", lambda: tools.lsp("hover", file=HOVER_FILE, line=line + 1, column=column)),
        ("agent references", lambda: tools.lsp("references", symbol="total_value")),
        ("agent diagnostics", lambda: tools.lsp("diagnostics", file=HOVER_FILE)),
        ("agent repo_map", lambda: tools.workspace_command("lspHub.repoMap", {"tokenBudget": 256})),
        ("agent edit_file", lambda: tools.edit_file(own, f"VALUE_{number} = {flip[0]}",
                                                    f"VALUE_{number} = {1 - flip[0]}")),
    ]
    flip = [0]
    try:
        while not stop.is_set():
            for kind, call in calls:
                if stop.is_set():
                    break
                asked = time.perf_counter()
                try:
                    answer = call()
                except ToolFailure as failure:
                    stats.failed(kind, str(failure))
                    continue
                stats.timed(kind, time.perf_counter() - asked)
                if kind == "agent edit_file":
                    flip[0] = 1 - flip[0]
                if kind == "agent hover" and HOVER_NAME not in answer.text:
                    with stats.lock:
                        stats.wrong += 1
    finally:
        tools.close()


def shell(env: dict[str, str], root: Path, stop: threading.Event, stats: Stats) -> None:
    disk = (root / HOVER_FILE).read_text().split("\n")
    line = next(index for index, text in enumerate(disk) if f"def {HOVER_NAME}" in text)
    target = f"{HOVER_FILE}:{line + 1}:{disk[line].index(HOVER_NAME) + 1}"
    while not stop.wait(SHELL_EVERY):
        asked = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "lsp_hub", "query", "hover", target], cwd=root, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            stats.failed("shell query", done.stderr.strip() or f"exit {done.returncode}")
        else:
            stats.timed("shell query", time.perf_counter() - asked)
            if HOVER_NAME not in done.stdout:
                with stats.lock:
                    stats.wrong += 1


# ============================================================================================= the daemon
def daemon_pid(runtime: Path) -> int:
    return int((runtime / "lsp-hub" / "daemon.pid").read_text().strip())


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def children(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return len(handle.read().split())
    except OSError:
        return -1


def own_rss(pid: int) -> int:
    return tree_rss(pid) - tree_rss(pid, include_root=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--repo", type=Path, help="a Python project holding app/service.py (default: examples/sample)")
    options = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="soak-", dir="/tmp"))
    root = directory / "sample"
    shutil.copytree(options.repo or ROOT / "examples" / "sample", root,
                    ignore=shutil.ignore_patterns("node_modules", "__pycache__", ".ruff_cache"))
    runtime = directory / "run"
    runtime.mkdir(mode=0o700)
    log = directory / "daemon.log"
    extra = [str(ROOT / ".venv" / "bin"), str(ROOT / ".tools" / "npm" / "node_modules" / ".bin")]
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "XDG_CACHE_HOME": str(directory / "cache"),
           "XDG_CONFIG_HOME": str(directory / "config"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "PATH": os.pathsep.join([*extra, os.environ.get("PATH", os.defpath)])}
    os.environ.update({key: env[key] for key in ("XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")})
    subprocess.run([sys.executable, "-m", "lsp_hub", "daemon", "start", "--log-file", str(log)], env=env,
                   check=True, capture_output=True, timeout=60)
    socket_path = str(runtime / "lsp-hub" / "daemon.sock")
    pid = daemon_pid(runtime)
    stats, stop = Stats(), threading.Event()
    threads = [threading.Thread(target=editor, args=(socket_path, root, stop, stats), daemon=True),
               *(threading.Thread(target=agent, args=(number, socket_path, root, stop, stats), daemon=True)
                 for number in (1, 2)),
               threading.Thread(target=shell, args=(env, root, stop, stats), daemon=True)]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; daemon pid {pid}; "
          f"{options.minutes:g} minutes on {root}")
    for thread in threads:
        thread.start()
    rss_by_minute: list[int] = []
    started = time.monotonic()
    try:
        minute = 0
        while time.monotonic() - started < options.minutes * 60:
            time.sleep(min(60.0, options.minutes * 60 - (time.monotonic() - started)))
            minute += 1
            latencies, errors, wrong = stats.take()
            tree, own = tree_rss(pid), own_rss(pid)
            rss_by_minute.append(own)
            cells = "; ".join(f"{kind} {statistics.median(values) * 1000:.0f}/"
                              f"{sorted(values)[int(0.95 * (len(values) - 1))] * 1000:.0f} ms ({len(values)})"
                              for kind, values in sorted(latencies.items()) if values)
            print(f"min {minute:>2}: daemon {own / 1e6:.1f} MB (tree {tree / 1e6:.0f} MB), {open_fds(pid)} fds, "
                  f"{children(pid)} children; errors {sum(errors.values())}, wrong {wrong}; p50/p95: {cells}",
                  flush=True)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
        subprocess.run([sys.executable, "-m", "lsp_hub", "daemon", "stop"], env=env, capture_output=True, timeout=60,
                       check=False)
    error_lines = [line for line in log.read_text(errors="replace").splitlines() if " ERROR " in line]
    if len(rss_by_minute) >= 2:
        growth = (rss_by_minute[-1] - rss_by_minute[1]) / 1e6
        print(f"daemon RSS from minute 2 to {len(rss_by_minute)}: {growth:+.1f} MB")
    print(f"ERROR lines in the daemon's log: {len(error_lines)}")
    for line in error_lines[:5]:
        print(f"  {line[:200]}")
    for sample in stats.error_samples:
        print(f"  error: {sample}")
    shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
