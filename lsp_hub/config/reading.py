"""Reading one configuration file without trusting what is at its path.

A project's `.lsp-hub.toml` comes with a cloned repository, which may hold a FIFO, a symbolic link to `/dev/zero`,
a huge file or TOML nested deep enough to exhaust the parser's recursion. Each would stall or break the shared
daemon, so a file is read only if it is a regular file of at most MAX_CONFIG_BYTES, UTF-8, nested at most
MAX_NESTING levels; anything else is refused with a reason in words (`ConfigFileRefused`). Synchronous and
standard library only: the caller decides which thread reads.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

from lsp_hub.platform.confined_files import file_kind

MAX_CONFIG_BYTES = 1024 * 1024
MAX_NESTING = 100  # arrays, inline tables and tables inside one another
MAX_KEY_PARTS = 20  # `a.b.c = 1` has 3; a table header's parts count apart from its keys'
_BYTES_PER_MB = 1024 * 1024
_CHUNK = 64 * 1024


class ConfigFileRefused(Exception):
    """The file is not read (or not parsed): `reason` says why, to follow the file's name ("is a FIFO, ...")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _refuse_unless_regular(mode: int) -> None:
    if not stat.S_ISREG(mode):
        kind = file_kind(mode)
        raise ConfigFileRefused(f"is {kind}, not a regular file" if kind.startswith("a ") else f"is {kind}")


def _size_in_words(size: int) -> str:
    return f"{size / _BYTES_PER_MB:.1f} MB"


def _limit_in_words(limit: int) -> str:
    return f"{limit / _BYTES_PER_MB:g} MB"


def _confined_target(path: Path, root: Path) -> Path:
    """`path`, or the file its symbolic link leads to when that stays inside `root`."""
    if not stat.S_ISLNK(os.lstat(path).st_mode):
        return path
    target = Path(os.path.realpath(path))
    if not target.is_relative_to(os.path.realpath(root)):
        raise ConfigFileRefused(f"is a symbolic link to {target}, outside the workspace")
    return target


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(_CHUNK, remaining))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_config_text(path: Path, *, confine_to: Path | None = None, limit: int = MAX_CONFIG_BYTES) -> str:
    """The text of the configuration file at `path`.

    With `confine_to` (a workspace root, for its project file) a symbolic link is followed only when its target
    lies inside that root. Raises FileNotFoundError when there is no file, ConfigFileRefused when the file is not
    one to read, and OSError for the rest (permissions...).
    """
    target = _confined_target(path, confine_to) if confine_to is not None else path
    # Looked at before opening, so that a FIFO or a device is never opened; the open descriptor is looked at
    # again, in case the path changed in between.
    _refuse_unless_regular(os.stat(target).st_mode)
    # Windows has none of the POSIX flags; there a FIFO or a terminal cannot be named by a path anyway.
    posix_flags = {name: getattr(os, name, 0) for name in ("O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC", "O_NOFOLLOW")}
    flags = os.O_RDONLY | posix_flags["O_NONBLOCK"] | posix_flags["O_NOCTTY"] | posix_flags["O_CLOEXEC"] | (
        posix_flags["O_NOFOLLOW"] if confine_to else 0)
    try:
        fd = os.open(target, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:  # swapped for a symbolic link since the check above
            raise ConfigFileRefused("is a symbolic link that changed while it was read") from None
        raise
    try:
        status = os.fstat(fd)
        _refuse_unless_regular(status.st_mode)
        if status.st_size > limit:
            raise ConfigFileRefused(f"is {_size_in_words(status.st_size)}, over the {_limit_in_words(limit)} limit")
        data = _read_at_most(fd, limit + 1)  # a file that grew since fstat is still read no further
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ConfigFileRefused(f"is over the {_limit_in_words(limit)} limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigFileRefused(f"is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})") \
            from None
    # Universal newlines, as Path.read_text gave the parser before.
    return text.replace("\r\n", "\n").replace("\r", "\n")


# ==================================================================================================== nesting
_NESTING_TOKEN = re.compile(r"\"\"\"|'''|[\"'#\[\]{}.=,\n]")


def _escaped(text: str, index: int) -> bool:
    """Whether the character at `index` follows an odd number of backslashes."""
    backslashes = 0
    while index - backslashes - 1 >= 0 and text[index - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _end_of_string(text: str, start: int, quote: str) -> int:
    """The index just past the string whose opening `quote` ends at `start`."""
    multiline = len(quote) == 3
    literal = quote[0] == "'"
    position = start
    while True:
        found = text.find(quote, position)
        newline = -1 if multiline else text.find("\n", position)
        if newline >= 0 and (found < 0 or newline < found):  # unterminated: the parser will say so
            return newline
        if found < 0:
            return len(text)
        if literal or not _escaped(text, found):
            end = found + len(quote)
            while multiline and end < len(text) and text[end] == quote[0] and end - found < 5:
                end += 1  # up to two quotes of the content may touch the closing ones
            return end
        position = found + 1


def _nesting_refusal(text: str, max_nesting: int, max_key_parts: int) -> str | None:
    """Why the text nests too deeply to be given to the parser, or None. Brackets and braces are counted outside
    strings and comments, and so are the dots of each dotted key: a run of dots between `=`, `,`, brackets and
    line ends (a value has at most one, in a float or a time)."""
    depth = 0
    dots = 0
    position = 0
    while (match := _NESTING_TOKEN.search(text, position)) is not None:
        token = match.group()
        position = match.end()
        if token == ".":
            dots += 1
            if dots >= max_key_parts:
                return f"has a dotted key of more than {max_key_parts} parts"
            continue
        if token[0] in "\"'":
            position = _end_of_string(text, position, token)
            continue
        dots = 0
        if token == "#":
            newline = text.find("\n", position)
            position = len(text) if newline < 0 else newline
        elif token in ("[", "{"):
            depth += 1
            if depth > max_nesting:
                return f"nests deeper than {max_nesting} levels"
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)
    return None


def nests_deeper_than(value: Any, limit: int) -> bool:
    """Whether tables and arrays nest more than `limit` deep below the document (dotted keys and table headers
    nest without brackets). Iterative: it guards the recursive code that walks layers (and a client's options)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_config_toml(text: str, *, max_nesting: int = MAX_NESTING,
                      max_key_parts: int = MAX_KEY_PARTS) -> dict[str, Any]:
    """The parsed TOML. Raises tomllib.TOMLDecodeError, or ConfigFileRefused when it nests too deeply: checked
    before parsing, since the parser recurses once per bracket, and its work on a dotted key grows with the
    square of the key's parts."""
    refusal = _nesting_refusal(text, max_nesting, max_key_parts)
    if refusal is not None:
        raise ConfigFileRefused(refusal)
    too_deep = ConfigFileRefused(f"nests deeper than {max_nesting} levels")
    try:
        data = tomllib.loads(text)
    except RecursionError:  # a nesting the scan above missed
        raise too_deep from None
    if nests_deeper_than(data, max_nesting):
        raise too_deep
    return data
