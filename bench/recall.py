"""Per-rule recall on the framework and trainer-class positive examples (issue 28).

Why this exists: issue 28's target is "recall at least 85% on the project's own positive
examples of every rule", in the shapes real code takes (a plain loop, a Trainer class,
Lightning, Accelerate, Hugging Face Trainer overrides, DeepSpeed). The examples are
``tests/analysis/recall/<CODE>.txt``; ``tests/analysis/test_recall.py`` asserts the
target per rule, and this prints the table behind it: examples, found, recall and the
names of the examples missed. The scoring is the test's own (``recall/measure.py``), so
the two cannot disagree.

Run: ``.venv/bin/python bench/recall.py`` (plain text) or ``--markdown`` (the table of
``docs/triage/recall.md``). In-process, no downloads, about a second.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

MEASURE = Path(__file__).resolve().parent.parent / "tests" / "analysis" / "recall" / "measure.py"
TARGET = 0.85


def _load_measure():
    spec = importlib.util.spec_from_file_location("torchward_recall_measure", MEASURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    measure = _load_measure()
    results = [measure.measure(code) for code in measure.rule_codes()]
    total = sum(r.examples for r in results)
    found = sum(r.found for r in results)
    below = [r.code for r in results if r.recall < TARGET]
    if args.markdown:
        print("| rule | examples | found | recall | misses |")
        print("|---|---:|---:|---:|---|")
        for r in results:
            misses = "; ".join(r.misses) or "—"
            print(f"| {r.code} | {r.examples} | {r.found} | {r.recall:.0%} | {misses} |")
        print(f"| **all** | {total} | {found} | {found / total:.1%} | |")
    else:
        print(f"{'rule':6} {'ex':>3} {'found':>5} {'recall':>6}  misses")
        for r in results:
            print(
                f"{r.code:6} {r.examples:>3} {r.found:>5} {r.recall:>6.0%}  {'; '.join(r.misses)}"
            )
        print(f"{'all':6} {total:>3} {found:>5} {found / total:>6.1%}")
    print(f"\nrules at or above {TARGET:.0%}: {len(results) - len(below)} of {len(results)}")
    print(f"below: {', '.join(below) or 'none'}")
    problems = [p for r in results for p in r.problems]
    for problem in problems:
        print(f"analysis problem: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
