"""What a query answers, in its two forms: the JSON object (`--json`, MCP's structuredContent) and the text for a
model or a person (`path:line:col  source line`, `[server] N issue(s):` blocks, `... N more`). Locations, symbols,
calls and diagnostics converted from LSP (0-based UTF-16) to 1-based character columns; several files'
diagnostics reports merged (`DiagnosticsSummary`: who checked, who could not and why). `cap_items` holds the JSON
to `limit` items, as the text is, and says what it left out."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_hub.agents.query.documents import Workspace
from lsp_hub.agents.query.options import DEFAULT_LIMIT
from lsp_hub.agents.query.positions import uri_path

SYMBOL_KINDS = {1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method", 7: "property",
                8: "field", 9: "constructor", 10: "enum", 11: "interface", 12: "function", 13: "variable",
                14: "constant", 15: "string", 16: "number", 17: "boolean", 18: "array", 19: "object", 20: "key",
                21: "null", 22: "enum-member", 23: "struct", 24: "event", 25: "operator", 26: "type-parameter"}
SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}
NOT_CHECKED_WORDS = {"missing": "is not installed", "disabled": "is disabled", "failed": "failed",
                     "starting": "was still starting", "timeout": "sent no report in time"}


@dataclass
class Answer:
    """What an action found: its JSON object, its text form, and whether it is empty (exit code 1)."""

    data: dict[str, Any]
    text: str
    empty: bool = False
    exit_code: int | None = None  # instead of empty/answer (diagnostics: the linters' convention)
    warning: str | None = None  # one line for stderr, even with --json


def display(path: str | Path) -> str:
    """A path as a model reads it best: relative to the current directory when inside it."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def capped(lines: list[str], limit: int) -> list[str]:
    return lines if len(lines) <= limit else [*lines[:limit], f"... {len(lines) - limit} more"]


def locations_json(workspace: Workspace, result: Any) -> list[dict[str, Any]]:
    items = result if isinstance(result, list) else [result] if isinstance(result, dict) else []
    locations = []
    for item in items:
        uri = item.get("targetUri") or item.get("uri")
        range_ = item.get("targetSelectionRange") or item.get("range")
        if not uri or not range_:
            continue
        path = uri_path(uri)
        line, column = workspace.position_out(path, range_["start"])
        end_line, end_column = workspace.position_out(path, range_["end"])
        entry = {"path": path, "line": line, "column": column, "end_line": end_line, "end_column": end_column,
                 "text": workspace.line_text(path, line)}
        if "origin" in item:  # `lspHub.references`: server, index or both
            entry["origin"] = item["origin"]
        locations.append(entry)
    return locations


def as_is(text: str) -> str:
    """Repository text shown as it is (what `Quote` does without `lsp-hub mcp --fence`)."""
    return text


Quote = Callable[[str], str]  # how text from the repository is shown (`lsp-hub mcp --fence` wraps it)


def locations_text(locations: list[dict[str, Any]], limit: int, quote: Quote = as_is) -> str:
    ordered = sorted(locations, key=lambda entry: (entry["path"], entry["line"], entry["column"]))
    # A location only the index knows is marked: no server analyses its file (see `uncovered_note`).
    lines = [f"{display(entry['path'])}:{entry['line']}:{entry['column']}  {quote(entry['text'])}"
             + ("  [index]" if entry.get("origin") == "index" else "") for entry in ordered]
    return "\n".join(capped(lines, limit))


def stand_in_note(why: str) -> str:
    """The line after an answer that the index gave because no server did (`noServer`: `why`)."""
    return f"(from the index alone, by name: {why})"


def uncovered_note(data: dict[str, Any]) -> str:
    """For references and renames: which files no server analysed, whose uses come from the index; for any answer
    of locations, that no server ran at all (`noServer`, why)."""
    if data.get("noServer"):
        return stand_in_note(data["noServer"])
    uncovered = data.get("uncovered") or []
    if not uncovered:
        return ""
    names = ", ".join(display(path) for path in uncovered[:8]) + (f" and {len(uncovered) - 8} more"
                                                                   if len(uncovered) > 8 else "")
    return f"(no server listed anything in {len(uncovered)} file(s) where the index found uses: {names})"


def hover_text(result: Any) -> str:
    contents = (result or {}).get("contents") if isinstance(result, dict) else None
    pieces = contents if isinstance(contents, list) else [contents] if contents else []
    texts = []
    for piece in pieces:
        if isinstance(piece, str):
            texts.append(piece)
        elif isinstance(piece, dict) and "value" in piece:
            language = piece.get("language")
            texts.append(f"```{language}\n{piece['value']}\n```" if language else piece["value"])
    return "\n\n".join(text for text in texts if text.strip())


def flatten_symbols(workspace: Workspace, result: Any, path: str | None) -> list[dict[str, Any]]:
    symbols: list[dict[str, Any]] = []

    def visit(item: dict[str, Any], container: str | None) -> None:
        if "location" in item:  # SymbolInformation
            item_path = uri_path(item["location"]["uri"])
            start = item["location"]["range"]["start"]
            container = item.get("containerName") or container
        else:  # DocumentSymbol
            item_path = path or ""
            start = (item.get("selectionRange") or item["range"])["start"]
        line, column = workspace.position_out(item_path, start)
        symbols.append({"name": item.get("name", ""), "kind": SYMBOL_KINDS.get(item.get("kind", 0), "symbol"),
                        "path": item_path, "line": line, "column": column, "container": container})
        for child in item.get("children") or []:
            visit(child, item.get("name"))

    for item in result or []:
        if isinstance(item, dict):
            visit(item, None)
    return symbols


def symbols_text(symbols: list[dict[str, Any]], limit: int) -> str:
    lines = [f"{display(entry['path'])}:{entry['line']}:{entry['column']}  {entry['kind']} "
             f"{entry['container'] + '.' if entry['container'] else ''}{entry['name']}" for entry in symbols]
    return "\n".join(capped(lines, limit))


def diagnostics_json(workspace: Workspace, path: str, diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    result = []
    for diagnostic in diagnostics:
        line, column = workspace.position_out(path, diagnostic["range"]["start"])
        end_line, end_column = workspace.position_out(path, diagnostic["range"]["end"])
        code = diagnostic.get("code")
        result.append({"path": path, "line": line, "column": column, "end_line": end_line, "end_column": end_column,
                       "severity": SEVERITIES.get(diagnostic.get("severity") or 1, "error"),
                       "source": diagnostic.get("source") or "", "code": None if code is None else str(code),
                       "message": diagnostic.get("message", "")})
    return result


def diagnostics_text(diagnostics: list[dict[str, Any]], limit: int, quote: Quote = as_is) -> str:
    """`[server] N issue(s):` blocks of `path:line:col — message`, errors first."""
    rank = {"error": 0, "warning": 1, "information": 2, "hint": 3}
    blocks: dict[str, list[dict[str, Any]]] = {}
    for diagnostic in diagnostics:
        blocks.setdefault(diagnostic["source"] or "unknown", []).append(diagnostic)
    order = sorted(blocks, key=lambda source: (min(rank[d["severity"]] for d in blocks[source]), source))
    out = []
    for source in order:
        entries = sorted(blocks[source], key=lambda d: (rank[d["severity"]], d["path"], d["line"], d["column"]))
        out.append(f"[{source}] {len(entries)} issue(s):")
        lines = []
        for entry in entries:
            code = f" [{entry['code']}]" if entry["code"] else ""
            severity = "" if entry["severity"] == "error" else f"{entry['severity']}: "
            message = " ".join(entry["message"].split())  # one line per diagnostic
            lines.append(f"  {display(entry['path'])}:{entry['line']}:{entry['column']} — {severity}"
                         f"{quote(message)}{code}")
        out.extend(capped(lines, limit))
    return "\n".join(out)


def not_checked_phrase(entry: dict[str, Any]) -> str:
    """Why one server did not check, in words ("basedpyright is not installed")."""
    if entry.get("server") is None:
        return str(entry.get("detail") or "no language server serves it")
    phrase = f"{entry['server']} {NOT_CHECKED_WORDS.get(entry.get('reason', ''), entry.get('reason', ''))}"
    return phrase + (f" ({entry['detail']})" if entry.get("reason") == "failed" and entry.get("detail") else "")


@dataclass
class DiagnosticsSummary:
    """Several files' `lspHub.diagnostics` reports as one answer: their diagnostics, who checked (`checkedBy`), who
    could not and why (`notChecked`, with the files each entry concerns), and the files nobody checked."""

    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    checked_by: set[str] = field(default_factory=set)
    not_checked: dict[tuple[Any, str], dict[str, Any]] = field(default_factory=dict)
    unchecked: list[dict[str, Any]] = field(default_factory=list)  # {path, language, why}
    pending: set[str] = field(default_factory=set)
    complete: bool = True

    def add(self, workspace: Workspace, path: str, report: dict[str, Any]) -> None:
        self.diagnostics.extend(diagnostics_json(workspace, path, report.get("diagnostics") or []))
        self.complete = self.complete and bool(report.get("complete"))
        self.pending.update(report.get("pending") or [])
        checked_by = report.get("checkedBy") or []
        self.checked_by.update(checked_by)
        entries = report.get("notChecked") or []
        for entry in entries:
            merged = self.not_checked.setdefault((entry.get("server"), entry.get("reason", "")),
                                                 {**entry, "paths": []})
            merged["paths"].append(path)
        if not checked_by and ("checkedBy" in report or report.get("error")):  # (a hub before checkedBy: unknown)
            why = "; ".join(not_checked_phrase(entry) for entry in entries) or report.get("error") or \
                "no server reported"
            self.unchecked.append({"path": path, "language": report.get("language"), "why": why})

    def as_json(self) -> dict[str, Any]:
        return {"diagnostics": self.diagnostics, "complete": self.complete and not self.unchecked,
                "pending": sorted(self.pending), "checkedBy": sorted(self.checked_by),
                "notChecked": list(self.not_checked.values()), "uncheckedFiles": self.unchecked}


def coverage_notes(data: dict[str, Any], limit: int = DEFAULT_LIMIT) -> list[str]:
    """What was not checked, in words: the files no server checked ("not checked: no python server ran —
    basedpyright is not installed"), then the servers that did not check files others did."""
    groups: dict[tuple[Any, str], list[str]] = {}
    for file in data.get("uncheckedFiles") or []:
        groups.setdefault((file.get("language"), file["why"]), []).append(file["path"])
    notes = []
    for (language, why), paths in groups.items():
        who = f"no {language} server ran" if language else "no language server ran"
        where = f" for {display(paths[0])}" if len(paths) == 1 else \
            f" for {len(paths)} files ({', '.join(display(p) for p in paths[:3])}{', ...' if len(paths) > 3 else ''})"
        notes.append(f"not checked{where}: {who} — {why}")
    unchecked_paths = {file["path"] for file in data.get("uncheckedFiles") or []}
    late: list[str] = []
    for entry in data.get("notChecked") or []:
        if all(path in unchecked_paths for path in entry.get("paths") or []) or entry.get("server") is None:
            continue  # said above
        if entry.get("reason") in ("timeout", "starting"):
            late.append(entry["server"])
        else:
            predicate = not_checked_phrase(entry).removeprefix(f"{entry['server']} ")
            notes.append(f"(not checked by {entry['server']}: it {predicate})")
    pending = sorted(set(late) | set(data.get("pending") or []))
    if pending:
        notes.append(f"(incomplete: no report from {', '.join(pending)} in time)")
    return capped(notes, limit)


def diagnostics_answer_text(data: dict[str, Any], limit: int, quote: Quote = as_is) -> str:
    """The diagnostics, or "no issues" when a server checked, then what was not checked."""
    text = diagnostics_text(data["diagnostics"], limit, quote)
    if not text and data.get("checkedBy"):
        text = "no issues"
    return "\n".join(filter(None, [text, *coverage_notes(data, limit)]))


# The list an answer's JSON holds its items in, by action: held to `limit` as the text is.
CAPPED_ITEMS = ("locations", "symbols", "calls", "callers", "diagnostics")
_SEVERITY_RANK = {"error": 0, "warning": 1, "information": 2, "hint": 3}


def cap_items(data: dict[str, Any], limit: int) -> dict[str, Any]:
    """`data` with its items held to `limit` (the most severe, for diagnostics), plus how many were left out
    (`left_out`), `complete: false` and why (`incomplete_reason: "limit"`, `incomplete_detail`); `data` itself when
    it holds no more than `limit`."""
    key = next((key for key in CAPPED_ITEMS if isinstance(data.get(key), list)), None)
    if key is None or len(data[key]) <= limit:
        return data
    items: list[Any] = data[key]
    if key == "diagnostics":  # the most severe, in their own order
        chosen = sorted(range(len(items)), key=lambda index: _SEVERITY_RANK.get(
            str(items[index].get("severity")), 4) if isinstance(items[index], dict) else 4)[:limit]
        kept = [items[index] for index in sorted(chosen)]
    else:
        kept = items[:limit]
    return {**data, key: kept, "left_out": len(items) - limit, "complete": False, "incomplete_reason": "limit",
            "incomplete_detail": f"{limit} of {len(items)} {key} given (limit {limit})"}
