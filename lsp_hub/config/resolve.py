"""Finding a server's executable: the workspace's own tool directories first (if trusted), then PATH.

An untrusted workspace must never get to choose the program lsp-hub starts, so its `.venv/bin` and
`node_modules/.bin` are only looked at to tell the user what was passed over.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import attrs

from lsp_hub.config.model import ServerSpec

# Where a workspace keeps its own tools, searched in this order before PATH.
WORKSPACE_BIN_DIRS: tuple[str, ...] = (".venv/bin", "node_modules/.bin")


@attrs.define(frozen=True)
class CommandResolution:
    path: str | None  # the executable to run, or None if none was found
    searched: list[str]  # human-readable places searched, in order
    skipped_local: str | None = None  # a workspace binary passed over because the workspace is not trusted


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def resolve_program(command: str, root: Path, *, trusted: bool) -> CommandResolution:
    """Resolve any program name the way server commands are resolved (also used for doctor's version command)."""
    if not command:
        return CommandResolution(None, ["(no command configured)"])
    expanded = os.path.expanduser(command)
    if os.path.isabs(expanded):
        found = expanded if _is_executable(Path(expanded)) else None
        return CommandResolution(found, [expanded])
    if os.sep in expanded or (os.altsep and os.altsep in expanded):
        # A relative path names a file inside the workspace: only a trusted workspace may supply it.
        local = root / expanded
        if trusted:
            return CommandResolution(str(local) if _is_executable(local) else None, [str(local)])
        skipped = str(local) if _is_executable(local) else None
        return CommandResolution(None, [f"{local} (not used: workspace not trusted)"], skipped)

    searched: list[str] = []
    skipped_local: str | None = None
    for relative in WORKSPACE_BIN_DIRS:
        directory = root / relative
        found = shutil.which(expanded, path=str(directory)) if directory.is_dir() else None
        if trusted:
            searched.append(str(directory))
            if found is not None:
                return CommandResolution(found, searched)
        elif found is not None and skipped_local is None:
            skipped_local = found
    searched.append("PATH")
    return CommandResolution(shutil.which(expanded), searched, skipped_local)


def resolve_command(spec: ServerSpec, root: Path, *, trusted: bool) -> CommandResolution:
    """Where `spec.command` is for a server running at `root`.

    Order: `<root>/.venv/bin`, `<root>/node_modules/.bin` (both only when `trusted`), then PATH. An absolute
    command is used as is if it is executable; a relative path with a slash is taken inside the root, trusted only.
    """
    return resolve_program(spec.command, root, trusted=trusted)
