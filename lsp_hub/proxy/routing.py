"""Which servers, at which roots, serve a document.

A document's language comes from its languageId (else its file name); the language lists its servers in
precedence order; each server runs once per root, the root being the nearest directory above the file that holds
one of the server's root markers (searched up to the workspace folder holding the file), else that folder.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from lsp_hub.config.model import Config, LanguageSpec, ServerSpec
from lsp_hub.platform import paths

CACHE_LIMIT = 4096  # paths whose language and routes a Router keeps (then it starts over)


@dataclass(frozen=True, slots=True)
class BackendKey:
    """Identifies one backend process: a server started at a root."""

    server: str
    root: str

    def __str__(self) -> str:
        return f"{self.server}@{self.root}"


def containing_folder(path: str, folders: Sequence[str]) -> str | None:
    """The innermost workspace folder holding `path`."""
    best: str | None = None
    for folder in folders:
        if paths.is_within(path, folder) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def find_root(path: str, markers: Sequence[str], folders: Sequence[str]) -> str:
    """The nearest directory at or above `path`'s directory that holds a marker, bounded by its workspace folder."""
    folder = containing_folder(path, folders)
    directory = paths.parent(path)
    while True:
        if any(os.path.exists(os.path.join(directory, marker)) for marker in markers):
            return directory
        if folder is not None and paths.same_path(directory, folder):
            return folder.rstrip("/") or "/"
        parent = paths.parent(directory)
        if parent == directory:
            break
        directory = parent
    return folder.rstrip("/") if folder else paths.parent(path)


@dataclass(frozen=True, slots=True)
class Route:
    """A server that may serve a document, and the root it runs at."""

    spec: ServerSpec
    key: BackendKey
    precedence: int


class Router:
    """Maps documents to candidate backends; pure, no processes."""

    def __init__(self, config: Config, folders: Sequence[str]) -> None:
        self.config = config
        self.folders = list(folders)
        self._root_cache: dict[tuple[str, str], str] = {}
        # Asked on every request and notification: both answers are kept (the configuration does not change
        # under a Router; roots are forgotten with forget_roots).
        self._languages: dict[tuple[str | None, str], LanguageSpec | None] = {}
        self._routes: dict[tuple[str, str], list[Route]] = {}

    def language(self, *, language_id: str | None, path: str) -> LanguageSpec | None:
        key = (language_id, path)
        try:
            return self._languages[key]
        except KeyError:
            pass
        if len(self._languages) >= CACHE_LIMIT:
            self._languages.clear()
        language = self._languages[key] = self.config.language_for(language_id=language_id, path=path)
        return language

    def routes(self, path: str, language: LanguageSpec | None) -> list[Route]:
        """The servers that may serve a document at `path`, in precedence order, with their roots. The list is
        shared: do not change it."""
        if language is None:
            return []
        key = (language.name, path)
        routes = self._routes.get(key)
        if routes is None:
            if len(self._routes) >= CACHE_LIMIT:
                self._routes.clear()
            routes = self._routes[key] = self._find_routes(path, language)
        return routes

    def _find_routes(self, path: str, language: LanguageSpec) -> list[Route]:
        routes: list[Route] = []
        for precedence, name in enumerate(language.servers):
            spec = self.config.servers.get(name)
            if spec is None or spec.disabled:
                continue
            routes.append(Route(spec, BackendKey(name, self.root_for(spec, path)), precedence))
        return routes

    def root_for(self, spec: ServerSpec, path: str) -> str:
        directory = paths.parent(path)
        cache_key = (spec.name, directory)
        root = self._root_cache.get(cache_key)
        if root is None:
            root = find_root(path, spec.root_markers, self.folders)
            self._root_cache[cache_key] = root
        return root

    def forget_roots(self) -> None:
        """Root markers may have appeared or gone (watched files changed, folders changed)."""
        self._root_cache.clear()
        self._routes.clear()
