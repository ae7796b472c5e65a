"""The relevance pre-checks remember what they read from each function's text (the
language server re-checks every function on each keystroke): remembered answers equal
fresh ones, and an edit that changes a function's text is read afresh."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from torchward.analysis import relevance
from torchward.analysis.semantic import ModuleIndex

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "examples").glob("*.py"))


def _worth(source: str) -> set[str]:
    return relevance.functions_worth_analysing(ModuleIndex(ast.parse(source), source), frozenset())


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_remembered_answers_equal_fresh_ones(path):
    source = path.read_text()
    relevance._TEXT_FACTS.clear()
    fresh = _worth(source)
    assert relevance._TEXT_FACTS, "the texts were remembered"
    assert _worth(source) == fresh


def test_an_edited_function_is_read_afresh():
    helper = "def helper(batch):\n    return batch\n\n\n"
    caller = "def run(model, batch):\n    return helper(batch)\n"
    quiet = helper + caller
    assert _worth(quiet) == set()
    trains = quiet.replace("return batch\n", "batch.loss.backward()\n    return batch\n", 1)
    assert _worth(trains) == {"helper", "run"}  # run calls a function that trains
    assert _worth(quiet) == set()
