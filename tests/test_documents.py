"""Open documents: incremental edits in UTF-16 positions, checked against a naive reference, and their cost."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from lsp_hub.proxy.documents import Document, replacement_edit, utf16_to_index


def reference_index(line: str, character: int) -> int:
    """The obvious per-character walk (the hub's former code): the str index of a UTF-16 column."""
    units = 0
    for index, char in enumerate(line):
        if units >= character:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def reference_offset(text: str, line: int, character: int) -> int:
    if line < 0:
        return 0
    start = 0
    for _ in range(line):
        newline = text.find("\n", start)
        if newline < 0:
            return len(text)
        start = newline + 1
    end = text.find("\n", start)
    line_text = text[start:] if end < 0 else text[start:end]
    if line_text.endswith("\r"):
        line_text = line_text[:-1]
    return start + reference_index(line_text, max(character, 0))


def reference_apply(text: str, change: dict[str, Any]) -> str:
    range_ = change.get("range")
    if range_ is None:
        return str(change["text"])
    start = reference_offset(text, range_["start"]["line"], range_["start"]["character"])
    end = reference_offset(text, range_["end"]["line"], range_["end"]["character"])
    start, end = min(start, end), max(start, end)
    return text[:start] + change["text"] + text[end:]


def edit(start: tuple[int, int], end: tuple[int, int], text: str) -> dict[str, Any]:
    return {"range": {"start": {"line": start[0], "character": start[1]},
                      "end": {"line": end[0], "character": end[1]}}, "text": text}


def check(text: str, changes: list[dict[str, Any]]) -> Document:
    document = Document("file:///x", "plain", 1, text)
    expected = text
    for version, change in enumerate(changes, start=2):
        document.apply_changes([change], version)
        expected = reference_apply(expected, change)
        assert document.text == expected, change
    return document


@pytest.mark.parametrize("line", ["", "plain ascii", "é", "aé😀b", "😀😀", "x😀", "\u20ac\U0001F600\u00e9 end",
                                  "日本語"])
def test_utf16_columns_match_the_reference(line: str) -> None:
    for character in range(-1, len(line.encode("utf-16-le")) // 2 + 3):
        assert utf16_to_index(line, character) == reference_index(line, max(character, 0)), (line, character)


def test_edits_at_the_end_on_non_ascii_lines_and_across_lines() -> None:
    text = "first line\nsecönd 😀 line\nthird\n"
    check(text, [
        edit((3, 0), (3, 0), "appended"),  # at the very end (after the last "\n")
        edit((1, 7), (1, 9), "X"),  # replaces the emoji (two UTF-16 units)
        edit((1, 6), (1, 6), "😀😀"),
        edit((0, 5), (2, 2), "joined"),  # a multi-line edit
        edit((0, 3), (0, 3), "a\nb\nc"),  # inserts lines
        edit((9, 0), (12, 4), "!"),  # past the end: clamps to the end
        edit((1, 0), (0, 2), ""),  # end before start: swapped
        {"text": "whole\nnew"},
        edit((1, 3), (1, 3), "er"),
    ])


def test_crlf_columns_stop_before_the_carriage_return() -> None:
    text = "ab\r\ncd😀\r\nlast"
    check(text, [
        edit((0, 99), (0, 99), "X"),  # clamped before "\r"
        edit((1, 4), (2, 0), ""),  # removes "\r\n" after the emoji
        edit((0, 3), (1, 0), "\n"),
        edit((1, 2), (1, 3), ""),  # inside the surrogate pair: rounds up
    ])


def _width(lines: list[str], line: int) -> int:
    """A little past the line's end in UTF-16 units (columns past the end must clamp)."""
    return len(lines[line].encode("utf-16-le")) // 2 + 2 if line < len(lines) else 3


def test_random_edits_match_the_reference() -> None:
    alphabet = ["a", "b", " ", "\n", "\r\n", "é", "日", "😀", "\U0001F9D1"]
    chooser = random.Random(13)
    text = "".join(chooser.choice(alphabet) for _ in range(300))
    changes = []
    expected = text
    for _ in range(300):
        lines = expected.split("\n")
        line_a = chooser.randrange(len(lines) + 1)
        line_b = chooser.randrange(len(lines) + 1)
        change = edit((line_a, chooser.randrange(_width(lines, line_a))),
                      (line_b, chooser.randrange(_width(lines, line_b))),
                      "".join(chooser.choice(alphabet) for _ in range(chooser.randrange(6))))
        changes.append(change)
        expected = reference_apply(expected, change)
    document = check(text, changes)
    for line in range(-1, len(expected.split("\n")) + 1):
        for character in (0, 1, 3, 50):
            assert document.offset_at(line, character) == reference_offset(expected, line, character)


def test_an_edit_costs_the_changed_line_not_the_document() -> None:
    # The former per-character and per-line loops took about 0.3 s per edit here; now each edit is a slice.
    long_line = "é" + "x" * 2_000_000
    many_lines = "short line\n" * 300_000
    started = time.perf_counter()
    for text, line in ((long_line, 0), (many_lines, 299_999)):
        document = Document("file:///big", "plain", 1, text)
        for version in range(2, 22):
            column = 2_000_000 if line == 0 else 5
            document.apply_changes([edit((line, column), (line, column + 1), "y")], version)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"40 edits took {elapsed:.2f} s"
    assert document.text.count("\n") == 300_000


def test_replacement_edit_turns_one_text_into_the_other() -> None:
    """The change a workspace sends an incremental server when another session becomes the writer."""
    rng = random.Random(8)
    alphabet = ["a", "b", "\n", "é", "😀", "\r"]
    for _ in range(5000):
        old = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        new = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        document = Document("file:///t", "x", 1, old)
        document.apply_changes([replacement_edit(old, new)], 2)
        assert document.text == new, (old, new)
    assert replacement_edit("one\ntwo\nthree\n", "one\n2\nthree\n") == {
        "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}}, "text": "2\n"}
