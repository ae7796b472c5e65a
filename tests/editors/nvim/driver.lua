-- Drives Neovim's own LSP client against `torchward lsp` and writes what it saw as JSON.
--
-- Run by test_neovim.py as `nvim --headless --clean -l driver.lua RESULT EDITORS CMD...
-- -- FILE`. Every step waits on Neovim's state (diagnostics in vim.diagnostic, the buffer
-- text, the statusline helper) rather than on the wire, so the assertions in Python are
-- about what a user of Neovim would see. A failing step is recorded, never raised, so
-- the test can print it next to Neovim's lsp.log.
local args = _G.arg
local result_path, editors = args[1], args[2]
local cmd, file = {}, nil
for i = 3, #args do
  if args[i] == '--' then
    file = args[i + 1]
    break
  end
  table.insert(cmd, args[i])
end

local TIMEOUT = tonumber(vim.env.TORCHWARD_NVIM_TIMEOUT_MS or '30000')
local seen = { steps = {} }

local function step(name)
  table.insert(seen.steps, name)
end

local function finish()
  local handle = assert(io.open(result_path, 'w'))
  handle:write(vim.json.encode(seen))
  handle:close()
  vim.cmd('qall!')
end

local function wait(what, predicate)
  if not vim.wait(TIMEOUT, predicate, 20) then
    error('timed out waiting for ' .. what, 0)
  end
end

local function plain_diagnostics(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(out, { code = d.code, lnum = d.lnum, col = d.col, end_lnum = d.end_lnum,
      end_col = d.end_col, message = d.message, source = d.source, severity = d.severity })
  end
  return out
end

local function has_code(bufnr, code)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == code then
      return d
    end
  end
  return nil
end

local function run()
  vim.lsp.log.set_level('debug')
  vim.opt.runtimepath:prepend(editors)
  vim.cmd('runtime! plugin/torchward.lua')
  vim.lsp.config('torchward', {
    cmd = cmd,
    init_options = { debounceMs = 0, targetGpu = 'A100 80GB' },
    settings = { torchward = { debounceMs = 0, targetGpu = 'A100 80GB' } },
  })
  vim.lsp.enable('torchward')
  vim.cmd('filetype on')
  vim.cmd.edit(vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  seen.filetype = vim.bo[bufnr].filetype

  wait('the client to attach', function()
    return #vim.lsp.get_clients({ bufnr = bufnr, name = 'torchward' }) > 0
  end)
  local client = vim.lsp.get_clients({ bufnr = bufnr, name = 'torchward' })[1]
  seen.offset_encoding = client.offset_encoding
  seen.pulls = client.server_capabilities.diagnosticProvider ~= nil
  step('attached')

  wait('TW001 in vim.diagnostic', function() return has_code(bufnr, 'TW001') ~= nil end)
  seen.diagnostics = plain_diagnostics(bufnr)
  local diagnostic = has_code(bufnr, 'TW001')
  step('diagnostics')

  vim.api.nvim_win_set_cursor(0, { diagnostic.lnum + 1, diagnostic.col })
  local hover = client:request_sync('textDocument/hover',
    vim.lsp.util.make_position_params(0, client.offset_encoding), TIMEOUT, bufnr)
  seen.hover = hover and hover.result and hover.result.contents and hover.result.contents.value
  step('hover')

  wait('a torchward/gpuFit notification', function() return require('torchward').fit(bufnr) ~= nil end)
  seen.gpu_fit = require('torchward').fit(bufnr)
  seen.statusline = require('torchward').statusline(bufnr)
  -- the code lens says the same thing, in the same words (one rounding rule: the server's)
  local lenses = client:request_sync('textDocument/codeLens',
    { textDocument = vim.lsp.util.make_text_document_params(bufnr) }, TIMEOUT, bufnr)
  seen.lens_titles = {}
  for _, lens in ipairs(lenses and lenses.result or {}) do
    table.insert(seen.lens_titles, lens.command and lens.command.title)
  end
  step('gpuFit')

  local params = vim.lsp.util.make_range_params(0, client.offset_encoding)
  params.context = { diagnostics = { diagnostic.user_data.lsp }, only = { 'quickfix' } }
  local answer = client:request_sync('textDocument/codeAction', params, TIMEOUT, bufnr)
  local titles, target = {}, nil
  for _, action in ipairs(answer and answer.result or {}) do
    table.insert(titles, action.title)
    if target == nil and action.isPreferred then
      target = action.title
    end
  end
  target = target or ('Suppress TW001 on this line')
  seen.actions, seen.applied = titles, target
  step('codeActions')

  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  vim.lsp.buf.code_action({ apply = true, context = { only = { 'quickfix' } },
    filter = function(action) return action.title == target end })
  wait('the code action to change the buffer', function()
    return vim.api.nvim_buf_get_changedtick(bufnr) ~= tick
  end)
  wait('TW001 to clear', function() return has_code(bufnr, 'TW001') == nil end)
  seen.lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  seen.after = plain_diagnostics(bufnr)
  step('applied')

  local fits = 0
  vim.api.nvim_create_autocmd('User', { pattern = 'TorchwardGpuFit', callback = function() fits = fits + 1 end })
  vim.cmd('TorchwardGpu H100 80GB')
  wait('a gpuFit for the selected GPU', function()
    local fit = require('torchward').fit(bufnr)
    return fits > 0 and fit ~= nil and fit.gpu ~= seen.gpu_fit.gpu
  end)
  seen.selected_fit = require('torchward').fit(bufnr)
  step('selectGpu')
end

local ok, err = xpcall(run, debug.traceback)
if not ok then
  seen.error = tostring(err)
end
seen.log = vim.lsp.log.get_filename()
finish()
