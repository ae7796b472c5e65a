"""Run mypy over the shipped packages and fail only on errors that are not in the baseline.

The baseline (``.ci/mypy-baseline.txt``) lists the errors the code had when type checking
entered CI, without line numbers so that unrelated edits do not churn it. A new error fails
CI; a fixed one is reported so the baseline can shrink (``--update`` rewrites it).
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / ".ci" / "mypy-baseline.txt"
PACKAGES = ["analysis", "estimator", "server", "torchward"]
_LOCATION = re.compile(r"^(?P<path>[^:]+):\d+(?::\d+)?: error: (?P<message>.*)$")


def current_errors() -> collections.Counter[str]:
    """mypy's errors as ``path: message`` keys, counted."""
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", *PACKAGES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode not in (0, 1):
        sys.exit(f"mypy failed to run:\n{completed.stdout}{completed.stderr}")
    errors: collections.Counter[str] = collections.Counter()
    for line in completed.stdout.splitlines():
        match = _LOCATION.match(line)
        if match:
            errors[f"{match['path']}: {match['message']}"] += 1
    return errors


def main() -> int:
    errors = current_errors()
    if "--update" in sys.argv:
        BASELINE.write_text("".join(f"{key}\n" for key in sorted(errors.elements())))
        print(f"baseline: {sum(errors.values())} errors")
        return 0
    baseline = collections.Counter(BASELINE.read_text().splitlines()) if BASELINE.exists() else {}
    new = errors - collections.Counter(baseline)
    fixed = collections.Counter(baseline) - errors
    for key in sorted(new.elements()):
        print(f"new type error: {key}")
    if fixed:
        print(f"{sum(fixed.values())} baseline errors are fixed; run `python .ci/typecheck.py --update`")
    print(f"mypy: {sum(errors.values())} errors, {sum(new.values())} new")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
