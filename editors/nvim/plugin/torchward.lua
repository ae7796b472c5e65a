-- :TorchwardGpu [name]     select the GPU (or instance type) the fit is checked against.
-- :TorchwardWhy            why this buffer has no estimate ("no job found", "no training job"), and what to do.
-- :TorchwardExplain TWxxx  the rule's documentation in a Markdown split.
if vim.g.loaded_torchward then
  return
end
vim.g.loaded_torchward = true

vim.api.nvim_create_user_command('TorchwardGpu', function(opts)
  if opts.args ~= '' then
    require('torchward').select_gpu(opts.args)
  else
    require('torchward').pick_gpu()
  end
end, { nargs = '?', desc = 'torchward: select the target GPU' })

vim.api.nvim_create_user_command('TorchwardWhy', function()
  require('torchward').why()
end, { nargs = 0, desc = 'torchward: why there is no estimate, and the next step' })

vim.api.nvim_create_user_command('TorchwardExplain', function(opts)
  require('torchward').explain(opts.args:upper())
end, { nargs = 1, desc = "torchward: show a rule's documentation" })
