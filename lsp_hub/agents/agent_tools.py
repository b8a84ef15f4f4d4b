"""The tools `lsp-hub mcp` gives an agent, independent of MCP: code intelligence through the hub, index questions,
and verified writes (syntax checked before the file is written, answered with every server's fresh diagnostics).

`AgentTools` keeps one LSP session with the hub (the user's daemon, or a hub in this process) for as long as the
agent is connected, so servers, index and open documents stay warm between calls. It speaks to the hub with
`lsp_hub.agents.query`'s connection and actions (same semantics as `lsp-hub query`), one call at a time.

Every path a tool takes is resolved inside the workspace root, symbolic links included; a tool that cannot do its
job raises `ToolFailure` with one sentence, never a traceback. Answers are compact text for a model plus a JSON
object (`ToolAnswer`)."""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_hub.agents import query
from lsp_hub.agents.query import HubConnection, HubFailed, HubLost, Location, QueryError, QueryOptions
from lsp_hub.agents.query.options import ACTION_OPTIONS
from lsp_hub.agents.undo_journal import NothingToUndo, UndoJournal
from lsp_hub.agents.verified_write import (
    FileWrite,
    VerifiedWriter,
    WriteAnswer,
    WriteRefused,
    edit_requests,
    editing,
    judge,
    undo_last,
    writing,
)
from lsp_hub.platform.confined_files import ConfinedRoot, FileMissing, FileRefused

logger = logging.getLogger("lsp_hub.mcp")
LSP_ACTIONS = ("definition", "declaration", "type_definition", "implementation", "references", "hover", "symbols",
               "rename", "code_actions", "format", "incoming_calls", "outgoing_calls", "diagnostics", "languages",
               "status")
DEFAULT_LIMIT = 50
FENCE_OPEN, FENCE_CLOSE = '<untrusted-data source="repository">', "</untrusted-data>"
_PREFIX = re.compile(r"^lsp-hub query(?: [a-z-]+)?: ")


class ToolFailure(WriteRefused):
    """The tool cannot do its job; the message is one sentence for the model (with the structured outcome, if
    any). A refused write is one."""


@dataclass
class ToolAnswer:
    text: str
    data: dict[str, Any]


def fence(text: str) -> str:
    """Text from the repository, marked as data: a planted `</untrusted-data>` cannot close the fence early."""
    inner = text.replace(FENCE_CLOSE, "</untrusted-data\u200b>")
    return f"{FENCE_OPEN}{inner}{FENCE_CLOSE}"


class AgentTools:
    """The tools over one hub session, for one workspace root. Thread-safe: calls run one at a time."""

    def __init__(self, root: Path, connect: Callable[[Path], HubConnection], *, timeout: float = 30.0,
                 fenced: bool = False) -> None:
        self.root = root.resolve()
        self.files = ConfinedRoot(self.root)
        self.session_id = f"mcp-{uuid.uuid4().hex[:12]}"  # whose writes `undo` takes back
        self.timeout = timeout
        self.quote: Callable[[str], str] = fence if fenced else query.as_is
        self._connect = connect
        self._connection: HubConnection | None = None
        self._lock = threading.Lock()
        self._disk_written = False  # during a call: whether it wrote a file (then it is never run again)

    # ============================================================================================ the session
    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def _workspace(self) -> query.Workspace:
        """A fresh view of the workspace for one call (texts read anew) over the kept session."""
        if self._connection is not None and _closed(self._connection):
            self._connection.close()  # the daemon went away (stopped, idle exit): start over
            self._connection = None
        if self._connection is None:
            connection = self._connect(self.root)
            try:
                connection.initialize(self.root, self.timeout)
            except QueryError:
                connection.close()
                raise
            self._connection = connection
        workspace = query.Workspace(self.root, self.timeout, hub=self._connection)
        self._refresh_open_documents(workspace)
        return workspace

    def _refresh_open_documents(self, workspace: query.Workspace) -> None:
        """Files this session has open may have been changed on disk by the agent's other tools: the servers get
        the disk's text (and forget a deleted file) before they answer anything."""
        connection = workspace.connection
        for uri, (_, known) in list(connection.documents.items()):
            path = query.uri_path(uri)
            try:
                text = self.files.read(path).data.decode("utf-8")
            except FileMissing:
                connection.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                del connection.documents[uri]
                continue
            except (FileRefused, UnicodeDecodeError):
                continue
            if text != known:
                workspace.update(uri, text)

    def _run(self, action: Callable[[query.Workspace], ToolAnswer]) -> ToolAnswer:
        """Run one call on the session. A session the hub ended (the daemon stopped or exited idle) is replaced
        by a new one, and the call run again once, unless it already wrote a file."""
        with self._lock:
            for attempt in (1, 2):
                self._disk_written = False
                try:
                    return action(self._workspace())
                except HubFailed as error:
                    lost = isinstance(error, HubLost) or (self._connection is not None and _closed(self._connection))
                    if lost and self._connection is not None:
                        self._connection.close()
                        self._connection = None
                    if lost and attempt == 1 and not self._disk_written:
                        logger.info("the hub went away (%s); starting a new session", error)
                        continue
                    raise ToolFailure(_sentence(error)) from None
                except QueryError as error:
                    raise ToolFailure(_sentence(error)) from None
                except WriteRefused as refused:
                    raise ToolFailure(str(refused), refused.data) from None
            raise AssertionError("unreachable")

    # ============================================================================================ paths
    def path(self, name: str, *, must_exist: bool = True) -> Path:
        """`name` (relative to the root, or absolute) as a path inside the workspace, symbolic links inside it
        followed; a link leading outside is refused. `~` is a character of the name, not a home directory.
        Only the name is worked out here: reads and writes walk the path again from the root, descriptor by
        descriptor (`confined_files`), so nothing swapped in meanwhile can take them outside."""
        try:
            real, info = self.files.stat(name)
        except FileRefused as refusal:
            raise ToolFailure(str(refusal)) from None
        if must_exist and info is None:
            raise ToolFailure(f"{name}: no such file in the workspace")
        if must_exist and info is not None and not stat.S_ISREG(info.st_mode):
            raise ToolFailure(f"{name} is not a file")
        return real

    def _existing(self, name: str) -> Path:
        """A file or directory inside the workspace (`path()`, directories allowed)."""
        real = self.path(name, must_exist=False)
        if not real.exists():
            raise ToolFailure(f"{name}: no such file or directory in the workspace")
        return real

    def display(self, path: str | Path) -> str:
        relative = os.path.relpath(path, self.root)
        return str(path) if relative.startswith("..") else relative

    # ============================================================================================ lsp
    def lsp(self, action: str, *, file: str | None = None, line: int | None = None, column: int | None = None,
            symbol: str | None = None, query_text: str | None = None, new_name: str | None = None,
            apply: bool | int | str | None = None, limit: int = DEFAULT_LIMIT) -> ToolAnswer:
        if action not in LSP_ACTIONS:
            raise ToolFailure(f"unknown action {action!r}; one of: {', '.join(LSP_ACTIONS)}")
        name = action.replace("_", "-")
        # Another action's field is an error, as on the command line: not an answer as if it had not been given.
        given = {"symbol": symbol is not None, "query": query_text is not None, "new_name": new_name is not None,
                 "line": line is not None, "column": column is not None}
        own = {*ACTION_OPTIONS.get(name, ()), *(("new_name",) if name == "rename" else ()),
               *(("line", "column") if name in query.TARGET_ACTIONS else ())}
        stray = [field for field, present in given.items() if present and field not in own]
        if stray:
            raise ToolFailure(f"{action}: {', '.join(stray)} {'does' if len(stray) == 1 else 'do'} not go with "
                              f"{action}")
        options = QueryOptions(name, symbol=symbol, query=query_text, new_name=new_name, limit=max(1, limit),
                               timeout=self.timeout)
        path = self.path(file) if file else None
        if name in query.TARGET_ACTIONS:
            if symbol is None and (path is None or line is None or column is None):
                raise ToolFailure(f"{action} needs file, line and column (1-based), or symbol")
            if symbol is None and path is not None and line is not None and column is not None:
                options.location = Location(str(path), line, column)
        elif name in ("symbols", "format", "diagnostics"):
            if path is None and not (name == "symbols" and query_text):
                raise ToolFailure(f"{action} needs file" + (" or query" if name == "symbols" else ""))
            options.files = [str(path)] if path is not None else []
        if apply not in (None, False):
            if name not in ("rename", "format", "code-actions"):
                raise ToolFailure("apply goes with rename, format and code_actions only")
            if name == "code-actions" and (apply is True or not isinstance(apply, int | str)):
                raise ToolFailure("code_actions: apply takes the number (1-based) or the title of the action")
            if name != "code-actions" and apply is not True:
                raise ToolFailure(f"{action}: apply takes true")
            options.apply = apply
        if name == "rename" and not new_name:
            raise ToolFailure("rename needs new_name")

        def run(workspace: query.Workspace) -> ToolAnswer:
            writes: list[WriteAnswer] = []
            writer = self._writer(workspace)
            # A rename, format or code action lands as a verified write (syntax, dependents, journal), like
            # write_file: the servers' edits are applied to the texts they read, refused if the disk changed since.
            workspace.write_through = lambda changes: writes.append(writer.write(
                [FileWrite(Path(change.path), _writing_exactly(change.new), expected=change.old)
                 for change in changes], journal=self._journal(writer), format_files=False, fixes=False))
            answer = query.run_action(options, workspace)
            text = self._render(name, answer, options.limit)
            data = query.cap_items(answer.data, options.limit)
            for written in writes:  # answered with fresh diagnostics and the dependents, as write_file is
                data["write"] = written.data
                data["diagnostics_after"] = {key: written.data.get(key) for key in ("diagnostics", "complete",
                                                                                   "pending")}
                text += "\n" + written.text
            if not text and data.get("empty_detail"):
                text = f"{_empty_text(name)}: {data['empty_detail']}"
            return ToolAnswer(text or _empty_text(name), data)

        return self._run(run)

    def _render(self, action: str, answer: query.Answer, limit: int) -> str:
        """The answer's text, with repository text (source lines, hover docs, diagnostic messages) quoted."""
        if self.quote is query.as_is:
            return answer.text
        if "locations" in answer.data:
            text = query.locations_text(answer.data["locations"], limit, self.quote)
            return "\n".join(part for part in (text, query.uncovered_note(answer.data)) if part)
        if action == "hover":
            return self.quote(answer.text) if answer.text else ""
        if action == "diagnostics":
            return self._diagnostics_text(answer.data, limit)
        return answer.text

    def _diagnostics_text(self, report: dict[str, Any], limit: int = DEFAULT_LIMIT) -> str:
        if report.get("error"):
            return f"diagnostics not checked: {report['error']}"
        # "no issues" only when a server checked; otherwise who could not, and why.
        return query.diagnostics_answer_text(report, limit, self.quote)

    # ============================================================================================ the index
    def workspace_command(self, command: str, arguments: dict[str, Any], *, paths: Collection[str] = (),
                          uris: Collection[str] = (), render: Callable[[dict[str, Any]], str] | None = None,
                          empty: str = "nothing found") -> ToolAnswer:
        """One `lspHub.*` workspace command as a tool's answer. The arguments named in `paths` (in `uris`) are
        files or directories inside the root, a name or a list of names, sent as absolute paths (as file URIs).
        The command's `text` (else `render(result)`) is the text for the model, quoted as repository text; the
        rest of its result is the structured content. No text says `empty`, and why when the command says
        (`empty_detail`)."""
        sent = dict(arguments)
        for name in (*paths, *uris):
            value = sent.get(name)
            if value is None:
                continue
            resolved = [str(self._existing(item)) for item in (value if isinstance(value, list) else [value])]
            if name in uris:
                resolved = [query.path_uri(item) for item in resolved]
            sent[name] = resolved if isinstance(value, list) else resolved[0]

        def run(workspace: query.Workspace) -> ToolAnswer:
            result = self._command(workspace, command, sent)
            data = dict(result) if isinstance(result, dict) else {"result": result}
            text = str(data.pop("text", "") or "").rstrip("\n")
            if not text and render is not None:
                text = render(data)
            if not text:
                detail = data.get("empty_detail") or data.get("reason")
                return ToolAnswer(f"{empty} ({detail})" if detail else empty, data)
            return ToolAnswer(self.quote(text), data)

        return self._run(run)

    def relevant_files(self, description: str, targets: list[str] | None = None, top_n: int = 10) -> ToolAnswer:
        if not description.strip():
            raise ToolFailure("give a description of the task")
        files = [str(self.path(name)) for name in targets or []]

        def run(workspace: query.Workspace) -> ToolAnswer:
            result = self._command(workspace, "lspHub.relevantFiles", {
                "description": description, "targets": files, "topN": max(1, top_n)}) or {}
            lines = [f"{self.display(entry['path'])}  ({entry['score']:.3f}: {'; '.join(entry['reasons'])})"
                     for entry in result.get("files", [])]
            return ToolAnswer("\n".join(lines) or "no relevant files found", result)

        return self._run(run)

    def callers(self, file: str | None = None, line: int | None = None, column: int | None = None,
                symbol: str | None = None, depth: int = 1, limit: int = DEFAULT_LIMIT,
                index_only: bool = False) -> ToolAnswer:
        if symbol is None and (file is None or line is None or column is None):
            raise ToolFailure("callers needs file, line and column (1-based), or symbol")
        path = self.path(file) if symbol is None and file else None
        options = QueryOptions("callers", symbol=symbol, limit=max(1, limit), depth=max(1, depth),
                               timeout=self.timeout, index_only=index_only)
        if path is not None and line is not None and column is not None:
            options.location = Location(str(path), line, column)

        def run(workspace: query.Workspace) -> ToolAnswer:
            answer = query.run_action(options, workspace)
            return ToolAnswer(answer.text or f"no callers of {answer.data.get('symbol') or 'that symbol'} found",
                              query.cap_items(answer.data, options.limit))

        return self._run(run)

    def check_syntax(self, file: str, content: str | None = None) -> ToolAnswer:
        path = self.path(file, must_exist=content is None)

        def run(workspace: query.Workspace) -> ToolAnswer:
            text = content if content is not None else workspace.text(path)
            writer = self._writer(workspace)
            result = writer.syntax(path, text)
            if not result.get("checked"):
                return ToolAnswer(f"{self.display(path)}: not checked ({result.get('reason', 'no parser')})", result)
            if result.get("ok"):
                return ToolAnswer(f"{self.display(path)}: no syntax errors ({judge(result)})", result)
            lines = [writer.syntax_error_text(path, text, error) for error in result.get("errors", [])[:10]]
            more = len(result.get("errors", [])) - len(lines)
            return ToolAnswer("\n".join(lines + ([f"... {more} more"] if more > 0 else [])), result)

        return self._run(run)

    # ============================================================================================ writes
    def _writer(self, workspace: query.Workspace) -> VerifiedWriter:
        return VerifiedWriter(workspace, self.files, timeout=self.timeout, quote=self.quote, display=self.display,
                              on_disk=self._mark_written)

    def _mark_written(self) -> None:
        self._disk_written = True

    def _journal(self, writer: VerifiedWriter) -> UndoJournal:
        depth = int(writer.write_options().get("undoDepth", 20))
        return UndoJournal(self.root, self.session_id, depth)

    def write_file(self, path: str, content: str, force: bool = False) -> ToolAnswer:
        target = self.path(path, must_exist=False)
        if target.is_dir():
            raise ToolFailure(f"{path} is a directory")
        return self._verified_write([FileWrite(target, writing(content))], force)

    def edit_file(self, path: str, old_text: str, new_text: str, force: bool = False) -> ToolAnswer:
        target = self.path(path)
        if not old_text:
            raise ToolFailure("old_text is empty; give the exact text to replace (write_file replaces a whole file)")
        return self._verified_write([FileWrite(target, editing(target, old_text, new_text, self.display))], force)

    def apply_edits(self, edits: list[dict[str, Any]], force: bool = False) -> ToolAnswer:
        """Several files' edits as one verified write: every resulting file's syntax is checked before any is
        written; all are written or none. An edit is {path, old_text, new_text} or {path, content}; several edits
        of one file apply in order."""
        try:
            requests = edit_requests(edits, lambda name, existing: self.path(name, must_exist=existing),
                                     self.display)
        except WriteRefused as refused:
            raise ToolFailure(str(refused)) from None
        return self._verified_write(requests, force)

    def _verified_write(self, requests: list[FileWrite], force: bool = False) -> ToolAnswer:
        """One verified write (verified_write.VerifiedWriter), journaled for undo."""

        def run(workspace: query.Workspace) -> ToolAnswer:
            writer = self._writer(workspace)
            answer = writer.write(requests, force=force, journal=self._journal(writer))
            return ToolAnswer(answer.text, answer.data)

        return self._run(run)

    def undo(self) -> ToolAnswer:
        """Take back this session's last verified write, unless one of its files changed since."""

        def run(workspace: query.Workspace) -> ToolAnswer:
            writer = self._writer(workspace)
            try:
                answer = undo_last(writer, self._journal(writer))
            except NothingToUndo as nothing:
                raise ToolFailure(str(nothing)) from None
            return ToolAnswer(answer.text, answer.data)

        return self._run(run)

    # ============================================================================================ helpers
    def _command(self, workspace: query.Workspace, command: str, arguments: dict[str, Any] | None = None, *,
                 timeout: float | None = None) -> Any:
        return query.hub_command(workspace, command, arguments, timeout=timeout)


def _empty_text(action: str) -> str:
    return {"hover": "no hover information here", "symbols": "no symbols found",
            "incoming-calls": "no incoming calls found", "outgoing-calls": "no outgoing calls found",
            "code-actions": "no code actions here"}.get(action, "nothing found")


def _sentence(error: QueryError) -> str:
    """A query error without the command-line prefix (`lsp-hub query: `) and hints at flags an agent cannot pass."""
    text = _PREFIX.sub("", str(error))
    return text.replace(" (raise it with --timeout)", "").replace(" (see --root)", "")


def _closed(connection: HubConnection) -> bool:
    """Whether the hub closed the connection (EOF waiting to be read, or its process ended)."""
    return connection.peer_closed()


def _writing_exactly(content: str) -> Callable[[str | None], str]:
    return lambda _old: content
