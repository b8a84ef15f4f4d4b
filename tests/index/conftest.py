"""Shared fixtures of the index tests: an isolated cache directory and copies of the fixture repositories."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURE_REPOS = Path(__file__).resolve().parent.parent / "fixtures" / "repos"


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every index test gets its own XDG cache directory, so no test sees another's (or the user's) cache."""
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture
def copy_repo(tmp_path: Path) -> Callable[[str], Path]:
    """`copy_repo("pyapp")` -> a private copy of tests/fixtures/repos/pyapp that a test may edit."""

    def copy(name: str) -> Path:
        target = tmp_path / "repos" / name
        shutil.copytree(FIXTURE_REPOS / name, target)
        return target

    return copy

