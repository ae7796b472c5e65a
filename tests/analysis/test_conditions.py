"""Path conditions (analysis/facts/conditions.py): their order, what runs, the confidence they
allow, and the reader's use of the engine's grad-mode catalog for ``validation``."""

from __future__ import annotations

import pytest
from torchward.analysis.facts.conditions import PathCondition
from torchward.analysis.finding import Confidence
from torchward.analysis.job.runconfig import read_source

ORDER = list(PathCondition)


def test_worst_and_best_follow_the_documented_order():
    assert [c.value for c in ORDER] == ["default", "unsure", "validation", "multi-gpu", "off"]
    for i, a in enumerate(ORDER):
        for j, b in enumerate(ORDER):
            assert a.worst(b) is ORDER[max(i, j)]
            assert PathCondition.best([a, b]) is ORDER[min(i, j)]
    assert PathCondition.best([]) is PathCondition.DEFAULT  # nobody calls it: an entry point


def test_what_runs_and_how_far_it_is_believed():
    assert [c.runs for c in ORDER] == [True, True, True, False, False]
    assert [c.cap for c in ORDER] == [
        Confidence.HIGH,
        Confidence.MEDIUM,
        Confidence.LOW,
        Confidence.LOW,
        Confidence.LOW,
    ]
    assert PathCondition.UNSURE.confidence_cap == "medium"


@pytest.mark.parametrize(
    "guard",
    [
        "torch.no_grad()",
        "torch.inference_mode()",
        "torch.set_grad_enabled(False)",
        "torch.no_grad() if evaluating else contextlib.nullcontext()",
    ],
)
def test_an_autocast_under_disabled_grad_is_the_validation_path(guard):
    source = (
        "import contextlib\nimport torch\nevaluating = True\n"
        f"with {guard}:\n"
        "    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "        out = model(x)\n"
    )
    config, _ = read_source(source, "eval.py")
    assert config.dtype is not None and config.dtype.confidence == "low"


def test_grad_left_on_keeps_the_default_path():
    source = (
        "import torch\n"
        "with torch.set_grad_enabled(True):\n"
        "    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "        loss = model(x)\n"
        "loss.backward()\n"
    )
    config, _ = read_source(source, "train.py")
    assert config.dtype is not None
    assert (config.dtype.value, config.dtype.confidence) == ("amp-bf16", "high")
