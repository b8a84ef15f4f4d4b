"""The one write path of the agent surfaces: a verified write of one or more files.

Every tool that changes files (`write_file`, `edit_file`, `apply_edits`, `lsp` rename/format/code actions with
apply, `undo`, `lsp-hub query ... --apply`) comes here, over a hub session (`query.Workspace`):

1. the files' write locks (`write_lock`, in one order), then each file read as it is on disk (`ConfinedRoot`) and
   its new text built;
2. every new text's syntax checked by the language's parser (`lspHub.syntaxCheck`): one broken file and nothing
   is written;
3. the written files' dependents found by the index (`lspHub.dependents`) and their diagnostics taken as they are
   ("before"), while the servers still see the old texts;
4. the servers shown the new texts; each formatted in the project's style, only over the changed lines
   (`format_style`);
5. all written, or none: a failure midway puts back what was already written; the undo journal records what was
   replaced;
6. the servers told (didSave, didChangeWatchedFiles); the written files' diagnostics and the dependents' again
   ("after"), what the write broke or fixed elsewhere reported as `dependents.new` / `resolved`; with
   `auto_code_actions` on, the servers' preferred fixes applied and verified in turn.

From the moment a file is on disk the answer says it was written, whatever fails after. Refusals are
`WriteRefused` with one sentence and the structured outcome. Standard library only, like `query`."""

from __future__ import annotations

import contextlib
import difflib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_hub import format_style, query, write_lock
from lsp_hub.confined_files import ConfinedRoot, FileMissing, FileRefused
from lsp_hub.query import HubConnection, HubTimeout, QueryError, path_uri
from lsp_hub.undo_journal import UndoJournal

logger = logging.getLogger("lsp_hub.writes")

# How long a write waits for the formatter; past it the text is written as the agent gave it.
FORMAT_TIMEOUT_SECONDS = 10.0
FORMAT_DIFF_LINES = 12  # of the formatting diff shown in a write's answer
# The hub's wait for diagnostics ends this long (at most) before the call's own deadline, so it answers with what is
# pending instead of this side timing out; it waits at least the minimum.
DIAGNOSTICS_MARGIN_SECONDS = 1.0
MIN_DIAGNOSTICS_WAIT_SECONDS = 0.2
DEPENDENT_LINES = 20  # new dependents' diagnostics shown in a write's text
AUTO_FIX_KINDS = ("source.fixAll", "source.organizeImports")


class WriteRefused(Exception):
    """Nothing was written (or what was written was put back); the message is one sentence for the agent."""

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.data = data


@dataclass
class FileWrite:
    """One file of a verified write, as asked: how to build its new text from the old (None: no such file, or not
    UTF-8 text). `expected` is the text the servers computed their edits on: the write is refused if the disk now
    holds something else."""

    target: Path
    build: Callable[[str | None], str]
    expected: str | None = None
    remove: bool = False  # undo of a file the write created: delete it


@dataclass
class WriteOutcome:
    """What a verified write did to one file (the structured result of write_file/edit_file)."""

    path: str
    written: bool = False
    created: bool = False
    removed: bool = False
    syntax_ok: bool | None = None  # None: not checked
    formatted: bool = False
    formatter: str | None = None  # the server that formatted it
    format_diff: str = ""  # what formatting changed, unified
    # off, no_formatter, formatter_failed, timeout, syntax_error, would_change_untouched_lines, unchanged, too_large
    format_skipped_reason: str | None = None
    format_options: dict[str, Any] | None = None  # the FormattingOptions sent, their source and config files
    format_scope: str = "none"  # what the formatter was applied to: file, ranges (the changed lines), none
    syntax_skipped_reason: str | None = None  # why syntax_ok is None (no parser, a file too large, ...)
    unchanged: bool = False  # the content written is the file's own: no byte changes
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = False
    pending: list[str] = field(default_factory=list)
    diagnostics_error: str | None = None  # the file was written, but its diagnostics could not be had
    checked_by: list[str] = field(default_factory=list)  # the servers whose verdict on this text counted
    not_checked: list[dict[str, Any]] = field(default_factory=list)  # {server, reason, detail}: who could not

    def as_json(self) -> dict[str, Any]:
        data = {"path": self.path, "written": self.written, "created": self.created, "syntax_ok": self.syntax_ok,
                "formatted": self.formatted, "diagnostics": self.diagnostics, "complete": self.complete,
                "pending": self.pending, "unchanged": self.unchanged, "checkedBy": self.checked_by,
                "notChecked": self.not_checked}
        if self.removed:
            data["removed"] = True
        if self.syntax_skipped_reason is not None:
            data["syntax_skipped_reason"] = self.syntax_skipped_reason
        if self.diagnostics_error is not None:
            data["diagnostics_error"] = self.diagnostics_error
        if self.formatted:
            data["formatter"], data["format_diff"] = self.formatter, self.format_diff
        if self.format_skipped_reason is not None:
            data["format_skipped_reason"] = self.format_skipped_reason
        if self.format_options is not None:
            data["format_options"] = self.format_options
        data["format_scope"] = self.format_scope
        return data


@dataclass
class _Planned:
    request: FileWrite
    current: bytes | None  # on disk before the write
    old: str | None
    content: str
    outcome: WriteOutcome
    too_large: bool = False
    uri: str = ""


@dataclass
class WriteAnswer:
    text: str
    data: dict[str, Any]


Quote = Callable[[str], str]


class VerifiedWriter:
    """Verified writes over one hub session. `display` names a path for the answer; `quote` marks repository
    text; `on_disk` is told the moment the first byte reaches the disk (the caller never retries such a call)."""

    def __init__(self, workspace: query.Workspace, files: ConfinedRoot, *, timeout: float, quote: Quote,
                 display: Callable[[str | Path], str], on_disk: Callable[[], None] = lambda: None) -> None:
        self.workspace = workspace
        self.files = files
        self.timeout = timeout
        self.quote = quote
        self.display = display
        self.on_disk = on_disk
        self._languages: dict[str, Any] | None = None

    # ============================================================================================ the write
    def write(self, requests: list[FileWrite], *, force: bool = False, check_syntax: bool = True,
              format_files: bool = True, journal: UndoJournal | None = None, fixes: bool = True) -> WriteAnswer:
        deadline = time.monotonic() + self.timeout
        targets = sorted({request.target for request in requests})
        with contextlib.ExitStack() as locks:
            try:
                for target in targets:  # one order for every writer: no two of them wait on each other
                    locks.enter_context(write_lock.exclusive(target, max(1.0, deadline - time.monotonic())))
            except write_lock.WriteLockError as error:
                raise WriteRefused(f"not written: {error}") from None
            return self._write_locked(requests, force=force, check_syntax=check_syntax, format_files=format_files,
                                      journal=journal, deadline=deadline, fixes=fixes)

    def _write_locked(self, requests: list[FileWrite], *, force: bool, check_syntax: bool, format_files: bool,
                      journal: UndoJournal | None, deadline: float, fixes: bool) -> WriteAnswer:
        planned = [self._plan(request) for request in requests]
        # 0. Another client's unsaved changes in a file: a write would put the file under the user's edits.
        conflicts = self._unsaved_elsewhere(planned)
        if conflicts and not force:
            names = ", ".join(f"{self.display(query.uri_path(c['uri']))} ({c['client']})" for c in conflicts)
            raise WriteRefused(f"not written: another client has unsaved changes in {names}; the file is unchanged "
                               "(force writes it anyway)", {"written": False, "conflicts": conflicts})
        # 1. The syntax of every new text, before anything reaches the disk or the servers.
        for plan in planned:
            if not plan.request.remove:
                self._check_syntax(plan, refuse=check_syntax)
        # 2. The dependents, and their diagnostics as they are. The servers see the old texts first, so the new
        # ones reach them as a change: a type checker re-checks a changed file's importers, not an opened one's.
        for plan in planned:
            if plan.old is not None and not plan.too_large and not plan.outcome.unchanged:
                self.workspace.texts[str(plan.request.target)] = plan.old
                self.workspace.open(plan.request.target)
        dependents = Dependents(self, [plan.request.target for plan in planned], deadline)
        dependents.before()
        # 3. The servers see the new texts; a formatting server may reformat them (in memory).
        for plan in planned:
            self._show_servers(plan, format_files=format_files)
        # 4. All onto the disk, or none.
        self._write_all(planned, force=force)
        if journal is not None:
            with contextlib.suppress(OSError, write_lock.WriteLockError):
                journal.record([(plan.request.target, plan.current,
                                 None if plan.request.remove else plan.content.encode("utf-8"))
                                for plan in planned if not plan.outcome.unchanged])
        # 5. From here on the files are written, whatever happens: the answer says so and what was not checked.
        report = self._after_write(planned, deadline)
        dependents_report = dependents.after()
        applied_fixes: list[str] = []
        if fixes:
            applied_fixes = self._auto_fixes(planned, deadline)
            if applied_fixes:
                report = self._after_write(planned, deadline)
        answer = self._answer(planned, report, dependents_report, applied_fixes)
        if conflicts:
            answer.data["conflicts"] = conflicts
            answer.text += "\nwritten over unsaved changes in another client: " + ", ".join(
                f"{self.display(query.uri_path(c['uri']))} ({c['client']})" for c in conflicts)
        return answer

    def _unsaved_elsewhere(self, planned: list[_Planned]) -> list[dict[str, Any]]:
        """[{client, path, uri}] for each file to change that another session of the hub has unsaved changes in
        (`lspHub.unsavedElsewhere`); none from a hub that cannot tell."""
        uris = [plan.uri for plan in planned if not plan.outcome.unchanged]
        if not uris:
            return []
        try:
            found = self.command("lspHub.unsavedElsewhere", {"uris": uris})
        except (query.HubLost, HubTimeout):
            raise
        except QueryError as failure:  # an older hub without the command
            logger.info("cannot ask which files have unsaved changes elsewhere: %s", failure)
            return []
        return [{"client": entry.get("client"), "path": str(self.display(query.uri_path(entry["uri"]))),
                 "uri": entry["uri"]} for entry in found or [] if isinstance(entry, dict) and "uri" in entry]

    def _plan(self, request: FileWrite) -> _Planned:
        try:
            current: bytes | None = self.files.read(request.target).data
        except FileMissing:
            current = None
        except FileRefused as refusal:
            raise WriteRefused(str(refusal)) from None
        old: str | None = None
        if current is not None:
            with contextlib.suppress(UnicodeDecodeError):
                old = current.decode("utf-8")
        if request.expected is not None and old != request.expected:
            raise WriteRefused(f"not written: {self.display(request.target)} changed on disk since the servers read "
                               "it; ask again")
        content = "" if request.remove else request.build(old)
        outcome = WriteOutcome(str(request.target), created=current is None and not request.remove,
                               removed=request.remove)
        if old is not None and content == old and not request.remove:
            outcome.unchanged = True  # writing a file's own bytes changes no byte: no formatting either
        return _Planned(request, current, old, content, outcome, uri=path_uri(request.target))

    def _check_syntax(self, plan: _Planned, *, refuse: bool) -> None:
        target, outcome = plan.request.target, plan.outcome
        result = self.syntax(target, plan.content)
        plan.too_large = result.get("reason") == "too_large"
        if result.get("checked"):
            outcome.syntax_ok = bool(result.get("ok", True))
        elif plan.too_large:
            outcome.syntax_skipped_reason = (
                f"{self.display(target)} is {_size(result.get('size', len(plan.content)))}, over the "
                f"{_size(result.get('limit', 0))} limit for checks ([hub] max_document_bytes)")
        else:
            outcome.syntax_skipped_reason = str(result.get("reason") or "no parser for this language")
        if refuse and outcome.syntax_ok is False and result.get("errors"):
            problem = self.syntax_error_text(target, plan.content, result["errors"][0])
            outcome.format_skipped_reason = "syntax_error"
            raise WriteRefused(f"not written: {self.display(target)} would have a syntax error ({judge(result)}); "
                               f"the file is unchanged\n{problem}", outcome.as_json())

    def _show_servers(self, plan: _Planned, *, format_files: bool) -> None:
        """The servers see the new text (a file over the size limit is not sent: it would keep them busy for
        minutes), formatted in memory where a formatting server runs."""
        workspace, outcome = self.workspace, plan.outcome
        if plan.request.remove:
            return
        workspace.texts[str(plan.request.target)] = plan.content
        if plan.too_large:
            outcome.format_skipped_reason = "too_large"
            return
        workspace.open(plan.request.target)  # a change from the old text when it is open, else an open
        if outcome.unchanged:
            outcome.format_skipped_reason = "unchanged"
        elif format_files:
            plan.content = self.format(plan.request.target, plan.uri, plan.content, outcome, plan.old)

    def _write_all(self, planned: list[_Planned], *, force: bool) -> None:
        done: list[_Planned] = []
        for plan in planned:
            if plan.outcome.unchanged:
                continue
            self.on_disk()
            try:
                if plan.request.remove:
                    self.files.remove(plan.request.target)
                else:
                    self.files.write(plan.request.target, plan.content.encode("utf-8"), force=force)
            except FileRefused as refusal:
                restored = self._put_back(done)
                for each in planned:
                    self._restore_servers_text(each)
                message = str(refusal)
                if done:
                    message += (f"; the {len(done)} file(s) already written were put back" if restored else
                                "; putting back the files already written failed: " +
                                ", ".join(self.display(each.request.target) for each in done))
                raise WriteRefused(message, plan.outcome.as_json()) from None
            plan.outcome.written = True
            done.append(plan)

    def _put_back(self, done: list[_Planned]) -> bool:
        """A write that failed midway: the files it already wrote get their bytes back (or go, if it made them)."""
        ok = True
        for plan in reversed(done):
            try:
                if plan.current is None:
                    self.files.remove(plan.request.target)
                else:
                    self.files.write(plan.request.target, plan.current, force=True)
                plan.outcome.written = False
            except FileRefused:
                ok = False
        return ok

    def _restore_servers_text(self, plan: _Planned) -> None:
        """A write that did not land: the servers go back to the file's text (they were shown the new one), or
        forget a file that does not exist."""
        connection = self.workspace.connection
        if plan.uri not in connection.documents:
            return
        try:
            if plan.old is None or plan.current is None:
                connection.notify("textDocument/didClose", {"textDocument": {"uri": plan.uri}})
                del connection.documents[plan.uri]
            else:
                self.workspace.update(plan.uri, plan.old)
        except QueryError:
            pass

    def _after_write(self, planned: list[_Planned], deadline: float) -> dict[str, Any]:
        """Tell the servers, then every server's verdict on exactly the written texts."""
        try:
            connection = self.workspace.connection
            changes = []
            for plan in planned:
                if plan.request.remove:
                    if plan.uri in connection.documents:
                        connection.notify("textDocument/didClose", {"textDocument": {"uri": plan.uri}})
                        del connection.documents[plan.uri]
                    changes.append({"uri": plan.uri, "type": 3})
                    continue
                connection.notify("textDocument/didSave", {"textDocument": {"uri": plan.uri}})
                changes.append({"uri": plan.uri, "type": 1 if plan.outcome.created else 2})
            connection.notify("workspace/didChangeWatchedFiles", {"changes": changes})
            checked = [plan for plan in planned if not plan.too_large and not plan.request.remove]
            report: dict[str, Any] = {"diagnostics": [], "complete": True, "pending": [], "files": {}}
            if checked:
                report = self.diagnostics_of([str(plan.request.target) for plan in checked], deadline)
        except QueryError as error:
            report = {"diagnostics": [], "complete": False, "pending": [], "files": {}, "error": _sentence(error)}
        except Exception as error:  # a fault of ours after the write: the answer still says it was written
            logger.exception("diagnostics after writing %s", [str(plan.request.target) for plan in planned])
            report = {"diagnostics": [], "complete": False, "pending": [], "files": {},
                      "error": f"lsp-hub failed while asking for them ({type(error).__name__}: {error})"}
        for plan in planned:
            outcome = plan.outcome
            own = report.get("files", {}).get(str(plan.request.target))
            if plan.too_large:
                outcome.diagnostics_error = f"not sent to the servers: {outcome.syntax_skipped_reason}"
            elif report.get("error"):
                outcome.diagnostics_error = report["error"]
            elif own is not None:
                outcome.diagnostics, outcome.complete, outcome.pending = (own["diagnostics"], own["complete"],
                                                                          own["pending"])
                outcome.checked_by = list(own.get("checkedBy") or [])
                outcome.not_checked = list(own.get("notChecked") or [])
            if plan.request.remove:
                outcome.complete = True
        return report

    # ============================================================================================ the answer
    def _answer(self, planned: list[_Planned], report: dict[str, Any], dependents: dict[str, Any] | None,
                fixes: list[str]) -> WriteAnswer:
        lines = [self._summary(plan) for plan in planned]
        for plan in planned:
            if plan.outcome.format_diff:  # the agent's next edit must quote the text as it now is
                diff_lines = plan.outcome.format_diff.splitlines()
                shown = diff_lines[2:][:FORMAT_DIFF_LINES]
                more = len(diff_lines) - 2 - FORMAT_DIFF_LINES
                which = f" {self.display(plan.request.target)}" if len(planned) > 1 else ""
                lines.append(f"formatting changed{which}:\n" + "\n".join(shown) +
                             (f"\n... {more} more" if more > 0 else ""))
        if fixes:
            lines.append("applied: " + "; ".join(fixes))
        if any(plan.too_large for plan in planned) and not any(
                not plan.too_large and not plan.request.remove for plan in planned):
            lines.append(f"diagnostics not checked: {planned[0].outcome.diagnostics_error}")
        else:
            lines.append(self.diagnostics_text(report))
        if dependents is not None:
            lines.append(dependents_text(dependents, self.quote))
        if len(planned) == 1:
            data = planned[0].outcome.as_json()
        else:
            data = {"files": [plan.outcome.as_json() for plan in planned],
                    "written": any(plan.outcome.written for plan in planned),
                    "diagnostics": report.get("diagnostics", []), "complete": bool(report.get("complete")),
                    "pending": report.get("pending", [])}
            if report.get("error"):
                data["diagnostics_error"] = report["error"]
        if dependents is not None:
            data["dependents"] = dependents
        if fixes:
            data["applied_fixes"] = fixes
        return WriteAnswer("\n".join(line for line in lines if line), data)

    def _summary(self, plan: _Planned) -> str:
        outcome, target = plan.outcome, plan.request.target
        if plan.request.remove:
            return f"removed {self.display(target)}"
        content = plan.content
        count = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        parts = [f"{'created' if outcome.created else 'wrote'} {self.display(target)} "
                 f"({count} line{'' if count == 1 else 's'})"]
        if outcome.formatted:
            parts.append(formatted_text(outcome))
        elif outcome.format_skipped_reason not in (None, "off", "no_formatter", "unchanged"):
            parts.append(f"not formatted: {outcome.format_skipped_reason}")
        if outcome.syntax_ok is None:
            parts.append(f"syntax not checked ({outcome.syntax_skipped_reason or 'no parser for this language'})")
        if outcome.unchanged:
            parts.append("unchanged: the content is the file's own")
        return "; ".join(parts)

    def diagnostics_text(self, report: dict[str, Any], limit: int = 50) -> str:
        if report.get("error"):
            return f"diagnostics not checked: {report['error']}"
        # "no issues" only when a server checked; otherwise who could not, and why.
        return query.diagnostics_answer_text(report, limit, self.quote)

    # ============================================================================================ the hub
    def command(self, command: str, arguments: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> Any:
        return query.hub_command(self.workspace, command, arguments, timeout=timeout)

    def languages(self) -> dict[str, Any]:
        if self._languages is None:
            self._languages = query.hub_command(self.workspace, "lspHub.languages") or {}
        return self._languages

    def write_options(self) -> dict[str, Any]:
        return dict(self.languages().get("writes") or {})

    def language_of(self, target: Path) -> dict[str, Any] | None:
        return query.language_entry(list(self.languages().get("languages", [])), target)

    def syntax(self, path: Path, text: str) -> dict[str, Any]:
        return self.command("lspHub.syntaxCheck", {"uri": path_uri(path), "text": text}) or {}

    def syntax_problem(self, path: Path, text: str) -> str | None:
        """The first syntax error of `text` as `path:line:col — message` and its line, else None."""
        result = self.syntax(path, text)
        if not result.get("checked") or result.get("ok", True) or not result.get("errors"):
            return None
        return self.syntax_error_text(path, text, result["errors"][0])

    def syntax_error_text(self, path: Path, text: str, error: dict[str, Any]) -> str:
        start = error["range"]["start"]
        lines = text.split("\n")
        line_text = lines[start["line"]].rstrip("\r") if start["line"] < len(lines) else ""
        column = query.character_column(line_text, start["character"]) + 1
        pointer = f"\n    {start['line'] + 1} | {self.quote(line_text)}" if line_text.strip() else ""
        return f"{self.display(path)}:{start['line'] + 1}:{column} — {error['message']}{pointer}"

    def diagnostics_of(self, paths: list[str], deadline: float | None = None,
                       budget: float | None = None) -> dict[str, Any]:
        """Every server's diagnostics of `paths`, waited for together by the hub until shortly before this call's
        own deadline (or within `budget` seconds): the hub answers `complete: false` with what is pending rather
        than this side timing out. `files`: path -> {diagnostics, complete, pending}, or {error}."""
        remaining = (deadline if deadline is not None else time.monotonic() + self.timeout) - time.monotonic()
        wait = max(MIN_DIAGNOSTICS_WAIT_SECONDS, remaining - min(DIAGNOSTICS_MARGIN_SECONDS, remaining / 4))
        if budget is not None:
            wait = max(MIN_DIAGNOSTICS_WAIT_SECONDS, min(wait, budget))
        uris = [self.workspace.open(Path(path)) if Path(path).is_file() else path_uri(path) for path in paths]
        answer = self.command("lspHub.diagnostics", {"uris": uris, "timeoutMs": int(wait * 1000)},
                              timeout=wait + DIAGNOSTICS_MARGIN_SECONDS) or {}
        summary = query.DiagnosticsSummary()  # with who checked (checkedBy) and who could not (notChecked)
        files: dict[str, dict[str, Any]] = {}
        for path, report in zip(paths, answer.get("reports") or [], strict=False):
            summary.add(self.workspace, path, report)
            if report.get("error"):
                files[path] = {"diagnostics": [], "complete": False, "pending": [], "error": report["error"]}
                continue
            found = query.diagnostics_json(self.workspace, path, report.get("diagnostics") or [])
            files[path] = {**{key: value for key, value in report.items() if key not in ("diagnostics", "uri")},
                           "diagnostics": found, "complete": bool(report.get("complete")),
                           "pending": list(report.get("pending") or [])}
        return {**summary.as_json(), "files": files}

    # ============================================================================================ formatting
    def format(self, target: Path, uri: str, content: str, outcome: WriteOutcome, old: str | None) -> str:
        """The text formatted by the language's formatting server, in the project's style (`format_style`), when
        format_on_write is on. A write over an existing file (`old`) keeps every line the agent did not change: if
        formatting the whole file would change one, only the agent's changed lines are formatted
        (`textDocument/rangeFormatting`), or nothing is. The text as given when it is off, there is no formatter,
        it fails or it is late (the reason in `format_skipped_reason`)."""
        language = self.language_of(target)
        if language is None or not language.get("formatOnWrite", True):
            outcome.format_skipped_reason = "off" if language is not None else "no_formatter"
            return content
        style = format_style.project_style(target, self.files.root, old)
        options = style.lsp_options()
        outcome.format_options = {"options": options, "source": style.source,
                                  "files": [self.display(path) for path in style.config_files]}
        connection = self.workspace.connection
        try:
            edits = connection.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": options},
                                       min(self.timeout, FORMAT_TIMEOUT_SECONDS))
        except HubTimeout:
            outcome.format_skipped_reason = "timeout"
            return content
        except QueryError:
            outcome.format_skipped_reason = "formatter_failed"
            return content
        # Which server formatted (the hub asks the first in precedence order that formats); null from the hub is
        # also what it answers when none formats. Asked anew: a server may have started since.
        self._languages = None
        servers = (self.language_of(target) or {}).get("servers", [])
        outcome.formatter = next((server["name"] for server in servers if server.get("formats")), None)
        ranges_formatter = next((server["name"] for server in servers if server.get("formatsRanges")), None)
        if not edits:
            if outcome.formatter is None:
                outcome.format_skipped_reason = "no_formatter"
            else:
                outcome.format_scope = "file"
            return content
        try:
            formatted = query.apply_text_edits(content, edits)
        except (KeyError, TypeError, ValueError):
            outcome.format_skipped_reason = "formatter_failed"
            return content
        outcome.format_scope = "file"
        changed = format_style.changed_blocks(old, content) if old is not None else None
        if changed is not None and format_style.changes_outside(content, formatted, changed):
            # The hub asks rangeFormatting of the first server that offers it: only ask when that is the formatter.
            formatted = self._format_ranges(connection, uri, content, changed, options, outcome,
                                            ranges_formatter is not None and ranges_formatter == outcome.formatter)
        if formatted == content:
            return content
        if self.syntax_problem(target, formatted) is not None:
            outcome.format_skipped_reason = "formatter_failed"  # never write a formatter's broken output
            outcome.format_scope = "none"
            self.workspace.update(uri, content)
            return content
        self.workspace.texts[str(target)] = formatted
        self.workspace.update(uri, formatted)
        outcome.formatted = True
        name = self.display(target)
        outcome.format_diff = "".join(difflib.unified_diff(
            content.splitlines(keepends=True), formatted.splitlines(keepends=True), f"a/{name}", f"b/{name}", n=0))
        return formatted

    def _format_ranges(self, connection: HubConnection, uri: str, content: str,
                       changed: list[format_style.LineBlock], options: dict[str, Any], outcome: WriteOutcome,
                       formatter_formats_ranges: bool) -> str:
        """`content` with only its `changed` blocks formatted (one rangeFormatting request each), if the formatter
        formats ranges and its edits stay inside the blocks; else `content`, with the reason."""
        outcome.format_scope, outcome.format_skipped_reason = "none", "would_change_untouched_lines"
        blocks = [block for block in changed if block.end > block.start]
        if not blocks or not formatter_formats_ranges:
            return content
        deadline = time.monotonic() + min(self.timeout, FORMAT_TIMEOUT_SECONDS)
        edits: list[dict[str, Any]] = []
        for block in blocks:
            try:
                answer = connection.request("textDocument/rangeFormatting", {
                    "textDocument": {"uri": uri}, "range": format_style.block_range(block, content),
                    "options": options}, max(0.1, deadline - time.monotonic()))
            except HubTimeout:
                outcome.format_skipped_reason = "timeout"
                return content
            except QueryError:
                return content
            edits.extend(answer or [])
        try:
            if format_style.edits_overlap(edits):
                return content
            formatted = query.apply_text_edits(content, edits)
        except (KeyError, TypeError, ValueError):
            return content
        if format_style.changes_outside(content, formatted, changed):
            return content
        outcome.format_scope, outcome.format_skipped_reason = "ranges", None
        return formatted

    # ============================================================================================ fixes
    def _auto_fixes(self, planned: list[_Planned], deadline: float) -> list[str]:
        """With auto_code_actions on for a file's language: the code actions its servers mark preferred or offer
        as source.fixAll / source.organizeImports, applied to the written text, checked and written; their titles."""
        applied: list[str] = []
        for plan in planned:
            if not plan.outcome.written or plan.request.remove or plan.too_large:
                continue
            language = self.language_of(plan.request.target) or {}
            if not language.get("autoCodeActions"):
                continue
            applied.extend(self._fix_file(plan, deadline))
        return applied

    def _fix_file(self, plan: _Planned, deadline: float) -> list[str]:
        connection, target = self.workspace.connection, plan.request.target
        text = plan.content
        lines = text.split("\n")
        whole = {"start": {"line": 0, "character": 0},
                 "end": {"line": len(lines) - 1, "character": len(lines[-1].encode("utf-16-le")) // 2}}
        diagnostics = [diagnostic for diagnostic in _raw_diagnostics(self, plan.uri)]
        try:
            actions = connection.request("textDocument/codeAction", {
                "textDocument": {"uri": plan.uri}, "range": whole,
                "context": {"diagnostics": diagnostics, "only": ["quickfix", *AUTO_FIX_KINDS]}},
                max(0.5, min(self.timeout, deadline - time.monotonic()))) or []
        except QueryError:
            return []
        applied: list[str] = []
        for action in actions:
            if not isinstance(action, dict) or "edit" not in action:
                continue
            kind = str(action.get("kind") or "")
            if not (action.get("isPreferred") or any(kind == wanted or kind.startswith(wanted + ".")
                                                     for wanted in AUTO_FIX_KINDS)):
                continue
            edits = query.workspace_edit_files(action["edit"]).get(str(target))
            if not edits:
                continue
            try:
                fixed = query.apply_text_edits(text, edits)
            except (KeyError, TypeError, ValueError):
                continue
            if fixed == text or self.syntax_problem(target, fixed) is not None:
                continue
            text = fixed
            applied.append(f"{action.get('title', kind)} ({self.display(target)})")
            break  # the other actions' ranges were computed on the text before this one: ask again next write
        if not applied:
            return []
        try:
            self.files.write(target, text.encode("utf-8"), force=True)
        except FileRefused:
            return []
        plan.content = text
        self.workspace.texts[str(target)] = text
        self.workspace.update(plan.uri, text)
        connection.notify("textDocument/didSave", {"textDocument": {"uri": plan.uri}})
        return applied


def _raw_diagnostics(writer: VerifiedWriter, uri: str) -> list[dict[str, Any]]:
    """The hub's diagnostics of `uri` as LSP objects (code actions are asked with them)."""
    try:
        report = writer.command("lspHub.diagnostics", {"uri": uri, "timeoutMs": 0}) or {}
    except QueryError:
        return []
    return list(report.get("diagnostics") or [])


# ================================================================================================ dependents
class Dependents:
    """What a write broke or fixed in the files that depend on the written ones."""

    def __init__(self, writer: VerifiedWriter, targets: list[Path], deadline: float) -> None:
        self.writer = writer
        self.targets = targets
        self.deadline = deadline
        self.paths: list[str] = []
        self.found: dict[str, Any] = {}
        self.budget = 0.0
        self.started = 0.0
        self.before_report: dict[str, Any] = {}
        self.skipped: str | None = None

    def before(self) -> None:
        options = self.writer.write_options()
        limit = int(options.get("dependentsLimit", 20))
        self.budget = float(options.get("dependentsTimeoutMs", 8000)) / 1000
        self.started = time.monotonic()
        if limit <= 0:
            self.skipped = "off"
            return
        try:
            self.found = self.writer.command("lspHub.dependents", {
                "files": [str(target) for target in self.targets], "limit": limit}) or {}
        except QueryError as error:
            self.skipped = _sentence(error)
            return
        self.paths = [str(self.writer.files.root / entry["path"]) for entry in self.found.get("files", [])]
        if not self.paths:
            return
        try:
            self.before_report = self.writer.diagnostics_of(self.paths, self.deadline, budget=self.budget / 2)
        except QueryError as error:
            self.skipped = _sentence(error)

    def after(self) -> dict[str, Any] | None:
        if self.skipped == "off":
            return None
        if self.skipped is not None:
            return {"checked": [], "new": [], "resolved": [], "pending": [], "complete": False,
                    "error": self.skipped}
        if not self.paths:
            return {"checked": [], "new": [], "resolved": [], "pending": [], "complete": bool(
                self.found.get("complete", True)), "files": []}
        remaining = self.budget - (time.monotonic() - self.started)
        try:
            after = self.writer.diagnostics_of(self.paths, self.deadline, budget=max(0.0, remaining))
        except QueryError as error:
            return {"checked": [], "new": [], "resolved": [], "pending": [self.writer.display(path) for path in
                                                                           self.paths],
                    "complete": False, "error": _sentence(error)}
        checked, pending, not_checked = [], [], []
        new: list[dict[str, Any]] = []
        resolved: list[dict[str, Any]] = []
        for path in self.paths:
            shown = self.writer.display(path)
            now = after["files"].get(path) or {}
            was = self.before_report.get("files", {}).get(path) or {}
            if now.get("error"):
                not_checked.append({"path": shown, "reason": now["error"]})
                continue
            if now.get("checkedBy"):
                checked.append(shown)
            else:
                reasons = [entry for entry in now.get("notChecked") or []
                           if entry.get("reason") not in ("timeout", "starting")]
                if reasons:  # nobody can check it: no server for its language, or it is missing or failed
                    not_checked.append({"path": shown, "reason": "; ".join(
                        query.not_checked_phrase(entry) for entry in reasons)})
                else:
                    pending.append(shown)
            before_keys = {_key(diagnostic) for diagnostic in was.get("diagnostics", [])}
            after_keys = {_key(diagnostic) for diagnostic in now.get("diagnostics", [])}
            new.extend({**diagnostic, "path": shown} for diagnostic in now.get("diagnostics", [])
                       if _key(diagnostic) not in before_keys)
            resolved.extend({**diagnostic, "path": shown} for diagnostic in was.get("diagnostics", [])
                            if _key(diagnostic) not in after_keys)
        report = {"checked": checked, "new": new, "resolved": resolved, "pending": pending,
                  "complete": not pending and not not_checked and bool(after.get("complete")) and bool(
                      self.found.get("complete", True)),
                  "files": [{"path": self.writer.display(path), "reasons": entry.get("reasons", [])}
                            for path, entry in zip(self.paths, self.found.get("files", []), strict=False)]}
        if not_checked:
            report["notChecked"] = not_checked
        if self.found.get("capped"):
            report["notCheckedBeyondLimit"] = self.found["capped"]
        if after.get("pending"):
            report["pendingServers"] = after["pending"]
        return report


def _key(diagnostic: dict[str, Any]) -> tuple[Any, ...]:
    return (diagnostic.get("path"), diagnostic.get("line"), diagnostic.get("column"), diagnostic.get("source"),
            diagnostic.get("code"), diagnostic.get("message"))


def dependents_text(report: dict[str, Any], quote: Quote) -> str:
    """`[dependents] N new issue(s) in M other file(s):` and their lines, or what was checked and found clean."""
    if report.get("error"):
        return f"[dependents] not checked: {report['error']}"
    checked, new, resolved = report["checked"], report["new"], report["resolved"]
    lines: list[str] = []
    if new:
        files = {diagnostic["path"] for diagnostic in new}
        lines.append(f"[dependents] {len(new)} new issue(s) in {len(files)} other file(s):")
        rank = {"error": 0, "warning": 1, "information": 2, "hint": 3}
        ordered = sorted(new, key=lambda d: (rank.get(d.get("severity", "error"), 0), d["path"], d["line"]))
        for diagnostic in ordered[:DEPENDENT_LINES]:
            message = " ".join(diagnostic["message"].split())
            source = f" [{diagnostic['source']}]" if diagnostic.get("source") else ""
            severity = "" if diagnostic.get("severity", "error") == "error" else f"{diagnostic['severity']}: "
            lines.append(f"  {diagnostic['path']}:{diagnostic['line']}:{diagnostic['column']} — {severity}"
                         f"{quote(message)}{source}")
        if len(new) > DEPENDENT_LINES:
            lines.append(f"  ... {len(new) - DEPENDENT_LINES} more")
    elif checked:
        lines.append(f"[dependents] no new issues in {len(checked)} other file(s) that depend on this")
    elif not report.get("pending") and not report.get("notChecked"):
        lines.append("[dependents] no other file depends on this (by the index)")
    if resolved:
        lines.append(f"[dependents] {len(resolved)} issue(s) resolved in other files")
    if report.get("pending"):
        lines.append(f"[dependents] not checked in time: {', '.join(report['pending'][:10])}")
    for item in report.get("notChecked", [])[:5]:
        lines.append(f"[dependents] not checked: {item['path']}: {item['reason']}")
    if report.get("notCheckedBeyondLimit"):
        lines.append(f"[dependents] {report['notCheckedBeyondLimit']} more dependent(s) not checked "
                     "([hub] dependents_limit)")
    return "\n".join(lines)


# ================================================================================================ helpers
def judge(result: dict[str, Any]) -> str:
    """Which parser judged a syntax check: `cpython-3.11`, `typescript-5.9.3`, `json`, `tree-sitter python`."""
    checker, language = result.get("checker"), result.get("language")
    return f"{checker} {language}" if checker in (None, "tree-sitter") and language else str(checker or language)


def formatted_text(outcome: WriteOutcome) -> str:
    """`formatted by ruff (4 spaces, inferred from the file)`, `the changed lines formatted by ... (2 spaces, from
    web/.editorconfig)`: what was formatted, and where the indentation asked for came from."""
    text = f"formatted by {outcome.formatter or 'its formatting server'}"
    if outcome.format_scope == "ranges":
        text = "the changed lines " + text
    if outcome.format_options is not None:
        options, source, files = (outcome.format_options[key] for key in ("options", "source", "files"))
        width = f"{options['tabSize']} spaces" if options["insertSpaces"] else "tabs"
        where = files[-1] if files and "+" not in source else None
        origin = ("by default" if source == "default" else f"inferred from {where or 'the file'}"
                  if source == "inferred" else f"from {where or source}")
        text += f" ({width}, {origin})"
    return text


def _size(count: Any) -> str:
    size = float(count) if isinstance(count, int | float) else 0.0
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} KB"


def _sentence(error: QueryError) -> str:
    text = str(error)
    for prefix in ("lsp-hub query: ",):
        text = text.removeprefix(prefix)
    return text.replace(" (raise it with --timeout)", "").replace(" (see --root)", "")


# ================================================================================================ the file's form
def line_ending(text: str) -> str:
    """The file's line end: "\\r\\n" when most of its lines end so, else "\\n"."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def with_line_ends(text: str, ending: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", ending)


def conform(new: str, old: str) -> str:
    """`new` in the form of the file it replaces: its line ends (an agent writes "\\n"), its byte-order mark and
    its final newline. What the agent wrote is otherwise left as it is."""
    ending = line_ending(old)
    if ending == "\r\n" and "\r\n" not in new:
        new = with_line_ends(new, "\r\n")
    if old.startswith("\ufeff") and not new.startswith("\ufeff"):
        new = "\ufeff" + new
    if old.endswith(("\n", "\r\n")) and new and not new.endswith("\n"):
        new += ending
    return new


def replace_once(old: str, old_text: str, new_text: str, where: str) -> str:
    """`old` with `old_text` (which must occur exactly once; either line end matches) replaced by `new_text` in the
    file's own line ends. Raises WriteRefused saying how often it occurs."""
    find, replace = old_text, new_text
    count = old.count(find)
    crlf = line_ending(old) == "\r\n"
    if crlf:  # an agent writes "\n" (or copies "\r\n"); what it inserts takes the file's line ends
        replace = with_line_ends(replace, "\r\n")
    if count == 0 and crlf:
        find = with_line_ends(find, "\r\n")
        count = old.count(find)
    elif count == 0 and "\r\n" in find:
        find, replace = find.replace("\r\n", "\n"), replace.replace("\r\n", "\n")
        count = old.count(find)
    if count != 1:
        raise WriteRefused(f"old_text was not found in {where}; nothing written (read the file again)" if count == 0
                           else f"old_text occurs {count} times in {where}; nothing written (include more "
                                "surrounding lines so it occurs once)")
    return conform(old.replace(find, replace, 1), old)


# ================================================================================================ what is asked
def writing(content: str) -> Callable[[str | None], str]:
    """write_file's new text: the content, in the form (line ends, byte-order mark, final newline) of the file it
    replaces."""
    return lambda old: content if old is None else conform(content, old)


def editing(target: Path, old_text: str, new_text: str,
            display: Callable[[str | Path], str]) -> Callable[[str | None], str]:
    """edit_file's new text: `old_text` (exactly once) replaced."""

    def edit(old: str | None) -> str:
        if old is None:
            raise WriteRefused(f"{display(target)} is not UTF-8 text (or does not exist); old_text cannot be found "
                               "in it (write_file can replace it)")
        return replace_once(old, old_text, new_text, display(target))

    return edit


def edit_requests(edits: Any, resolve: Callable[[str, bool], Path],
                  display: Callable[[str | Path], str]) -> list[FileWrite]:
    """apply_edits' list ({path, old_text, new_text} | {path, content}) as one request per file, its edits
    applied in order. `resolve(name, must_exist)` names a file inside the workspace or raises."""
    if not isinstance(edits, list) or not edits:
        raise WriteRefused("apply_edits needs edits: a list of {path, old_text, new_text} or {path, content}")
    per_file: dict[Path, list[dict[str, Any]]] = {}
    for number, edit in enumerate(edits, 1):
        if not isinstance(edit, dict) or not isinstance(edit.get("path"), str):
            raise WriteRefused(f"edit {number}: give path, and old_text with new_text, or content")
        has_content = isinstance(edit.get("content"), str)
        has_replace = isinstance(edit.get("old_text"), str) and isinstance(edit.get("new_text"), str)
        if has_content == has_replace:
            raise WriteRefused(f"edit {number} ({edit['path']}): give either old_text with new_text, or content")
        if has_replace and not edit["old_text"]:
            raise WriteRefused(f"edit {number} ({edit['path']}): old_text is empty")
        target = resolve(edit["path"], False)
        if target.is_dir():
            raise WriteRefused(f"edit {number}: {edit['path']} is a directory")
        if has_replace and target not in per_file and not target.is_file():
            raise WriteRefused(f"edit {number}: {edit['path']}: no such file in the workspace")
        per_file.setdefault(target, []).append(edit)

    def chain(target: Path, file_edits: list[dict[str, Any]]) -> Callable[[str | None], str]:
        def build(old: str | None) -> str:
            text = old
            for edit in file_edits:
                text = (writing(edit["content"])(text) if "content" in edit else
                        editing(target, edit["old_text"], edit["new_text"], display)(text))
            return text or ""

        return build

    return [FileWrite(target, chain(target, file_edits)) for target, file_edits in per_file.items()]


def undo_last(writer: VerifiedWriter, journal: UndoJournal) -> WriteAnswer:
    """Take back the journal's last write: each file back to its bytes before (a file it created, removed),
    refused with the names of files changed since (undo_journal.NothingToUndo)."""
    entry = journal.last()
    journal.check_unchanged(entry, writer.files)
    requests = [FileWrite(Path(item.path), _restoring(item.before), remove=item.before is None)
                for item in entry.files]
    answer = writer.write(requests, force=True, check_syntax=False, format_files=False, journal=None, fixes=False)
    journal.forget(entry)
    names = [writer.display(item.path) for item in entry.files]
    return WriteAnswer(f"undid the write of {', '.join(names)}\n{answer.text}", {**answer.data, "undone": names})


def _restoring(before: bytes | None) -> Callable[[str | None], str]:
    def build(_old: str | None) -> str:
        if before is None:
            return ""
        try:
            return before.decode("utf-8")
        except UnicodeDecodeError:
            raise WriteRefused("cannot undo: the file held bytes that are not UTF-8 text before that write") from None

    return build

