"""Recall of every rule on positive examples written the way framework code is written.

Why this exists: each rule's own INVALID examples fire by construction (they are what the
rule was written against, and the snapshots pin them). Issue 28's target is recall of at
least 85% per rule on positive examples, including framework and trainer-class shapes
(a plain loop, a ``Trainer`` class with ``train_one_epoch(self)``, Lightning's
``training_step``, Accelerate, Hugging Face ``Trainer`` overrides, DeepSpeed engines).
Those examples live next to this module, one ``<CODE>.txt`` per rule: blocks that each
start with a header line ``### <shape>: <what the bug is>`` followed by a complete small
script in which the rule's bug is present. They are plain text, not Python files, so
that neither pytest nor the linters treat them as project code.

An example counts as *found* when analysing it with only its rule selected (and the rule's
``EXAMPLE_SETTINGS``, e.g. a target GPU for TW010) reports at least one finding of that
code, at any severity. The test (``tests/analysis/test_recall.py``) and the table
(``bench/recall.py``) both score through :func:`measure`, so the numbers agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torchward.analysis import LintSettings, all_rules, analyze_source

HERE = Path(__file__).resolve().parent
HEADER = "### "


@dataclass(frozen=True)
class Example:
    """One positive example: the rule it must trigger, a name and the script."""

    code: str
    name: str
    source: str


@dataclass(frozen=True)
class RuleRecall:
    """How many of a rule's positive examples it reports, and which it misses."""

    code: str
    examples: int
    found: int
    misses: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def recall(self) -> float:
        return self.found / self.examples if self.examples else 0.0


def load_examples(code: str) -> list[Example]:
    """The examples of ``<code>.txt``, in file order; a file without a header line is
    an error (its text would otherwise be silently ignored)."""
    text = (HERE / f"{code}.txt").read_text(encoding="utf-8")
    examples: list[Example] = []
    name: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith(HEADER):
            if name is not None:
                examples.append(Example(code, name, "\n".join(lines).strip() + "\n"))
            name, lines = line[len(HEADER) :].strip(), []
        elif name is None:
            if line.strip():
                raise ValueError(f"{code}.txt: text before the first '{HEADER}' header")
        else:
            lines.append(line)
    if name is not None:
        examples.append(Example(code, name, "\n".join(lines).strip() + "\n"))
    return examples


def rule_codes() -> list[str]:
    return [rule.code for rule in all_rules()]


def is_found(example: Example) -> tuple[bool, tuple[str, ...]]:
    """Whether the example's rule reports it, and the analysis problems (a syntax error
    in an example, an engine error) so that a broken example cannot pass as a miss."""
    rule = next(r for r in all_rules() if r.code == example.code)
    settings = LintSettings(select=(rule.code,), **rule.EXAMPLE_SETTINGS)
    report = analyze_source(example.source, "train.py", settings)
    found = any(finding.code == rule.code for finding in report.findings)
    return found, tuple(str(problem) for problem in report.problems)


def measure(code: str) -> RuleRecall:
    examples = load_examples(code)
    misses: list[str] = []
    problems: list[str] = []
    for example in examples:
        found, trouble = is_found(example)
        if not found:
            misses.append(example.name)
        problems += [f"{example.name}: {p}" for p in trouble]
    return RuleRecall(
        code, len(examples), len(examples) - len(misses), tuple(misses), tuple(problems)
    )
