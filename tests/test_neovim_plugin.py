"""The Neovim plugin (clients/neovim) in Debian's headless Neovim against the real hub and real servers.

One Neovim session, started with `--clean -u NONE` and `set rtp+=clients/neovim`, runs `require("lsp_hub").setup()`,
opens Python and TypeScript files of a private copy of examples/sample and drives every user command. It records
what the user would see (scratch buffers, quickfix lists, messages) next to the hub's own answer to the same
command, and the tests below compare them. An index command (repoMap, relevantFiles, callers, syntaxCheck) is
checked when the hub advertises it; a hub that advertises it and a plugin that shows it wrong fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_hub.transport.rawclient import position_of
from tests.conftest import EXAMPLES_DIR, REPO_ROOT
from tests.editor_support import isolated_env, lua_value

pytestmark = [pytest.mark.editor, pytest.mark.real_server]

PLUGIN_DIR = REPO_ROOT / "clients" / "neovim"
INDEX_COMMANDS = ("lspHub.repoMap", "lspHub.relevantFiles", "lspHub.callers", "lspHub.syntaxCheck")
RELEVANT_DESCRIPTION = "change total_value so that an Inventory skips items without a unit price"

LUA = r"""
local out = { steps = {}, messages = {}, sections = {} }
local errors = {}
vim.notify = function(message, level)
  table.insert(out.messages, { message = message, level = level })
  if level == vim.log.levels.ERROR then table.insert(errors, message) end
end
local function finish()
  local file = io.open(OUTPUT, "w")
  file:write(vim.fn.json_encode(out))
  file:close()
  vim.cmd("qa!")
end
local started = vim.loop.hrtime()
local function step(name) out.steps[name] = (vim.loop.hrtime() - started) / 1e9 end

-- Wait for condition(); a plugin error message or a timeout ends the wait with an error.
local function wait_for(what, condition, timeout)
  local errors_before = #errors
  local ok = vim.wait(timeout or 30000, function() return condition() or #errors > errors_before end, 50)
  if #errors > errors_before then error(what .. ": " .. errors[#errors]) end
  if not ok then error("timed out waiting for " .. what) end
end

local function buffer_named(name)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(bufnr) == name then return bufnr end
  end
end

local function quickfix()
  local list = vim.fn.getqflist({ title = 1, items = 1 })
  local items = {}
  for _, item in ipairs(list.items) do
    table.insert(items, { filename = vim.api.nvim_buf_get_name(item.bufnr), lnum = item.lnum, col = item.col,
                          text = item.text, type = item.type })
  end
  return { title = list.title, items = items }
end

-- Run a quickfix-filling command and return the list once its title says it is the command's.
local function run_for_quickfix(command, title_prefix)
  vim.fn.setqflist({}, " ", { title = "reset", items = {} })
  local window = vim.api.nvim_get_current_win()
  vim.cmd(command)
  wait_for(command, function() return vim.startswith(vim.fn.getqflist({ title = 1 }).title, title_prefix) end)
  local list = quickfix()
  vim.cmd("cclose")
  vim.api.nvim_set_current_win(window)
  return list
end

local function direct(client, command, argument)
  local response = client.request_sync("workspace/executeCommand",
    { command = command, arguments = { argument } }, 30000, 0)
  if response == nil or response.err then error(command .. " directly: " .. vim.inspect(response)) end
  return response.result
end

local function section(name, body)
  local ok, err = pcall(body)
  if not ok then out.sections[name] = { error = tostring(err) } end
  step(name)
end

local ok, err = pcall(function()
  vim.cmd("filetype on")
  vim.cmd("set rtp+=" .. vim.fn.fnameescape(PLUGIN_DIR))
  vim.cmd("runtime! plugin/lsp_hub.lua")
  out.commands_before_setup = vim.fn.exists(":LspHubStatus") == 2
  local hub = require("lsp_hub")
  hub.setup({ cmd = CMD })

  vim.cmd("edit " .. vim.fn.fnameescape(BROKEN))
  local broken = vim.api.nvim_get_current_buf()
  wait_for("diagnostics from basedpyright and Ruff", function()
    local sources = {}
    for _, d in ipairs(vim.diagnostic.get(broken)) do sources[d.source or "?"] = true end
    return sources["basedpyright"] and sources["Ruff"]
  end, 60000)
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(broken)) do
    table.insert(out.diagnostics, { source = d.source, message = d.message, lnum = d.lnum })
  end
  step("diagnostics")

  vim.cmd("edit " .. vim.fn.fnameescape(SERVICE))
  local service = vim.api.nvim_get_current_buf()
  local client = hub.client_for(service)
  out.client_root = client.config.root_dir
  local hover = vim.lsp.buf_request_sync(service, "textDocument/hover",
    { textDocument = { uri = vim.uri_from_bufnr(service) }, position = PY_HOVER }, 60000)
  out.python_hover = hover and hover[client.id] and hover[client.id].result
  step("python hover")

  vim.cmd("edit " .. vim.fn.fnameescape(MAIN_TS))
  local main_ts = vim.api.nvim_get_current_buf()
  local ts_hover = vim.lsp.buf_request_sync(main_ts, "textDocument/hover",
    { textDocument = { uri = vim.uri_from_bufnr(main_ts) }, position = TS_HOVER }, 60000)
  out.typescript_hover = ts_hover and ts_hover[client.id] and ts_hover[client.id].result
  out.hub_clients = {}
  for _, c in ipairs(vim.lsp.get_active_clients()) do
    if c.name == "lsp-hub" then table.insert(out.hub_clients, { id = c.id, root = c.config.root_dir }) end
  end
  out.ts_client_is_python_client = hub.client_for(main_ts).id == client.id
  step("typescript hover")

  out.advertised = client.server_capabilities.executeCommandProvider.commands
  local function advertised(command) return vim.tbl_contains(out.advertised, command) end

  section("status", function()
    vim.cmd("LspHubStatus")
    wait_for("the status buffer", function() return buffer_named("lsp-hub://status") ~= nil end)
    local bufnr = buffer_named("lsp-hub://status")
    out.status_buffer = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
    out.status_buffer_is_shown = vim.fn.bufwinid(bufnr) ~= -1
    out.status_direct = client.request_sync("workspace/executeCommand",
      { command = "lspHub.status", arguments = {} }, 10000, 0).result
    vim.cmd("close")
  end)

  -- The index commands below compare with the hub's answer once the index is built.
  if vim.tbl_contains(out.advertised, "lspHub.repoMap") or advertised("lspHub.relevantFiles")
      or advertised("lspHub.callers") or advertised("lspHub.syntaxCheck") then
    pcall(vim.wait, 30000, function()
      local status = client.request_sync("workspace/executeCommand",
        { command = "lspHub.status", arguments = {} }, 10000, 0)
      local index = status and status.result and status.result.index
      return index == nil or index == vim.NIL or index.state == "ready"
    end, 200)
    step("index ready")
  end

  if advertised("lspHub.repoMap") then
    section("repoMap", function()
      vim.cmd("edit " .. vim.fn.fnameescape(SERVICE))
      vim.cmd("LspHubRepoMap")
      wait_for("the repo map buffer", function() return buffer_named("lsp-hub://repo-map") ~= nil end)
      local bufnr = buffer_named("lsp-hub://repo-map")
      out.repo_map_buffer = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
      out.repo_map_direct = direct(client, "lspHub.repoMap",
        { focusFiles = { vim.uri_from_fname(SERVICE) }, tokenBudget = 1024 })
      vim.cmd("close")
    end)
  end

  if advertised("lspHub.relevantFiles") then
    section("relevantFiles", function()
      vim.cmd("edit " .. vim.fn.fnameescape(SERVICE))
      out.relevant_quickfix = run_for_quickfix("LspHubRelevant " .. RELEVANT, "lsp-hub relevant")
      out.relevant_direct = direct(client, "lspHub.relevantFiles", { description = RELEVANT, topN = 10 })
    end)
  end

  if advertised("lspHub.callers") then
    section("callers", function()
      vim.cmd("edit " .. vim.fn.fnameescape(MODELS))
      vim.api.nvim_win_set_cursor(0, { CALLEE.line + 1, CALLEE.character })
      out.callers_quickfix = run_for_quickfix("LspHubCallers", "lsp-hub callers")
      out.callers_direct = direct(client, "lspHub.callers",
        { uri = vim.uri_from_fname(MODELS), position = CALLEE, depth = 1 })
    end)
  end

  if advertised("lspHub.syntaxCheck") then
    section("syntaxCheck", function()
      vim.cmd("edit " .. vim.fn.fnameescape(BROKEN))
      local count = #out.messages
      vim.cmd("LspHubSyntax")
      wait_for("the no-syntax-errors message", function()
        for i = count + 1, #out.messages do
          if out.messages[i].message:find("no syntax errors", 1, true) then return true end
        end
      end)
      out.syntax_clean_messages = vim.list_slice(out.messages, count + 1)
      vim.cmd("edit " .. vim.fn.fnameescape(TYPO))
      out.syntax_quickfix = run_for_quickfix("LspHubSyntax", "lsp-hub syntax errors")
      out.syntax_direct = direct(client, "lspHub.syntaxCheck", { uri = vim.uri_from_fname(TYPO) })
    end)
  end

  client.stop()
  vim.wait(10000, function() return client.is_stopped() end, 100)
  step("stopped")
end)
if not ok then out.error = tostring(err) end
finish()
"""








@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, require_binary: Callable[[str], str]) -> dict[str, Any]:
    """Run the whole Neovim session once; every test reads its record."""
    nvim = require_binary("nvim")
    git = require_binary("git")
    for server in ("basedpyright-langserver", "ruff", "typescript-language-server"):
        require_binary(server)
    base = tmp_path_factory.mktemp("neovim-plugin")
    sample = base / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", sample, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    # A repository root above both the Python project and web/package.json: one hub serves both files.
    subprocess.run([git, "init", "-q", str(sample)], check=True)
    typo = sample / "app" / "typo.py"
    typo.write_text("def broken(:\n    return 1\n")
    service, models, main_ts = sample / "app" / "service.py", sample / "app" / "models.py", sample / "web/src/main.ts"
    output = base / "out.json"
    values = {
        "OUTPUT": str(output),
        "PLUGIN_DIR": str(PLUGIN_DIR),
        "CMD": [sys.executable, "-m", "lsp_hub", "--log-file", str(base / "hub.log"), "-v"],
        "BROKEN": str(sample / "app" / "broken.py"),
        "SERVICE": str(service),
        "MODELS": str(models),
        "MAIN_TS": str(main_ts),
        "TYPO": str(typo),
        "RELEVANT": RELEVANT_DESCRIPTION,
        "PY_HOVER": position_of(service.read_text(), "total_value(inventory)"),
        "TS_HOVER": position_of(main_ts.read_text(), "formatPrice(price)"),
        "CALLEE": position_of(models.read_text(), "def total_value", offset=len("def ")),
    }
    script = base / "session.lua"
    script.write_text("".join(f"local {k} = {lua_value(v)}\n" for k, v in values.items()) + LUA)
    started = time.monotonic()
    completed = subprocess.run(
        [nvim, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {script}"],
        env=isolated_env(base), cwd=sample, capture_output=True, timeout=180, stdin=subprocess.DEVNULL,
    )
    assert output.exists(), (completed.stdout[-2000:], completed.stderr[-2000:])
    record: dict[str, Any] = json.loads(output.read_text())
    record["seconds"] = time.monotonic() - started
    record["sample"] = str(sample)
    record["hub_log"] = str(base / "hub.log")
    assert "error" not in record, (record, (base / "hub.log").read_text()[-3000:])
    return record


def _require_advertised(session: dict[str, Any], command: str) -> None:
    """Skip while the hub lacks the command; once it advertises it, the plugin's section must have succeeded."""
    if command not in session["advertised"]:
        pytest.skip(f"the hub does not advertise {command} yet")
    _section_ran(session, command)


def _section_ran(session: dict[str, Any], command: str) -> None:
    short = command.removeprefix("lspHub.")
    sections = session["sections"] or {}  # Lua's empty table arrives as []
    problem = sections.get(short)
    assert problem is None, f"{command} through the plugin failed in Neovim: {problem}"


def _relative(session: dict[str, Any], filename: str) -> str:
    return Path(filename).resolve().relative_to(Path(session["sample"]).resolve()).as_posix()


def test_one_hub_per_root_serves_python_and_typescript(session: dict[str, Any]) -> None:
    assert session["commands_before_setup"], "plugin/lsp_hub.lua should define the commands before setup()"
    assert [Path(c["root"]).resolve() for c in session["hub_clients"]] == [Path(session["sample"]).resolve()]
    assert session["ts_client_is_python_client"]
    sources = {d["source"] for d in session["diagnostics"]}
    assert {"basedpyright", "Ruff"} <= sources, session["diagnostics"]
    assert "def total_value" in session["python_hover"]["contents"]["value"], session["python_hover"]
    assert "formatPrice" in json.dumps(session["typescript_hover"]), session["typescript_hover"]


def test_status_command_shows_the_running_servers(session: dict[str, Any]) -> None:
    _section_ran(session, "lspHub.status")
    assert session["status_buffer_is_shown"]
    text = "\n".join(session["status_buffer"])
    direct = session["status_direct"]
    assert f"(pid {direct['hub']['pid']})" in session["status_buffer"][0]
    running = {s["name"] for s in direct["servers"] if s["state"] == "running"}
    assert {"basedpyright", "ruff", "typescript-language-server"} <= running, direct["servers"]
    for server in direct["servers"]:
        row = next((line for line in session["status_buffer"] if line.split()[:2] == [server["name"],
                                                                                      server["state"]]), None)
        assert row is not None, (server, text)
        assert str(server["root"]) in row
    if isinstance(direct.get("index"), dict):
        assert f"index: {direct['index']['state']}" in text or "index: ready" in text
    else:
        assert "index: not available" in text


def test_repo_map_command_shows_the_map_of_the_hub(session: dict[str, Any]) -> None:
    _require_advertised(session, "lspHub.repoMap")
    direct = session["repo_map_direct"]
    shown = [line for line in session["repo_map_buffer"] if not line.startswith("# incomplete")]
    assert shown == direct["text"].rstrip("\n").split("\n")
    assert "app/models.py" in direct["text"], direct  # service.py imports it: it must rank on the map
    assert not any(line.strip() == "app/service.py" or line.startswith("app/service.py") for line in shown)


def test_relevant_command_fills_quickfix_with_reasons(session: dict[str, Any]) -> None:
    _require_advertised(session, "lspHub.relevantFiles")
    direct = session["relevant_direct"]
    items = session["relevant_quickfix"]["items"]
    assert session["relevant_quickfix"]["title"].startswith(f"lsp-hub relevant: {RELEVANT_DESCRIPTION}")
    assert [_relative(session, item["filename"]) for item in items] == [f["path"] for f in direct["files"]]
    for item, file in zip(items, direct["files"], strict=True):
        assert item["lnum"] == 1
        for reason in file["reasons"]:
            assert reason in item["text"]
    assert "app/models.py" in [f["path"] for f in direct["files"]], direct


def test_callers_command_fills_quickfix_with_call_sites(session: dict[str, Any]) -> None:
    _require_advertised(session, "lspHub.callers")
    direct = session["callers_direct"]
    items = session["callers_quickfix"]["items"]
    assert "total_value" in session["callers_quickfix"]["title"]
    assert len(items) == len(direct["callers"])
    service_text = (Path(session["sample"]) / "app" / "service.py").read_text()
    call = position_of(service_text, "total_value(inventory)")
    found = [(_relative(session, item["filename"]), item["lnum"]) for item in items]
    assert ("app/service.py", call["line"] + 1) in found, found
    report_item = next(i for i in items if _relative(session, i["filename"]) == "app/service.py")
    caller_name = report_item["text"].split(": ", 1)[0]
    assert "report" in caller_name, report_item  # the enclosing function names the entry


def test_syntax_command_reports_errors_or_says_none(session: dict[str, Any]) -> None:
    _require_advertised(session, "lspHub.syntaxCheck")
    assert any("no syntax errors" in m["message"] for m in session["syntax_clean_messages"])
    direct = session["syntax_direct"]
    items = session["syntax_quickfix"]["items"]
    assert direct["errors"], direct
    assert len(items) == len(direct["errors"])
    for item, error in zip(items, direct["errors"], strict=True):
        assert _relative(session, item["filename"]) == "app/typo.py"
        assert item["lnum"] == error["range"]["start"]["line"] + 1
        assert item["text"] == error["message"]
        assert item["type"] == "E"
    assert items[0]["lnum"] == 1


def test_session_is_fast_enough(session: dict[str, Any]) -> None:
    assert session["seconds"] < 90, session["steps"]
