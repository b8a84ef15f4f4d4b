"""Reading a project's own small files for the setup notes (`project_setup`, `python_setup`), and naming them.
Standard library only, like `query`."""

from __future__ import annotations

from pathlib import Path

MAX_PROJECT_FILE_BYTES = 1 << 20  # a larger tsconfig.json, package.json, pyproject.toml... is not read


def read_small_text(path: Path) -> str | None:
    """The text of a project file, or None when it is no file, larger than MAX_PROJECT_FILE_BYTES or unreadable
    (a byte-order mark dropped)."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_PROJECT_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None


def shown(root: Path, path: Path) -> str:
    """`path` as a note names it: relative to the workspace root when inside it."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
