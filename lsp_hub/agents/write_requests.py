"""The new texts a verified write is asked for (`verified_write`): write_file's content, edit_file's replacement,
apply_edits' list, undo's bytes before, each in the form of the file it replaces (its line ends, byte-order mark and
final newline: `conform`). Standard library only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_hub.agents.write_outcome import FileWrite, WriteRefused


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



def restoring(before: bytes | None) -> Callable[[str | None], str]:
    def build(_old: str | None) -> str:
        if before is None:
            return ""
        try:
            return before.decode("utf-8")
        except UnicodeDecodeError:
            raise WriteRefused("cannot undo: the file held bytes that are not UTF-8 text before that write") from None

    return build

