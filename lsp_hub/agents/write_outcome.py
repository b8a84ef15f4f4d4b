"""What a verified write answers (`verified_write`): the requests it is given (`FileWrite`), what it did to each
file (`WriteOutcome`), its answer (`WriteAnswer`) or refusal (`WriteRefused`), and the phrases of that answer.
Standard library only, like `query`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_hub.agents.query import QueryError


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
class Planned:
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


def size_text(count: Any) -> str:
    size = float(count) if isinstance(count, int | float) else 0.0
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} KB"


def sentence(error: QueryError) -> str:
    text = str(error)
    for prefix in ("lsp-hub query: ",):
        text = text.removeprefix(prefix)
    return text.replace(" (raise it with --timeout)", "").replace(" (see --root)", "")

