"""The tools `lsp-hub mcp` gives an agent, independent of MCP: code intelligence through the hub, index questions,
and verified writes (syntax checked before the file is written, answered with every server's fresh diagnostics).

`AgentTools` keeps one LSP session with the hub (the user's daemon, or a hub in this process) for as long as the
agent is connected, so servers, index and open documents stay warm between calls. It speaks to the hub with
`lsp_hub.query`'s connection and actions (same semantics as `lsp-hub query`), one call at a time.

Every path a tool takes is resolved inside the workspace root, symbolic links included; a tool that cannot do its
job raises `ToolFailure` with one sentence, never a traceback. Answers are compact text for a model plus a JSON
object (`ToolAnswer`)."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import os
import re
import select
import socket
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_hub import query, write_lock
from lsp_hub.confined_files import ConfinedRoot, FileMissing, FileRefused
from lsp_hub.query import HubConnection, HubFailed, HubLost, HubTimeout, QueryError, path_uri

logger = logging.getLogger("lsp_hub.mcp")
LSP_ACTIONS = ("definition", "declaration", "type_definition", "implementation", "references", "hover", "symbols",
               "rename", "code_actions", "format", "incoming_calls", "outgoing_calls", "diagnostics", "languages",
               "status")
DEFAULT_LIMIT = 50
# How long a write waits for the formatter; past it the text is written as the agent gave it.
FORMAT_TIMEOUT_SECONDS = 10.0
FORMAT_DIFF_LINES = 12  # of the formatting diff shown in a write's answer
# The hub's wait for diagnostics ends this long (at most) before the call's own deadline, so it answers with what is
# pending instead of this side timing out; it waits at least the minimum.
DIAGNOSTICS_MARGIN_SECONDS = 1.0
MIN_DIAGNOSTICS_WAIT_SECONDS = 0.2
FENCE_OPEN, FENCE_CLOSE = '<untrusted-data source="repository">', "</untrusted-data>"
_PREFIX = re.compile(r"^lsp-hub query(?: [a-z-]+)?: ")


class ToolFailure(Exception):
    """The tool cannot do its job; the message is one sentence for the model."""

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.data = data


@dataclass
class ToolAnswer:
    text: str
    data: dict[str, Any]


def fence(text: str) -> str:
    """Text from the repository, marked as data: a planted `</untrusted-data>` cannot close the fence early."""
    inner = text.replace(FENCE_CLOSE, "</untrusted-data\u200b>")
    return f"{FENCE_OPEN}{inner}{FENCE_CLOSE}"


@dataclass
class WriteOutcome:
    """What a verified write did (the structured result of write_file/edit_file)."""

    path: str
    written: bool = False
    created: bool = False
    syntax_ok: bool | None = None  # None: no parser for this language
    formatted: bool = False
    formatter: str | None = None  # the server that formatted it
    format_diff: str = ""  # what formatting changed, unified
    format_skipped_reason: str | None = None  # off, no_formatter, formatter_failed, timeout, syntax_error
    syntax_skipped_reason: str | None = None  # why syntax_ok is None (no parser, a file too large, ...)
    unchanged: bool = False  # the content written is the file's own: no byte changes
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = False
    pending: list[str] = field(default_factory=list)
    diagnostics_error: str | None = None  # the file was written, but its diagnostics could not be had

    def as_json(self) -> dict[str, Any]:
        data = {"path": self.path, "written": self.written, "created": self.created, "syntax_ok": self.syntax_ok,
                "formatted": self.formatted, "diagnostics": self.diagnostics, "complete": self.complete,
                "pending": self.pending, "unchanged": self.unchanged}
        if self.syntax_skipped_reason is not None:
            data["syntax_skipped_reason"] = self.syntax_skipped_reason
        if self.diagnostics_error is not None:
            data["diagnostics_error"] = self.diagnostics_error
        if self.formatted:
            data["formatter"], data["format_diff"] = self.formatter, self.format_diff
        if self.format_skipped_reason is not None:
            data["format_skipped_reason"] = self.format_skipped_reason
        return data


class AgentTools:
    """The tools over one hub session, for one workspace root. Thread-safe: calls run one at a time."""

    def __init__(self, root: Path, connect: Callable[[Path], HubConnection], *, timeout: float = 30.0,
                 fenced: bool = False) -> None:
        self.root = root.resolve()
        self.files = ConfinedRoot(self.root)
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

    def display(self, path: str | Path) -> str:
        relative = os.path.relpath(path, self.root)
        return str(path) if relative.startswith("..") else relative

    # ============================================================================================ lsp
    def lsp(self, action: str, *, file: str | None = None, line: int | None = None, column: int | None = None,
            symbol: str | None = None, query_text: str | None = None, new_name: str | None = None,
            apply: bool | int | None = None, limit: int = DEFAULT_LIMIT) -> ToolAnswer:
        if action not in LSP_ACTIONS:
            raise ToolFailure(f"unknown action {action!r}; one of: {', '.join(LSP_ACTIONS)}")
        name = action.replace("_", "-")
        options = _options(limit=max(1, limit), symbol=symbol, query=query_text, new_name=new_name)
        path = self.path(file) if file else None
        if name in query.TARGET_ACTIONS:
            if symbol is None and (path is None or line is None or column is None):
                raise ToolFailure(f"{action} needs file, line and column (1-based), or symbol")
            options.target = None if symbol is not None else f"{path}:{line}:{column}"
        elif name in ("symbols", "format", "diagnostics"):
            if path is None and not (name == "symbols" and query_text):
                raise ToolFailure(f"{action} needs file" + (" or query" if name == "symbols" else ""))
            options.files = [str(path)] if path is not None else []
        if apply not in (None, False):
            if name not in ("rename", "format", "code-actions"):
                raise ToolFailure("apply goes with rename, format and code_actions only")
            if name == "code-actions" and (apply is True or not isinstance(apply, int)):
                raise ToolFailure("code_actions: apply takes the number of the action to apply (1-based)")
            options.apply = apply
        if name == "rename" and not new_name:
            raise ToolFailure("rename needs new_name")

        def run(workspace: query.Workspace) -> ToolAnswer:
            written: list[str] = []
            workspace.before_write = lambda changes: self._check_changes(workspace, changes, written)
            options.resolved_target = (query.resolve_target(workspace, options.target, None)
                                       if options.target else None)
            answer = query.run_action(name, options, workspace)
            text = self._render(name, answer, options.limit)
            data = dict(answer.data)
            if written:  # a write through the hub is answered with fresh diagnostics, as write_file is
                report = self._diagnostics_of(workspace, written)
                data["diagnostics_after"] = report
                text += "\n" + self._diagnostics_text(report)
            if not text and data.get("empty_detail"):
                text = f"{_empty_text(name)}: {data['empty_detail']}"
            return ToolAnswer(text or _empty_text(name), data)

        return self._run(run)

    def _render(self, action: str, answer: query.Answer, limit: int) -> str:
        """The answer's text, with repository text (source lines, hover docs, diagnostic messages) quoted."""
        if self.quote is query.as_is:
            return answer.text
        if "locations" in answer.data:
            return query.locations_text(answer.data["locations"], limit, self.quote)
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

    def _check_changes(self, workspace: query.Workspace, changes: list[query.Change], written: list[str]) -> None:
        """Before a rename, format or code action lands: every new text must parse."""
        for change in changes:
            problem = self._syntax_problem(workspace, Path(change.path), change.new)
            if problem is not None:
                raise QueryError(f"not written: the edit would break {self.display(change.path)}: {problem}")
        written.extend(change.path for change in changes)
        self._disk_written = True

    def _diagnostics_of(self, workspace: query.Workspace, paths: list[str],
                        deadline: float | None = None) -> dict[str, Any]:
        """Every server's diagnostics of `paths`, waited for by the hub until shortly before this call's own
        deadline: the hub answers `complete: false` with what is pending rather than this side timing out."""
        summary = query.DiagnosticsSummary()  # with who checked (checkedBy) and who could not (notChecked)
        for path in paths:
            remaining = (deadline if deadline is not None else time.monotonic() + self.timeout) - time.monotonic()
            wait = max(MIN_DIAGNOSTICS_WAIT_SECONDS, remaining - min(DIAGNOSTICS_MARGIN_SECONDS, remaining / 4))
            report = self._command(workspace, "lspHub.diagnostics", {
                "uri": workspace.open(Path(path)), "timeoutMs": int(wait * 1000)},
                timeout=wait + DIAGNOSTICS_MARGIN_SECONDS) or {}
            summary.add(workspace, path, report)
        return summary.as_json()

    # ============================================================================================ the index
    def repo_map(self, focus_files: list[str] | None = None, mentioned: list[str] | None = None,
                 token_budget: int = 1024) -> ToolAnswer:
        files = [str(self.path(name)) for name in focus_files or []]
        if token_budget < 1:
            raise ToolFailure("token_budget must be positive")

        def run(workspace: query.Workspace) -> ToolAnswer:
            result = self._command(workspace, "lspHub.repoMap", {
                "focusFiles": files, "mentionedIdents": list(mentioned or []), "tokenBudget": token_budget}) or {}
            text = result.get("text", "").rstrip("\n")
            return ToolAnswer(self.quote(text) if text else "the repo map is empty (no indexed source files)", result)

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
                symbol: str | None = None, depth: int = 1, limit: int = DEFAULT_LIMIT) -> ToolAnswer:
        if symbol is None and (file is None or line is None or column is None):
            raise ToolFailure("callers needs file, line and column (1-based), or symbol")
        path = self.path(file) if symbol is None and file else None
        options = _options(limit=max(1, limit), symbol=symbol, depth=max(1, depth))

        def run(workspace: query.Workspace) -> ToolAnswer:
            if path is not None:
                options.resolved_target = query.resolve_target(workspace, f"{path}:{line}:{column}", None)
            answer = query.run_action("callers", options, workspace)
            return ToolAnswer(answer.text or f"no callers of {answer.data.get('symbol') or 'that symbol'} found",
                              answer.data)

        return self._run(run)

    def check_syntax(self, file: str, content: str | None = None) -> ToolAnswer:
        path = self.path(file, must_exist=content is None)

        def run(workspace: query.Workspace) -> ToolAnswer:
            text = content if content is not None else workspace.text(path)
            result = self._syntax(workspace, path, text)
            if not result.get("checked"):
                return ToolAnswer(f"{self.display(path)}: not checked ({result.get('reason', 'no parser')})", result)
            if result.get("ok"):
                return ToolAnswer(f"{self.display(path)}: no syntax errors ({_judge(result)})", result)
            lines = [self._syntax_error_text(path, text, error) for error in result.get("errors", [])[:10]]
            more = len(result.get("errors", [])) - len(lines)
            return ToolAnswer("\n".join(lines + ([f"... {more} more"] if more > 0 else [])), result)

        return self._run(run)

    def _syntax(self, workspace: query.Workspace, path: Path, text: str) -> dict[str, Any]:
        return self._command(workspace, "lspHub.syntaxCheck", {"uri": path_uri(path), "text": text}) or {}

    def _syntax_problem(self, workspace: query.Workspace, path: Path, text: str) -> str | None:
        """The first syntax error of `text` as `path:line:col — message` and its line, else None."""
        result = self._syntax(workspace, path, text)
        if not result.get("checked") or result.get("ok", True) or not result.get("errors"):
            return None
        return self._syntax_error_text(path, text, result["errors"][0])

    def _syntax_error_text(self, path: Path, text: str, error: dict[str, Any]) -> str:
        start = error["range"]["start"]
        lines = text.split("\n")
        line_text = lines[start["line"]].rstrip("\r") if start["line"] < len(lines) else ""
        column = query.character_column(line_text, start["character"]) + 1
        pointer = f"\n    {start['line'] + 1} | {self.quote(line_text)}" if line_text.strip() else ""
        return f"{self.display(path)}:{start['line'] + 1}:{column} — {error['message']}{pointer}"

    # ============================================================================================ writes
    def write_file(self, path: str, content: str, force: bool = False) -> ToolAnswer:
        target = self.path(path, must_exist=False)
        if target.is_dir():
            raise ToolFailure(f"{path} is a directory")
        return self._verified_write(target, lambda old: content if old is None else conform(content, old), force)

    def edit_file(self, path: str, old_text: str, new_text: str, force: bool = False) -> ToolAnswer:
        target = self.path(path)
        if not old_text:
            raise ToolFailure("old_text is empty; give the exact text to replace (write_file replaces a whole file)")

        def edit(old: str | None) -> str:
            if old is None:
                raise ToolFailure(f"{self.display(target)} is not UTF-8 text; edit_file cannot edit it "
                                  "(write_file can replace it)")
            find, replace = old_text, new_text
            count = old.count(find)
            crlf = line_ending(old) == "\r\n"
            if crlf:  # an agent writes "\n" (or copies "\r\n"); what it inserts takes the file's line ends
                replace = _with_line_ends(replace, "\r\n")
            if count == 0 and crlf:
                find = _with_line_ends(find, "\r\n")
                count = old.count(find)
            elif count == 0 and "\r\n" in find:
                find, replace = find.replace("\r\n", "\n"), replace.replace("\r\n", "\n")
                count = old.count(find)
            if count != 1:
                where = self.display(target)
                raise ToolFailure(f"old_text was not found in {where}; nothing written (read the file again)"
                                  if count == 0 else
                                  f"old_text occurs {count} times in {where}; nothing written (include more "
                                  "surrounding lines so it occurs once)")
            return conform(old.replace(find, replace, 1), old)

        return self._verified_write(target, edit, force)

    def _verified_write(self, target: Path, build: Callable[[str | None], str], force: bool = False) -> ToolAnswer:
        """Read, build, check, write and verify one file while holding its write lock, so that another agent's
        write to it waits and then starts from what this one wrote."""
        deadline = time.monotonic() + self.timeout

        def run(workspace: query.Workspace) -> ToolAnswer:
            try:
                with write_lock.exclusive(target, max(1.0, deadline - time.monotonic())):
                    return self._write_locked(workspace, target, build, force, deadline)
            except write_lock.WriteLockError as error:
                raise ToolFailure(f"not written: {error}") from None

        return self._run(run)

    def _write_locked(self, workspace: query.Workspace, target: Path, build: Callable[[str | None], str],
                      force: bool, deadline: float) -> ToolAnswer:
        try:
            current: bytes | None = self.files.read(target).data
        except FileMissing:
            current = None
        except FileRefused as refusal:
            raise ToolFailure(str(refusal)) from None
        old: str | None = None  # None: no such file, or not UTF-8 text
        if current is not None:
            with contextlib.suppress(UnicodeDecodeError):
                old = current.decode("utf-8")
        content = build(old)
        outcome = WriteOutcome(str(target), created=current is None)
        # 1. The syntax, before anything reaches the disk or the servers.
        result = self._syntax(workspace, target, content)
        too_large = result.get("reason") == "too_large"
        if result.get("checked"):
            outcome.syntax_ok = bool(result.get("ok", True))
        elif too_large:
            outcome.syntax_skipped_reason = (
                f"{self.display(target)} is {_size(result.get('size', len(content)))}, over the "
                f"{_size(result.get('limit', 0))} limit for checks ([hub] max_document_bytes)")
        else:
            outcome.syntax_skipped_reason = str(result.get("reason") or "no parser for this language")
        if outcome.syntax_ok is False and result.get("errors"):
            problem = self._syntax_error_text(target, content, result["errors"][0])
            outcome.format_skipped_reason = "syntax_error"
            raise ToolFailure(f"not written: {self.display(target)} would have a syntax error "
                              f"({_judge(result)}); the file is unchanged\n{problem}", outcome.as_json())
        if old is not None and content == old:
            outcome.unchanged = True  # writing a file's own bytes changes no byte: no formatting either
        # 2. The servers see the new text; a formatting server may reformat it (in memory). A file over the size
        # limit is not sent to them: it would keep them busy for minutes.
        uri = path_uri(target)
        workspace.texts[str(target)] = content
        if too_large:
            outcome.format_skipped_reason = "too_large"
        else:
            workspace.open(target)
        if outcome.unchanged:
            outcome.format_skipped_reason = "unchanged"
        elif not too_large:
            content = self._format(workspace, target, uri, content, outcome)
        # 3. Atomically onto the disk, inside the workspace whatever races the path.
        self._disk_written = True
        try:
            written = self.files.write(target, content.encode("utf-8"), force=force)
        except FileRefused as refusal:
            self._disk_written = False
            self._restore_servers_text(workspace, uri, old)
            raise ToolFailure(str(refusal), outcome.as_json()) from None
        outcome.written = True
        # From here on the file is written, whatever happens: the answer says so, and says what was not checked.
        try:
            connection = workspace.connection
            connection.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
            connection.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri, "type": 1 if
                                                                               written.created else 2}]})
            # 4. Every server's verdict on exactly this text.
            report: dict[str, Any] = (
                self._diagnostics_of(workspace, [str(target)], deadline) if not too_large else
                {"diagnostics": [], "complete": False, "pending": [],
                 "error": f"not sent to the servers: {outcome.syntax_skipped_reason}"})
        except QueryError as error:
            report = {"diagnostics": [], "complete": False, "pending": [], "error": _sentence(error)}
        except Exception as error:  # a fault of ours after the write: the answer still says it was written
            logger.exception("diagnostics after writing %s", target)
            report = {"diagnostics": [], "complete": False, "pending": [],
                      "error": f"lsp-hub failed while asking for them ({type(error).__name__}: {error})"}
        outcome.diagnostics, outcome.complete, outcome.pending = (report["diagnostics"], report["complete"],
                                                                  report["pending"])
        outcome.diagnostics_error = report.get("error")
        text = self._write_summary(target, content, outcome)
        if outcome.format_diff:  # the agent's next edit_file must quote the text as it now is
            diff_lines = outcome.format_diff.splitlines()
            text += "\nformatting changed:\n" + "\n".join(diff_lines[2:][:FORMAT_DIFF_LINES]) + (
                f"\n... {len(diff_lines) - 2 - FORMAT_DIFF_LINES} more" if len(diff_lines) - 2 > FORMAT_DIFF_LINES
                else "")
        return ToolAnswer(text + "\n" + self._diagnostics_text(report), outcome.as_json())

    def _restore_servers_text(self, workspace: query.Workspace, uri: str, old: str | None) -> None:
        """A write that did not land: the servers go back to the file's text (they were shown the new one), or
        forget a file that does not exist."""
        connection = workspace.connection
        if uri not in connection.documents:
            return
        try:
            if old is None:
                connection.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                del connection.documents[uri]
            else:
                workspace.update(uri, old)
        except QueryError:
            pass

    def _format(self, workspace: query.Workspace, target: Path, uri: str, content: str,
                outcome: WriteOutcome) -> str:
        """The text formatted by the language's formatting server when format_on_write is on; the text as given
        when it is off, there is no formatter, it fails or it is late (the reason in `format_skipped_reason`)."""
        language = query.language_entry(query.languages_of(workspace), target)
        if language is None or not language.get("formatOnWrite", True):
            outcome.format_skipped_reason = "off" if language is not None else "no_formatter"
            return content
        connection = workspace.connection
        try:
            edits = connection.request("textDocument/formatting", {
                "textDocument": {"uri": uri}, "options": {"tabSize": 4, "insertSpaces": True}},
                min(self.timeout, FORMAT_TIMEOUT_SECONDS))
        except HubTimeout:
            outcome.format_skipped_reason = "timeout"
            return content
        except QueryError:
            outcome.format_skipped_reason = "formatter_failed"
            return content
        # Which server formatted (the hub asks the first in precedence order that formats); null from the hub is
        # also what it answers when none formats.
        language = query.language_entry(query.languages_of(workspace), target) or {}
        outcome.formatter = next((server["name"] for server in language.get("servers", []) if server.get("formats")),
                                 None)
        if not edits:
            if outcome.formatter is None:
                outcome.format_skipped_reason = "no_formatter"
            return content
        try:
            formatted = query.apply_text_edits(content, edits)
        except (KeyError, TypeError, ValueError):
            outcome.format_skipped_reason = "formatter_failed"
            return content
        if formatted == content:
            return content
        if self._syntax_problem(workspace, target, formatted) is not None:
            outcome.format_skipped_reason = "formatter_failed"  # never write a formatter's broken output
            workspace.update(uri, content)
            return content
        workspace.texts[str(target)] = formatted
        workspace.update(uri, formatted)
        outcome.formatted = True
        name = self.display(target)
        outcome.format_diff = "".join(difflib.unified_diff(
            content.splitlines(keepends=True), formatted.splitlines(keepends=True), f"a/{name}", f"b/{name}", n=0))
        return formatted

    def _write_summary(self, target: Path, content: str, outcome: WriteOutcome) -> str:
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        parts = [f"{'created' if outcome.created else 'wrote'} {self.display(target)} "
                 f"({lines} line{'' if lines == 1 else 's'})"]
        if outcome.formatted:
            parts.append(f"formatted by {outcome.formatter or 'its formatting server'}")
        elif outcome.format_skipped_reason not in (None, "off", "no_formatter"):
            parts.append(f"not formatted: {outcome.format_skipped_reason}")
        if outcome.syntax_ok is None:
            parts.append(f"syntax not checked ({outcome.syntax_skipped_reason or 'no parser for this language'})")
        if outcome.unchanged:
            parts.append("unchanged: the content is the file's own")
        return "; ".join(parts)

    # ============================================================================================ helpers
    def _command(self, workspace: query.Workspace, command: str, arguments: dict[str, Any] | None = None, *,
                 timeout: float | None = None) -> Any:
        return query.hub_command(workspace, command, arguments, timeout=timeout)


def _options(**values: Any) -> argparse.Namespace:
    """The options `query.run_action` reads, with the defaults of `lsp-hub query`."""
    defaults: dict[str, Any] = {
        "limit": DEFAULT_LIMIT, "symbol": None, "query": None, "new_name": None, "apply": None, "files": [],
        "text_file": None, "mention": [], "budget": 1024, "description": None, "top": 10, "depth": 1,
        "target": None, "resolved_target": None}
    return argparse.Namespace(**{**defaults, **values})


def _judge(result: dict[str, Any]) -> str:
    """Which parser judged a syntax check: `cpython-3.11`, `typescript-5.9.3`, `json`, `tree-sitter python`."""
    checker, language = result.get("checker"), result.get("language")
    return f"{checker} {language}" if checker in (None, "tree-sitter") and language else str(checker or language)


def _size(count: Any) -> str:
    size = float(count) if isinstance(count, int | float) else 0.0
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} KB"


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
    if connection.process is not None:
        return connection.process.poll() is not None
    try:
        readable, _, _ = select.select([connection.read_fd], [], [], 0)
        if not readable:
            return False
        with socket.socket(fileno=os.dup(connection.read_fd)) as probe:
            return probe.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


# ================================================================================================ the file's form
def line_ending(text: str) -> str:
    """The file's line end: "\r\n" when most of its lines end so, else "\n"."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def _with_line_ends(text: str, ending: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", ending)


def conform(new: str, old: str) -> str:
    """`new` in the form of the file it replaces: its line ends (an agent writes "\n"), its byte-order mark and
    its final newline. What the agent wrote is otherwise left as it is."""
    if line_ending(old) == "\r\n" and "\r\n" not in new:
        new = _with_line_ends(new, "\r\n")
    if old.startswith("\ufeff") and not new.startswith("\ufeff"):
        new = "\ufeff" + new
    ending = line_ending(old)
    if old.endswith(("\n", "\r\n")) and new and not new.endswith("\n"):
        new += ending
    return new
