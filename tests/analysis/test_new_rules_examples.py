"""The second catalog's examples as specifications: line, severity, fix text and safety.

For every INVALID example of the rules TW015-TW024 (and the seed's remaining four): the
first finding is on the stated line; its first fix yields exactly the stated text with
the stated applicability (or the finding carries no fix when ``fixed`` is None); the
fixed text parses, re-linting it no longer finds the rule, and fixing it again changes
nothing (idempotence).
"""

from __future__ import annotations

import ast

import pytest
from torchward.analysis import LintSettings, all_rules, analyze_source
from torchward.analysis.finding import Applicability
from torchward.analysis.fixes import apply_edits, fix_source, fixes_for

NEW_RULES = {
    "TW004",
    "TW007",
    "TW008",
    "TW013",
    "TW015",
    "TW016",
    "TW017",
    "TW018",
    "TW019",
    "TW020",
    "TW021",
    "TW022",
    "TW023",
    "TW024",
}


def _cases():
    for rule in all_rules():
        if rule.code not in NEW_RULES:
            continue
        for i, example in enumerate(rule.INVALID):
            yield pytest.param(rule, example, id=f"{rule.code}-invalid-{i}")


def _findings(rule, source: str):
    settings = LintSettings(select=(rule.code,), **rule.EXAMPLE_SETTINGS)
    report = analyze_source(source, "example.py", settings)
    assert not report.problems, report.problems
    return report.findings


@pytest.mark.parametrize("rule, example", list(_cases()))
def test_invalid_example_line_and_fix(rule, example):
    found = _findings(rule, example.source)
    assert found, f"{rule.code} did not flag:\n{example.source}"
    assert example.line is not None, "every new example states its line"
    assert found[0].span.line == example.line
    fixes = fixes_for(example.source, found[0])
    if example.fixed is None:
        assert fixes == ()
        return
    assert fixes, f"{rule.code} offered no fix for:\n{example.source}"
    fix = fixes[0]
    assert fix.applicability is example.fixed.applicability
    fixed = apply_edits(example.source, fix.edits)
    assert fixed == example.fixed.source
    ast.parse(fixed)
    assert _findings(rule, fixed) == (), "re-linting the fixed text still finds the rule"
    unsafe = fix.applicability is Applicability.UNSAFE
    settings = LintSettings(select=(rule.code,), **rule.EXAMPLE_SETTINGS)
    assert fix_source(fixed, "example.py", settings, unsafe=unsafe).text == fixed


@pytest.mark.parametrize(
    "rule", [r for r in all_rules() if r.code in NEW_RULES], ids=lambda r: r.code
)
def test_new_rule_documents_fix_safety(rule):
    assert "Fix safety" in rule.doc_sections()
    assert len(rule.INVALID) >= 4 and len(rule.VALID) >= 6


@pytest.mark.parametrize(
    "source, expected",
    [
        (
            "from torch.utils.data import DataLoader\nloader = DataLoader([1, 2], batch_size=1, pin_memory=True)\n",
            "from torch.utils.data import DataLoader\nloader = DataLoader([1, 2], batch_size=1, pin_memory=True, num_workers=4)\n",
        ),
        (
            "from torch.utils.data import DataLoader\nloader = DataLoader(\n    [1, 2],\n    pin_memory=True,\n)\n",
            "from torch.utils.data import DataLoader\nloader = DataLoader(\n    [1, 2],\n    pin_memory=True,\n    num_workers=4,\n)\n",
        ),
        (
            "from torch.utils.data import DataLoader\nloader = DataLoader([1, 2], num_workers=0, pin_memory=True)\n",
            "from torch.utils.data import DataLoader\nloader = DataLoader([1, 2], num_workers=4, pin_memory=True)\n",
        ),
    ],
)
def test_tw015_second_fix_adds_workers(source, expected):
    (finding,) = analyze_source(source, "x.py", LintSettings(select=("TW015",))).findings
    fixes = fixes_for(source, finding)
    assert [f.applicability for f in fixes] == [Applicability.UNSAFE, Applicability.UNSAFE]
    fixed = apply_edits(source, fixes[1].edits)
    assert fixed == expected
    assert analyze_source(fixed, "x.py", LintSettings(select=("TW015",))).findings == ()


def test_tw022_sees_a_display_spread_over_lines():
    source = (
        "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.blocks = [\n            nn.Linear(4, 4),\n            nn.Linear(4, 4),\n        ]\n"
    )
    (finding,) = analyze_source(source, "x.py", LintSettings(select=("TW022",))).findings
    assert finding.span.line == 5


# --- fixes refused when a proof obligation fails ------------------------------------------
REFUSED = {
    # TW017 obligation 3: the optimizer's name is read in the loop before the construction
    "TW017-read-before": (
        "TW017",
        "import torch\ndef train(model, loader, crit):\n    opt = None\n    for x, y in loader:\n        print(opt)\n        opt = torch.optim.Adam(model.parameters())\n        crit(model(x), y).backward()\n        opt.step()\n",
    ),
    # TW019 obligation 3: a second backward between the reset and the step... of another loss
    "TW019-grad-call-between": (
        "TW019",
        "def train(model, loader, opt, crit, probe):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.zero_grad()\n        probe.step()\n        opt.step()\n",
    ),
    # TW021 obligation 2: the loader is rebuilt inside the epoch loop
    "TW021-loader-rebound": (
        "TW021",
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\ndef train(model, ds, opt, epochs):\n    sampler = DistributedSampler(ds)\n    loader = DataLoader(ds, sampler=sampler)\n    for epoch in range(epochs):\n        for x in loader:\n            model(x).sum().backward()\n            opt.step()\n        loader = DataLoader(ds, sampler=sampler)\n",
    ),
    # TW021 obligation 1: the epoch loop does not count integers
    "TW021-not-range": (
        "TW021",
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\ndef train(model, ds, opt, phases):\n    loader = DataLoader(ds, sampler=DistributedSampler(ds))\n    for phase in phases:\n        for x in loader:\n            model(x).sum().backward()\n            opt.step()\n",
    ),
    # TW022 obligation 2: torch.nn is not reachable under a usable name
    "TW022-no-nn-name": (
        "TW022",
        "from torch.nn import Module, Linear\nclass Net(Module):\n    def __init__(self):\n        super().__init__()\n        self.blocks = [Linear(4, 4) for _ in range(2)]\n",
    ),
    # TW024 obligation 1: the loop rebinds the model name
    "TW024-model-rebound": (
        "TW024",
        "import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.drop = nn.Dropout(0.5)\n\n    def forward(self, x):\n        return self.drop(x)\n\ndef main(val_loader):\n    model = Net()\n    model.train()\n    with torch.no_grad():\n        for x in val_loader:\n            model(x)\n            model = model\n",
    ),
    # TW023: a pickle_module cannot be combined with weights_only=True
    "TW023-pickle-module": (
        "TW023",
        "import pickle\nimport torch\ndef restore(model, path):\n    model.load_state_dict(torch.load(path, pickle_module=pickle))\n    model.eval()\n",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_fix_is_refused_when_an_obligation_fails(case):
    code, source = REFUSED[case]
    found = analyze_source(source, "x.py", LintSettings(select=(code,))).findings
    assert found, f"{case}: the rule must still flag the code"
    assert fixes_for(source, found[0]) == ()
