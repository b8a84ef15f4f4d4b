"""bench/relevance_cochange.py on a small generated repository, so the benchmark does not rot: which commits it
replays (mechanical, rename-only, too-large and test-only ones are not), what it takes as the target and the key,
and a whole run through a bare clone, without aider."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "relevance_cochange_bench", REPO_ROOT / "bench" / "relevance_cochange.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _git(root: Path, *arguments: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *arguments],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _commit(root: Path, subject: str, files: dict[str, str], removed: tuple[str, ...] = ()) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    for path in removed:
        _git(root, "rm", "-q", path)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", subject)


def _lines(count: int, word: str) -> str:
    return "".join(f"{word}_{number} = {number}\n" for number in range(count))


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    _git(root, "init", "-q")
    base = {
        "pkg/app.py": "from pkg.util import helper\n",
        "pkg/util.py": "def helper():\n    return 1\n",
        "tests/test_app.py": "from pkg.app import *\n",
        "README.md": "readme\n",
    }
    _commit(root, "start", base)
    # The target is the non-test file changed most (app.py); the key the other source files (README.md is none).
    _commit(
        root,
        "teach the app to count",
        {
            "pkg/app.py": base["pkg/app.py"] + _lines(9, "count"),
            "pkg/util.py": base["pkg/util.py"] + _lines(1, "one"),
            "tests/test_app.py": base["tests/test_app.py"] + _lines(2, "t"),
            "README.md": "counts\n",
        },
    )
    _commit(root, "Bump version to 2.0", {"pkg/app.py": _lines(3, "v"), "pkg/util.py": _lines(3, "w")})
    _commit(
        root,
        "move things",
        {"pkg/moved_app.py": _lines(3, "v"), "pkg/moved_util.py": _lines(3, "w")},
        removed=("pkg/app.py", "pkg/util.py"),
    )
    _commit(root, "tests only", {"tests/test_app.py": "x = 1\n", "tests/test_util.py": "y = 2\n"})
    _commit(
        root,
        "too many files",
        {f"pkg/m{number}.py": "z = 1\n" for number in range(9)} | {"pkg/moved_app.py": _lines(4, "v")},
    )
    _commit(
        root,
        "add a user cache",
        {"pkg/moved_app.py": _lines(6, "v"), "pkg/cache.py": _lines(5, "c"), "pkg/moved_util.py": _lines(4, "w")},
    )
    return root


def test_only_the_commits_worth_asking_about_are_replayed(repository: Path) -> None:
    _bench()  # puts bench/ on sys.path
    from cochange_commits import candidate_queries

    total, queries = candidate_queries(repository, min_commits_before=0)
    assert total == 7
    assert [(query.subject, query.target, query.expected) for query in queries] == [
        ("teach the app to count", "pkg/app.py", ("pkg/util.py", "tests/test_app.py")),
        ("add a user cache", "pkg/moved_app.py", ("pkg/moved_util.py",)),  # cache.py is new: not in the parent
    ]


def test_a_run_on_a_bare_clone_prints_both_halves(
    repository: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repository), str(bare)], check=True)
    bench = _bench()
    code = bench.main([str(bare), "--no-aider", "--min-commits-before", "0", "--cache-dir", str(tmp_path / "cache")])
    output = capsys.readouterr().out
    assert code == 0, output
    assert "2 commits scored" in output
    assert "held-out half" in output and "tuning half" in output
    held_out = output.split("held-out half")[1].split("tuning half")[0]
    pooled = next(line for line in held_out.splitlines() if line.startswith("pooled"))
    # The held-out commit: moved_util.py changed with moved_app.py once before, so history finds it first.
    assert pooled.split()[1] == "1" and pooled.split()[11:14] == ["1.00", "1.00", "1.00"]
    assert "n/a" in pooled  # aider's columns
    assert (
        subprocess.run(["git", "worktree", "list"], cwd=bare, capture_output=True, text=True).stdout.count("\n") == 1
    )  # the temporary worktree is gone


def test_a_path_that_is_no_repository_gets_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _bench().main([str(tmp_path), "--no-aider"]) == 2
    assert capsys.readouterr().out.strip() == f"not a git repository: {tmp_path}"
