"""Which of the languages' own parsers the index may run for syntax checks, by the hub's trust rules.

Python's and JSON's parsers are the hub's own interpreter. TypeScript's is a program: the index runs
`typescript/lib/typescript.js` in node (`lsp_hub/index/typescript_helper.py`), so choosing it follows the rules for
choosing a server (`config/resolve.py`):

- a trusted workspace folder's own `node_modules/typescript` first (the version the project builds with);
- else the TypeScript installed beside typescript-language-server (as `pin_untrusted` finds it for tsserver) or
  beside `tsserver`, found on the cleaned PATH (never inside an untrusted workspace);
- node, found the same way.

The index library never imports this module: the hub hands the index the result (`SyntaxCheckers`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from lsp_hub.config.model import Config
from lsp_hub.config.resolve import child_search_path, find_upward, is_within, resolve_program
from lsp_hub.index.syntax_checkers import SyntaxCheckers
from lsp_hub.index.typescript_helper import TypeScriptRuntime

TYPESCRIPT_SERVER = "typescript-language-server"
TYPESCRIPT_LIBRARY = "node_modules/typescript/lib/typescript.js"


def syntax_checkers_for(root: Path, *, trusted: bool, config: Config | None = None,
                        workspace: Path | None = None) -> SyntaxCheckers:
    """The parsers the index may run for files under `root` (in the workspace folder `workspace`, default root)."""
    workspace = workspace if workspace is not None else root
    node = resolve_program("node", root, trusted=trusted, workspace=workspace)
    if node.path is None:
        return SyntaxCheckers(typescript_missing=f"node not found (searched {', '.join(node.searched)})")
    library, searched = _typescript_library(root, trusted=trusted, config=config, workspace=workspace)
    if library is None:
        return SyntaxCheckers(typescript_missing=f"no TypeScript found ({'; '.join(searched)})")
    version = _package_version(library)
    if version is None:
        return SyntaxCheckers(typescript_missing=f"{library} has no readable package.json beside it")
    runtime = TypeScriptRuntime(node=node.path, typescript=str(library), version=version,
                                path_env=child_search_path(root, trusted=trusted, workspace=workspace))
    return SyntaxCheckers(typescript=runtime)


def _typescript_library(root: Path, *, trusted: bool, config: Config | None,
                        workspace: Path) -> tuple[Path | None, list[str]]:
    searched: list[str] = []
    if trusted:
        own = workspace / TYPESCRIPT_LIBRARY
        searched.append(str(own))
        if own.is_file():
            return Path(os.path.realpath(own)), searched
    spec = config.servers.get(TYPESCRIPT_SERVER) if config is not None else None
    server_command = spec.command if spec is not None and spec.command else TYPESCRIPT_SERVER
    for command, relative in ((server_command, TYPESCRIPT_LIBRARY), ("tsserver", "lib/typescript.js")):
        resolution = resolve_program(command, root, trusted=trusted, workspace=workspace)
        if resolution.path is None:
            searched.append(f"no {command} on {', '.join(resolution.searched)}")
            continue
        # tsserver is typescript/bin/tsserver: its library is typescript/lib/typescript.js, upward from bin/.
        home = Path(os.path.realpath(resolution.path)).parent
        found = find_upward(home, relative)
        if found is None:
            searched.append(f"nothing beside {resolution.path}")
        elif not trusted and is_within(str(found), workspace):
            searched.append(f"{found} is inside the untrusted workspace")
        else:
            return Path(os.path.realpath(found)), searched
    return None, searched


def _package_version(library: Path) -> str | None:
    try:
        package = json.loads((library.parent.parent / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = package.get("version") if isinstance(package, dict) else None
    return version if isinstance(version, str) and version else None
