"""A real editor: Debian's Neovim (0.7) run headless against `lsp-hub`, getting hover and merged diagnostics."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_hub.transport.rawclient import position_of
from tests.conftest import EXAMPLES_DIR
from tests.editor_support import isolated_env, lua_value

pytestmark = [pytest.mark.editor, pytest.mark.real_server]

LUA = r"""
local out = {}
local function finish()
  local file = io.open(OUTPUT, "w")
  file:write(vim.fn.json_encode(out))
  file:close()
  vim.cmd("qa!")
end
local ok, err = pcall(function()
  local client_id = vim.lsp.start_client({
    name = "lsp-hub",
    cmd = CMD,
    root_dir = ROOT,
    workspace_folders = {{ uri = vim.uri_from_fname(ROOT), name = "sample" }},
    on_exit = function(code) out.exit_code = code end,
  })
  out.client_id = client_id
  vim.cmd("edit " .. BROKEN)
  local broken = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(broken, client_id)
  vim.cmd("edit " .. SERVICE)
  local service = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(service, client_id)
  local sources = {}
  vim.wait(90000, function()
    sources = {}
    for _, d in ipairs(vim.diagnostic.get(broken)) do sources[d.source or "?"] = true end
    return sources["basedpyright"] and sources["Ruff"]
  end, 200)
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(broken)) do
    table.insert(out.diagnostics, { source = d.source, message = d.message, lnum = d.lnum })
  end
  local client = vim.lsp.get_client_by_id(client_id)
  local params = { textDocument = { uri = vim.uri_from_bufnr(service) }, position = HOVER_POSITION }
  local response = client.request_sync("textDocument/hover", params, 90000, service)
  out.hover = response and response.result and response.result.contents
  out.hover_error = response and response.err
  local status = client.request_sync("workspace/executeCommand",
    { command = "lspHub.status", arguments = {} }, 10000, service)
  out.status = status and status.result
  client.stop()
  vim.wait(10000, function() return out.exit_code ~= nil end, 100)
end)
if not ok then out.error = tostring(err) end
finish()
"""






def test_neovim_gets_hover_and_merged_diagnostics(tmp_path: Path, require_binary) -> None:  # type: ignore[no-untyped-def]
    nvim = require_binary("nvim")
    require_binary("basedpyright-langserver")
    require_binary("ruff")
    sample = tmp_path / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", sample, ignore=shutil.ignore_patterns(".ruff_cache"))
    service = sample / "app" / "service.py"
    output = tmp_path / "out.json"
    values = {
        "OUTPUT": str(output),
        "CMD": [sys.executable, "-m", "lsp_hub", "--log-file", str(tmp_path / "hub.log"), "-v"],
        "ROOT": str(sample),
        "BROKEN": str(sample / "app" / "broken.py"),
        "SERVICE": str(service),
        "HOVER_POSITION": position_of(service.read_text(), "total_value(inventory)"),
    }
    script = tmp_path / "test.lua"
    script.write_text("".join(f"local {k} = {lua_value(v)}\n" for k, v in values.items()) + LUA)
    env = isolated_env(tmp_path)
    completed = subprocess.run(
        [nvim, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {script}"],
        env=env, cwd=sample, capture_output=True, timeout=240, stdin=subprocess.DEVNULL,
    )
    assert output.exists(), (completed.stdout[-2000:], completed.stderr[-2000:])
    result = json.loads(output.read_text())
    assert "error" not in result, result
    sources = {d["source"] for d in result["diagnostics"]}
    assert {"basedpyright", "Ruff"} <= sources, result["diagnostics"]
    hover = result["hover"]
    assert hover and "def total_value" in hover["value"], result
    running = {s["name"] for s in result["status"]["servers"] if s["state"] == "running"}
    assert {"basedpyright", "ruff"} <= running
    assert result.get("exit_code") == 0
