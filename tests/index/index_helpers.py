"""Helpers shared by the index tests (imported as a plain module: pytest puts this directory on sys.path)."""

from __future__ import annotations

import shutil
from pathlib import Path


def write(root: Path, relative: str, text: str | bytes) -> Path:
    """Create `root/relative` with `text`, making parent directories."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def copy_beside(root: Path, name: str) -> Path:
    """A copy of the tree at `root` beside it, named `name` (a new worktree or clone of it)."""
    target = root.parent / name
    shutil.copytree(root, target)
    return target
