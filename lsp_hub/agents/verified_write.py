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
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_hub.agents import query, write_lock
from lsp_hub.agents.query import HubTimeout, QueryError, path_uri
from lsp_hub.agents.query.project_setup import setup_notes
from lsp_hub.agents.undo_journal import UndoJournal

# The parts of a verified write, in their own modules; every name stays importable from here.
from lsp_hub.agents.write_dependents import DEPENDENT_LINES, Dependents, changed_names, dependents_text
from lsp_hub.agents.write_fixes import AUTO_FIX_KINDS, auto_fixes
from lsp_hub.agents.write_format import FORMAT_TIMEOUT_SECONDS, format_written
from lsp_hub.agents.write_outcome import (
    FileWrite,
    Quote,
    WriteAnswer,
    WriteOutcome,
    WriteRefused,
    formatted_text,
    judge,
)
from lsp_hub.agents.write_outcome import Planned as _Planned
from lsp_hub.agents.write_outcome import sentence as _sentence
from lsp_hub.agents.write_outcome import size_text as _size
from lsp_hub.agents.write_requests import (
    conform,
    edit_requests,
    editing,
    line_ending,
    replace_once,
    with_line_ends,
    writing,
)
from lsp_hub.agents.write_requests import restoring as _restoring
from lsp_hub.platform.confined_files import ConfinedRoot, FileMissing, FileRefused

__all__ = [
    "AUTO_FIX_KINDS", "DEPENDENT_LINES", "DIAGNOSTICS_MARGIN_SECONDS", "FORMAT_DIFF_LINES", "FORMAT_TIMEOUT_SECONDS",
    "MIN_DIAGNOSTICS_WAIT_SECONDS", "Dependents", "FileWrite", "Quote", "VerifiedWriter", "WriteAnswer",
    "WriteOutcome", "WriteRefused", "conform", "dependents_text", "edit_requests", "editing", "formatted_text",
    "judge", "line_ending", "replace_once", "undo_last", "with_line_ends", "writing",
]

logger = logging.getLogger("lsp_hub.writes")

FORMAT_DIFF_LINES = 12  # of the formatting diff shown in a write's answer
# The hub's wait for diagnostics ends this long (at most) before the call's own deadline, so it answers with what is
# pending instead of this side timing out; it waits at least the minimum.
DIAGNOSTICS_MARGIN_SECONDS = 1.0
MIN_DIAGNOSTICS_WAIT_SECONDS = 0.2


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
        dependents = Dependents(self, [plan.request.target for plan in planned], deadline,
                                changed_names([(plan.old, plan.content) for plan in planned]))
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
        notes = setup_notes(self.files.root, [plan.request.target for plan in planned if not plan.request.remove],
                            report.get("diagnostics") or [])
        lines.extend(f"(setup: {note})" for note in notes)  # what the project lacks, so that diagnostics mislead
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
        if notes:
            data["setupNotes"] = notes
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
        """The text formatted in the project's style, or as given (`write_format.format_written`)."""
        return format_written(self, target, uri, content, outcome, old)

    def forget_languages(self) -> None:
        """Ask the hub its languages anew (a server may have started since)."""
        self._languages = None

    # ============================================================================================ fixes
    def _auto_fixes(self, planned: list[_Planned], deadline: float) -> list[str]:
        """The servers' preferred fixes, applied and verified (`write_fixes.auto_fixes`); their titles."""
        return auto_fixes(self, planned, deadline)


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
