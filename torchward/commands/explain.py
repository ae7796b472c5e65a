"""``torchward explain CODE``: a rule's documentation, the same text as docs/rules and hover."""

from __future__ import annotations

import argparse

NAME = "explain"
HELP = "Print the documentation of a rule (by code, like TW001, or by name)."
ORDER = 20


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "code", metavar="CODE", help="a rule code (TW001; torch-preflight's TG001 too) or name"
    )


def run(args: argparse.Namespace) -> int:
    from ..analysis import rule_by_code
    from ..errors import UsageError

    code = args.code.strip()
    if code.upper().startswith("TG"):
        code = "TW" + code[2:]
    rule = rule_by_code(code)
    if rule is None:
        raise UsageError(f"unknown rule '{args.code}'; `torchward rules` lists them all")
    print(rule.documentation(), end="")
    return 0
