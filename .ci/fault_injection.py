"""CI check: the tests notice when the analysis does not run.

A test that passes while the fact builder raises on every file cannot tell a working
analysis from a broken one (issue 28: 2,047 of 2,939 tests passed that way, because the
engine degrades to "no findings"). This runs a subset of the analysis, rule and
incremental tests with ``$TORCHWARD_FAULT=build_facts`` (``tests/conftest.py`` makes the
engine's fact builder raise) and fails when more than a small share of them still pass:

- **strict** (the test session's own mode, ``$TORCHWARD_STRICT=1``): the exception
  reaches the test; only the tests that never analyse anything (documentation checks,
  dependency-file readers, tree-level helpers) may pass;
- **lenient** (``$TORCHWARD_STRICT=0``, the degradation users get): the snapshots and the
  equivalence checks must fail on their assertions alone, on empty results.

Prints each mode's counts and the tests that passed. Usage: ``python .ci/fault_injection.py``
(from the repository root, with the project's test environment's Python).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STRICT_SUBSET = [
    "tests/analysis/test_rule_examples.py",
    "tests/analysis/test_new_rules_examples.py",
    "tests/analysis/test_rule_snapshots.py",
    "tests/analysis/test_rule_edges.py",
    "tests/analysis/test_incremental.py",
    "tests/analysis/test_fingerprints.py",
    "tests/analysis/test_trust_classes.py",
    "tests/analysis/test_classes.py",
    "tests/analysis/test_classes_fields.py",
    "tests/analysis/test_classes_rules.py",
    "tests/analysis/test_branch_order.py",
    "tests/analysis/test_examples.py",
    "tests/analysis/test_regressions.py",
    "tests/analysis/test_note_cap.py",
    "tests/analysis/test_crossfile.py",
    "tests/analysis/test_adapter_accelerate.py",
    "tests/analysis/test_adapter_amp.py",
    "tests/analysis/test_adapter_deepspeed.py",
    "tests/analysis/test_adapter_distributed.py",
    "tests/analysis/test_adapter_lightning.py",
    "tests/analysis/test_adapter_transformers.py",
    "tests/fixes/test_fix_fixtures.py",
    "tests/fixes/test_fix_machinery.py",
    "tests/fixes/test_fix_safety.py",
]
# the tests that must fail on their assertions, without strict mode's help
LENIENT_SUBSET = [
    "tests/analysis/test_rule_examples.py",
    "tests/analysis/test_new_rules_examples.py",
    "tests/analysis/test_rule_snapshots.py",
    "tests/analysis/test_rule_edges.py",
    "tests/analysis/test_incremental.py",
    "tests/analysis/test_fingerprints.py",
]
MAX_PASSING = 0.06  # share of a mode's tests that may pass: those that analyse nothing


def run(mode: str, strict: str, subset: list[str]) -> tuple[int, list[str]]:
    """Runs ``subset`` with the fact builder broken; returns (tests run, tests passed)."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.xml"
        env = {**os.environ, "TORCHWARD_FAULT": "build_facts", "TORCHWARD_STRICT": strict}
        command = [sys.executable, "-m", "pytest", "-q", "--tb=no", "-p", "no:cacheprovider"]
        command += ["-o", "junit_family=xunit1", f"--junitxml={report}", *subset]
        started = time.monotonic()
        subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=False)
        seconds = time.monotonic() - started
        if not report.exists():
            sys.exit(f"fault injection ({mode}): pytest wrote no report")
        total, passed = 0, []
        for case in ElementTree.parse(report).iter("testcase"):
            outcomes = {child.tag for child in case}
            if "skipped" in outcomes:
                continue
            total += 1
            if not outcomes & {"failure", "error"}:
                passed.append(f"{case.get('file')}::{case.get('name')}")
    print(f"fault injection ({mode}): {len(passed)} of {total} tests passed ({seconds:.0f} s)")
    return total, passed


def main() -> int:
    failed = False
    for mode, strict, subset in (
        ("strict", "1", STRICT_SUBSET),
        ("lenient", "0", LENIENT_SUBSET),
    ):
        total, passed = run(mode, strict, subset)
        for name in passed:
            print(f"  passed: {name}")
        if total == 0:
            print(f"fault injection ({mode}): no test ran")
            failed = True
        elif len(passed) > MAX_PASSING * total:
            print(
                f"fault injection ({mode}): more than {MAX_PASSING:.0%} of the tests pass "
                "with the fact builder broken: they cannot tell a broken analysis apart"
            )
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
