"""The development corpus's triage, re-checked: every warning and error has a verdict.

``docs/triage/dev-corpus-verdicts.json`` records each warning and error the linter gives on
the development corpus (19 repositories of real training code, read-only at
``/tmp/dev-corpus`` or ``$TORCHWARD_DEV_CORPUS``), keyed by repository-relative path, rule
and line (and, in a notebook, the cell the line counts in), with a verdict (``true``, ``false``, ``deliberate``) and the reason a person
gave after reading the code. The slow test runs the linter over the corpus as the triage
did and fails when:

- a warning or error appears that has no verdict (read it, then add its row);
- a row's finding is gone (a fix or a regression: update the file, say which);
- fewer than 90% of the warnings and errors are true (deliberate counts as not true);
- a finding read false carries a safe fix.

The verdicts hold for a run with torch >= 2.6 installed where torchward runs, as in CI:
a plain script's torch is the installed one, and on it implicit ``torch.load`` calls are
safe (TW023 is then quiet on them). The shape of the file is checked without the corpus.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
VERDICTS = REPOSITORY / "docs" / "triage" / "dev-corpus-verdicts.json"
CORPUS = Path(os.environ.get("TORCHWARD_DEV_CORPUS", "/tmp/dev-corpus"))
KINDS = {"true", "false", "deliberate"}
MINIMUM_TRUE = 0.90

# (repository-relative path, code, line, notebook cell or None)
Key = tuple[str, str, int, int | None]


def _rows() -> dict[Key, dict]:
    data = json.loads(VERDICTS.read_text())
    return {_row_key(row): row for row in data["findings"]}


def _row_key(row: dict) -> Key:
    return (row["path"], row["code"], row["line"], row.get("cell"))


def _key(finding: dict, corpus: Path) -> Key:
    path = os.path.relpath(finding["path"], corpus).replace(os.sep, "/")
    return (path, finding["code"], finding["line"], finding.get("cell"))


def _first_words(message: str, count: int = 8) -> str:
    return " ".join(message.split()[:count])


def _where(key: Key) -> str:
    path, code, line, cell = key
    return f"{path}{f' (cell {cell})' if cell is not None else ''}:{line} {code}"


def test_every_row_has_a_verdict_a_reason_and_a_unique_key():
    data = json.loads(VERDICTS.read_text())
    rows = data["findings"]
    assert rows, "the triage file lists no finding"
    keys = [_row_key(r) for r in rows]
    assert len(keys) == len(set(keys)), "two rows share a key"
    for row in rows:
        assert row["verdict"] in KINDS, row
        assert row["severity"] in ("warning", "error"), row
        assert row["reason"].strip(), row
        assert row["message_start"].strip(), row


def _installed_torch() -> tuple[int, ...] | None:
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None
    return tuple(int(p) for p in version.split("+")[0].split(".")[:2] if p.isdigit())


@pytest.mark.slow
def test_the_corpus_findings_match_their_verdicts():
    if not CORPUS.is_dir():
        pytest.skip(f"the development corpus is not at {CORPUS} (set $TORCHWARD_DEV_CORPUS)")
    torch = _installed_torch()
    if torch is None or torch < (2, 6):
        pytest.skip("the verdicts are for a run with torch >= 2.6 installed, as in CI")
    run = subprocess.run(
        [sys.executable, "-m", "torchward", "check", str(CORPUS), "--format", "json"]
        + ["--no-cache", "-j", "1", "--exit-zero"],
        capture_output=True,
        text=True,
        check=True,
    )
    found = [f for f in json.loads(run.stdout) if f["severity"] in ("warning", "error")]
    rows = _rows()
    keys = {_key(f, CORPUS): f for f in found}

    unread = [
        f"{_where(key)} {f['severity']}: {_first_words(f['message'])}"
        for key, f in sorted(keys.items(), key=lambda item: _where(item[0]))
        if key not in rows
    ]
    gone = sorted(_where(key) for key in rows if key not in keys)
    assert not unread, "findings without a verdict (read each, add its row):\n" + "\n".join(unread)
    assert not gone, "rows whose finding is gone (update the triage file):\n" + "\n".join(gone)

    for key, finding in keys.items():
        row = rows[key]
        assert finding["severity"] == row["severity"], (key, finding["severity"])
        assert finding["message"].startswith(row["message_start"]), (key, finding["message"])
        if row["verdict"] == "false":
            safe = [x for x in finding["fixes"] if x["applicability"] == "safe"]
            assert not safe, f"a false positive carries a safe fix: {key}"

    true = sum(rows[k]["verdict"] == "true" for k in keys)
    assert true / len(keys) >= MINIMUM_TRUE, f"{true} of {len(keys)} true"
