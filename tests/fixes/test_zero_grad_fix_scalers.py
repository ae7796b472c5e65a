"""TW003's reset after a scaler's step names the optimizer, never the scaler.

Which receivers are scalers, and which argument of their ``step`` is the optimizer,
come from the library-effects table (``analysis/data/library_effects.toml``), not from
the spelling of the constructor: an aliased import is still a ``GradScaler``, and the
optimizer may be passed by keyword. ``scaler.zero_grad(...)`` would raise
``AttributeError`` on the first step.
"""

from __future__ import annotations

import pytest
from torchward.analysis import analyze_source
from torchward.analysis.fixes import fixes_for

ALIASED = """\
from torch.amp import GradScaler as GS
def train(model, loader, opt, crit):
    scaler = GS()
    for x, y in loader:
        scaler.scale(crit(model(x), y)).backward()
        scaler.step(opt)
        scaler.update()
"""
BY_KEYWORD = """\
import torch
def train(model, loader, opt, crit):
    scaler = torch.amp.GradScaler()
    for x, y in loader:
        scaler.scale(crit(model(x), y)).backward()
        scaler.step(optimizer=opt)
        scaler.update()
"""
# a class of the user's whose name merely ends like torch's: its receiver is stepped
LOOKALIKE = """\
class WarmupGradScaler:
    def __init__(self, opt):
        self.opt = opt
    def step(self, lr):
        self.opt.step()
def train(model, loader, opt, crit, lr):
    sched = WarmupGradScaler(opt)
    for x, y in loader:
        crit(model(x), y).backward()
        sched.step(lr)
"""


def _only_fix(source: str) -> str:
    (finding,) = [f for f in analyze_source(source, "x.py").findings if f.code == "TW003"]
    (fix,) = fixes_for(source, finding)
    return fix.title


@pytest.mark.parametrize("source", [ALIASED, BY_KEYWORD], ids=["aliased", "keyword"])
def test_the_reset_after_a_scaler_step_names_the_optimizer(source):
    assert _only_fix(source) == "Insert `opt.zero_grad(set_to_none=True)` after the step"


def test_a_step_on_a_class_that_is_not_in_the_table_resets_its_receiver():
    findings = [f for f in analyze_source(LOOKALIKE, "x.py").findings if f.code == "TW003"]
    for finding in findings:  # whether TW003 reports it is the rule's business
        titles = [fix.title for fix in fixes_for(LOOKALIKE, finding)]
        assert all("lr.zero_grad" not in title for title in titles)
