"""One module per rule; :func:`torchward.analysis.rule.all_rules` discovers them."""
