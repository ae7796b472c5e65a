"""Re-parsing only the touched top-level statements gives the tree a full parse gives."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest
from torchward.analysis.reparse import reparse

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    [
        *(ROOT / "examples").glob("*.py"),
        *(Path(__file__).parent / "fixtures").glob("*.py"),
        *(ROOT / "analysis").glob("*.py"),
    ]
)


def _dump(tree: ast.Module) -> str:
    return ast.dump(tree, include_attributes=True)


def _edit(lines: list[str], rng: random.Random) -> list[str]:
    lines = list(lines)
    i = rng.randrange(len(lines))
    choice = rng.randrange(7)
    if choice == 0:
        lines[i] = lines[i] + "1"
    elif choice == 1:
        lines.insert(i, "")
    elif choice == 2 and len(lines) > 1:
        del lines[i]
    elif choice == 3:
        lines.insert(i, lines[i])
    elif choice == 4:
        lines[i] = lines[i][:-1]
    elif choice == 5:
        lines.insert(i, "    x = (")
    else:
        lines[i] = "# " + lines[i]
    return lines


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_spliced_tree_equals_a_full_parse_after_random_edits(path):
    rng = random.Random(path.name)
    source = path.read_text()
    tree = ast.parse(source)
    lines = source.split("\n")
    for _ in range(40):
        lines = _edit(lines, rng)
        new_source = "\n".join(lines)
        try:
            expected = ast.parse(new_source)
        except SyntaxError as error:
            with pytest.raises(SyntaxError) as raised:
                reparse(source, tree, new_source, "x.py")
            assert (raised.value.lineno, raised.value.msg) == (error.lineno, error.msg)
            lines = source.split("\n")  # back to the last good text, as a user would fix it
            continue
        got = reparse(source, tree, new_source, "x.py")
        assert _dump(got) == _dump(expected)
        source, tree = new_source, got
