"""The editor's estimate reads the tree the lint just parsed instead of parsing again.

The tree is lent: taken from the summary cache while the estimator reads it (an edit's
incremental re-parse shifts a remembered tree in place, so no analysis may re-parse from
it meanwhile) and given back afterwards — unless a newer tree arrived, which wins. When
the text differs from the lint's (an edit landed in between), the estimator parses its
own text. Real analysis, real estimator, real files on disk.
"""

from __future__ import annotations

import ast

import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.job import runconfig as runconfig_module
from torchward.server import scheduler as scheduler_module
from torchward.server.estimates import EstimateService
from torchward.server.scheduler import Snapshot, estimate_of, summary_cache

SCRIPT = """\
import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
batch_size = 8
for batch in loader:
    loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""


@pytest.fixture
def parses(monkeypatch):
    """Every parse the script reader makes, by source text."""
    seen: list[str] = []
    original = runconfig_module.parse_module

    def counting(source, filename="<unknown>"):
        seen.append(source)
        return original(source, filename)

    monkeypatch.setattr(runconfig_module, "parse_module", counting)
    return seen


@pytest.fixture
def script(tmp_path, monkeypatch):
    monkeypatch.setattr(scheduler_module, "_summaries", None)  # a session of its own
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return str(path)


def _snapshot(path: str, text: str) -> Snapshot:
    return Snapshot("file://" + path, path, 1, 0, text, LintSettings(), gpu="a100-80gb")


def test_the_estimate_reads_the_lints_tree_and_gives_it_back(script, parses):
    analyze_source(SCRIPT, script, LintSettings(), summary_cache())
    lint_tree = summary_cache().last_tree(script)[1]

    estimate = estimate_of(_snapshot(script, SCRIPT), EstimateService())

    assert estimate.status == "ok", estimate
    assert parses == []  # the lint's tree was read, not a second parse
    source, tree = summary_cache().last_tree(script)
    assert tree is lint_tree and source == SCRIPT  # given back for the next edit's re-parse


def test_an_edit_since_the_lint_is_parsed_from_its_own_text(script, parses):
    analyze_source(SCRIPT, script, LintSettings(), summary_cache())
    lint_tree = summary_cache().last_tree(script)[1]
    edited = SCRIPT.replace("batch_size = 8", "batch_size = 16")

    estimate = estimate_of(_snapshot(script, edited), EstimateService())

    assert estimate.status == "ok", estimate
    assert parses == [edited]  # not the lint's tree of the older text
    assert summary_cache().last_tree(script)[1] is lint_tree


def test_a_newer_tree_remembered_meanwhile_wins(script):
    cache = summary_cache()
    analyze_source(SCRIPT, script, LintSettings(), cache)
    taken = cache.take_tree(script)
    newer = ast.parse(SCRIPT + "\n")
    cache.remember_tree(script, SCRIPT + "\n", newer)  # an edit's analysis finished first

    cache.give_back_tree(script, *taken)

    assert cache.last_tree(script)[1] is newer


def test_a_switched_off_estimator_leaves_the_tree_alone(script):
    analyze_source(SCRIPT, script, LintSettings(), summary_cache())
    before = summary_cache().last_tree(script)
    snapshot = Snapshot("file://" + script, script, 1, 0, SCRIPT, LintSettings(), estimator=False)

    assert estimate_of(snapshot, EstimateService()).status == "disabled"
    assert summary_cache().last_tree(script) == before
