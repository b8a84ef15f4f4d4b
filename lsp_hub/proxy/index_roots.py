"""Where the index's roots are when the client names no workspace folder (a single file opened from a shell): the
project root of each file opened, the nearest directory with a root marker, never the home directory or above."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.documents import uri_to_path

if TYPE_CHECKING:
    from lsp_hub.config.model import Config


# What makes a directory a project root when the client names no folder, besides the configured servers' markers.
BASE_ROOT_MARKERS = (".git", ".hg", "pyproject.toml", "package.json", "go.mod", "Cargo.toml")


def client_named_a_folder(params: dict[str, Any]) -> bool:
    """Whether initialize named a workspace folder (workspaceFolders, rootUri or rootPath), rather than the
    session falling back to the hub's current directory."""
    folders = params.get("workspaceFolders")
    if isinstance(folders, list) and any(
            isinstance(folder, dict) and uri_to_path(str(folder.get("uri", ""))) for folder in folders):
        return True
    if isinstance(params.get("rootUri"), str) and uri_to_path(params["rootUri"]):
        return True
    return isinstance(params.get("rootPath"), str) and bool(params["rootPath"])


def root_markers(config: Config) -> tuple[str, ...]:
    """The configured servers' root markers, and a few universal ones."""
    markers = dict.fromkeys(BASE_ROOT_MARKERS)
    for spec in config.servers.values():
        markers.update(dict.fromkeys(spec.root_markers))
    return tuple(markers)


def project_root(path: str, markers: tuple[str, ...]) -> tuple[str | None, str]:
    """The nearest directory above `path` holding a root marker, or (None, why not). The home directory and the
    filesystem root are never a project root (a dotfiles repository makes $HOME hold `.git`)."""
    from lsp_hub.index.walk import not_a_project  # here: the extension importing this module needs no walker yet

    directory = os.path.dirname(os.path.realpath(path))
    while True:
        if not_a_project(Path(directory)) is not None:
            break  # the home directory or above it: not a project, whatever it holds
        if any(os.path.exists(os.path.join(directory, marker)) for marker in markers):
            return directory, ""
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return None, f"no project root marker ({', '.join(markers[:6])}...) between {path} and {directory}"
