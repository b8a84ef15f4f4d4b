"""Format on write in the project's style, through `lsp-hub mcp` and the real servers: a write never reformats lines
the agent did not touch, and a new file gets the indentation the project asks for (issue #20, item 5).

One MCP server (`--no-daemon`) serves the module, on a small TypeScript project indented with 2 spaces (which
typescript-language-server, asked for 4, re-indents) and a Python file ruff would reformat."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import isolated_env, require_real_servers
from tests.mcp_client import McpClient

pytestmark = pytest.mark.real_server

SHOP_TS = """\
export interface Item {
  name: string;
  price: number;
}

const TAX = {rate: 0.2};

export function total(items: Item[]): number {
  let sum = 0;
  for (const item of items) {
    sum += item.price;
  }
  return sum;
}

export function withTax(amount: number): number {
  return amount * (1 + TAX.rate);
}

export class Basket {
  private items: Item[] = [];

  add(item: Item): void {
    this.items.push(item);
  }
}
"""
CALC_PY = "x=1\n\n\ndef double(value: int) -> int:\n    return value * 2\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("format") / "shop"
    (root / "src" / "lib").mkdir(parents=True)
    (root / "tsconfig.json").write_text('{\n  "compilerOptions": {"strict": true, "noEmit": true},\n'
                                        '  "include": ["src"]\n}\n')
    (root / "src" / "shop.ts").write_text(SHOP_TS)
    # Nothing to infer from in src/lib: without this the default (4 spaces) would win.
    (root / "src" / "lib" / ".editorconfig").write_text("[*.ts]\nindent_style = space\nindent_size = 2\n")
    (root / "calc.py").write_text(CALC_PY)
    return root


@pytest.fixture(scope="module")
def mcp(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpClient]:
    require_real_servers()
    client = McpClient("--no-daemon", "--root", str(project), "--timeout", "90",
                       env=isolated_env(tmp_path_factory.mktemp("format-home"), runtime=True))
    yield client
    client.close()


def _unchanged_lines_kept(before: str, after: str, replaced: str) -> None:
    """Every line of `before` but the `replaced` ones is in `after`, in its place, byte for byte."""
    head, tail = before.split(replaced)
    assert after.startswith(head) and after.endswith(tail), after


def test_writing_a_files_own_bytes_changes_no_byte(mcp: McpClient, project: Path) -> None:
    shop = project / "src" / "shop.ts"
    result = mcp.call("write_file", {"path": "src/shop.ts", "content": SHOP_TS})
    assert not result.is_error, result.content[0].text
    assert shop.read_bytes() == SHOP_TS.encode()
    data = result.structured_content
    assert data["formatted"] is False and data["format_scope"] == "none"
    # Nothing changed, so nothing is formatted (the formatter, even asked for 2 spaces, would write
    # `{ rate: 0.2 }`: a line the agent did not touch).
    assert data["format_skipped_reason"] == "unchanged" and data["unchanged"] is True
    assert "unchanged: the content is the file's own" in result.content[0].text


def test_an_edit_formats_its_own_lines_and_keeps_every_other_line(mcp: McpClient, project: Path) -> None:
    shop = project / "src" / "shop.ts"
    replaced = "  return amount * (1 + TAX.rate);\n"
    result = mcp.call("edit_file", {"path": "src/shop.ts", "old_text": replaced,
                                    "new_text": "    const   factor = 1 + TAX.rate;\n    return amount*factor;\n"})
    assert not result.is_error, result.content[0].text
    after = shop.read_text()
    _unchanged_lines_kept(SHOP_TS, after, replaced)
    data = result.structured_content
    assert data["format_scope"] == "ranges" and data["formatted"] is True, data
    assert "  const factor = 1 + TAX.rate;\n  return amount * factor;\n" in after
    assert "const TAX = {rate: 0.2};\n" in after
    assert "; the changed lines formatted by typescript-language-server (2 spaces, inferred from the file)" in \
        result.content[0].text


def test_a_new_file_gets_the_editorconfig_indentation(mcp: McpClient, project: Path) -> None:
    content = "export function half(value: number): number {\n    if (value > 0) {\n        return value / 2;\n" \
              "    }\n    return 0;\n}\n"
    result = mcp.call("write_file", {"path": "src/lib/half.ts", "content": content})
    assert not result.is_error, result.content[0].text
    assert (project / "src" / "lib" / "half.ts").read_text() == content.replace("    ", "  ")
    data = result.structured_content
    assert data["formatted"] is True and data["format_scope"] == "file"
    assert data["format_options"] == {"options": {"tabSize": 2, "insertSpaces": True}, "source": "editorconfig",
                                      "files": ["src/lib/.editorconfig"]}
    assert "formatted by typescript-language-server (2 spaces, from src/lib/.editorconfig)" in result.content[0].text
    # The file is now as the formatter writes it: an edit's formatting changes only the edit's lines, so the whole
    # file is formatted.
    edited = mcp.call("edit_file", {"path": "src/lib/half.ts", "old_text": "  return 0;", "new_text": "  return -1 ;"})
    assert edited.structured_content["format_scope"] == "file" and edited.structured_content["formatted"] is True
    assert (project / "src" / "lib" / "half.ts").read_text() == content.replace("    ", "  ").replace("0;", "-1;")
    languages = {entry["language"]: entry for entry in
                 mcp.call("lsp", {"action": "languages"}).structured_content["languages"]}
    assert [server["formatsRanges"] for server in languages["typescript"]["servers"]] == [True]


def test_ruff_keeps_the_lines_the_agent_did_not_touch(mcp: McpClient, project: Path) -> None:
    calc = project / "calc.py"
    same = mcp.call("write_file", {"path": "calc.py", "content": CALC_PY})
    assert not same.is_error and calc.read_bytes() == CALC_PY.encode()
    assert same.structured_content["format_skipped_reason"] == "unchanged"

    edited = mcp.call("edit_file", {"path": "calc.py", "old_text": "value * 2", "new_text": "value*3"})
    assert not edited.is_error, edited.content[0].text
    assert calc.read_text() == CALC_PY.replace("value * 2", "value * 3")  # `x=1` stays as it was
    assert edited.structured_content["format_scope"] == "ranges"
    assert edited.structured_content["formatter"] == "ruff"
