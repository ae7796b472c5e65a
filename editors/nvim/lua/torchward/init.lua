-- torchward helpers for Neovim: the GPU fit in the statusline and a GPU picker.
--
-- The server sends `torchward/gpuFit` {uri, status, gpu, peak, interval, percent,
-- verdict, reason} whenever the estimate of an open script changes; this module keeps
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

local GIB = 1024 * 1024 * 1024

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

local function gib(bytes)
  return string.format('%.1f GiB', bytes / GIB)
end

--- A short text for a statusline: "A100 80GB 38.1 GiB (48%) fits"; '' when there is
--- nothing to say (not a torchward buffer, no training run, estimator off).
function M.statusline(bufnr)
  local fit = M.fit(bufnr)
  if fit == nil then
    return ''
  end
  if fit.status == 'unavailable' then
    return 'GPU fit: n/a'
  end
  if fit.status ~= 'ok' or type(fit.peak) ~= 'number' then
    return ''
  end
  local text = gib(fit.peak)
  if type(fit.percent) == 'number' then
    text = string.format('%s (%d%%)', text, math.floor(fit.percent + 0.5))
  end
  local gpu = type(fit.gpu) == 'string' and (fit.gpu .. ' ') or ''
  local verdict = type(fit.verdict) == 'string' and (' ' .. fit.verdict) or ''
  return gpu .. text .. verdict
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

return M
