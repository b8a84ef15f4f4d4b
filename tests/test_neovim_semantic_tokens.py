"""Headless Neovim accepts the hub's semantic tokens. Neovim 0.9+ highlights them (checked with
vim.lsp.semantic_tokens.get_at_pos); Debian's 0.7 has no semantic tokens of its own, so there the raw answer
through vim.lsp.buf_request_sync is decoded with the legend Neovim received from the hub."""

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

SHOP = "class Shop:\n    pass\n\n\ndef greet(name: str) -> str:\n    return name\n\n\nshop = Shop()\ngreet('x')\n"

LUA = r"""
local out = {}
local function finish()
  local file = io.open(OUTPUT, "w")
  file:write(vim.fn.json_encode(out))
  file:close()
  vim.cmd("qa!")
end
local function type_at(data, legend, pos)
  local line, start = 0, 0
  for i = 1, #data - 4, 5 do
    line = line + data[i]
    if data[i] == 0 then start = start + data[i + 1] else start = data[i + 1] end
    if line == pos.line and start == pos.character then return legend.tokenTypes[data[i + 3] + 1] end
  end
  return nil
end
local ok, err = pcall(function()
  local client_id = vim.lsp.start_client({
    name = "lsp-hub",
    cmd = CMD,
    root_dir = ROOT,
    workspace_folders = {{ uri = vim.uri_from_fname(ROOT), name = "sample" }},
    on_exit = function(code) out.exit_code = code end,
  })
  vim.cmd("edit " .. SHOP)
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(buf, client_id)
  vim.wait(30000, function()
    local c = vim.lsp.get_client_by_id(client_id)
    return c ~= nil and c.initialized
  end, 100)
  local client = vim.lsp.get_client_by_id(client_id)
  local provider = client.server_capabilities.semanticTokensProvider
  out.legend = provider and provider.legend
  out.version = tostring(vim.version().major) .. "." .. tostring(vim.version().minor)
  local params = { textDocument = { uri = vim.uri_from_bufnr(buf) } }
  vim.wait(90000, function()
    local responses = vim.lsp.buf_request_sync(buf, "textDocument/semanticTokens/full", params, 90000)
    for _, response in pairs(responses or {}) do
      if response.result and response.result.data and out.legend then
        out.greet = type_at(response.result.data, out.legend, GREET)
        out.shop = type_at(response.result.data, out.legend, SHOP_AT)
      end
      out.request_error = response.err and response.err.message
    end
    return out.greet ~= nil and out.shop ~= nil
  end, 500)
  local tokens = vim.lsp.semantic_tokens
  if tokens ~= nil and tokens.get_at_pos ~= nil then
    -- Neovim 0.9+: its own semantic token highlighter asked the hub; what it highlights at each name.
    local function highlighted(pos)
      for _, token in ipairs(tokens.get_at_pos(buf, pos.line, pos.character) or {}) do
        if token.type then return token.type end
      end
      return nil
    end
    vim.wait(30000, function()
      out.highlighted_greet = highlighted(GREET)
      out.highlighted_shop = highlighted(SHOP_AT)
      return out.highlighted_greet ~= nil and out.highlighted_shop ~= nil
    end, 200)
  end
  client.stop()
  vim.wait(10000, function() return out.exit_code ~= nil end, 100)
end)
if not ok then out.error = tostring(err) end
finish()
"""


def test_neovim_accepts_the_hubs_semantic_tokens(tmp_path: Path, require_binary) -> None:  # type: ignore[no-untyped-def]
    nvim = require_binary("nvim")
    require_binary("basedpyright-langserver")
    sample = tmp_path / "sample"
    shutil.copytree(EXAMPLES_DIR / "sample", sample, ignore=shutil.ignore_patterns(".ruff_cache", "node_modules"))
    shop = sample / "app" / "shop.py"
    shop.write_text(SHOP)
    output = tmp_path / "out.json"
    values = {
        "OUTPUT": str(output),
        "CMD": [sys.executable, "-m", "lsp_hub", "--log-file", str(tmp_path / "hub.log"), "-v"],
        "ROOT": str(sample),
        "SHOP": str(shop),
        "GREET": position_of(SHOP, "greet("),
        "SHOP_AT": position_of(SHOP, "Shop:"),
    }
    script = tmp_path / "test.lua"
    script.write_text("".join(f"local {k} = {lua_value(v)}\n" for k, v in values.items()) + LUA)
    completed = subprocess.run(
        [nvim, "--headless", "--clean", "-u", "NONE", "-c", f"luafile {script}"],
        env=isolated_env(tmp_path), cwd=sample, capture_output=True, timeout=240, stdin=subprocess.DEVNULL,
    )
    assert output.exists(), (completed.stdout[-2000:], completed.stderr[-2000:])
    result = json.loads(output.read_text())
    assert "error" not in result, result
    assert result["legend"] and "function" in result["legend"]["tokenTypes"], result
    assert (result.get("greet"), result.get("shop")) == ("function", "class"), result
    major, minor = (int(part) for part in result["version"].split("."))
    if (major, minor) >= (0, 9):
        assert (result.get("highlighted_greet"), result.get("highlighted_shop")) == ("function", "class"), result
    assert result.get("exit_code") == 0
