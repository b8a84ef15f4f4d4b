"""What a verified write broke or fixed in the files that depend on the written ones (`verified_write`): their
diagnostics before and after (`Dependents`), and the lines of the answer about them (`dependents_text`). Standard
library only, like `query`."""

from __future__ import annotations

import re
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any, Protocol

from lsp_hub.agents import query
from lsp_hub.agents.query import QueryError
from lsp_hub.agents.write_outcome import Quote
from lsp_hub.agents.write_outcome import sentence as _sentence
from lsp_hub.platform.confined_files import ConfinedRoot

DEPENDENT_LINES = 20  # new dependents' diagnostics shown in a write's text
MAX_CHANGED_NAMES = 500  # identifiers of the changed lines sent to rank the dependents (a new file's are many)
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


def changed_names(texts: list[tuple[str | None, str]]) -> list[str]:
    """The identifiers on the lines a write changes, removed or added ((old, new) text per file; old None for a new
    file): the dependents that use one of them are checked first (`lspHub.dependents` {names})."""
    names: dict[str, None] = {}
    for old, new in texts:
        for line in set((old or "").splitlines()).symmetric_difference(new.splitlines()):
            names.update(dict.fromkeys(_IDENTIFIER.findall(line)))
    return list(names)[:MAX_CHANGED_NAMES]


class DependentsWriter(Protocol):
    """What `Dependents` asks of the writer (`verified_write.VerifiedWriter`)."""

    files: ConfinedRoot

    def command(self, command: str, arguments: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> Any: ...

    def write_options(self) -> dict[str, Any]: ...

    def display(self, path: str | Path) -> str: ...

    def diagnostics_of(self, paths: list[str], deadline: float | None = None,
                       budget: float | None = None) -> dict[str, Any]: ...


# ================================================================================================ dependents
class Dependents:
    """What a write broke or fixed in the files that depend on the written ones."""

    def __init__(self, writer: DependentsWriter, targets: list[Path], deadline: float,
                 changed: list[str] | None = None) -> None:
        self.writer = writer
        self.targets = targets
        self.changed = changed or []  # identifiers on the changed lines: their users are checked first
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
            asked: dict[str, Any] = {"files": [str(target) for target in self.targets], "limit": limit}
            if self.changed:
                asked["names"] = self.changed
            self.found = self.writer.command("lspHub.dependents", asked) or {}
        except QueryError as error:
            self.skipped = _sentence(error)
            return
        self.paths = [str(self.writer.files.root / entry["path"]) for entry in self.found.get("files", [])]
        if not self.paths:
            return
        try:
            self.before_report = self._diagnostics(self.budget / 2)
        except QueryError as error:
            self.skipped = _sentence(error)

    def _diagnostics(self, budget: float) -> dict[str, Any]:
        """The dependents' diagnostics within `budget` seconds, those using a name the write changes asked first and
        alone: a checker given twenty files at once may give its verdict on the one that matters last, after the
        budget (on click, basedpyright checked core.py alone in 2-3 s, and not among twenty within 4 s)."""
        using_changed = {str(self.writer.files.root / entry["path"]) for entry in self.found.get("files", [])
                         if entry.get("changed")}
        first = [path for path in self.paths if path in using_changed]
        rest = [path for path in self.paths if path not in using_changed]
        if not first or not rest:
            return self.writer.diagnostics_of(self.paths, self.deadline, budget=budget)
        started = time.monotonic()
        report = self.writer.diagnostics_of(first, self.deadline, budget=budget)
        left = budget - (time.monotonic() - started)
        others = self.writer.diagnostics_of(rest, self.deadline, budget=max(0.0, left))
        return {**others, "files": {**report.get("files", {}), **others.get("files", {})},
                "complete": bool(report.get("complete")) and bool(others.get("complete")),
                "pending": sorted({*report.get("pending", []), *others.get("pending", [])})}

    def after(self) -> dict[str, Any] | None:
        if self.skipped == "off":
            return None
        if self.skipped is not None:
            return {"checked": [], "new": [], "resolved": [], "pending": [], "complete": False,
                    "error": self.skipped}
        broken = self._broken_imports()
        if self.paths:
            report = self._servers_report()
        else:
            report = {"checked": [], "new": [], "resolved": [], "pending": [], "complete": bool(
                self.found.get("complete", True)), "files": []}
        _merge_broken_imports(report, broken)
        return report

    def _broken_imports(self) -> list[dict[str, Any]]:
        """The imports of the written files' names that the write broke, by the index (`lspHub.importedNames`,
        asked before and after): a name imported from a written file, or used through an import of it (`lib.price`),
        that it provided before and not after, or whose import no longer finds the file at all in an importer that
        did not change. Certain, and known at once: no server needs to finish."""
        before = [entry for entry in self.found.get("importedNames") or [] if entry.get("provided")]
        versions = self.found.get("importerVersions") or {}
        if not before:
            return []
        uses: dict[str, list[str]] = {}
        for entry in before:
            if entry.get("use"):
                uses.setdefault(entry["path"], []).append(entry["name"])
        try:
            asked: dict[str, Any] = {"files": [str(target) for target in self.targets], "importers": sorted(versions)}
            if uses:
                asked["uses"] = uses
            answer = self.writer.command("lspHub.importedNames", asked) or {}
        except QueryError:  # a hub without the command, or one that failed: the servers' verdicts stand alone
            return []
        now = {(entry["path"], entry["line"], entry["column"], entry["name"]): entry
               for entry in answer.get("importedNames") or []}
        unchanged = {path for path, version in (answer.get("importerVersions") or {}).items()
                     if versions.get(path) == version}
        if self.found.get("importedNamesCapped") or answer.get("importedNamesCapped"):
            unchanged = set()  # capped answers may leave out different entries: judge only those in both
        root = self.writer.files.root
        broken = []
        modules_gone = set()  # (importer, file) whose module import broke: its uses through it are that one issue
        for entry in before:
            after = now.get((entry["path"], entry["line"], entry["column"], entry["name"]))
            if after is None and entry["path"] not in unchanged:
                continue  # another client changed the importer meanwhile: not the write's doing to judge
            if after is not None and after.get("provided"):
                continue
            if entry.get("module"):
                modules_gone.add((entry["path"], entry["from"]))
            elif entry.get("via") and (entry["path"], entry["from"]) in modules_gone:
                continue
            message, severity = _break_message(entry, after, root)
            broken.append({"path": self.writer.display(root / entry["path"]), "line": entry["line"],
                           "column": entry["column"], "end_line": entry["endLine"],
                           "end_column": entry.get("endColumn", entry["column"]), "severity": severity,
                           "source": "lsp-hub", "code": "unresolved-use" if entry.get("use") else "broken-import",
                           "message": message, "name": entry["name"]})
        return broken

    def _servers_report(self) -> dict[str, Any]:
        # The after half is the dependents' own: the written files' check before it (the same busy server) took
        # all of it on click (4.6 s of 8), and basedpyright then gave no verdict on any dependent after the write.
        remaining = max(self.budget / 2, self.budget - (time.monotonic() - self.started))
        try:
            after = self._diagnostics(remaining)
        except QueryError as error:
            return {"checked": [], "new": [], "resolved": [], "pending": [self.writer.display(path) for path in
                                                                           self.paths],
                    "complete": False, "error": _sentence(error)}
        checked, pending, not_checked = [], [], []
        new: list[dict[str, Any]] = []
        unknown_age: list[dict[str, Any]] = []  # from a server without a verdict on the file both before and after
        without_verdict_files: list[dict[str, Any]] = []
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
            # An issue is new only from a server that gave its verdict on the file both before and after the write:
            # one still starting or loading on a cold daemon may have had none before (its issues may be old), or
            # none yet after (what it shows is about the old text).
            both = {name.lower() for name in set(was.get("checkedBy") or []) & set(now.get("checkedBy") or [])}
            server_of = _servers_by_source(was, now)
            # A server with no verdict after the write on a file another server did check: what it shows there is
            # from before the write. Named even when nothing of it differs (on click, basedpyright's core.py looked
            # checked and clean while its verdict on the signature change was still to come).
            without_verdict: set[str] = set()
            if now.get("checkedBy"):
                late = set(now.get("pending") or []) | (set(was.get("checkedBy") or []) - set(now["checkedBy"]))
                without_verdict.update(str(name) for name in late)
            for diagnostic in now.get("diagnostics", []):
                if _key(diagnostic) in before_keys:
                    continue
                source = str(diagnostic.get("source") or "")
                server = server_of.get(source, source)
                if server.lower() in both:
                    new.append({**diagnostic, "path": shown})
                else:
                    unknown_age.append({**diagnostic, "path": shown})
                    without_verdict.add(server)
            if without_verdict:
                without_verdict_files.append({"path": shown, "servers": sorted(without_verdict)})
            resolved.extend({**diagnostic, "path": shown} for diagnostic in was.get("diagnostics", [])
                            if _key(diagnostic) not in after_keys)
        report = {"checked": checked, "new": new, "unknownAge": unknown_age, "resolved": resolved, "pending": pending,
                  "complete": not pending and not not_checked and not unknown_age and not without_verdict_files
                  and bool(after.get("complete"))
                  and bool(self.found.get("complete", True)),
                  "files": [{"path": self.writer.display(path), "reasons": entry.get("reasons", []),
                             **({"changed": entry["changed"]} if entry.get("changed") else {})}
                            for path, entry in zip(self.paths, self.found.get("files", []), strict=False)]}
        if not_checked:
            report["notChecked"] = not_checked
        if without_verdict_files:
            report["withoutVerdict"] = without_verdict_files
        if self.found.get("capped"):
            report["notCheckedBeyondLimit"] = self.found["capped"]
        if after.get("pending"):
            report["pendingServers"] = after["pending"]
        return report


def _break_message(entry: dict[str, Any], after: dict[str, Any] | None, root: Path) -> tuple[str, str]:
    """The sentence and severity of one broken import or use (`lspHub.importedNames`' entry before the write)."""
    name, source = entry["name"], entry["from"]
    shown = f"{entry['via']}.{name}" if entry.get("via") else name
    if entry.get("use"):  # C, Go...: the use means whichever file defines the name, and none does now
        return f"uses {shown}, which no file defines any more ({source} did)", "error"
    verb, what = ("uses", f"{shown} from {source}") if entry.get("via") else (
        "imports", source if entry.get("module") else f"{name} from {source}")
    if not (root / source).exists():
        return f"{verb} {what}, which no longer exists", "error"
    if after is not None and after.get("dynamic"):  # a module __getattr__ may serve it: not certain
        return f"{verb} {what}, which no longer defines it (only its module __getattr__ could still provide it)", \
            "warning"
    return f"{verb} {what}, which no longer provides it", "error"


def _merge_broken_imports(report: dict[str, Any], broken: list[dict[str, Any]]) -> None:
    """Add the index's broken imports to `new`, once: where a server reported the same import (on its lines,
    naming the name), the server's own issue stands, moved to `new` from `unknownAge` if it was there, since the
    index knows it is new."""
    unknown_age = report.get("unknownAge") or []

    def same(diagnostic: dict[str, Any], issue: dict[str, Any]) -> bool:
        return (diagnostic["path"] == issue["path"] and issue["line"] <= diagnostic["line"] <= issue["end_line"]
                and issue["name"] in diagnostic["message"])

    for issue in broken:
        if any(same(diagnostic, issue) for diagnostic in report["new"]):
            continue
        known = [diagnostic for diagnostic in unknown_age if same(diagnostic, issue)]
        if known:
            report["new"].extend(known)
            unknown_age[:] = [diagnostic for diagnostic in unknown_age if diagnostic not in known]
        else:
            report["new"].append({key: value for key, value in issue.items() if key != "name"})


def _issue_lines(diagnostics: list[dict[str, Any]], quote: Quote, first: Collection[str] = ()) -> list[str]:
    """The first DEPENDENT_LINES issues as `path:line:col — message [source]`: those in the files `first` ahead,
    then errors first."""
    rank = {"error": 0, "warning": 1, "information": 2, "hint": 3}
    ordered = sorted(diagnostics, key=lambda d: (d["path"] not in first, rank.get(d.get("severity", "error"), 0),
                                                 d["path"], d["line"]))
    lines = []
    for diagnostic in ordered[:DEPENDENT_LINES]:
        message = " ".join(diagnostic["message"].split())
        source = f" [{diagnostic['source']}]" if diagnostic.get("source") else ""
        severity = "" if diagnostic.get("severity", "error") == "error" else f"{diagnostic['severity']}: "
        lines.append(f"  {diagnostic['path']}:{diagnostic['line']}:{diagnostic['column']} — {severity}"
                     f"{quote(message)}{source}")
    if len(diagnostics) > DEPENDENT_LINES:
        lines.append(f"  ... {len(diagnostics) - DEPENDENT_LINES} more")
    return lines


def _servers_by_source(*reports: dict[str, Any]) -> dict[str, str]:
    """`source` label -> the server that published it (the hub's `sourcesOf`): "Ruff" is ruff's, "ts" may be
    typescript-language-server's. A label no report names is taken for the server's own name."""
    return {source: server for report in reports for server, sources in (report.get("sourcesOf") or {}).items()
            for source in sources}


def _key(diagnostic: dict[str, Any]) -> tuple[Any, ...]:
    return (diagnostic.get("path"), diagnostic.get("line"), diagnostic.get("column"), diagnostic.get("source"),
            diagnostic.get("code"), diagnostic.get("message"))


def dependents_text(report: dict[str, Any], quote: Quote) -> str:
    """`[dependents] N new issue(s) in M other file(s):` and their lines, or what was checked and found clean."""
    if report.get("error"):
        return f"[dependents] not checked: {report['error']}"
    checked, new, resolved = report["checked"], report["new"], report["resolved"]
    unknown_age = report.get("unknownAge") or []
    lines: list[str] = []
    if new:
        files = {diagnostic["path"] for diagnostic in new}
        lines.append(f"[dependents] {len(new)} new issue(s) in {len(files)} other file(s):")
        lines.extend(_issue_lines(new, quote))
    if unknown_age:
        files = {diagnostic["path"] for diagnostic in unknown_age}
        servers = sorted({server for entry in report.get("withoutVerdict", []) for server in entry["servers"]})
        lines.append(f"[dependents] {len(unknown_age)} issue(s) in {len(files)} other file(s) from "
                     f"{', '.join(servers)}, which did not check them both before and after the write in time "
                     "(new or old):")
        # Of unknown age, the likeliest new ones first: in the files using a name the write changes.
        using_changed = {entry["path"] for entry in report.get("files", []) if entry.get("changed")}
        lines.extend(_issue_lines(unknown_age, quote, using_changed))
    late = {entry["path"]: entry["servers"] for entry in report.get("withoutVerdict", [])}
    if not new and not unknown_age:
        fully = [path for path in checked if path not in late]
        if fully:
            lines.append(f"[dependents] no new issues in {len(fully)} other file(s) that depend on this")
        elif not checked and not report.get("pending") and not report.get("notChecked"):
            lines.append("[dependents] no other file depends on this (by the index)")
    quiet = sorted(path for path in late if path not in {diagnostic["path"] for diagnostic in unknown_age})
    if quiet:  # late servers whose issues there did not change: said, never taken for a clean verdict
        servers = sorted({server for path in quiet for server in late[path]})
        lines.append(f"[dependents] no verdict after the write in time from {', '.join(servers)} on "
                     f"{', '.join(quiet[:10])}{' ...' if len(quiet) > 10 else ''}: what it shows there is from "
                     "before the write")
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
