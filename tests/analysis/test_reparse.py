"""Re-parsing only the touched top-level statements gives the tree a full parse gives."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest
from torchward.analysis.syntax.reparse import reparse

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    [
        *(ROOT / "examples").glob("*.py"),
        *(Path(__file__).parent / "fixtures").glob("*.py"),
        *(ROOT / "analysis").rglob("*.py"),
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


def _error(error: SyntaxError) -> tuple:
    return (error.msg, error.lineno, error.offset, error.end_lineno, error.end_offset)


STATEMENTS = (
    "total_steps = step + 1",
    "loss = criterion(model(x), y).mean()",
    'log = {"loss": loss.item(), "lr": [g["lr"] for g in opt.param_groups]}',
    "if step % 10 == 0:",
    '"""a docstring typed in the middle"""',
    "x = (a,\\",
)


@pytest.mark.parametrize("path", SOURCES[::3], ids=lambda p: p.stem)
def test_typing_a_statement_key_by_key_errs_or_parses_as_a_full_parse_does(path):
    """Typing through invalid code: every intermediate text either gives the full parse's
    tree or raises its error (message and position), and a failed reparse leaves the old
    tree as it was (the cache keeps serving it)."""
    rng = random.Random(f"typing-{path.name}")
    source = path.read_text()
    tree = ast.parse(source)
    for _ in range(3):
        lines = source.split("\n")
        at = rng.randrange(1, len(lines))
        indent = lines[at - 1][: len(lines[at - 1]) - len(lines[at - 1].lstrip())]
        statement = rng.choice(STATEMENTS)
        for typed in range(len(statement) + 1):
            new_source = "\n".join([*lines[:at], indent + statement[:typed], *lines[at:]])
            before = _dump(tree)
            try:
                expected = ast.parse(new_source)
            except SyntaxError as error:
                with pytest.raises(SyntaxError) as raised:
                    reparse(source, tree, new_source, "x.py")
                assert _error(raised.value) == _error(error), new_source
                assert _dump(tree) == before  # untouched: the next edit starts from it
                continue
            got = reparse(source, tree, new_source, "x.py")
            assert _dump(got) == _dump(expected)
            source, tree = new_source, got


@pytest.mark.parametrize(
    "old, new",
    [
        # a statement sharing its line with the one before: the chunk cannot start there
        (
            "import os\nx = 1; y = (\n    2)\nz = 3\nw = 4\n",
            "import os\nx = 1; y = (\n    22)\nz = 3\nw = 4\n",
        ),
        # a continuation backslash after the statement before the chunk
        ("import os\nx = 1 \\\n\ny = 2\nz = 3\n", "import os\nx = 1 \\\n\ny = 22\nz = 3\n"),
        # an unclosed string typed between two functions swallows the rest of the file
        (
            'import os\ndef f():\n    return 1\ndef g():\n    """doc"""\n    return 2\nx = 1\n',
            'import os\ndef f():\n    return """1\ndef g():\n    """doc"""\n    return 2\nx = 1\n',
        ),
        # lines added above later statements: those move, in place
        (
            "import os\ndef f():\n    return 1\ndef g():\n    return [i for i in (1, 2)]\nx = 1\n",
            "import os\ndef f():\n    y = 0\n\n    return 1\ndef g():\n    return [i for i in (1, 2)]\nx = 1\n",
        ),
    ],
)
def test_edits_at_the_seams_equal_a_full_parse(old, new):
    tree = ast.parse(old)
    try:
        expected = ast.parse(new)
    except SyntaxError as error:
        with pytest.raises(SyntaxError) as raised:
            reparse(old, tree, new, "x.py")
        assert _error(raised.value) == _error(error)
        return
    assert _dump(reparse(old, tree, new, "x.py")) == _dump(expected)


def test_the_cache_keeps_the_last_good_tree_through_syntax_errors():
    """The engine takes the tree from the cache to reparse it and puts it back when the new
    text does not parse: typing on after the error still splices onto the right tree."""
    from torchward.analysis import SummaryCache, analyze_source

    source = (ROOT / "examples" / "bad_train.py").read_text()
    cache = SummaryCache()
    analyze_source(source, "t.py", cache=cache)
    lines = source.split("\n")
    at = len(lines) // 2
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    broken = "\n".join([*lines[:at], indent + "x = (", *lines[at:]])
    fixed = "\n".join([*lines[:at], indent + "x = (1)", "", *lines[at:]])
    assert analyze_source(broken, "t.py", cache=cache).problems[0].kind == "syntax-error"
    assert cache.last_tree("t.py")[0] == source
    report = analyze_source(fixed, "t.py", cache=cache)
    assert _dump(cache.last_tree("t.py")[1]) == _dump(ast.parse(fixed))
    assert report == analyze_source(fixed, "t.py")
