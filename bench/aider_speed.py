"""lsp-hub's repo map beside aider's, where aider does the same work (issue 25): a 1,024-token map of a tree with no
chat files, each as a whole process, cold (empty caches) and warm (the caches the cold runs left), alternated.

Both map a copy of the tree (the standard library of this interpreter by default) and the same files: those lsp-hub's
walk indexes, handed to aider as its `other_files` (`bench/aider_map.py`, run by aider's own interpreter, whose tags
cache is a directory of the scratch space). lsp-hub runs as `python -m lsp_hub repomap COPY --budget 1024` from this
checkout, with its own XDG_CACHE_HOME and compiled bytecode. Aider counts tokens as lsp-hub estimates them (see
aider_map.py), so its figure leaves out loading a model's tokenizer.

    python bench/aider_speed.py --aider-python /work/aider-env/bin/python [--root DIR] [--warm-runs 3]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))

from lsp_hub.index import pending_save  # noqa: E402
from lsp_hub.index.walk import walk_workspace  # noqa: E402


def timed(command: list[str], environment: dict[str, str], cwd: Path) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, env=environment, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed ({done.returncode}): {done.stderr[-2000:]}")
    if "XDG_CACHE_HOME" in environment:  # lsp-hub's: a save handed to a child (Linux), the next run starts after it
        pending_save.wait_for_saves(Path(environment["XDG_CACHE_HOME"]) / "lsp-hub")
    return seconds, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--aider-python", type=Path, required=True, help="the Python of an environment with aider")
    parser.add_argument("--root", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--warm-runs", type=int, default=3)
    options = parser.parse_args()
    if options.warm_runs < 1:
        parser.error("--warm-runs: at least 1")
    scratch = Path(tempfile.mkdtemp(prefix="lsp-hub-aider-speed-"))
    try:
        tree = scratch / "tree"
        shutil.copytree(options.root, tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        files = [walked.path for walked in walk_workspace(tree).files]
        files_list = scratch / "files.txt"
        files_list.write_text("\n".join(files) + "\n", encoding="utf-8")
        compileall.compile_dir(str(REPOSITORY / "lsp_hub"), quiet=1)
        hub_environment = {**os.environ, "XDG_CACHE_HOME": str(scratch / "hub-cache"), "PYTHONPATH": str(REPOSITORY)}
        hub = [sys.executable, "-m", "lsp_hub", "repomap", str(tree), "--budget", "1024"]
        aider = [str(options.aider_python), str(REPOSITORY / "bench" / "aider_map.py"), str(tree), str(files_list)]
        aider.append(str(scratch / "aider-cache"))
        aider_environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        one, five, _fifteen = os.getloadavg()
        print(f"{options.root}: {len(files)} files, a copy mapped  [load {one:.2f} {five:.2f}, {os.cpu_count()} CPUs]")
        runs: dict[str, dict[str, list[float]]] = {
            "lsp-hub": {"cold": [], "warm": []},
            "aider": {"cold": [], "warm": []},
        }
        lengths: dict[str, int] = {}
        for phase in ["cold", *["warm"] * options.warm_runs]:
            for name, command, environment, cwd in (
                ("aider", aider, aider_environment, scratch),
                ("lsp-hub", hub, hub_environment, REPOSITORY),  # python -m finds this checkout's lsp_hub first
            ):
                seconds, output = timed(command, environment, cwd)
                runs[name][phase].append(seconds)
                lengths[name] = int(output.strip().splitlines()[-1]) if name == "aider" else len(output)
        print(f"  {'':<34}{'lsp-hub':>12}{'aider':>12}")
        for phase in ("cold", "warm"):
            label = "cold (empty caches)" if phase == "cold" else f"warm (median of {options.warm_runs})"
            shown = [f"{statistics.median(runs[name][phase]):>11.2f}s" for name in ("lsp-hub", "aider")]
            print(f"  {label:<34}{''.join(shown)}")
        for name in ("lsp-hub", "aider"):
            print(f"  {name} warm runs: {', '.join(f'{value:.2f} s' for value in runs[name]['warm'])}")
        print(f"  map length: lsp-hub {lengths['lsp-hub']} characters, aider {lengths['aider']}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
