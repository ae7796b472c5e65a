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
# the scripts whose own text has findings (with every rule and default settings)
FLAGGED_SCRIPTS = {"bad_train.py", "class_trainer.py", "helpers_split.py"}
# a rule's invalid examples have findings, unless the rule needs example settings to fire
RULE_EXAMPLES = [
    pytest.param(source, flagged, id=f"{rule.code}-{i}")
    for rule in all_rules()
    for i, (source, flagged) in enumerate(
        [
            *((source, False) for source in rule.VALID),
            *((example.source, not rule.EXAMPLE_SETTINGS) for example in rule.INVALID),
        ]
    )
]


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
def test_cached_relint_after_each_edit_equals_a_fresh_analysis(path, same_analysis):
    rng = random.Random(path.name)
    cache = SummaryCache()
    source = path.read_text()
    same_analysis(
        analyze_source(source, str(path), cache=cache),
        analyze_source(source, str(path)),
        flagged=path.name in FLAGGED_SCRIPTS,
    )
    for edited in _edits(source, rng, 25):
        same_analysis(
            analyze_source(edited, str(path), cache=cache),
            analyze_source(edited, str(path)),
            flagged=False,  # an edit may remove what was found
        )


@pytest.mark.parametrize("source, flagged", RULE_EXAMPLES)
def test_cached_relint_of_every_rule_example_equals_a_fresh_analysis(
    source, flagged, same_analysis
):
    rng = random.Random(source)
    cache = SummaryCache()
    analyze_source(source, "example.py", cache=cache)
    for edited in _edits(source, rng, 8):
        # the first re-lint of the unchanged text is all cache hits
        same_analysis(
            analyze_source(source, "example.py", cache=cache),
            analyze_source(source, "example.py"),
            flagged=flagged,
        )
        same_analysis(
            analyze_source(edited, "example.py", cache=cache),
            analyze_source(edited, "example.py"),
            flagged=False,  # an edit may remove what was found
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
