"""What the engine remembers between keystrokes of the language server, checked against
a fresh computation: the relevance pre-checks remember what they read from each
function's text (an edited function is read afresh), and the line index reuses the
split of the last sources by identity (a new text is split anew)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from torchward.analysis.facts import relevance
from torchward.analysis.facts.semantic import ModuleIndex
from torchward.analysis.syntax.positions import LineIndex

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "examples").glob("*.py"))


def _worth(source: str) -> set[str]:
    return relevance.functions_worth_analysing(ModuleIndex(ast.parse(source), source), frozenset())


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_remembered_answers_equal_fresh_ones(path):
    source = path.read_text()
    relevance._TEXT_FACTS.clear()
    fresh = _worth(source)
    assert fresh, "every example script trains: an empty answer would compare vacuously"
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


def test_the_line_index_reuses_a_split_only_for_the_same_text():
    old = "a = 1\r\nb = 2\n"
    new = old.replace("2", "3")
    first, again = LineIndex(old), LineIndex(new)
    assert LineIndex(old).lines is first.lines and LineIndex(new).lines is again.lines
    assert again.lines == ["a = 1", "b = 3", ""] and first.lines == ["a = 1", "b = 2", ""]
    equal = "".join(list(old))  # the same text, another object: split again, equal lines
    assert equal is not old and LineIndex(equal).lines == first.lines


IMPORTS = """\
import os
x = 1; import sys as system
from torch import (
    nn,
    optim as o,
)


def late():
    import json
    if True:
        from collections import OrderedDict as OD
    return json, OD


class Later:
    def method(self):
        import \\
            re
        return re
"""


@pytest.mark.parametrize(
    "source",
    [IMPORTS, *(p.read_text() for p in sorted((ROOT / "analysis").rglob("*.py")))],
    ids=lambda s: s.split("\n", 1)[0][:30],
)
def test_the_import_table_read_from_marked_statements_equals_a_full_walk(source):
    from torchward.analysis.syntax.names import ImportTable

    tree = ast.parse(source)
    assert ImportTable(tree, LineIndex(source).lines).names == ImportTable(tree).names
