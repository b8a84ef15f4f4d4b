"""File operations (workspace/willRenameFiles and friends): which servers asked for them, and merging their edits.

A server says which files it wants to hear about with `FileOperationFilter`s (a scheme and a glob pattern, for
files, folders or both); several servers may answer a `will*Files` request with a `WorkspaceEdit` each (a renamed
module's importers, from each language's server), and the client applies one. Pure functions, no I/O.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from lsp_hub.proxy.documents import uri_to_path

logger = logging.getLogger(__name__)

# method -> the key under ServerCapabilities.workspace.fileOperations that holds its filters
FILE_OPERATIONS: dict[str, str] = {
    "workspace/willCreateFiles": "willCreate",
    "workspace/didCreateFiles": "didCreate",
    "workspace/willRenameFiles": "willRename",
    "workspace/didRenameFiles": "didRename",
    "workspace/willDeleteFiles": "willDelete",
    "workspace/didDeleteFiles": "didDelete",
}
# What the hub advertises: every file and folder, so the client tells it of each operation and the hub passes it on
# to the servers whose own filters match (they start lazily; their filters are not known at `initialize`).
ALL_FILES = {"filters": [{"scheme": "file", "pattern": {"glob": "**/*"}}]}


@functools.lru_cache(maxsize=256)
def glob_regex(glob: str, ignore_case: bool = False) -> re.Pattern[str]:
    """An LSP glob (`*`, `?`, `**`, `{a,b}`, `[a-z]`, `[!a]`) as a regex matching a whole path."""
    out: list[str] = []
    index = 0
    depth = 0  # inside {...}
    while index < len(glob):
        char = glob[index]
        if glob.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        if glob.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "{":
            out.append("(?:")
            depth += 1
        elif char == "}" and depth:
            out.append(")")
            depth -= 1
        elif char == "," and depth:
            out.append("|")
        elif char == "[":
            end = glob.find("]", index + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = glob[index + 1:end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    return re.compile("".join(out) + r"\Z", re.IGNORECASE if ignore_case else 0)


def filter_matches(file_filter: Any, uri: str, is_folder: bool | None) -> bool:
    """Whether one FileOperationFilter covers `uri`; `is_folder` None when unknown (a deleted path)."""
    if not isinstance(file_filter, dict) or not isinstance(file_filter.get("pattern"), dict):
        return False
    scheme = file_filter.get("scheme")
    if scheme and urlsplit(uri).scheme != scheme:
        return False
    pattern = file_filter["pattern"]
    kind = pattern.get("matches")
    if is_folder is not None and kind in ("file", "folder") and (kind == "folder") != is_folder:
        return False
    glob = pattern.get("glob")
    path = uri_to_path(uri)
    if not isinstance(glob, str) or path is None:
        return False
    ignore_case = bool((pattern.get("options") or {}).get("ignoreCase"))
    return glob_regex(glob, ignore_case).match(path) is not None


def matching_files(filters: Iterable[Any], files: list[Any], is_folder: dict[str, bool | None]) -> list[Any]:
    """The entries of `files` (FileCreate/FileRename/FileDelete) some filter covers; a rename by its old URI."""
    filters = list(filters)
    chosen = []
    for entry in files:
        if not isinstance(entry, dict):
            continue
        uri = entry.get("oldUri") or entry.get("uri")
        if isinstance(uri, str) and any(filter_matches(f, uri, is_folder.get(uri)) for f in filters):
            chosen.append(entry)
    return chosen


# ==================================================================================================== edits
def _start_end(edit: dict[str, Any]) -> tuple[tuple[int, int], tuple[int, int]]:
    range_ = edit.get("range") or {}
    start, end = range_.get("start") or {}, range_.get("end") or {}
    return (start.get("line", 0), start.get("character", 0)), (end.get("line", 0), end.get("character", 0))


def _conflicts(edit: dict[str, Any], kept: list[dict[str, Any]]) -> bool:
    start, end = _start_end(edit)
    for other in kept:
        other_start, other_end = _start_end(other)
        if start < other_end and other_start < end:
            return True
        if start == end == other_start == other_end:
            return True  # two insertions at one point: their order would be a guess
    return False


def _add_edits(kept: list[dict[str, Any]], edits: Any, server: str, uri: str) -> None:
    for edit in edits or []:
        if not isinstance(edit, dict):
            continue
        if edit in kept:
            continue  # the same edit from two servers
        if _conflicts(edit, kept):
            logger.warning("dropped an edit of %s to %s: it overlaps an edit of a server of higher precedence",
                           server, uri)
            continue
        kept.append(edit)


def merge_workspace_edits(answers: list[tuple[str, Any]]) -> Any:
    """One WorkspaceEdit from the (server, edit) answers in precedence order: edits to one file are kept in order,
    an edit overlapping one already kept is dropped with a log line. None when nobody had an edit."""
    present = [(server, edit) for server, edit in answers
               if isinstance(edit, dict) and (edit.get("changes") or edit.get("documentChanges"))]
    if not present:
        return None
    if len(present) == 1:
        return present[0][1]
    annotations: dict[str, Any] = {}
    for _, edit in present:
        annotations.update(edit.get("changeAnnotations") or {})
    merged: dict[str, Any]
    if not any(edit.get("documentChanges") for _, edit in present):
        changes: dict[str, list[dict[str, Any]]] = {}
        for server, edit in present:
            for uri, edits in (edit.get("changes") or {}).items():
                _add_edits(changes.setdefault(uri, []), edits, server, uri)
        merged = {"changes": changes}
    else:
        document_changes: list[dict[str, Any]] = []
        text_edits: dict[str, dict[str, Any]] = {}  # uri -> the one TextDocumentEdit that gathers its edits
        for server, edit in present:
            entries = list(edit.get("documentChanges") or [])
            entries += [{"textDocument": {"uri": uri, "version": None}, "edits": edits}
                        for uri, edits in (edit.get("changes") or {}).items()]
            for entry in entries:
                if not isinstance(entry, dict):
                    continue
                if "kind" in entry:  # create, rename, delete: in order, as each server listed them
                    if entry not in document_changes:
                        document_changes.append(entry)
                    continue
                uri = (entry.get("textDocument") or {}).get("uri")
                if not isinstance(uri, str):
                    continue
                gathered = text_edits.get(uri)
                if gathered is None:
                    gathered = text_edits[uri] = {"textDocument": entry["textDocument"], "edits": []}
                    document_changes.append(gathered)
                _add_edits(gathered["edits"], entry.get("edits"), server, uri)
        merged = {"documentChanges": document_changes}
    if annotations:
        merged["changeAnnotations"] = annotations
    return merged
