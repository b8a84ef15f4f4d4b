"""Every benchmark under bench/ imports: a name moved inside lsp_hub must not leave a benchmark that fails before it
measures anything (bench/agent_latency.py imported `pid_alive` from a module it had left)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
# Modules that only a benchmark's own environment has (bench/aider_rank.py runs in aider's): stood in for by an
# empty module, so that everything else the benchmark imports is still checked.
BENCH_ONLY = ("aider", "aider.repomap")
# One interpreter for all (a benchmark puts its own directories on sys.path, and some parse sys.argv at import).
IMPORT_EACH = """
import importlib, json, sys, traceback, types
class StandIn(types.ModuleType):
    def __getattr__(self, name): return object
for module in {stand_ins!r}:
    sys.modules[module] = StandIn(module)
sys.argv = ["bench"]
failures = {{}}
for name in {names!r}:
    try:
        importlib.import_module(name)
    except BaseException:
        failures[name] = traceback.format_exc(limit=3)
print(json.dumps(failures))
"""


def test_every_benchmark_imports() -> None:
    names = sorted(path.stem for path in BENCH.glob("*.py"))
    assert len(names) > 10
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH.format(stand_ins=BENCH_ONLY, names=names)],
        cwd=BENCH,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert failures == {}, "\n".join(f"bench/{name}.py does not import:\n{why}" for name, why in failures.items())
