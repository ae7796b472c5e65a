"""``torchward rules``: every rule with its code, name, default severity and summary."""

from __future__ import annotations

import argparse

NAME = "rules"
HELP = "List all rules."
ORDER = 30


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=("terminal", "json"), default="terminal", help="output format"
    )


def run(args: argparse.Namespace) -> int:
    import json

    from ..analysis import all_rules

    rules = all_rules()
    if args.format == "json":
        rows = [
            {
                "code": r.code,
                "name": r.name,
                "severity": r.default_severity.value,
                "summary": r.summary,
            }
            for r in rules
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rules:
        print("No rules are installed.")
        return 0
    name_width = max(len(rule.name) for rule in rules)
    for rule in rules:
        print(
            f"{rule.code}  {rule.name:<{name_width}}  {rule.default_severity.value:<7}  {rule.summary}"
        )
    return 0
