"""Measure whether findings depend on the order of ``if``/``else`` branches, on real code.

For every Python file under the given folders that has at least one ``if`` with an
``else``, the file is rewritten twice with ``ast.unparse``: as it is, and with every
such ``if`` swapped (condition negated, bodies exchanged). Both versions are linted in
process and their findings compared by rule, severity, confidence, fix applicability,
the proofs the engine gave the fixers and the flagged source text (line numbers move
when bodies of different lengths are swapped, so they are not compared). Same program,
same findings: any difference is an order dependence in the engine.

``tests/analysis/test_branch_order.py`` checks the same property on small realistic
cases (every subset of branches); this runs it over a corpus.

Run: ``.venv/bin/python bench/branch_order.py /tmp/dev-corpus`` — prints the number of
files compared, how many differ, and the differences (``--json`` for a machine-readable
summary).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
import warnings

from torchward.analysis import analyze_source


class _Swap(ast.NodeTransformer):
    def __init__(self) -> None:
        self.count = 0

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        if node.orelse:
            self.count += 1
            node.test = ast.UnaryOp(ast.Not(), node.test)
            node.body, node.orelse = node.orelse, node.body
        return node


def _results(source: str) -> list[tuple]:
    report = analyze_source(source, "train.py")
    lines = source.splitlines()
    found = []
    for f in report.findings:
        flagged = (
            lines[f.span.line - 1][f.span.column :].strip() if f.span.line <= len(lines) else ""
        )
        fixes = tuple(fix.applicability.value for fix in f.fixes)
        proofs = tuple(sorted(p.value for p in getattr(f, "proofs", ())))
        found.append((f.code, f.severity.value, f.confidence.value, fixes, proofs, flagged))
    return sorted(found)


def compare(path: str) -> tuple[int, list[tuple], list[tuple]] | None:
    """(swapped ifs, findings as written, findings swapped), or None when not comparable."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            text = handle.read()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
            original = ast.unparse(tree)
            swapper = _Swap()
            swapped = ast.unparse(ast.fix_missing_locations(swapper.visit(ast.parse(text))))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None
    if swapper.count == 0:
        return None
    return swapper.count, _results(original), _results(swapped)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--json", action="store_true", help="print a JSON summary")
    args = parser.parse_args(argv)
    files = sorted(
        os.path.join(directory, name)
        for folder in args.folders
        for directory, _, names in os.walk(folder)
        for name in names
        if name.endswith(".py")
    )
    started = time.perf_counter()
    compared = swapped_ifs = with_findings = 0
    differing: list[dict] = []
    for path in files:
        outcome = compare(path)
        if outcome is None:
            continue
        count, before, after = outcome
        compared += 1
        swapped_ifs += count
        with_findings += bool(before or after)
        if before != after:
            differing.append(
                {
                    "path": path,
                    "only_as_written": [list(r) for r in before if r not in after],
                    "only_swapped": [list(r) for r in after if r not in before],
                }
            )
    summary = {
        "files_compared": compared,
        "ifs_swapped": swapped_ifs,
        "files_with_findings": with_findings,
        "files_differing": len(differing),
        "seconds": round(time.perf_counter() - started, 1),
        "differences": differing,
    }
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        print(
            f"{compared} files with if/else compared ({swapped_ifs} ifs swapped, "
            f"{with_findings} with findings): {len(differing)} differ "
            f"[{summary['seconds']} s]"
        )
        for item in differing:
            print(f"  {item['path']}")
            for row in item["only_as_written"]:
                print(f"    - as written only: {row}")
            for row in item["only_swapped"]:
                print(f"    + swapped only:    {row}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
