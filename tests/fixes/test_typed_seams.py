"""The seams between findings and fixes carry typed facts, never message text (issue 29).

A relocated finding (reported at a call for code in another module) is known by its
``origin``, not by the wording of its evidence. A fixable finding of a rule with a
payload fixer (TW003) carries the facts its fix needs, and the fix is written from them,
without LibCST. Both survive the JSON round trip a finding makes through the cache and an
LSP diagnostic's ``data``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis import fixes as fixes_package
from torchward.analysis.finding import Applicability, Evidence, Finding, Span
from torchward.analysis.fixes import apply_edits, fixes_for
from torchward.analysis.rules.epoch_reseed import EpochReseed
from torchward.analysis.rules.missing_zero_grad_reset import ZeroGradReset
from torchward.analysis.rules.mode_switch import EvalModeSwitch
from torchward.analysis.rules.pin_memory_without_workers import PinMemoryArguments
from torchward.analysis.rules.train_mode_restore import TrainModeRestore
from torchward.analysis.rules.zero_grad_move import ResetMove

CROSSFILE = Path(__file__).parents[1] / "analysis" / "fixtures" / "crossfile" / "project"
STEP_WITHOUT_RESET = (
    "import torch\n"
    "def train(model, loader, crit):\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in loader:\n"
    "        crit(model(x), y).backward()\n"
    "        opt.step()\n"
)


def _only(source: str, code: str, path: str = "x.py") -> Finding:
    (finding,) = [
        f
        for f in analyze_source(source, path, LintSettings(notes_per_file=None)).findings
        if f.code == code
    ]
    return finding


def test_a_relocated_finding_names_the_module_it_is_in_and_keeps_it_through_json(tmp_path):
    shutil.copytree(CROSSFILE, tmp_path / "project")
    train = tmp_path / "project" / "train.py"
    source = train.read_text()
    finding = _only(source, "TW005", str(train))
    assert finding.origin == str(tmp_path / "project" / "helpers.py")
    carried = Finding.from_dict(finding.to_dict())
    assert carried == finding
    reworded = attrs.evolve(
        carried, evidence=tuple(Evidence(e.span, "elsewhere", e.path) for e in carried.evidence)
    )
    assert fixes_for(source, reworded) == ()  # the wording changed, the fact did not


def test_a_local_finding_whose_evidence_reads_like_a_relocation_keeps_its_fix():
    finding = _only(STEP_WITHOUT_RESET, "TW003")
    assert finding.origin is None
    first = finding.evidence[0]
    worded = attrs.evolve(
        finding,
        evidence=(Evidence(first.span, "the finding is here, in the called code"),),
    )
    assert fixes_for(STEP_WITHOUT_RESET, worded)


def test_the_missing_reset_finding_carries_what_its_fix_needs_and_keeps_it_through_json():
    finding = _only(STEP_WITHOUT_RESET, "TW003")
    assert finding.payload == ZeroGradReset(
        after_line=6,
        indent="        ",
        optimizer="opt",
        closure=False,
        retains_graph=False,
        reads_gradients=False,
    )
    assert Finding.from_dict(json.loads(json.dumps(finding.to_dict()))) == finding


def test_the_reset_is_written_from_the_payload_without_parsing_the_file_again(monkeypatch):
    def no_tree(source):
        raise AssertionError("a payload fixer parsed the file with LibCST")

    monkeypatch.setattr(fixes_package, "source_tree", no_tree)
    finding = _only(STEP_WITHOUT_RESET, "TW003")
    (fix,) = fixes_for(STEP_WITHOUT_RESET, finding)
    assert fix.applicability is Applicability.SAFE
    assert apply_edits(STEP_WITHOUT_RESET, fix.edits) == STEP_WITHOUT_RESET.replace(
        "opt.step()\n", "opt.step()\n        opt.zero_grad(set_to_none=True)\n"
    )


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (
            "opt.step()  # update\n",
            "opt.step()  # update\n        opt.zero_grad(set_to_none=True)\n",
        ),
        (
            "opt.step(\n        )\n",
            "opt.step(\n        )\n        opt.zero_grad(set_to_none=True)\n",
        ),
        ("opt.step()", "opt.step()\n        opt.zero_grad(set_to_none=True)"),  # no final newline
    ],
)
def test_the_reset_goes_after_the_whole_statement(step: str, expected: str):
    source = STEP_WITHOUT_RESET.replace("opt.step()\n", step)
    (fix,) = fixes_for(source, _only(source, "TW003"))
    assert apply_edits(source, fix.edits) == source.replace(step, expected)


def test_a_crlf_file_gets_a_crlf_line():
    source = STEP_WITHOUT_RESET.replace("\n", "\r\n")
    (fix,) = fixes_for(source, _only(source, "TW003"))
    assert apply_edits(source, fix.edits).endswith(
        "opt.step()\r\n        opt.zero_grad(set_to_none=True)\r\n"
    )


@pytest.mark.parametrize(
    "step",
    [
        "total = 0; opt.step()\n",  # shares its line: no statement of its own to follow
        "opt.step(); total = 0\n",
    ],
)
def test_a_step_that_shares_its_line_gets_no_fix(step: str):
    source = STEP_WITHOUT_RESET.replace("opt.step()\n", step)
    finding = _only(source, "TW003")
    assert finding.payload is None
    assert fixes_for(source, finding) == ()


def test_reading_gradients_in_the_function_makes_the_reset_unsafe():
    source = STEP_WITHOUT_RESET + "        print(model.weight.grad)\n"
    finding = _only(source, "TW003")
    assert finding.payload is not None and finding.payload.reads_gradients
    (fix,) = fixes_for(source, finding)
    assert fix.applicability is Applicability.UNSAFE


def test_a_payload_for_another_text_gives_no_fix():
    finding = _only(STEP_WITHOUT_RESET, "TW003")
    edited = STEP_WITHOUT_RESET.replace("        opt.step()\n", "        pass\n")
    assert fixes_for(edited, finding) == ()
    assert fixes_for("x = 1\n", finding) == ()


def test_a_gradient_read_in_another_function_leaves_the_reset_safe():
    source = (
        STEP_WITHOUT_RESET + "def norms(model):\n    return [p.grad for p in model.parameters()]\n"
    )
    finding = _only(source, "TW003")
    assert finding.payload is not None and not finding.payload.reads_gradients
    (fix,) = fixes_for(source, finding)
    assert fix.applicability is Applicability.SAFE


def test_retain_graph_in_the_loop_makes_the_reset_unsafe():
    source = STEP_WITHOUT_RESET.replace(".backward()", ".backward(retain_graph=True)")
    finding = _only(source, "TW003")
    assert finding.payload is not None and finding.payload.retains_graph
    (fix,) = fixes_for(source, finding)
    assert fix.applicability is Applicability.UNSAFE


def test_a_process_that_did_not_run_the_rules_reads_the_payload_back():
    """The CLI's main process receives its workers' findings as JSON without running a
    rule: a payload whose kind it did not know yet would lose the fix in JSON reports."""
    data = json.dumps(_only(STEP_WITHOUT_RESET, "TW003").to_dict())
    script = (
        "import json, sys\n"
        "from torchward.analysis.finding import Finding\n"
        "print(type(Finding.from_dict(json.loads(sys.stdin.read())).payload).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=data, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "ZeroGradReset"


LOADER = (
    "from torch.utils.data import DataLoader\n"
    "def make(ds):\n"
    "    return DataLoader(ds, batch_size=8, pin_memory=True)\n"
)


def test_the_pinned_loader_finding_carries_its_argument_ranges_through_json(monkeypatch):
    def no_tree(source):
        raise AssertionError("a payload fixer parsed the file with LibCST")

    monkeypatch.setattr(fixes_package, "source_tree", no_tree)
    finding = _only(LOADER, "TW015")
    assert isinstance(finding.payload, PinMemoryArguments)
    carried = Finding.from_dict(json.loads(json.dumps(finding.to_dict())))
    assert carried == finding
    drop, add = fixes_for(LOADER, carried)
    assert apply_edits(LOADER, drop.edits).endswith("DataLoader(ds, batch_size=8)\n")
    assert apply_edits(LOADER, add.edits).endswith(
        "DataLoader(ds, batch_size=8, pin_memory=True, num_workers=4)\n"
    )


@pytest.mark.parametrize(
    ("call", "dropped", "added"),
    [
        (
            "DataLoader(\n        ds,\n        pin_memory=True\n    )",
            "DataLoader(\n        ds)",
            "DataLoader(\n        ds,\n        pin_memory=True,\n        num_workers=4\n    )",
        ),
        (
            "DataLoader((ds), pin_memory=(True), num_workers=0)",
            None,  # a parenthesised True is not the literal the fixer checks
            None,
        ),
        (
            "DataLoader(pin_memory=True, dataset=(ds))",
            "DataLoader(dataset=(ds))",
            "DataLoader(pin_memory=True, dataset=(ds), num_workers=4)",
        ),
    ],
)
def test_the_pinned_loader_fixes_keep_the_layout_of_the_other_arguments(call, dropped, added):
    source = LOADER.replace("DataLoader(ds, batch_size=8, pin_memory=True)", call)
    fixes = fixes_for(source, _only(source, "TW015"))
    if dropped is None:
        assert fixes == ()
        return
    drop, add = fixes
    assert apply_edits(source, drop.edits) == source.replace(call, dropped)
    assert apply_edits(source, add.edits) == source.replace(call, added)


def test_a_pinned_loader_finding_without_its_payload_gets_no_fix():
    finding = _only(LOADER, "TW015")
    assert fixes_for(LOADER, attrs.evolve(finding, payload=None)) == ()


RESET_BEFORE_STEP = (
    "import torch\n"
    "def train(model, loader, crit):\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in loader:\n"
    "        crit(model(x), y).backward()\n"
    "\n"
    "        # clear\n"
    "        opt.zero_grad()  # too early\n"
    "        opt.step()\n"
)


def test_the_early_reset_finding_carries_its_lines_through_json_and_moves_them(monkeypatch):
    def no_tree(source):
        raise AssertionError("a payload fixer parsed the file with LibCST")

    monkeypatch.setattr(fixes_package, "source_tree", no_tree)
    finding = _only(RESET_BEFORE_STEP, "TW019")
    assert finding.payload == ResetMove(
        first_line=6,
        reset_line=8,
        last_line=8,
        after_line=9,
        step=finding.evidence[0].span,
        unseen=False,
    )
    carried = Finding.from_dict(json.loads(json.dumps(finding.to_dict())))
    assert carried == finding
    (fix,) = fixes_for(RESET_BEFORE_STEP, carried)
    assert fix.applicability is Applicability.SAFE
    assert apply_edits(RESET_BEFORE_STEP, fix.edits).endswith(
        "backward()\n        opt.step()\n        opt.zero_grad()  # too early\n"
    )


def test_a_comment_of_a_nested_block_stays_where_it_is():
    source = RESET_BEFORE_STEP.replace(
        "        crit(model(x), y).backward()\n",
        "        if x is not None:\n            crit(model(x), y).backward()\n            # deep\n",
    )
    (fix,) = fixes_for(source, _only(source, "TW019"))
    fixed = apply_edits(source, fix.edits)  # the blank line above the reset goes with it
    assert "            # deep\n        opt.step()\n        opt.zero_grad()" in fixed


def test_an_early_reset_finding_without_its_payload_gets_no_fix():
    finding = _only(RESET_BEFORE_STEP, "TW019")
    assert fixes_for(RESET_BEFORE_STEP, attrs.evolve(finding, payload=None)) == ()


def _evaluation(tail: str) -> str:
    from torchward.analysis.rules.validation_in_train_mode import ValidationInTrainMode

    net = ValidationInTrainMode.INVALID[0].source.split("def main")[0]
    return (
        net + "def main(train_loader, val_loader, opt):\n    model = Net()\n"
        "    for epoch in range(3):\n        model.train()\n"
        "        for x in train_loader:\n            model(x).sum().backward()\n"
        "            opt.step()\n" + tail
    )


def test_the_train_mode_evaluation_finding_carries_where_the_switches_go_through_json(
    monkeypatch,
):
    def no_tree(source):
        raise AssertionError("a payload fixer parsed the file with LibCST")

    monkeypatch.setattr(fixes_package, "source_tree", no_tree)
    tail = (
        "        with torch.no_grad():\n            # evaluate\n"
        "            for x in val_loader:\n                model(x)\n                # deep\n"
    )
    source = _evaluation(tail)
    finding = _only(source, "TW024")
    assert isinstance(finding.payload, EvalModeSwitch)
    assert (finding.payload.model, finding.payload.indent) == ("model", " " * 12)
    carried = Finding.from_dict(json.loads(json.dumps(finding.to_dict())))
    assert carried == finding
    (fix,) = fixes_for(source, carried)
    assert fix.applicability is Applicability.SAFE
    assert apply_edits(source, fix.edits) == _evaluation(
        "        with torch.no_grad():\n            model.eval()\n            # evaluate\n"
        "            for x in val_loader:\n                model(x)\n                # deep\n"
        "            model.train()\n"
    )


def test_a_train_mode_evaluation_finding_without_its_payload_gets_no_fix():
    source = _evaluation(
        "        with torch.no_grad():\n            for x in val_loader:\n                model(x)\n"
    )
    finding = _only(source, "TW024")
    assert fixes_for(source, finding)
    assert fixes_for(source, attrs.evolve(finding, payload=None)) == ()


STUCK_IN_EVAL = (
    "import torch.nn as nn\n"
    "def fit(loader, opt):\n"
    "    model = nn.Linear(4, 1)\n"
    "    for epoch in range(3):\n"
    "        # one epoch\n"
    "        for x in loader:\n"
    "            opt.zero_grad()\n"
    "            model(x).sum().backward()\n"
    "            opt.step()\n"
    "        model.eval()\n"
)


def test_the_stuck_eval_finding_carries_the_model_and_its_proof_through_json(monkeypatch):
    def no_tree(source):
        raise AssertionError("a payload fixer parsed the file with LibCST")

    monkeypatch.setattr(fixes_package, "source_tree", no_tree)
    finding = _only(STUCK_IN_EVAL, "TW011")
    assert finding.payload == TrainModeRestore(
        model="model",
        indent="        ",
        before_line=5,
        loop="for epoch in …",
        plain=True,
        entry=Span(3, 12, 3, 27),
        entry_text="nn.Linear(4, 1)",
    )
    carried = Finding.from_dict(json.loads(json.dumps(finding.to_dict())))
    assert carried == finding
    (fix,) = fixes_for(STUCK_IN_EVAL, carried)
    assert fix.applicability is Applicability.SAFE
    assert apply_edits(STUCK_IN_EVAL, fix.edits) == STUCK_IN_EVAL.replace(
        "range(3):\n", "range(3):\n        model.train()\n"
    )


def test_a_stuck_eval_fix_on_a_text_without_the_proof_is_unsafe():
    finding = _only(STUCK_IN_EVAL, "TW011")
    edited = STUCK_IN_EVAL.replace("nn.Linear(4, 1)", "load_pretrained()")
    (fix,) = fixes_for(edited, finding)
    assert fix.applicability is Applicability.UNSAFE


def test_a_stuck_eval_finding_without_its_payload_gets_no_fix():
    finding = _only(STUCK_IN_EVAL, "TW011")
    assert fixes_for(STUCK_IN_EVAL, attrs.evolve(finding, payload=None)) == ()


EPOCHS_WITHOUT_RESEED = (
    "import torch\n"
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "def train(model, ds, opt, epochs):\n"
    "    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))\n"
    "    for epoch in range(epochs):\n"
    "\n"
    "        # one epoch\n"
    "        for x in loader:\n"
    "            opt.zero_grad()\n"
    "            model(x).sum().backward()\n"
    "            opt.step()\n"
)


def test_the_missing_set_epoch_finding_carries_loader_and_counter_through_json(monkeypatch):
    def no_tree(source):
        raise AssertionError("a payload fixer parsed the file with LibCST")

    monkeypatch.setattr(fixes_package, "source_tree", no_tree)
    finding = _only(EPOCHS_WITHOUT_RESEED, "TW021")
    assert finding.payload == EpochReseed(
        loader="loader", epoch="epoch", indent="        ", before_line=6, distributed=True
    )
    carried = Finding.from_dict(json.loads(json.dumps(finding.to_dict())))
    assert carried == finding
    (fix,) = fixes_for(EPOCHS_WITHOUT_RESEED, carried)
    assert fix.applicability is Applicability.SAFE
    assert apply_edits(EPOCHS_WITHOUT_RESEED, fix.edits) == EPOCHS_WITHOUT_RESEED.replace(
        "range(epochs):\n", "range(epochs):\n        loader.sampler.set_epoch(epoch)\n"
    )


def test_a_missing_set_epoch_finding_without_its_payload_gets_no_fix():
    finding = _only(EPOCHS_WITHOUT_RESEED, "TW021")
    assert fixes_for(EPOCHS_WITHOUT_RESEED, attrs.evolve(finding, payload=None)) == ()
