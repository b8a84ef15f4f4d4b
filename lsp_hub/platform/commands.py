"""Finding a program by name and starting it, the way each system's shell would, minus the shell's unsafe habits.

POSIX: the first `directory/name` that is an executable file. Windows: a name without one of PATHEXT's
extensions is tried with each of them in PATHEXT's order (`tsserver` finds `tsserver.CMD`), in each directory in
turn; the current directory is never searched first (cmd.exe does, and Python 3.11's `shutil.which` too), since
the hub's current directory may be an untrusted workspace.

A `.cmd`/`.bat` file cannot be started by CreateProcess without cmd.exe, and cmd.exe parses its command line by
rules of its own (the source of npm's "spawn ENOENT" and of argument-injection bugs). npm's shims are read
instead: each runs `node <package script> %*`, so the hub starts node with that script (node from the shim's own
directory when it has one, else from the search path). Any other batch file runs through `cmd.exe /d /c` only when
its path and arguments hold nothing cmd.exe would interpret (no spaces, quotes, `&|<>^%!()`), else it is refused,
naming why.

Pure functions over a path flavour and a file-system view, so the Windows rules run in tests on Linux.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath, PureWindowsPath

DEFAULT_PATHEXT = ".COM;.EXE;.BAT;.CMD"
BATCH_EXTENSIONS = (".cmd", ".bat")
# What cmd.exe would read as something other than a plain word on its command line.
CMD_SPECIAL = re.compile(r'[\s"&|<>^%!()]')
# npm's cmd-shim: `... "%_prog%"  "%dp0%\node_modules\pkg\bin\cli.js" %*` (older: `"%~dp0\..\pkg\cli.js" %*`).
NPM_SHIM_TARGET = re.compile(r'"%_prog%"\s+"%(?:dp0|~dp0)%?\\([^"]+)"\s+%\*', re.IGNORECASE)
NPM_SHIM_LOCAL_NODE = re.compile(r'IF EXIST "%dp0%\\node\.exe"', re.IGNORECASE)


@dataclass(frozen=True)
class System:
    """The rules of one system: its path flavour and, on Windows, PATHEXT."""

    windows: bool
    pathext: tuple[str, ...] = ()

    @classmethod
    def current(cls, environ: dict[str, str] | None = None) -> System:
        if sys.platform != "win32":
            return cls(windows=False)
        values = (environ if environ is not None else os.environ).get("PATHEXT") or DEFAULT_PATHEXT
        return cls.windows_with(values)

    @classmethod
    def windows_with(cls, pathext: str) -> System:
        extensions = tuple(ext for ext in pathext.split(";") if ext.startswith("."))
        return cls(windows=True, pathext=extensions or tuple(DEFAULT_PATHEXT.split(";")))

    def path(self, value: str) -> PurePath:
        return PureWindowsPath(value) if self.windows else PurePosixPath(value)

    def candidates(self, name: str) -> list[str]:
        """The file names `name` may stand for, in the order they are tried."""
        if not self.windows or any(name.lower().endswith(ext.lower()) for ext in self.pathext):
            return [name]
        return [name + ext for ext in self.pathext]


def find_program(name: str, directories: Sequence[str], system: System,
                 is_executable: Callable[[str], bool]) -> str | None:
    """The first candidate of `name` in `directories` (absolute ones only) that `is_executable` accepts."""
    for directory in directories:
        if not directory or not system.path(directory).is_absolute():
            continue  # a relative entry means wherever the hub happens to be: never searched
        for candidate in system.candidates(name):
            full = str(system.path(directory) / candidate)
            if is_executable(full):
                return full
    return None


def is_executable_file(path: str) -> bool:
    """This system's test: a regular file that may be executed (Windows: PATHEXT decided it by name)."""
    if sys.platform == "win32":
        return os.path.isfile(path)
    return os.path.isfile(path) and os.access(path, os.X_OK)


@dataclass(frozen=True)
class Launch:
    """How to start a program: the argv before its own arguments, or why it cannot be started safely."""

    argv: list[str]
    refused: str | None = None


def launch_for(program: str, args: Sequence[str], system: System, *, read_text: Callable[[str], str | None],
               find_node: Callable[[], str | None], is_file: Callable[[str], bool]) -> Launch:
    """How to start `program` (found by `find_program`) with `args` on `system`."""
    if not system.windows or not program.lower().endswith(BATCH_EXTENSIONS):
        return Launch([program])
    shim = system.path(program)
    text = read_text(program)
    target = NPM_SHIM_TARGET.search(text or "")
    if target is not None:
        script = str(shim.parent / target.group(1))
        local_node = str(shim.parent / "node.exe")
        node = local_node if NPM_SHIM_LOCAL_NODE.search(text or "") and is_file(local_node) else find_node()
        if node is None:
            return Launch([], refused=f"{program} is npm's shim for node {script}, and no node was found to run it")
        return Launch([node, script])
    unsafe = [value for value in (program, *args) if CMD_SPECIAL.search(value)]
    if unsafe:
        return Launch([], refused=(f"{program} is a batch file, which only cmd.exe runs, and cmd.exe would "
                                   f"interpret {unsafe[0]!r}; configure the program it starts instead"))
    return Launch(["cmd.exe", "/d", "/c", program])
