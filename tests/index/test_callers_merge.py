"""Merging a language server's call sites into the index's callers (issue 11): a pure function over plain lists."""

from __future__ import annotations

from typing import Any

from lsp_hub.index.callers import merge_callers, opens_a_call


def site(file: str, line: int, start: int, end: int, caller: str | None = None, depth: int = 1) -> dict[str, Any]:
    return {
        "location": {
            "uri": f"file:///w/{file}",
            "range": {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}},
        },
        "caller": caller,
        "depth": depth,
    }


def summary(callers: list[dict[str, Any]]) -> list[tuple[str, int, str, int]]:
    return [
        (c["location"]["uri"].rsplit("/", 1)[-1], c["location"]["range"]["start"]["line"], c["origin"], c["depth"])
        for c in callers
    ]


def test_confirmed_and_server_sites_come_first_then_index_only_then_deeper_levels() -> None:
    index = [site("a.py", 3, 8, 11, "f"), site("b.py", 9, 4, 7, "g"), site("c.py", 1, 0, 3, "h", depth=2)]
    # The server gives `shop.pay` for the index's `pay` (overlapping), and a site the index missed.
    server = [
        {"location": site("b.py", 9, 0, 7)["location"], "caller": "g"},
        {"location": site("b.py", 9, 0, 7)["location"], "caller": "g"},  # confirmed twice: one caller
        {"location": site("a.py", 20, 4, 7)["location"], "caller": "k"},
        {"location": site("a.py", 20, 4, 7)["location"], "caller": "k"},
    ]  # listed twice: kept once
    merged = merge_callers(index, server)
    assert summary(merged) == [
        ("a.py", 20, "server", 1),
        ("b.py", 9, "both", 1),
        ("a.py", 3, "index", 1),
        ("c.py", 1, "index", 2),
    ]
    assert merged[0]["caller"] == "k" and merged[1]["caller"] == "g"
    assert "origin" not in index[0]  # the inputs are left as they were


def test_without_a_server_answer_every_caller_is_the_index_s_in_its_order() -> None:
    index = [site("b.py", 9, 4, 7, "g"), site("a.py", 3, 8, 11, "f")]
    assert summary(merge_callers(index, None)) == [("b.py", 9, "index", 1), ("a.py", 3, "index", 1)]
    assert summary(merge_callers(index, [])) == [("b.py", 9, "index", 1), ("a.py", 3, "index", 1)]


def test_a_site_on_another_line_or_not_overlapping_is_another_site() -> None:
    merged = merge_callers(
        [site("a.py", 3, 8, 11)],
        [{"location": site("a.py", 3, 20, 23)["location"]}, {"location": site("a.py", 4, 8, 11)["location"]}],
    )
    assert summary(merged) == [("a.py", 3, "server", 1), ("a.py", 4, "server", 1), ("a.py", 3, "index", 1)]


def test_a_reference_is_a_call_site_when_an_opening_parenthesis_follows() -> None:
    assert opens_a_call("    total = compute (x)", 19)
    assert not opens_a_call("from m import compute", 21)
    assert not opens_a_call("    handlers = [compute, other]", 23)
    assert opens_a_call("    label = 'é' + compute(x)", 25)  # a UTF-16 column after a non-ASCII character
    # TypeScript's type arguments before the parentheses: still a call; a comparison is not.
    assert opens_a_call("  const [a] = useState<{ x?: string }>({", 22)
    assert opens_a_call("  const client = hc<AppType>('/')", 19)
    assert not opens_a_call("  if (a < b) {", 7)
