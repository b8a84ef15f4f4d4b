"""Shared fixtures of the index tests: an isolated cache directory and copies of the fixture repositories."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURE_REPOS = Path(__file__).resolve().parent.parent / "fixtures" / "repos"




@pytest.fixture
def copy_repo(tmp_path: Path) -> Callable[[str], Path]:
    """`copy_repo("pyapp")` -> a private copy of tests/fixtures/repos/pyapp that a test may edit."""

    def copy(name: str) -> Path:
        target = tmp_path / "repos" / name
        shutil.copytree(FIXTURE_REPOS / name, target)
        return target

    return copy

