"""Helpers shared by the index tests (imported as a plain module: pytest puts this directory on sys.path)."""

from __future__ import annotations

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
