"""The strategies a method can have and the pure merge functions: hover join, completion concatenation, location
union, origin tags in `data`. Which method has which is `methods.py`'s table; the runners (`runners.py`) ask the
servers. No I/O.
"""

from __future__ import annotations

import enum
import json
from typing import Any

from lsp_hub.transport.jsonrpc import materialize

ORIGIN_KEY = "lspHub"  # inside an item's `data`: which backend made the item, for the matching */resolve


class Strategy(enum.Enum):
    """How a method's servers are asked (`methods.METHODS` gives each method its own)."""

    FIRST = "first"  # the first capable server in precedence order
    FIRST_NON_EMPTY = "first_non_empty"  # ask all capable; the first non-empty answer in precedence order
    FAN_OUT = "fan_out"  # ask all the spec's targets; their answers combined by the spec's merge
    RESOLVE = "resolve"  # back to the server that made the item
    BY_ITEM_ORIGIN = "by_item_origin"  # call/type hierarchy follow-ups: to the server that made the item
    EXECUTE_COMMAND = "execute_command"  # the hub's own command, or the server that advertised it
    DOCUMENT_DIAGNOSTIC = "document_diagnostic"  # the hub's merged diagnostics for the document
    WORKSPACE_DIAGNOSTIC = "workspace_diagnostic"  # the hub's merged diagnostics for every document it has
    SEMANTIC_TOKENS = "semantic_tokens"  # FIRST in the hub's legend; a delta to the server that issued its resultId
    FORWARD = "forward"  # unknown method: the document's first server, or the first running server that answers


def is_empty(result: Any) -> bool:
    """null, [], {} and a hover or signature help with nothing in it count as no answer."""
    if result is None or result == [] or result == {}:
        return True
    if isinstance(result, dict):
        if "contents" in result:
            contents = result["contents"]
            return contents in (None, "", [], {}) or (isinstance(contents, dict) and not contents.get("value"))
        if "signatures" in result:
            return not result["signatures"]
    return False


# ---------------------------------------------------------------------------------------------- item origins
def tag_item(item: Any, uid: int) -> Any:
    if isinstance(item, dict):
        item["data"] = {ORIGIN_KEY: uid, "data": item.get("data")}
    return item


def untag_item(item: Any) -> tuple[int | None, Any]:
    """The backend uid an item came from, and the item as that backend made it."""
    if not isinstance(item, dict):
        return None, item
    data = item.get("data")
    if not isinstance(data, dict) or ORIGIN_KEY not in data:
        return None, item
    original = dict(item)
    inner = data.get("data")
    if inner is None:
        original.pop("data", None)
    else:
        original["data"] = inner
    uid = data.get(ORIGIN_KEY)
    return (uid if isinstance(uid, int) else None), original


def tag_items(items: Any, uid: int) -> Any:
    if isinstance(items, list):
        for item in items:
            tag_item(item, uid)
    return items


# ---------------------------------------------------------------------------------------------- merges
def _markdown(contents: Any) -> str:
    """Hover contents (MarkupContent, MarkedString or a list of them) as markdown text."""
    if isinstance(contents, str):
        return contents
    if isinstance(contents, list):
        return "\n\n".join(part for part in (_markdown(c) for c in contents) if part)
    if isinstance(contents, dict):
        if "kind" in contents:
            value = str(contents.get("value", ""))
            return value if contents["kind"] == "markdown" else _escape_plaintext(value)
        if "language" in contents:
            return f"```{contents['language']}\n{contents.get('value', '')}\n```"
    return ""


def _escape_plaintext(text: str) -> str:
    return f"```text\n{text}\n```" if "\n" in text else text


def merge_hover(answers: list[tuple[str, Any]]) -> Any:
    """Join the non-empty hovers; label each part with its server only when more than one answered."""
    present = [(name, hover) for name, hover in answers if not is_empty(hover)]
    if not present:
        return None
    if len(present) == 1:
        return present[0][1]
    parts = [f"**{name}**\n\n{_markdown(hover.get('contents'))}" for name, hover in present]
    merged: dict[str, Any] = {"contents": {"kind": "markdown", "value": "\n\n---\n\n".join(parts)}}
    for _, hover in present:
        if hover.get("range"):
            merged["range"] = hover["range"]
            break
    return merged


_DEFAULTED_FIELDS = ("commitCharacters", "insertTextFormat", "insertTextMode", "data")


def _apply_item_defaults(items: list[Any], defaults: dict[str, Any]) -> None:
    """Copy a CompletionList's itemDefaults into its items (needed before lists of several servers are merged)."""
    edit_range = defaults.get("editRange")
    for item in items:
        if not isinstance(item, dict):
            continue
        for field in _DEFAULTED_FIELDS:
            if field in defaults and field not in item:
                item[field] = defaults[field]
        if edit_range is not None and "textEdit" not in item:
            new_text = item.get("textEditText") or item.get("insertText") or item.get("label", "")
            if "insert" in edit_range:
                item["textEdit"] = {"newText": new_text, "insert": edit_range["insert"],
                                    "replace": edit_range["replace"]}
            else:
                item["textEdit"] = {"newText": new_text, "range": edit_range}


def merge_completion(answers: list[tuple[int, Any]]) -> Any:
    """Concatenate completion answers; with several, every item remembers its server for completionItem/resolve.

    A single answer passes through untouched (possibly still as raw JSON text); the session remembers its server.
    """
    present = [(uid, materialize(answer) if len(answers) > 1 else answer) for uid, answer in answers
               if answer is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0][1]
    items: list[Any] = []
    incomplete = False
    for uid, answer in present:
        if isinstance(answer, list):
            items.extend(tag_items(answer, uid))
        elif isinstance(answer, dict):
            incomplete = incomplete or bool(answer.get("isIncomplete"))
            own = answer.get("items") or []
            defaults = answer.get("itemDefaults")
            if isinstance(defaults, dict):
                _apply_item_defaults(own, defaults)
            items.extend(tag_items(own, uid))
    return {"isIncomplete": incomplete, "items": items}


def concat_tagged(answers: list[tuple[int, Any]]) -> Any:
    merged: list[Any] = []
    anything = False
    for uid, answer in answers:
        if isinstance(answer, list):
            anything = True
            merged.extend(tag_items(answer, uid))
    return merged if anything else None


def merge_locations(answers: list[Any]) -> Any:
    """Union of Location/LocationLink lists without duplicates, in answer order."""
    seen: set[str] = set()
    merged: list[Any] = []
    anything = False
    for answer in answers:
        if answer is None:
            continue
        anything = True
        for location in answer if isinstance(answer, list) else [answer]:
            key = json.dumps(
                [location.get("uri") or location.get("targetUri"),
                 location.get("range") or location.get("targetSelectionRange")],
                sort_keys=True,
            ) if isinstance(location, dict) else json.dumps(location)
            if key not in seen:
                seen.add(key)
                merged.append(location)
    return merged if anything else None


def merge_symbols(answers: list[Any]) -> Any:
    merged: list[Any] = []
    for answer in answers:
        if isinstance(answer, list):
            merged.extend(answer)
    return merged
