"""Stage rules: receives a file's facts (and, for TW010, its job) and produces findings,
one module per rule, discovered by :func:`torchward.analysis.rule.all_rules`.

One module per rule; :func:`torchward.analysis.rule.all_rules` discovers them."""
