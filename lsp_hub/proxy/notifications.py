"""What a client's workspace notifications do (watched files, configuration, folders, file operations, progress
cancel), one handler per method in `NOTIFICATIONS`; any other notification is forwarded (`forward`). Document
synchronisation and the lifecycle stay with the session. Handlers run synchronously, in arrival order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsp_hub.proxy.documents import uri_to_path
from lsp_hub.proxy.file_operations import FILE_OPERATIONS
from lsp_hub.proxy.runners import document_uri, file_operation_targets
from lsp_hub.proxy.workspace import under

if TYPE_CHECKING:
    from lsp_hub.proxy.session import Session

Handler = Callable[["Session", dict[str, Any]], None]


def did_change_watched_files(session: Session, params: dict[str, Any]) -> None:
    changes = [c for c in params.get("changes") or [] if isinstance(c, dict)]
    workspace = session.workspace
    workspace.router.forget_roots()
    for backend in workspace.pool.running():
        concerned = [c for c in changes if under(uri_to_path(c.get("uri", "")), backend.root)]
        if concerned:
            backend.notify("workspace/didChangeWatchedFiles", {"changes": concerned})
            for change in concerned:
                workspace.reports.changed(backend.uid, change.get("uri", ""))
    for extension in session.extensions:
        extension.on_watched_files_changed(session, changes)


def did_change_configuration(session: Session, params: dict[str, Any]) -> None:
    from_client = params if "settings" not in params else \
        {**params, "settings": session.settings_from_client(params["settings"], "settings")}
    for backend in session.workspace.pool.running():
        payload = {"settings": backend.spec.settings} if backend.spec.settings else from_client
        backend.notify("workspace/didChangeConfiguration", payload)


def did_change_workspace_folders(session: Session, params: dict[str, Any]) -> None:
    event = params.get("event") or {}
    removed = {uri_to_path(f.get("uri", "")) for f in event.get("removed") or [] if isinstance(f, dict)}
    added = [uri_to_path(f.get("uri", "")) for f in event.get("added") or [] if isinstance(f, dict)]
    session.folders = [f for f in session.folders if f not in removed] + [f for f in added if f]
    session.workspace.set_folders(session.folders)
    for backend in session.workspace.pool.running():
        if backend.capabilities.get("workspace", {}).get("workspaceFolders", {}).get("changeNotifications"):
            backend.notify("workspace/didChangeWorkspaceFolders", params)


def work_done_progress_cancel(session: Session, params: dict[str, Any]) -> None:
    session.workspace.forwarder.cancel_progress(params.get("token"))


def _file_operation(method: str) -> Handler:
    def did_file_operation(session: Session, params: dict[str, Any]) -> None:
        for backend, own in file_operation_targets(session.workspace, method, params):
            backend.notify(method, own)

    return did_file_operation


def forward(session: Session, method: str, params: Any) -> None:
    """A notification the hub has no rule for: to the document's servers, or to every running server."""
    uri = document_uri(params)
    targets = session.workspace.backends_for_uri(uri, method) if uri else session.workspace.pool.running()
    for backend in targets:
        backend.notify(method, params)


NOTIFICATIONS: dict[str, Handler] = {
    "workspace/didChangeWatchedFiles": did_change_watched_files,
    "workspace/didChangeConfiguration": did_change_configuration,
    "workspace/didChangeWorkspaceFolders": did_change_workspace_folders,
    "window/workDoneProgress/cancel": work_done_progress_cancel,
    **{method: _file_operation(method) for method in FILE_OPERATIONS if "/did" in method},
}
