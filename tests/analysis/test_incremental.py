"""The incremental cache: re-linting after an edit with a SummaryCache gives exactly what
a fresh analysis gives, and reuses the analyses of the functions the edit did not touch."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from torchward.analysis import SummaryCache, all_rules, analyze_source

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    [*(ROOT / "examples").glob("*.py"), *(Path(__file__).parent / "fixtures").glob("*.py")]
)
RULE_EXAMPLES = [
    pytest.param(source, id=f"{rule.code}-{i}")
    for rule in all_rules()
    for i, source in enumerate([*rule.VALID, *(example.source for example in rule.INVALID)])
]


def _key(report):
    return [f.to_dict() for f in report.findings], [p.kind for p in report.problems]


def _edits(source: str, rng: random.Random, count: int):
    """Single-line edits a user makes: change a number, comment a line out, delete a
    `.detach()`, rename a variable on one line, duplicate a line."""
    lines = source.split("\n")
    for _ in range(count):
        i = rng.randrange(len(lines))
        line = lines[i]
        choice = rng.randrange(5)
        if choice == 0 and any(c.isdigit() for c in line):
            line = "".join(str((int(c) + 1) % 10) if c.isdigit() else c for c in line)
        elif choice == 1 and line.strip():
            indent = line[: len(line) - len(line.lstrip())]
            line = indent + "pass  # " + line.strip()
        elif choice == 2:
            line = line.replace(".detach()", "").replace(".item()", "")
        elif choice == 3:
            line = line.replace("loss", "loss2", 1)
        else:
            lines.insert(i, line)
        lines[i] = line
        yield "\n".join(lines)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_cached_relint_after_each_edit_equals_a_fresh_analysis(path):
    rng = random.Random(path.name)
    cache = SummaryCache()
    analyze_source(path.read_text(), str(path), cache=cache)
    for edited in _edits(path.read_text(), rng, 25):
        assert _key(analyze_source(edited, str(path), cache=cache)) == _key(
            analyze_source(edited, str(path))
        )


@pytest.mark.parametrize("source", RULE_EXAMPLES)
def test_cached_relint_of_every_rule_example_equals_a_fresh_analysis(source):
    rng = random.Random(source)
    cache = SummaryCache()
    analyze_source(source, "example.py", cache=cache)
    for edited in _edits(source, rng, 8):
        # the first re-lint of the unchanged text is all cache hits
        assert _key(analyze_source(source, "example.py", cache=cache)) == _key(
            analyze_source(source, "example.py")
        )
        assert _key(analyze_source(edited, "example.py", cache=cache)) == _key(
            analyze_source(edited, "example.py")
        )


def test_an_edit_inside_one_function_reuses_the_others():
    source = (ROOT / "examples" / "bad_train.py").read_text()
    cache = SummaryCache()
    analyze_source(source, "bad_train.py", cache=cache)
    before = cache.misses
    edited = source.replace("lr=0.1", "lr=0.2")  # inside train_scorer only
    analyze_source(edited, "bad_train.py", cache=cache)
    assert cache.misses - before <= 2  # train_scorer (and nothing that does not call it)
    assert cache.hits > 0
