-- Define the :LspHub* user commands at startup, so they work with any client named "lsp-hub", including
-- one configured through vim.lsp.config/vim.lsp.enable or nvim-lspconfig. Clients start only in setup().
if vim.g.loaded_lsp_hub then
  return
end
vim.g.loaded_lsp_hub = true
require("lsp_hub").create_commands()
