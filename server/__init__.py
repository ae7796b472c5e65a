"""The language server: thin pygls glue over :mod:`torchward.analysis`."""
