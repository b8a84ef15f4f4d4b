"""File URIs and paths in one place: drive letters, UNC paths, percent-encoding, and comparison without case where
the file system ignores it (Windows; macOS's default APFS).

- `uri_to_path`: `file:///c%3A/Users/a.py` (VS Code encodes the colon and lowers the drive) → `C:\\Users\\a.py`;
  `file://server/share/a.py` → `\\\\server\\share\\a.py` on Windows, `//server/share/a.py` elsewhere.
- `path_to_uri`: the reverse, with the drive letter as Windows writes it (`file:///C:/Users/a.py`).
- `is_within` / `same_path`: containment and equality of absolute paths, without case where the file system
  of the directory ignores it (`ignores_case`, asked of the file system once per directory).

`windows=` selects the rules, so that tests run Windows' on Linux. Standard library only.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from urllib.parse import unquote, urlparse

ON_WINDOWS = sys.platform == "win32"
DRIVE_AFTER_SLASH = re.compile(r"^/[A-Za-z]:")


def uri_to_path(uri: str, *, windows: bool = ON_WINDOWS) -> str | None:
    """The local file system path of a file:// URI, else None."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    host = parsed.netloc if parsed.netloc not in ("", "localhost") else ""
    if not windows:
        return f"//{host}{path}" if host else path
    if host:
        return "\\\\" + host + path.replace("/", "\\")
    if DRIVE_AFTER_SLASH.match(path):
        path = path[1].upper() + path[2:]
    return path.replace("/", "\\")


def path_to_uri(path: str, *, windows: bool = ON_WINDOWS) -> str:
    """The file:// URI of `path` (made absolute against the current directory on this system)."""
    if not windows:
        return Path(path).absolute().as_uri()
    absolute = os.path.abspath(path) if ON_WINDOWS else path
    pure = PureWindowsPath(absolute)
    if pure.drive[:1].isalpha() and pure.drive[1:] == ":":
        pure = PureWindowsPath(pure.drive.upper() + str(pure)[len(pure.drive):])
    return pure.as_uri()


def flavour(windows: bool = ON_WINDOWS) -> type[PurePath]:
    return PureWindowsPath if windows else PurePosixPath


def parent(path: str, *, windows: bool = ON_WINDOWS) -> str:
    return str(flavour(windows)(path).parent)


def _comparable(path: str, *, windows: bool, ignore_case: bool) -> str:
    if windows:
        path = path.replace("/", "\\")
    separator = "\\" if windows else "/"
    stripped = path.rstrip(separator) or separator
    if windows and re.match(r"^[A-Za-z]:$", stripped):
        stripped += separator  # `C:` alone means the drive's current directory; `C:\` is its root
    return stripped.casefold() if ignore_case else stripped


@functools.lru_cache(maxsize=256)
def ignores_case(directory: str) -> bool:
    """Whether the file system holding `directory` finds names whatever their case (Windows: always)."""
    if ON_WINDOWS:
        return True
    current = directory
    while current and current != os.path.dirname(current):
        name = os.path.basename(current)
        swapped = name.swapcase()
        if swapped != name:
            other = os.path.join(os.path.dirname(current), swapped)
            try:
                return os.path.samefile(current, other)
            except OSError:
                return False
        current = os.path.dirname(current)
    return False


def same_path(first: str, second: str, *, windows: bool = ON_WINDOWS, ignore_case: bool | None = None) -> bool:
    fold = windows if ignore_case is None else ignore_case
    return _comparable(first, windows=windows, ignore_case=fold) == _comparable(second, windows=windows,
                                                                                 ignore_case=fold)


def is_within(path: str, directory: str, *, windows: bool = ON_WINDOWS, ignore_case: bool | None = None) -> bool:
    """Whether `path` is `directory` or below it (both absolute; no symbolic link is resolved).

    `ignore_case` defaults to what the file system of `directory` does (Windows: ignores it)."""
    if ignore_case is None:
        ignore_case = windows or (not ON_WINDOWS and ignores_case(directory))
    inner = _comparable(path, windows=windows, ignore_case=ignore_case)
    outer = _comparable(directory, windows=windows, ignore_case=ignore_case)
    separator = "\\" if windows else "/"
    return inner == outer or inner.startswith(outer if outer.endswith(separator) else outer + separator)
