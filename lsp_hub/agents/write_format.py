"""A verified write's formatting (`verified_write`): the new text formatted by the language's formatting server in
the project's style (`format_style`), only over the changed lines (`changed_lines`) when formatting the whole file
would change others. Standard library only, like `query`."""

from __future__ import annotations

import difflib
import time
from pathlib import Path
from typing import Any, Protocol

from lsp_hub.agents import changed_lines, format_style, query
from lsp_hub.agents.query import HubConnection, HubTimeout, QueryError
from lsp_hub.agents.write_outcome import WriteOutcome
from lsp_hub.platform.confined_files import ConfinedRoot

# How long a write waits for the formatter; past it the text is written as the agent gave it.
FORMAT_TIMEOUT_SECONDS = 10.0


class FormattingWriter(Protocol):
    """What the formatting asks of the writer (`verified_write.VerifiedWriter`)."""

    workspace: query.Workspace
    files: ConfinedRoot
    timeout: float

    def display(self, path: str | Path) -> str: ...

    def language_of(self, target: Path) -> dict[str, Any] | None: ...

    def forget_languages(self) -> None: ...

    def syntax_problem(self, path: Path, text: str) -> str | None: ...


def format_written(
    writer: FormattingWriter, target: Path, uri: str, content: str, outcome: WriteOutcome, old: str | None
) -> str:
    """The text formatted by the language's formatting server, in the project's style (`format_style`), when
    format_on_write is on. A write over an existing file (`old`) keeps every line the agent did not change: if
    formatting the whole file would change one, only the agent's changed lines are formatted
    (`textDocument/rangeFormatting`), or nothing is. The text as given when it is off, there is no formatter,
    it fails or it is late (the reason in `format_skipped_reason`)."""
    language = writer.language_of(target)
    if language is None or not language.get("formatOnWrite", True):
        outcome.format_skipped_reason = "off" if language is not None else "no_formatter"
        return content
    style = format_style.project_style(target, writer.files.root, old)
    options = style.lsp_options()
    outcome.format_options = {
        "options": options,
        "source": style.source,
        "files": [writer.display(path) for path in style.config_files],
    }
    connection = writer.workspace.connection
    try:
        edits = connection.request(
            "textDocument/formatting",
            {"textDocument": {"uri": uri}, "options": options},
            min(writer.timeout, FORMAT_TIMEOUT_SECONDS),
        )
    except HubTimeout:
        outcome.format_skipped_reason = "timeout"
        return content
    except QueryError:
        outcome.format_skipped_reason = "formatter_failed"
        return content
    # Which server formatted (the hub asks the first in precedence order that formats); null from the hub is
    # also what it answers when none formats. Asked anew: a server may have started since.
    writer.forget_languages()
    servers = (writer.language_of(target) or {}).get("servers", [])
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
    changed = changed_lines.changed_blocks(old, content) if old is not None else None
    if changed is not None and changed_lines.changes_outside(content, formatted, changed):
        # The hub asks rangeFormatting of the first server that offers it: only ask when that is the formatter.
        formatted = _format_ranges(
            writer,
            connection,
            uri,
            content,
            changed,
            options,
            outcome,
            ranges_formatter is not None and ranges_formatter == outcome.formatter,
        )
    if formatted == content:
        return content
    if writer.syntax_problem(target, formatted) is not None:
        outcome.format_skipped_reason = "formatter_failed"  # never write a formatter's broken output
        outcome.format_scope = "none"
        writer.workspace.update(uri, content)
        return content
    writer.workspace.texts[str(target)] = formatted
    writer.workspace.update(uri, formatted)
    outcome.formatted = True
    name = writer.display(target)
    outcome.format_diff = "".join(
        difflib.unified_diff(
            content.splitlines(keepends=True), formatted.splitlines(keepends=True), f"a/{name}", f"b/{name}", n=0
        )
    )
    return formatted


def _format_ranges(
    writer: FormattingWriter,
    connection: HubConnection,
    uri: str,
    content: str,
    changed: list[changed_lines.LineBlock],
    options: dict[str, Any],
    outcome: WriteOutcome,
    formatter_formats_ranges: bool,
) -> str:
    """`content` with only its `changed` blocks formatted (one rangeFormatting request each), if the formatter
    formats ranges and its edits stay inside the blocks; else `content`, with the reason."""
    outcome.format_scope, outcome.format_skipped_reason = "none", "would_change_untouched_lines"
    blocks = [block for block in changed if block.end > block.start]
    if not blocks or not formatter_formats_ranges:
        return content
    deadline = time.monotonic() + min(writer.timeout, FORMAT_TIMEOUT_SECONDS)
    edits: list[dict[str, Any]] = []
    for block in blocks:
        try:
            answer = connection.request(
                "textDocument/rangeFormatting",
                {"textDocument": {"uri": uri}, "range": changed_lines.block_range(block, content), "options": options},
                max(0.1, deadline - time.monotonic()),
            )
        except HubTimeout:
            outcome.format_skipped_reason = "timeout"
            return content
        except QueryError:
            return content
        edits.extend(answer or [])
    try:
        if changed_lines.edits_overlap(edits):
            return content
        formatted = query.apply_text_edits(content, edits)
    except (KeyError, TypeError, ValueError):
        return content
    if changed_lines.changes_outside(content, formatted, changed):
        return content
    outcome.format_scope, outcome.format_skipped_reason = "ranges", None
    return formatted
