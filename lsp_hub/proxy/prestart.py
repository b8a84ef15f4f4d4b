"""Servers started before anyone asks (`[hub] prestart`): when an agent's session opens a workspace, the servers of
the languages its index holds start in the background and load their projects, so that the agent's first
definition or hover does not wait for a cold start.

A server is started only as a request would start it (the same routing, the same trust rules: an untrusted root
gets no program of the workspace's choosing), and a started server that loads its project only for an open file
(tsserver does) is shown one representative file: opened and closed at once, before any client's own notification.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.capabilities import wants_open_close
from lsp_hub.proxy.documents import path_to_uri

if TYPE_CHECKING:
    from lsp_hub.index.workspace import WorkspaceIndex
    from lsp_hub.proxy.backends import Backend
    from lsp_hub.proxy.routing import BackendKey

logger = logging.getLogger(__name__)

PRESTART_POLICIES = ("agents", "always", "never")
# The clientInfo names of the hub's own agent surfaces (`lsp-hub query`, `lsp-hub mcp`).
AGENT_CLIENT_NAMES = frozenset({"lsp-hub query", "lsp-hub mcp"})
# Files larger than this are not worth reading to show a server its project.
WARM_UP_MAX_BYTES = 512 * 1024


def is_agent_session(init_params: Any) -> bool:
    info = init_params.get("clientInfo") if isinstance(init_params, dict) else None
    return isinstance(info, dict) and info.get("name") in AGENT_CLIENT_NAMES


def wants_prestart(policy: str, init_params: Any) -> bool:
    """Whether a session of this client starts its workspace's servers early under `policy`."""
    if policy == "always":
        return True
    return policy == "agents" and is_agent_session(init_params)


def representative_files(index: WorkspaceIndex) -> list[str]:
    """For each language the index holds, the absolute path of the file most worth showing its server: the
    non-test file with the most definitions (a test file may sit in a project of its own). Reads the index only."""
    from lsp_hub.index.file_kinds import is_test_file

    best: dict[str, tuple[int, str]] = {}
    for path, record in index.snapshot().files.items():
        if is_test_file(path):
            continue
        language, count = record.language, record.definition_count
        current = best.get(language)
        if current is None or count > current[0] or (count == current[0] and path < current[1]):
            best[language] = (count, path)
    return [str(index.root / path) for _, path in sorted(best.values(), key=lambda pair: pair[1])]


class WarmUps:
    """Per prestarted backend, the file it is shown once running: opened and closed at once, so a server that
    builds its project for an open file has built it before the agent's first question."""

    def __init__(self) -> None:
        self._pending: dict[BackendKey, tuple[str, str, str]] = {}  # key -> (uri, languageId, path)

    def add(self, key: BackendKey, path: str, language_id: str) -> None:
        self._pending.setdefault(key, (path_to_uri(path), language_id, path))

    def run(self, backend: Backend) -> None:
        """Called once the backend runs, after it was sent the documents clients opened meanwhile."""
        pending = self._pending.pop(backend.key, None)
        if pending is None:
            return
        uri, language_id, path = pending
        if uri in backend.open_documents or not wants_open_close(backend.capabilities):
            return  # a client opened it already: the server has its project
        try:
            with open(path, "rb") as file:
                data = file.read(WARM_UP_MAX_BYTES + 1)
        except OSError as exc:
            logger.info("prestart: cannot show %s to %s: %s", path, backend.name, exc)
            return
        if len(data) > WARM_UP_MAX_BYTES:
            return
        text = data.decode("utf-8", errors="replace")
        logger.info("prestart: showing %s its project through %s", backend.name, path)
        backend.show_file(uri, language_id, text)
