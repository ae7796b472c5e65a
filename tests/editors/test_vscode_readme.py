"""The VS Code README's example diagnostics are what ``torchward check`` says about
examples/bad_train.py: same line, column and rule (issue 11: they were a line off)."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "editors" / "vscode" / "README.md"
ROW = re.compile(r"^bad_train\.py\s+(\d+):(\d+)\s+(TW\d{3})\s", re.M)


def test_the_readme_positions_match_the_linter():
    shown = {
        (int(line), int(column), code) for line, column, code in ROW.findall(README.read_text())
    }
    assert shown, "the README lists example diagnostics"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchward",
            "check",
            "examples/bad_train.py",
            "--format",
            "json",
            "--exit-zero",
            "--no-cache",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    data = json.loads(run.stdout)
    findings = data["findings"] if isinstance(data, dict) else data
    actual = {(f["line"], f["column"], f["code"]) for f in findings}
    assert shown <= actual, f"README rows not reported as shown: {sorted(shown - actual)}"
