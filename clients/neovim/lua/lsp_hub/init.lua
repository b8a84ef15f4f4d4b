-- lsp-hub for Neovim: start one `lsp-hub` language server per project root and expose the hub's own
-- commands (repo map, relevant files, callers, syntax check, status) as user commands.
--
-- Works on Neovim 0.7 (vim.lsp.start_client + buf_attach_client) and on 0.8+ (vim.lsp.start). The user
-- commands find any client named "lsp-hub" (or "lsp_hub"), so they also work when the client was started
-- by vim.lsp.config/vim.lsp.enable (0.11) or by nvim-lspconfig instead of setup().

local M = {}

local CLIENT_NAMES = { ["lsp-hub"] = true, ["lsp_hub"] = true }

M.defaults = {
  cmd = { "lsp-hub" },
  filetypes = {
    "python", "typescript", "javascript", "typescriptreact", "javascriptreact", "c", "cpp", "go", "rust",
    "sh", "yaml", "json", "html", "css",
  },
  -- Sent as initializationOptions; the hub reads its configuration from the `lspHub` key.
  init_options = vim.empty_dict(),
  -- Tried in order like Neovim 0.11's root_markers: the first entry found above the buffer decides; the
  -- markers inside a nested list are of equal priority (the nearest wins). The hub works out each backend
  -- server's own root below this one, so the repository is the best root.
  root_markers = {
    { ".lsp-hub.toml", ".git" },
    { "pyproject.toml", "setup.py", "setup.cfg", "package.json", "tsconfig.json", "go.mod", "Cargo.toml",
      "compile_commands.json", "compile_flags.txt" },
  },
  -- Milliseconds a command waits for a client that is still initializing.
  init_timeout_ms = 10000,
  -- Where scratch buffers open: an Ex command run before showing the buffer.
  split = "botright split",
}

M.config = vim.deepcopy(M.defaults)

-- root directory -> client id, for Neovim 0.7 where vim.lsp.start (which reuses clients itself) is missing.
local client_of_root = {}

local has_lsp_start = vim.lsp.start ~= nil
local colon_methods = vim.fn.has("nvim-0.11") == 1 -- client:request(); the dot form is deprecated there

-- ============================================================================================ small helpers
local function notify(message, level)
  vim.notify("lsp-hub: " .. message, level or vim.log.levels.INFO)
end

local function client_request(client, method, params, handler, bufnr)
  if colon_methods then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function all_clients()
  if vim.lsp.get_clients then
    return vim.lsp.get_clients()
  end
  return vim.lsp.get_active_clients()
end

local function is_hub(client)
  return client ~= nil and CLIENT_NAMES[client.name] == true
end

local function is_directory(path)
  local stat = vim.loop.fs_stat(path)
  return stat ~= nil and stat.type == "directory"
end

local function exists(path)
  return vim.loop.fs_stat(path) ~= nil
end

local function parent_of(path)
  local parent = vim.fn.fnamemodify(path, ":h")
  if parent == path then
    return nil
  end
  return parent
end

-- The nearest directory at or above `start` holding one of `names`, or nil.
local function nearest_with(start, names)
  local directory = start
  while directory do
    for _, name in ipairs(names) do
      if exists(directory .. "/" .. name) then
        return directory
      end
    end
    directory = parent_of(directory)
  end
  return nil
end

--- The project root of a file path: the first root_markers entry found above it, else the current directory.
function M.find_root(path, root_markers)
  root_markers = root_markers or M.config.root_markers
  local start = path ~= "" and vim.fn.fnamemodify(path, ":p") or vim.fn.getcwd()
  if not is_directory(start) then
    start = vim.fn.fnamemodify(start, ":h")
  end
  for _, entry in ipairs(root_markers) do
    local names = type(entry) == "table" and entry or { entry }
    local found = nearest_with(start, names)
    if found then
      return found
    end
  end
  return vim.fn.getcwd()
end

-- A buffer is served when it holds a real file (not a help page, terminal or fugitive:// view).
local function is_file_buffer(bufnr)
  if vim.api.nvim_buf_get_option(bufnr, "buftype") ~= "" then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  return name ~= "" and not name:match("^%a[%w+.-]*://")
end

local function client_config(root)
  return {
    name = "lsp-hub",
    cmd = M.config.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
    init_options = M.config.init_options,
    on_exit = function()
      -- A later buffer of this root starts a fresh hub instead of attaching to a dead client.
      vim.schedule(function()
        local id = client_of_root[root]
        if id and vim.lsp.get_client_by_id(id) == nil then
          client_of_root[root] = nil
        end
      end)
    end,
  }
end

--- Attach the buffer to the lsp-hub client of its root, starting that client if needed. Returns the client id.
function M.attach(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  if not is_file_buffer(bufnr) then
    return nil
  end
  local root = M.find_root(vim.api.nvim_buf_get_name(bufnr))
  if has_lsp_start then
    return vim.lsp.start(client_config(root), { bufnr = bufnr })
  end
  local client_id = client_of_root[root]
  if client_id == nil or vim.lsp.get_client_by_id(client_id) == nil then
    client_id = vim.lsp.start_client(client_config(root))
    if client_id == nil then
      notify("could not start " .. table.concat(M.config.cmd, " "), vim.log.levels.ERROR)
      return nil
    end
    client_of_root[root] = client_id
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
  return client_id
end

-- ================================================================================================= clients
--- The lsp-hub client serving a buffer: the one attached to it, else the one of its root (or the cwd's),
--- else any running lsp-hub client. Nil when none runs.
function M.client_for(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local hubs = {}
  for _, client in ipairs(all_clients()) do
    if is_hub(client) then
      table.insert(hubs, client)
    end
  end
  for _, client in ipairs(hubs) do
    if client.attached_buffers and client.attached_buffers[bufnr] then
      return client
    end
  end
  if hubs[1] and hubs[1].attached_buffers == nil then -- 0.7 keeps no attached_buffers on the client
    for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
      if is_hub(client) then
        return client
      end
    end
  end
  local root = M.find_root(is_file_buffer(bufnr) and vim.api.nvim_buf_get_name(bufnr) or "")
  for _, client in ipairs(hubs) do
    if client.config and client.config.root_dir == root then
      return client
    end
  end
  local pending = client_of_root[root] and vim.lsp.get_client_by_id(client_of_root[root])
  return pending or hubs[1]
end

local function with_client(bufnr, callback)
  local client = M.client_for(bufnr)
  if client == nil then
    notify("no lsp-hub client runs; open a file of a configured filetype first", vim.log.levels.ERROR)
    return
  end
  if not client.initialized then
    vim.wait(M.config.init_timeout_ms, function()
      return client.initialized == true
    end, 50)
  end
  callback(client)
end

--- Run one of the hub's commands asynchronously; `on_result(result, client)` runs on success.
function M.execute(command, argument, on_result, bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  with_client(bufnr, function(client)
    local commands = (client.server_capabilities and client.server_capabilities.executeCommandProvider or {}).commands
    if commands and not vim.tbl_contains(commands, command) then
      notify("this lsp-hub does not offer " .. command, vim.log.levels.WARN)
      return
    end
    local params = { command = command, arguments = { argument } }
    if argument == nil then
      params.arguments = {}
    end
    client_request(client, "workspace/executeCommand", params, function(err, result)
      if err then
        notify(command .. " failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
        return
      end
      on_result(result, client)
    end, bufnr)
  end)
end

-- ========================================================================================== presentation
local function path_of(entry, root)
  if entry:match("^file://") then
    return vim.uri_to_fname(entry)
  end
  if entry:sub(1, 1) == "/" then
    return entry
  end
  return root .. "/" .. entry
end

local function root_of(client)
  return (client.config and client.config.root_dir) or vim.fn.getcwd()
end

local function incomplete_note(result)
  if result.complete ~= false then
    return nil
  end
  local parts = {}
  if result.pendingFiles then
    local pending = type(result.pendingFiles) == "table" and #result.pendingFiles or result.pendingFiles
    table.insert(parts, tostring(pending) .. " files still being indexed")
  end
  if type(result.skippedFiles) == "table" and #result.skippedFiles > 0 then
    table.insert(parts, #result.skippedFiles .. " files skipped")
  end
  return "incomplete" .. (#parts > 0 and (": " .. table.concat(parts, ", ")) or "")
end

--- Show `lines` in the scratch buffer called `name` (reused if it exists) and focus its window.
function M.show_scratch(name, lines, filetype)
  local bufnr = nil
  for _, candidate in ipairs(vim.api.nvim_list_bufs()) do -- exact names: bufnr() would take a pattern
    if vim.api.nvim_buf_get_name(candidate) == name then
      bufnr = candidate
    end
  end
  if bufnr == nil then
    bufnr = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(bufnr, name)
  end
  vim.api.nvim_buf_set_option(bufnr, "buftype", "nofile")
  vim.api.nvim_buf_set_option(bufnr, "bufhidden", "hide")
  vim.api.nvim_buf_set_option(bufnr, "swapfile", false)
  vim.api.nvim_buf_set_option(bufnr, "modifiable", true)
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(bufnr, "modifiable", false)
  if filetype then
    vim.api.nvim_buf_set_option(bufnr, "filetype", filetype)
  end
  local window = vim.fn.bufwinid(bufnr)
  if window == -1 then
    vim.cmd(M.config.split)
    vim.api.nvim_win_set_buf(0, bufnr)
  else
    vim.api.nvim_set_current_win(window)
  end
  return bufnr
end

local function set_quickfix(title, items)
  vim.fn.setqflist({}, " ", { title = title, items = items })
end

-- ================================================================================================ commands
--- :LspHubRepoMap [budget] — the repository map, personalized toward the current file, in a scratch buffer.
function M.repo_map(opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local argument = { tokenBudget = opts.budget or 1024 }
  if is_file_buffer(bufnr) then
    argument.focusFiles = { vim.uri_from_bufnr(bufnr) }
  end
  M.execute("lspHub.repoMap", argument, function(result)
    local text = (result.text or ""):gsub("\n+$", "")
    local lines = vim.split(text, "\n", { plain = true })
    local note = incomplete_note(result)
    if note then
      table.insert(lines, 1, "# " .. note)
    end
    M.show_scratch("lsp-hub://repo-map", lines)
  end, bufnr)
end

--- :LspHubRelevant[!] {description} — files relevant to a task in the quickfix list, with their reasons.
--- With !, the current file is a target (it is then left out of the list, like every target).
function M.relevant(description, opts)
  opts = opts or {}
  if description == nil or vim.trim(description) == "" then
    notify("usage: :LspHubRelevant {description of the task}", vim.log.levels.ERROR)
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local argument = { description = description, topN = opts.top or 10 }
  if opts.current_file_is_target and is_file_buffer(bufnr) then
    argument.targets = { vim.uri_from_bufnr(bufnr) }
  end
  M.execute("lspHub.relevantFiles", argument, function(result, client)
    local root = root_of(client)
    local items = {}
    for _, file in ipairs(result.files or {}) do
      local reasons = table.concat(file.reasons or {}, "; ")
      table.insert(items, {
        filename = path_of(file.path, root),
        lnum = 1,
        col = 1,
        text = string.format("%.2f %s", file.score or 0, reasons),
      })
    end
    local title = "lsp-hub relevant: " .. description
    local note = incomplete_note(result)
    if note then
      title = title .. " (" .. note .. ")"
    end
    set_quickfix(title, items)
    if #items == 0 then
      notify("no relevant files found" .. (note and (" (" .. note .. ")") or ""))
    else
      vim.cmd("copen")
    end
  end, bufnr)
end

--- :LspHubCallers [depth] — callers of the symbol under the cursor in the quickfix list.
function M.callers(opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  with_client(bufnr, function(client)
    local encoding = client.offset_encoding or "utf-16"
    local position = vim.lsp.util.make_position_params(0, encoding).position
    local argument = { uri = vim.uri_from_bufnr(bufnr), position = position, depth = opts.depth or 1 }
    M.execute("lspHub.callers", argument, function(result)
      local items = {}
      for _, call in ipairs(result.callers or {}) do
        local item = vim.lsp.util.locations_to_items({ call.location }, encoding)[1]
        if item then
          local caller = call.caller ~= nil and call.caller ~= vim.NIL and call.caller or "<top level>"
          local indent = string.rep("  ", math.max((call.depth or 1) - 1, 0))
          item.text = indent .. caller .. ": " .. vim.trim(item.text or "")
          table.insert(items, item)
        end
      end
      local symbol = (result.symbol ~= vim.NIL and result.symbol) or "?"
      local note = incomplete_note(result)
      set_quickfix("lsp-hub callers of " .. symbol .. (note and (" (" .. note .. ")") or ""), items)
      if #items == 0 then
        notify("no callers of " .. symbol .. " found" .. (note and (" (" .. note .. ")") or ""))
      else
        vim.cmd("copen")
      end
    end, bufnr)
  end)
end

--- :LspHubSyntax — tree-sitter syntax check of the current buffer: errors to the quickfix list.
function M.syntax_check()
  local bufnr = vim.api.nvim_get_current_buf()
  with_client(bufnr, function(client)
    local encoding = client.offset_encoding or "utf-16"
    local uri = vim.uri_from_bufnr(bufnr)
    local argument = { uri = uri }
    local attached = client.attached_buffers and client.attached_buffers[bufnr]
    if client.attached_buffers == nil then -- Neovim 0.7
      attached = vim.lsp.buf_get_clients(bufnr)[client.id] ~= nil
    end
    if not attached then -- the hub does not have this buffer's text: send it
      argument.text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n"
    end
    local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ":~:.")
    M.execute("lspHub.syntaxCheck", argument, function(result)
      if result.checked == false then
        notify("syntax of " .. name .. " not checked: " .. tostring(result.reason or "unknown reason"))
        return
      end
      local items = {}
      for _, problem in ipairs(result.errors or {}) do
        local item = vim.lsp.util.locations_to_items({ { uri = uri, range = problem.range } }, encoding)[1]
        item.text = problem.message
        item.type = "E"
        table.insert(items, item)
      end
      if #items == 0 then
        notify("no syntax errors in " .. name .. " (" .. tostring(result.language or "?") .. ")")
        return
      end
      set_quickfix("lsp-hub syntax errors in " .. name, items)
      vim.cmd("copen")
    end, bufnr)
  end)
end

local function status_lines(status)
  local lines = {}
  local hub = status.hub or {}
  table.insert(lines, string.format("lsp-hub %s (pid %s), %s open documents", tostring(hub.version or "?"),
    tostring(hub.pid or "?"), tostring(status.documents or "?")))
  for _, folder in ipairs(status.workspaceFolders or {}) do
    table.insert(lines, "workspace folder: " .. tostring(folder))
  end
  table.insert(lines, "")
  table.insert(lines, "servers:")
  table.insert(lines, string.format("  %-28s %-9s %-8s %-8s %-5s %s", "name", "state", "pid", "restarts", "docs",
    "root (languages)"))
  for _, server in ipairs(status.servers or {}) do
    local pid = server.pid ~= vim.NIL and server.pid or "-"
    table.insert(lines, string.format("  %-28s %-9s %-8s %-8s %-5s %s (%s)", tostring(server.name),
      tostring(server.state), tostring(pid), tostring(server.restarts or 0), tostring(server.openDocuments or "-"),
      tostring(server.root), table.concat(server.languages or {}, ", ")))
    if server.error and server.error ~= vim.NIL then
      table.insert(lines, "    error: " .. tostring(server.error))
    end
  end
  if #(status.servers or {}) == 0 then
    table.insert(lines, "  (none yet: servers start with the first file that needs them)")
  end
  table.insert(lines, "")
  local index = status.index
  if type(index) == "table" then
    table.insert(lines, string.format("index: %s, %s files, %s symbols, last build %s s", tostring(index.state),
      tostring(index.files or "?"), tostring(index.symbols or "?"), tostring(index.lastBuildSeconds or "?")))
    local languages = {}
    for language, count in pairs(index.languages or {}) do
      table.insert(languages, language .. " " .. tostring(count))
    end
    table.sort(languages)
    if #languages > 0 then
      table.insert(lines, "  languages: " .. table.concat(languages, ", "))
    end
  else
    table.insert(lines, "index: not available in this hub")
  end
  for _, problem in ipairs(status.configProblems or {}) do
    table.insert(lines, "config problem: " .. tostring(problem))
  end
  return lines
end

--- :LspHubStatus — the hub's servers, their roots, restarts and the index state in a scratch buffer.
function M.status()
  M.execute("lspHub.status", nil, function(result)
    M.show_scratch("lsp-hub://status", status_lines(result or {}))
  end)
end

-- =================================================================================================== setup
--- Define the user commands (idempotent; plugin/lsp_hub.lua calls it at startup).
function M.create_commands()
  local create = vim.api.nvim_create_user_command
  create("LspHubRepoMap", function(args)
    M.repo_map({ budget = tonumber(args.args) })
  end, { nargs = "?", desc = "lsp-hub: repository map focused on the current file" })
  create("LspHubRelevant", function(args)
    M.relevant(args.args, { current_file_is_target = args.bang })
  end, { nargs = "+", bang = true, desc = "lsp-hub: files relevant to a task (quickfix)" })
  create("LspHubCallers", function(args)
    M.callers({ depth = tonumber(args.args) })
  end, { nargs = "?", desc = "lsp-hub: callers of the symbol under the cursor (quickfix)" })
  create("LspHubSyntax", function()
    M.syntax_check()
  end, { desc = "lsp-hub: tree-sitter syntax check of this buffer" })
  create("LspHubStatus", function()
    M.status()
  end, { desc = "lsp-hub: servers, roots, restarts and index state" })
end

--- require("lsp_hub").setup({ cmd = {...}, filetypes = {...}, init_options = {...}, root_markers = {...} })
function M.setup(opts)
  M.config = vim.tbl_extend("force", vim.deepcopy(M.defaults), opts or {})
  M.create_commands()
  local group = vim.api.nvim_create_augroup("lsp_hub", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = M.config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
    desc = "lsp-hub: attach to the hub of this buffer's root",
  })
  -- Buffers opened before setup() ran (lazy loading) get attached too.
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr)
        and vim.tbl_contains(M.config.filetypes, vim.api.nvim_buf_get_option(bufnr, "filetype")) then
      M.attach(bufnr)
    end
  end
end

return M
