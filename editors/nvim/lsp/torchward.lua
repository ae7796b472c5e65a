-- torchward for Neovim's built-in client (Neovim 0.11+: vim.lsp.config / vim.lsp.enable).
--
-- Neovim reads this file when `vim.lsp.enable('torchward')` runs and the folder that
-- holds it (editors/nvim) is on 'runtimepath'. Override any key with
-- `vim.lsp.config('torchward', { ... })`; the two are merged, yours winning.
--
-- Settings: `settings.torchward` answers the server's `workspace/configuration` requests
-- (and changes made later with `vim.lsp.config` + `:lsp restart`). To have them at
-- `initialize` too (before the first analysis), add `init_options = { targetGpu = ... }`
-- — never an empty `init_options = {}`: Lua's empty table is sent as `[]`. Keys are the
-- server's camelCase names; unset, the GPU comes from pyproject's `target-gpu`.
--
-- Pull diagnostics: Neovim 0.11 pulls on each change but has no handler for
-- `workspace/diagnostic/refresh`; this config declares it and re-pulls (torchward.lua),
-- so TW010 follows `:TorchwardGpu` and settings changes without an edit.
return {
  cmd = { 'torchward', 'lsp' },
  filetypes = { 'python' },
  root_markers = { 'pyproject.toml', 'setup.py', 'setup.cfg', '.git' },
  capabilities = { workspace = { diagnostics = { refreshSupport = true } } },
  settings = {
    torchward = {
      -- targetGpu = 'A100 80GB',  -- GPU or instance type the fit is checked against
      -- debounceMs = 150,          -- quiet time after typing before re-analysis
      -- select = { 'TW0' }, ignore = { 'TW011' }, severity = { TW002 = 'error' },
      -- estimator = true, inlayHints = true, codeLens = true,
      -- workspaceScan = 'off',     -- 'index' | 'diagnostics': scan the whole root in the background
      -- largeFileLines = 60000,    -- longer files are analysed on open and save, not as you type
    },
  },
  handlers = {
    ['torchward/gpuFit'] = function(err, result, ctx)
      require('torchward').on_gpu_fit(err, result, ctx)
    end,
    ['workspace/diagnostic/refresh'] = function(err, result, ctx)
      return require('torchward').on_diagnostic_refresh(err, result, ctx)
    end,
  },
}
