"""The git history as a relevance signal: files that changed together, read once per HEAD, never hanging.

Each test builds a small repository with git (fixed author, committer and dates, no user or system config), so the
history, and so every score, is the same on every run.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.index import api, history
from lsp_hub.index.workspace import WorkspaceIndex
from tests.index.index_helpers import write

pytestmark = pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="needs git"
)

SOURCES = ("models", "pricing", "views", "forms", "admin", "urls", "signals", "tasks")


@pytest.fixture(autouse=True)
def fresh_history_cache() -> Iterator[None]:
    history.clear_cache()
    yield
    history.clear_cache()


class Repository:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ticks = 0
        home = root.parent / "home"
        home.mkdir(exist_ok=True)
        self.environment = {
            **{name: value for name, value in os.environ.items() if not name.startswith("GIT_")},
            "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
        }
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *arguments: str) -> str:
        return subprocess.run(["git", *arguments], cwd=self.root, env=self.environment, check=True,
                              capture_output=True, text=True).stdout

    def commit(self, *paths: str, message: str = "change") -> None:
        """Change (or create) `paths` and commit them, one fixed minute after the previous commit."""
        self.ticks += 1
        for path in paths:
            file = self.root / path
            previous = file.read_text(encoding="utf-8") if file.exists() else ""
            write(self.root, path, f"{previous}VALUE_{self.ticks} = {self.ticks}\n")
        self.git("add", "--all")
        date = f"2024-01-01T00:{self.ticks // 60:02d}:{self.ticks % 60:02d}Z"
        self.environment.update({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
        self.git("commit", "-q", "-m", message)


@pytest.fixture
def repository(tmp_path: Path) -> Repository:
    """app/*.py, first committed together; then app/models.py and app/pricing.py changed together four times."""
    repository = Repository(tmp_path / "shop")
    repository.commit(*(f"app/{name}.py" for name in SOURCES), message="initial")
    for _ in range(4):
        repository.commit("app/models.py", "app/pricing.py")
    repository.commit("app/views.py")
    return repository


def relevant(root: Path, **arguments: Any) -> dict[str, Any]:
    index = WorkspaceIndex(root, use_cache=False)
    index.build()
    try:
        return api.relevant_files(index, {"description": "round the totals", "targets": ["app/models.py"],
                                          **arguments})
    finally:
        index.close()


def running(pid: int) -> bool:
    """Whether the process exists and is not a zombie (an orphan killed in a container may wait for a reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def reasons_of(result: dict[str, Any], path: str) -> list[str]:
    return next((entry["reasons"] for entry in result["files"] if entry["path"] == path), [])


def test_files_that_change_together_rank_up_with_the_reason(repository: Repository) -> None:
    without = relevant(repository.root, historyCommits=0)
    assert without["history"] == "none" and without["historyReason"] == "disabled"
    assert without["files"][0]["score"] == without["files"][1]["score"]  # same directory: nothing tells them apart

    result = relevant(repository.root)
    assert result["history"] == "git" and result["historyCommits"] == 6
    assert result["files"][0]["path"] == "app/pricing.py"
    reasons = result["files"][0]["reasons"]
    assert reasons[0] == "changed together with app/models.py in 5 of its last 5 commits"  # the strongest first
    assert "same directory as target app/models.py" in reasons
    # The other files changed with it once, in a commit of 8 files: not enough to say so.
    assert not any("changed together" in reason for reason in reasons_of(result, "app/views.py"))


def test_a_file_listed_on_a_weak_co_change_alone_still_says_why(tmp_path: Path) -> None:
    """A co-change too weak to name beside other reasons is named when the file has no other: a file is never
    listed without a reason."""
    repository = Repository(tmp_path / "shop")
    write(repository.root, "app/pricing.py", "def discount():\n    return 1\n\n\n")
    repository.commit(*(f"app/{name}.py" for name in SOURCES), message="initial")
    for _ in range(4):
        repository.commit("app/models.py", "app/pricing.py")
    repository.commit("app/views.py")
    result = relevant(repository.root, description="change the discount", targets=[])
    assert [entry["path"] for entry in result["files"]][:2] == ["app/pricing.py", "app/models.py"]
    assert len(result["files"]) > 2 and all(entry["reasons"] for entry in result["files"])
    assert reasons_of(result, "app/forms.py") == ["changed together with app/pricing.py in 1 of its last 5 commits"]


def test_the_description_points_at_anchors_too(repository: Repository) -> None:
    write(repository.root, "app/models.py", "class Invoice:\n    pass\n")
    repository.commit("app/models.py", "app/pricing.py")
    index = WorkspaceIndex(repository.root, use_cache=False)
    index.build()
    result = api.relevant_files(index, {"description": "the Invoice class"})
    index.close()
    assert result["files"][0]["path"] == "app/models.py"
    pricing = reasons_of(result, "app/pricing.py")
    assert "changed together with app/models.py in 6 of its last 6 commits" in pricing


def test_a_huge_commit_says_little(repository: Repository) -> None:
    bulk = [f"gen/module_{number:02d}.py" for number in range(history.MAX_COMMIT_FILES + 5)]
    for _ in range(3):  # even three times over
        repository.commit("app/models.py", *bulk, message="reformat everything")
    result = relevant(repository.root, topN=100)
    assert not any(
        "changed together" in reason for path in bulk for reason in reasons_of(result, path)
    )
    # Left out of the counts too: pricing still changed in every commit of models that says anything.
    assert "changed together with app/models.py in 5 of its last 5 commits" in reasons_of(result, "app/pricing.py")

    # A commit of 20 files counts, but a pair in it much less than a pair in a commit of 2.
    tests = [f"app/test_{number:02d}.py" for number in range(19)]
    repository.commit("app/models.py", *tests)
    read = history.read_history(repository.root)
    changes = {change.path: change for change in history.co_changes(read, ["app/models.py"], {*tests,
                                                                                             "app/pricing.py"})}
    assert changes["app/test_00.py"].together == 1
    assert changes["app/test_00.py"].strength < changes["app/pricing.py"].strength / 8


def test_without_a_repository_there_is_no_history(tmp_path: Path) -> None:
    write(tmp_path / "plain", "app/models.py", "X = 1\n")
    write(tmp_path / "plain", "app/pricing.py", "Y = 1\n")
    result = relevant(tmp_path / "plain")
    assert result["history"] == "none" and result["historyReason"] == "not-a-repository"
    assert result["files"][0]["path"] == "app/pricing.py"


def test_an_empty_repository_has_no_history(tmp_path: Path) -> None:
    repository = Repository(tmp_path / "empty")
    write(repository.root, "app/models.py", "X = 1\n")
    write(repository.root, "app/pricing.py", "Y = 1\n")
    result = relevant(repository.root)
    assert result["history"] == "none" and result["historyReason"] == "empty"


def test_without_git_there_is_no_history(repository: Repository, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-binaries"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = relevant(repository.root)
    assert result["history"] == "none" and result["historyReason"] == "no-git"
    assert result["files"]


def test_a_git_the_repository_ships_is_never_run(repository: Repository, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "ran"
    for directory in (repository.root / "bin", repository.root):
        directory.mkdir(exist_ok=True)
        (directory / "git").write_text(f"#!/bin/sh\ntouch {marker}\n")
        (directory / "git").chmod(stat.S_IRWXU)
    # A project shell's PATH: relative entries, and an absolute one inside the workspace.
    monkeypatch.setenv("PATH", os.pathsep.join([".", "bin", str(repository.root / "bin"), os.environ["PATH"]]))
    result = relevant(repository.root)
    assert result["history"] == "git"  # the real git, found further on
    assert not marker.exists()


def test_a_git_that_hangs_is_cut_off(repository: Repository, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    pids = tmp_path / "pids"
    # A wrapper whose child holds git's stdout: reading the pipe to its end would wait for the child.
    (fake / "git").write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 30 &\necho $! >> {pids}\nwait\n")
    (fake / "git").chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(history, "GIT_TIMEOUT_SECONDS", 0.5)
    index = WorkspaceIndex(repository.root, use_cache=False)
    index.build()
    started = time.monotonic()
    result = api.relevant_files(index, {"description": "round the totals", "targets": ["app/models.py"]})
    assert time.monotonic() - started < 2.0
    assert result["history"] == "none" and result["historyReason"] == "timeout"
    assert result["files"]
    # The wrapper and its child: killed (a SIGKILLed process may take a moment to be gone from /proc).
    deadline = time.monotonic() + 5
    while (left := [pid for pid in map(int, pids.read_text().split()) if running(pid)]) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left
    # The failure is remembered for this HEAD: the next query does not wait again.
    started = time.monotonic()
    assert api.relevant_files(index, {"description": "x", "targets": ["app/models.py"]})["history"] == "none"
    assert time.monotonic() - started < 0.3
    index.close()


def test_read_once_per_head_and_again_when_head_moves(repository: Repository) -> None:
    first = history.read_history(repository.root)
    assert history.read_history(repository.root) is first  # cached: no git run
    assert first.head == repository.git("rev-parse", "HEAD").strip()

    for _ in range(3):
        repository.commit("app/models.py", "app/forms.py")
    moved = history.read_history(repository.root)
    assert moved is not first and moved.head != first.head and len(moved.commits) == len(first.commits) + 3
    assert "changed together with app/models.py in 4 of its last 8 commits" in reasons_of(
        relevant(repository.root), "app/forms.py")

    repository.git("checkout", "-q", "--detach", first.head or "")  # a detached HEAD, read from .git/HEAD
    assert history.read_history(repository.root) is first
    repository.git("checkout", "-q", "main")
    repository.git("pack-refs", "--all")  # the branch now lives in packed-refs
    assert history.read_history(repository.root) is moved


def test_renamed_and_deleted_files_are_ignored(repository: Repository) -> None:
    repository.git("mv", "app/pricing.py", "app/costs.py")
    repository.git("rm", "-q", "app/signals.py")
    repository.commit("app/models.py", message="rename pricing, drop signals")
    result = relevant(repository.root, topN=100)
    paths = [entry["path"] for entry in result["files"]]
    assert "app/pricing.py" not in paths and "app/signals.py" not in paths
    # Renames are not followed: the new name's history starts at the rename (one commit with models so far).
    costs = reasons_of(result, "app/costs.py")
    assert "changed together with app/models.py in 1 of its last 6 commits" in costs
    assert not any("in 5 of its last" in reason for reason in costs)


def test_a_workspace_inside_a_repository_reads_its_own_part(repository: Repository) -> None:
    repository.commit("docs/guide.py", "docs/index.py")
    repository.commit("docs/guide.py", "docs/index.py", "app/models.py")
    read = history.read_history(repository.root / "app")
    assert read.state == "git" and len(read.commits) == 7  # the docs-only commit does not touch app/
    assert all(not path.startswith(("app/", "docs/")) for commit in read.commits for path in commit.files)
    result = relevant(repository.root / "app", targets=["models.py"])
    assert result["files"][0]["path"] == "pricing.py"


def test_history_commits_is_checked(tmp_path: Path) -> None:
    write(tmp_path, "a.py", "X = 1\n")
    index = WorkspaceIndex(tmp_path, use_cache=False)
    index.build()
    for value in (-1, history.MAX_HISTORY_COMMITS + 1, "many"):
        with pytest.raises(ValueError, match="historyCommits must be"):
            api.relevant_files(index, {"description": "x", "historyCommits": value})
    index.close()
