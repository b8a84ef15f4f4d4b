"""Finding a server's executable: the workspace's own tool directories first (if trusted), then PATH.

An untrusted workspace must never get to choose the program lsp-hub starts, so its `.venv/bin` and
`node_modules/.bin` are only looked at to tell the user what was passed over. PATH gets the same rule: relative
entries (`node_modules/.bin:.venv/bin:$PATH`, common in project shells) are never searched, since they mean whatever
directory a process happens to run in, and for an untrusted workspace absolute entries inside it are passed over
too. The result is always an absolute path. Servers inherit the same cleaned PATH (`child_search_path`), or a
`#!/usr/bin/env node` script started in the workspace would find the workspace's `node`.
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
    path: str | None  # the executable to run (absolute), or None if none was found
    searched: list[str]  # human-readable places searched, in order
    skipped_local: str | None = None  # a workspace binary passed over because the workspace is not trusted


@attrs.define(frozen=True)
class SearchPath:
    """PATH as the hub uses it for one root: the directories searched, and what was left out."""

    directories: list[str]
    ignored_relative: list[str]  # relative entries ("" included, which means the current directory)
    inside_workspace: list[str]  # absolute entries inside an untrusted workspace


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _is_within(path: str, directory: Path) -> bool:
    """Whether `path` is `directory` or below it, symlinks resolved on both sides."""
    real_path, real_directory = Path(os.path.realpath(path)), Path(os.path.realpath(directory))
    return real_path == real_directory or real_directory in real_path.parents


def search_path(root: Path, *, trusted: bool, workspace: Path | None = None,
                path_value: str | None = None) -> SearchPath:
    """The PATH directories a program for `root` may come from.

    Relative entries are dropped. Unless `trusted`, so are entries inside `workspace` (the workspace folder that
    holds `root`; default `root` itself): the workspace rule applied to PATH. `path_value` defaults to $PATH.
    """
    value = os.environ.get("PATH", os.defpath) if path_value is None else path_value
    untrusted_area = workspace if workspace is not None else root
    kept: list[str] = []
    relative: list[str] = []
    inside: list[str] = []
    for entry in value.split(os.pathsep):
        if not os.path.isabs(entry):
            relative.append(entry)
        elif not trusted and _is_within(entry, untrusted_area):
            inside.append(entry)
        else:
            kept.append(entry)
    return SearchPath(kept, relative, inside)


def child_search_path(root: Path, *, trusted: bool, workspace: Path | None = None) -> str | None:
    """The PATH a server started at `root` inherits (see search_path), or None when the hub has no PATH."""
    if "PATH" not in os.environ:
        return None
    return os.pathsep.join(search_path(root, trusted=trusted, workspace=workspace).directories)


def _describe_path_search(path: SearchPath) -> str:
    notes = []
    if path.ignored_relative:
        notes.append(f"relative entries ignored: {', '.join(entry or '(empty)' for entry in path.ignored_relative)}")
    if path.inside_workspace:
        notes.append(f"passed over inside the untrusted workspace: {', '.join(path.inside_workspace)}")
    return f"PATH ({'; '.join(notes)})" if notes else "PATH"


def resolve_program(command: str, root: Path, *, trusted: bool, workspace: Path | None = None) -> CommandResolution:
    """Resolve any program name the way server commands are resolved (also used for doctor's version command)."""
    if not command:
        return CommandResolution(None, ["(no command configured)"])
    root = Path(os.path.abspath(root))
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
    path = search_path(root, trusted=trusted, workspace=workspace)
    if skipped_local is None and path.inside_workspace:
        skipped_local = shutil.which(expanded, path=os.pathsep.join(path.inside_workspace))
    searched.append(_describe_path_search(path))
    # shutil.which(path="") would look in the current directory: with no directory left, nothing is found.
    found = shutil.which(expanded, path=os.pathsep.join(path.directories)) if path.directories else None
    return CommandResolution(found, searched, skipped_local)


def resolve_command(spec: ServerSpec, root: Path, *, trusted: bool,
                    workspace: Path | None = None) -> CommandResolution:
    """Where `spec.command` is for a server running at `root` (in the workspace folder `workspace`, default root).

    Order: `<root>/.venv/bin`, `<root>/node_modules/.bin` (both only when `trusted`), then PATH's absolute entries
    (those inside an untrusted workspace passed over). An absolute command is used as is if it is executable; a
    relative path with a slash is taken inside the root, trusted only.
    """
    return resolve_program(spec.command, root, trusted=trusted, workspace=workspace)


@attrs.define(frozen=True)
class LaunchPlan:
    """How to start a server at one root: its spec as the backend should see it, or why it must not start."""

    spec: ServerSpec
    refused: str | None = None


def prepare_launch(spec: ServerSpec, command_path: str, root: Path, *, trusted: bool,
                   workspace: Path | None = None) -> LaunchPlan:
    """The spec a backend at `root` runs with: PATH cleaned as for resolution (unless the configuration itself
    sets PATH in `env`, which only trusted layers can)."""
    env = dict(spec.env)
    path = child_search_path(root, trusted=trusted, workspace=workspace)
    if path is not None and "PATH" not in env:
        env["PATH"] = path
    return LaunchPlan(attrs.evolve(spec, env=env))
