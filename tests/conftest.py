"""Shared test configuration: where things are, and which real tools the suite may rely on.

Real language servers come from `make setup` (scripts/setup.sh): Python ones in .venv/bin, npm ones in
.tools/npm/node_modules/.bin, Neovim from Debian. A test that needs one calls the fixture `require_binary(name)`:
it skips when the tool is missing on a developer's machine but fails under CI (CI=true), where a missing tool
means the setup is broken and a green run would hide it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lsp_hub.agents.query import HubConnection, spawn_hub

# The fixtures that start lsp-hub in front of fake servers (start_hub).
pytest_plugins = ["tests.hub_fixtures"]

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = REPO_ROOT / "examples"
PROJECT_TOOL_DIRS = (REPO_ROOT / ".venv" / "bin", REPO_ROOT / ".tools" / "npm" / "node_modules" / ".bin")


def _put_project_tools_on_path() -> None:
    """Let a bare `pytest` find the servers `make setup` installed, as `make test` does via scripts/env.sh."""
    entries = os.environ.get("PATH", "").split(os.pathsep)
    missing = [str(path) for path in PROJECT_TOOL_DIRS if path.is_dir() and str(path) not in entries]
    if missing:
        os.environ["PATH"] = os.pathsep.join([*missing, *entries])


_put_project_tools_on_path()


def copy_sample(target: Path) -> Path:
    """A private copy of examples/sample (which has the README's files for the writing actions: app/messy.py to
    format, net_price in app/pricing.py to rename), with one more file: app/fixme.py, with an unused import."""
    shutil.copytree(EXAMPLES_DIR / "sample", target, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    (target / "app" / "fixme.py").write_text("import os\n\n\ndef one() -> int:\n    return 1\n")
    return target


def descendant_pids(pid: int, *, live_only: bool = False) -> list[int]:
    """Every process below `pid`, from /proc (children of children included); with `live_only`, not those that
    have exited and wait to be reaped (zombies)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if live_only and fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def running_under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def find_required_binary(name: str) -> str:
    """Return the full path of executable `name` on PATH, or skip the test (fail under CI=true) naming the fix."""
    found = shutil.which(name)
    if found is not None:
        return found
    message = f"required binary {name!r} not found on PATH; run `make setup` (scripts/setup.sh) to install it"
    if running_under_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


REAL_SERVERS = ("basedpyright-langserver", "ruff", "typescript-language-server")


def require_real_servers() -> None:
    """basedpyright, ruff and typescript-language-server on PATH (see find_required_binary)."""
    for binary in REAL_SERVERS:
        find_required_binary(binary)


def isolated_env(home: Path, *, runtime: bool = False) -> dict[str, str]:
    """XDG directories of a test's own under `home` (a private runtime directory too, with `runtime`)."""
    env = {"XDG_CONFIG_HOME": str(home / "cfg"), "XDG_CACHE_HOME": str(home / "cache")}
    if runtime:
        (home / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = str(home / "run")
    return env


@contextlib.contextmanager
def shared_hub(root: Path, home: Path) -> Iterator[HubConnection]:
    """One hub (`python -m lsp_hub` over pipes) at `root`, initialized, shared by a module's queries."""
    require_real_servers()
    connection = spawn_hub(root, env=isolated_env(home), owned=False)
    connection.initialize(root, 30.0)
    yield connection
    connection.owned = True
    connection.close()


@pytest.fixture(scope="session")
def require_binary() -> Callable[[str], str]:
    """`path = require_binary("clangd")` inside a test or fixture; see find_required_binary."""
    return find_required_binary


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES_DIR


@pytest.fixture(autouse=True)
def xdg_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the user's configuration (trust store included): each gets its own."""
    directory = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(directory))
    return directory


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own XDG cache directory, so no test sees another's (or the user's) index cache."""
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache

