"""New and vanished findings between two ``torchward check --format json`` outputs.

The corpus triage reads every finding a change adds or removes; this lists them, keyed
by path, code, line and the start of the message (so a reworded message of the same
finding shows as one gone and one new, which is worth reading too)::

    .venv/bin/python bench/diff_findings.py before.json after.json [--root /tmp/dev-corpus/]
"""

from __future__ import annotations

import argparse
import collections
import json

Key = tuple[str, str, int, str]


def load(path: str) -> dict[Key, dict]:
    with open(path, encoding="utf-8") as handle:
        return {(f["path"], f["code"], f["line"], f["message"][:60]): f for f in json.load(handle)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--root", default="/tmp/dev-corpus/", help="prefix left off paths")
    args = parser.parse_args(argv)
    before, after = load(args.before), load(args.after)
    for label, keys, source in (
        ("NEW", after.keys() - before.keys(), after),
        ("GONE", before.keys() - after.keys(), before),
    ):
        for key in sorted(keys):
            finding = source[key]
            where = finding["path"].removeprefix(args.root)
            print(
                f"{label} {finding['severity']:7} {finding['code']} {where}:{finding['line']}"
                f"  {finding['message'][:140]}"
            )
    for label, findings in (("before", before), ("after", after)):
        counts = collections.Counter(f["severity"] for f in findings.values())
        print(f"{label:6} {len(findings)} {dict(sorted(counts.items()))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
