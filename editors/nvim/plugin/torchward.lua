-- :TorchwardGpu [name]  select the GPU (or instance type) the fit is checked against.
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
