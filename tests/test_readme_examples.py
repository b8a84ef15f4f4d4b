"""The README's `lsp-hub query` examples run on examples/sample as shown (issue #21, item 7).

Every `lsp-hub query ...` line in a fenced block of the README's agent sections is run, in a private copy of
examples/sample, on one hub the module shares (a child over pipes, as `--no-daemon` starts one, so the servers
start once), through `query_main`: the command line's own parser and printer. Each must exit 0; where a `console`
block shows a command's output (`$ lsp-hub query ...` then its lines), those lines must appear in what it prints.
"""

from __future__ import annotations

import io
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from lsp_hub.agents.query import HubConnection, query_main
from tests.conftest import EXAMPLES_DIR, REPO_ROOT, shared_hub

pytestmark = pytest.mark.real_server

AGENT_SECTIONS = ("## For agents: `lsp-hub query`", "## For agents: `lsp-hub mcp`")
COMMAND_PREFIX = "lsp-hub query "
SLOW = "90"  # --timeout for the first answers of cold servers on a loaded 2-core machine


@attrs.define(frozen=True)
class Example:
    line: str  # as the README writes it, comment removed
    argv: list[str]  # after `lsp-hub query`
    shown: list[str]  # the output lines the README shows for it (a console block), if any


def _fenced_blocks(text: str) -> Iterator[tuple[str, list[str]]]:
    """(info string, lines) of each fenced code block."""
    for match in re.finditer(r"^```(\w*)\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE):
        yield match.group(1), match.group(2).splitlines()


def readme_examples(readme: str) -> list[Example]:
    examples: list[Example] = []
    for title in AGENT_SECTIONS:
        start = readme.index(title)
        end = readme.find("\n## ", start + len(title))
        for info, lines in _fenced_blocks(readme[start: end if end != -1 else len(readme)]):
            if info == "console":
                # `$ command` lines, each followed by the output it shows.
                for line in lines:
                    if line.startswith("$ "):
                        command = line[2:]
                        examples.append(Example(command, shlex.split(command)[2:], []))
                    elif examples and line.strip():
                        examples[-1].shown.append(line)
            else:
                for line in lines:
                    if line.startswith(COMMAND_PREFIX):
                        command = " ".join(shlex.split(line, comments=True))
                        examples.append(Example(command, shlex.split(line, comments=True)[2:], []))
    return examples


EXAMPLES = readme_examples((REPO_ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_readme_has_the_examples_this_module_runs() -> None:
    """The extraction finds what the README has, so the test below cannot pass by running nothing."""
    commands = {example.line for example in EXAMPLES}
    assert "lsp-hub query rename --symbol net_price price_without_tax" in commands
    assert "lsp-hub query format app/messy.py" in commands
    assert len(EXAMPLES) >= 16
    assert any(example.shown for example in EXAMPLES)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("readme") / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", target, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    return target


@pytest.fixture(scope="module")
def hub(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubConnection]:
    with shared_hub(sample, tmp_path_factory.mktemp("readme-xdg")) as connection:
        yield connection


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.line for example in EXAMPLES])
def test_a_readme_example_runs_on_the_sample_as_shown(example: Example, sample: Path, hub: HubConnection,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(sample)  # the examples name files relative to the sample, where the user runs them
    before = {path: path.read_bytes() for path in sample.rglob("*.py")}
    out, err = io.StringIO(), io.StringIO()
    code = query_main([*example.argv, "--timeout", SLOW], out=out, err=err, connection=hub)
    printed = out.getvalue()
    # diagnostics exits as linters do: 1 when it found issues (app/broken.py has them); every other example 0.
    expected = 1 if example.argv[0] == "diagnostics" else 0
    assert code == expected, (example.line, code, printed, err.getvalue())
    assert printed.strip(), example.line
    missing = [line for line in example.shown if line not in printed.splitlines()]
    assert missing == [], (example.line, printed)
    # No example writes: a user trying them keeps the sample as it was.
    assert {path: path.read_bytes() for path in sample.rglob("*.py")} == before
