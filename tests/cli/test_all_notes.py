"""``check --all-notes``: every note of a file, where the default shows only its first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

BAD = Path(__file__).resolve().parents[2] / "examples" / "bad_train.py"


def _notes(torchward, *extra: str) -> list[tuple[int, str]]:
    outcome = torchward("check", "bad_train.py", "--format", "json", "--exit-zero", *extra)
    return [(f["line"], f["code"]) for f in json.loads(outcome.out) if f["severity"] == "note"]


def test_all_notes_shows_what_the_default_cap_hides(project, torchward):
    shutil.copy(BAD, project / "bad_train.py")
    every = _notes(torchward, "--all-notes", "--no-cache")
    assert len(every) >= 2, "bad_train.py is expected to carry several notes"
    assert _notes(torchward, "--no-cache") == every[:1]


def test_the_cache_keeps_capped_and_uncapped_results_apart(project, torchward):
    shutil.copy(BAD, project / "bad_train.py")
    capped = _notes(torchward)
    every = _notes(torchward, "--all-notes")  # the second run: from the cache if keyed alike
    assert len(every) > len(capped) == 1
    assert _notes(torchward) == capped
