-- Drives Neovim with the *shipped* editors/nvim config as a user starts it (no
-- init_options of the test's own) and records what the user sees, as JSON:
-- `:messages` after start-up (no warning expected), the statusline for a project whose
-- pyproject names the target GPU, TW010 before and after `:TorchwardGpu` without an
-- edit, the "no job found" statusline and its Why? code lens, the "no training job"
-- statusline of a file without a training run and its :TorchwardWhy, and "Explain" in a split.
--
-- Run by test_neovim.py as `nvim --headless --clean -l experience.lua RESULT EDITORS
-- CMD... -- GPT2 LLAMA LOCAL HELPERS`.
local args = _G.arg
local result_path, editors = args[1], args[2]
local cmd, files = {}, {}
local after = false
for i = 3, #args do
  if after then
    table.insert(files, args[i])
  elseif args[i] == '--' then
    after = true
  else
    table.insert(cmd, args[i])
  end
end

local TIMEOUT = tonumber(vim.env.TORCHWARD_NVIM_TIMEOUT_MS or '30000')
local seen = { steps = {}, notified = {} }

local function step(name)
  table.insert(seen.steps, name)
end

local function wait(what, predicate)
  if not vim.wait(TIMEOUT, predicate, 20) then
    error('timed out waiting for ' .. what, 0)
  end
end

local function tw010(bufnr)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == 'TW010' then
      return d.message
    end
  end
  return nil
end

local function open(file)
  vim.cmd.edit(vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  wait('the client to attach to ' .. file, function()
    return #vim.lsp.get_clients({ bufnr = bufnr, name = 'torchward' }) > 0
  end)
  return bufnr
end

local function run()
  vim.lsp.log.set_level('debug')
  local notify = vim.notify
  vim.notify = function(message, level, opts)
    table.insert(seen.notified, { message = message, level = level })
    return notify(message, level, opts)
  end
  vim.opt.runtimepath:prepend(editors)
  vim.cmd('runtime! plugin/torchward.lua')
  vim.lsp.config('torchward', { cmd = cmd }) -- the shipped config, only the command is ours
  vim.lsp.enable('torchward')
  vim.cmd('filetype on')
  local torchward = require('torchward')

  -- the project's target-gpu (pyproject) in the statusline
  local gpt2 = open(files[1])
  wait('a gpuFit for the GPT-2 script', function() return torchward.fit(gpt2) ~= nil end)
  seen.gpt2_fit = torchward.fit(gpt2)
  seen.gpt2_statusline = torchward.statusline(gpt2)
  step('target-gpu')

  -- TW010 follows :TorchwardGpu without an edit
  local llama = open(files[2])
  wait('TW010 on the Llama script', function() return tw010(llama) ~= nil end)
  seen.tw010_before = tw010(llama)
  local tick = vim.api.nvim_buf_get_changedtick(llama)
  vim.cmd('TorchwardGpu H100 80GB')
  wait('TW010 to name the H100', function()
    local message = tw010(llama)
    return message ~= nil and message:find('H100', 1, true) ~= nil
  end)
  seen.tw010_after = tw010(llama)
  seen.edited = vim.api.nvim_buf_get_changedtick(llama) ~= tick
  step('selectGpu')

  -- a training script whose model is a local class: "no job found", and why
  local gpt = open(files[3])
  wait('a gpuFit for the local GPT', function() return torchward.fit(gpt) ~= nil end)
  seen.local_fit = torchward.fit(gpt)
  seen.local_statusline = torchward.statusline(gpt)
  local client = vim.lsp.get_clients({ bufnr = gpt, name = 'torchward' })[1]
  local lenses = client:request_sync('textDocument/codeLens',
    { textDocument = vim.lsp.util.make_text_document_params(gpt) }, TIMEOUT, gpt)
  local lens = lenses and lenses.result and lenses.result[1]
  seen.lens_title = lens and lens.command and lens.command.title
  if lens then
    client:exec_cmd(lens.command, { bufnr = gpt })
  end
  step('no-job')

  -- a Python file without a training run: "no training job" in the statusline, and why
  local helpers = open(files[4])
  wait('a gpuFit for the helpers module', function() return torchward.fit(helpers) ~= nil end)
  seen.helpers_fit = torchward.fit(helpers)
  seen.helpers_statusline = torchward.statusline(helpers)
  vim.cmd('TorchwardWhy')
  step('no-training-job')

  -- "Explain TWxxx" opens the documentation in a Markdown split
  client:exec_cmd({ title = 'Explain TW010', command = 'torchward.explain', arguments = { 'TW010' } }, { bufnr = gpt })
  wait('the rule documentation buffer', function()
    return vim.bo.filetype == 'markdown' and vim.api.nvim_buf_get_name(0):find('TW010', 1, true) ~= nil
  end)
  seen.explain_first_line = vim.api.nvim_buf_get_lines(0, 0, 1, false)[1]
  seen.explain_modified = vim.bo.modified
  step('explain')

  seen.messages = vim.api.nvim_exec2('messages', { output = true }).output
end

local ok, err = xpcall(run, debug.traceback)
if not ok then
  seen.error = tostring(err)
end
seen.log = vim.lsp.log.get_filename()
local handle = assert(io.open(result_path, 'w'))
handle:write(vim.json.encode(seen))
handle:close()
vim.cmd('qall!')
