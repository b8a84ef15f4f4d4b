"""Compiled queries handed down by the forkserver: `parse_pool` names, for the forkserver to import before it forks
any worker, one module per language, `lsp_hub.index.query_preload.<language>`; importing such a module compiles
that language's tags query (`extract.get_query`), and every worker forked afterwards inherits it.

Without it each worker compiled the query of each language it met: per process, about 50 ms for Python, 150 ms for
TypeScript, 170 ms for TSX and 300 ms for C++ (callgrind: 0.36 G instructions for Python, 7% of a worker's work on
293 files of the standard library), which all workers spent at once at the start of the parse. The forkserver
compiles it once, while the walk still runs.

A module name is the only thing a forkserver is told besides its path (`set_forkserver_preload`), so the language
travels in the name, and this module answers those names with a finder of its own, placed in `sys.meta_path` when
it is imported (only the forkserver imports it). The forkserver swallows an ImportError of a preloaded module and
ends on any other error: a language that fails to compile is left to the workers, as before.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

PREFIX = __name__ + "."


class _QueryLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default: an empty module

    def exec_module(self, module: ModuleType) -> None:
        language = module.__name__.removeprefix(PREFIX)
        try:
            from lsp_hub.index.extract import get_query
            from lsp_hub.index.languages import SUPPORTED_LANGUAGES

            if language in SUPPORTED_LANGUAGES:
                get_query(language)
        except Exception:  # the forkserver must start: a worker compiles it, and says what failed
            return


class _QueryFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(PREFIX) or "." in fullname.removeprefix(PREFIX):
            return None
        return importlib.machinery.ModuleSpec(fullname, _QueryLoader())


__path__: list[str] = []  # a package to the import system, whose submodules only the finder below can find
if not any(isinstance(finder, _QueryFinder) for finder in sys.meta_path):
    sys.meta_path.append(_QueryFinder())
