-- torchward helpers for Neovim: the GPU fit in the statusline and a GPU picker.
--
-- The server sends `torchward/gpuFit` {uri, status, gpu, peak, interval, percent,
-- verdict, reason, display} whenever the estimate of an open script changes; this module keeps
-- the latest one per buffer and redraws the statusline, so `statusline()` is a plain
-- table lookup that costs nothing on every redraw (no request to the server).
--
--   vim.o.statusline = '%f %= %{v:lua.require("torchward").statusline()} %l:%c'
--   -- lualine: sections = { lualine_x = { require('torchward').statusline } }
--
-- `:TorchwardGpu [name]` (plugin/torchward.lua) selects the target GPU for the session:
-- `torchward.selectGpu` on the server, which re-estimates every open document.
local M = {}

local fits = {} -- bufnr -> last torchward/gpuFit params

--- Called by the `torchward/gpuFit` handler of lsp/torchward.lua.
function M.on_gpu_fit(_, result, _)
  if type(result) ~= 'table' or type(result.uri) ~= 'string' then
    return
  end
  fits[vim.uri_to_bufnr(result.uri)] = result
  vim.schedule(function()
    pcall(vim.cmd.redrawstatus)
    vim.api.nvim_exec_autocmds('User', { pattern = 'TorchwardGpuFit', modeline = false, data = result })
  end)
end

--- The last GPU fit the server sent for `bufnr` (default: the current buffer), or nil.
function M.fit(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  return fits[bufnr]
end

M.NO_JOB = 'torchward: no job found — Why? (:TorchwardWhy)'
-- a Python file without a training run (no PyTorch, or a module that trains nothing)
M.NO_TRAINING = 'torchward: no training job (:TorchwardWhy)'

--- A short text for a statusline: the server's own words for the fit, the title of its
--- code lens ("Peak ≈ 38.1 GiB on A100 80GB SXM4 · fits (48%)", `display.summary` of the
--- gpuFit), so units and rounding are the server's and never disagree with the lens or
--- the hover; '' when there is nothing to say (not a torchward buffer, estimator off, a
--- server too old to send it). A training script whose job cannot be sized says so, and
--- so does a file without a training run: `:TorchwardWhy` tells why and what to do.
function M.statusline(bufnr)
  local fit = M.fit(bufnr)
  if fit == nil then
    return ''
  end
  if fit.status == 'unavailable' then
    return 'GPU fit: n/a'
  end
  if fit.status == 'no-job' then
    return M.NO_JOB
  end
  if fit.status == 'none' then
    return M.NO_TRAINING
  end
  local display = fit.display
  if fit.status ~= 'ok' or type(display) ~= 'table' or type(display.summary) ~= 'string' then
    return ''
  end
  return display.summary
end

local function clients(bufnr)
  return vim.lsp.get_clients({ name = 'torchward', bufnr = bufnr })
end

--- Ask the server to estimate against `name` (a GPU or an instance type) from now on.
--- `on_done(answer)` gets the server's reply {gpu, status[, error]}.
function M.select_gpu(name, on_done)
  local found = clients()
  if #found == 0 then
    found = clients(0)
  end
  for _, client in ipairs(found) do
    client:request('workspace/executeCommand', { command = 'torchward.selectGpu', arguments = { name } },
      function(err, answer)
        if err then
          vim.notify('torchward: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
        elseif answer and answer.status == 'error' then
          vim.notify('torchward: ' .. tostring(answer.error), vim.log.levels.WARN)
        end
        if on_done then
          on_done(answer, err)
        end
      end)
  end
end

--- Prompt for a GPU name (code lens "change GPU", `:TorchwardGpu` without argument).
function M.pick_gpu()
  vim.ui.input({ prompt = 'torchward target GPU or instance: ' }, function(name)
    if name and name ~= '' then
      M.select_gpu(name)
    end
  end)
end

--- Why the buffer has no estimate and the next step (`:TorchwardWhy`, the "no job found
--- — Why?" code lens, a file without a training run): from the last gpuFit, shown with
--- vim.notify.
function M.why(bufnr)
  local fit = M.fit(bufnr)
  if fit == nil then
    vim.notify('torchward: no estimate for this buffer yet', vim.log.levels.INFO)
    return nil
  end
  local message
  if fit.status == 'no-job' then
    message = string.format('torchward: no job found — %s.\nNext step: %s.', fit.reason or '', fit.hint or '')
  elseif fit.status == 'none' then
    message = string.format('torchward: no training job — %s.', fit.reason or '')
    if fit.hint and fit.hint ~= '' then
      message = message .. string.format('\nNext step: %s.', fit.hint)
    end
  elseif fit.status == 'ok' then
    message = 'torchward: ' .. M.statusline(bufnr)
  else
    message = string.format('torchward: no estimate — %s.', fit.reason or fit.status)
  end
  vim.notify(message, vim.log.levels.INFO)
  return message
end

--- The rule's documentation in a read-only Markdown scratch buffer in a split
--- ("Explain TWxxx" code action, `:TorchwardExplain TWxxx`): inside the editor, never a URL.
function M.explain(code, bufnr)
  local found = clients(bufnr)
  if #found == 0 then
    found = clients()
  end
  local client = found[1]
  if client == nil then
    vim.notify('torchward: the server is not running', vim.log.levels.WARN)
    return
  end
  client:request('torchward/ruleDocumentation', { code = code }, function(err, answer)
    if err or type(answer) ~= 'table' or type(answer.markdown) ~= 'string' then
      local why = err and (err.message or vim.inspect(err)) or (answer and answer.error) or 'no documentation'
      vim.notify('torchward: ' .. tostring(why), vim.log.levels.WARN)
      return
    end
    local name = 'torchward://rules/' .. answer.code .. '.md'
    local doc = vim.fn.bufnr(name)
    if doc == -1 then
      doc = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_name(doc, name)
    end
    vim.bo[doc].modifiable = true
    vim.api.nvim_buf_set_lines(doc, 0, -1, false, vim.split(answer.markdown, '\n', { plain = true }))
    vim.bo[doc].modifiable = false
    vim.bo[doc].modified = false
    vim.bo[doc].bufhidden = 'hide'
    vim.bo[doc].filetype = 'markdown'
    vim.cmd('split')
    vim.api.nvim_win_set_buf(0, doc)
  end, bufnr)
end

--- `workspace/diagnostic/refresh`: pull again for every buffer the client is attached to.
function M.on_diagnostic_refresh(_, _, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client == nil then
    return vim.NIL
  end
  for bufnr in pairs(client.attached_buffers) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      client:request('textDocument/diagnostic', { textDocument = vim.lsp.util.make_text_document_params(bufnr) },
        nil, bufnr)
    end
  end
  return vim.NIL
end

-- The server's code lens offers `torchward.selectGpu` without an argument: the editor
-- asks the user, as the VS Code extension does with a quick pick.
vim.lsp.commands['torchward.selectGpu'] = function(command)
  local name = command.arguments and command.arguments[1]
  if type(name) == 'string' and name ~= '' then
    M.select_gpu(name)
  else
    M.pick_gpu()
  end
end

vim.lsp.commands['torchward.explain'] = function(command, ctx)
  local code = command.arguments and command.arguments[1]
  if type(code) == 'string' and code ~= '' then
    M.explain(code, ctx and ctx.bufnr)
  end
end

vim.lsp.commands['torchward.whyNoJob'] = function(command, ctx)
  local uri = command.arguments and command.arguments[1]
  M.why(type(uri) == 'string' and vim.uri_to_bufnr(uri) or (ctx and ctx.bufnr))
end

return M
