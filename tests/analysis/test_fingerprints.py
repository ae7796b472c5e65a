"""Cache keys (analysis/facts/fingerprints.py): linear in the file, and never stale.

The module environment holds a value for every top-level function and each top-level
function closes over it; hashing it once per function made a keystroke quadratic in the
file. The fingerprints of module-level environments are now kept while they cannot
change — these tests check that the work grows linearly with the number of functions,
and that a kept fingerprint always equals the hash of the environment as it is then.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torchward.analysis import SummaryCache, all_rules, analyze_source
from torchward.analysis.facts.fingerprints import Fingerprints
from torchward.analysis.facts.values import Value

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    [*(ROOT / "examples").glob("*.py"), *(Path(__file__).parent / "fixtures").glob("*.py")]
)
HELPER = """
def step_{i}(model, batch, optimizer):
    optimizer.zero_grad()
    loss = model(batch).sum()
    loss.backward()
    optimizer.step()
    return loss.item()
"""
# the module body changes the globals between top-level calls (each with other arguments,
# so that none is a repeat of an earlier call), and the helpers read them
MAIN = """
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

def train(loader):
    for batch in loader:
        step_0(model, batch, optimizer)

train([torch.randn(2, 4)])
model.eval()
train(torch.utils.data.DataLoader(range(8)))
model = torch.nn.Linear(4, 4)
train(range(3))
"""


def _script(functions: int) -> str:
    return "import torch\n" + "".join(HELPER.format(i=i) for i in range(functions)) + MAIN


def _value_hashes(source: str, monkeypatch) -> int:
    """How many values hashing the cache keys of one cached analysis touches."""
    count = 0
    original = Value.__hash__

    def counting(self):
        nonlocal count
        count += 1
        return original(self)

    with monkeypatch.context() as patch:
        patch.setattr(Value, "__hash__", counting)
        analyze_source(source, "train.py", cache=SummaryCache())
    return count


def test_key_work_grows_linearly_with_the_number_of_functions(monkeypatch):
    small = _value_hashes(_script(60), monkeypatch)
    large = _value_hashes(_script(240), monkeypatch)
    # four times the functions: about four times the work (sixteen when each function's
    # key hashes the module environment, which grows with the file)
    assert large < 6 * small, (small, large)


class Checked:
    """Fingerprints.env, checked against hashing the environment afresh on every call
    (recorded, not raised: an exception in the analysis would abort the comparison)."""

    def __init__(self, monkeypatch) -> None:
        self.calls = 0
        self.stale = 0
        original = Fingerprints.env

        def checked(fingerprints, env, module_level=False):
            got = original(fingerprints, env, module_level)
            self.calls += 1
            self.stale += got != (hash(frozenset(env.items())) if env else 0)
            return got

        monkeypatch.setattr(Fingerprints, "env", checked)

    def analyse_twice(self, source: str, path: str, same_analysis, flagged: bool):
        """A cached analysis, then a re-lint of the same text (all hits: replays re-issue
        every call); both must equal a fresh analysis, with no stale fingerprint."""
        cache = SummaryCache()
        fresh = analyze_source(source, path)
        for _ in range(2):
            same_analysis(analyze_source(source, path, cache=cache), fresh, flagged=flagged)
        assert self.stale == 0, f"{self.stale} of {self.calls} fingerprints were stale"


# the scripts whose own text has findings (with every rule and default settings)
FLAGGED_SCRIPTS = {"bad_train.py", "class_trainer.py", "helpers_split.py"}


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_a_kept_fingerprint_equals_the_environment_hashed_afresh(path, monkeypatch, same_analysis):
    Checked(monkeypatch).analyse_twice(
        path.read_text(), str(path), same_analysis, flagged=path.name in FLAGGED_SCRIPTS
    )


def test_globals_changed_between_top_level_calls_are_seen(monkeypatch, same_analysis):
    checked = Checked(monkeypatch)
    checked.analyse_twice(_script(3), "train.py", same_analysis, flagged=False)
    assert checked.calls > 10


@pytest.mark.parametrize(
    "source",
    [
        example.source
        for rule in all_rules()
        for example in rule.INVALID
        if "def " in example.source and "\n    " in example.source and not rule.EXAMPLE_SETTINGS
    ][:40],
)
def test_rule_examples_keep_no_stale_fingerprint(source, monkeypatch, same_analysis):
    # invalid examples of rules that need no settings to fire: each has findings
    Checked(monkeypatch).analyse_twice(source, "example.py", same_analysis, flagged=True)
