"""A loss helper of another module returning ``(loss, stats.detach())``: the stats are no graph.

From yolov5's ``segment/train.py``: ``loss, loss_items = compute_loss(pred, targets)``
where ``ComputeLoss.__call__`` (another module) returns the loss and a detached
concatenation of its parts, and the loop keeps a running mean of ``loss_items`` across
iterations. That script follows more than :data:`~torchward.analysis.workspace.linking.MAX_ENTRIES`
calls into its utilities before the loss call, so the call was unknown and handed the
model output's graph to both items: TW001 reported an error on a running mean of detached
numbers. The project here is written for these tests: ``prelude`` calls spend the budget
the same way, and the detached item must stay graph-free whether or not the call was followed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.workspace import linking
from torchward.analysis.workspace.returns import detached_items

LOSS_MODULE = """\
import torch


class PartsLoss:
    def __init__(self, model):
        self.model = model

    def __call__(self, preds, targets):
        box = (preds - targets).abs().mean().unsqueeze(0)
        obj = (preds * targets).mean().unsqueeze(0)
        total = box + obj
        return total * 4, {second}
"""

HELPERS_MODULE = """\
def warm_up(model, step):
    model.train()
    return step
"""


def _train_script(prelude_calls: int) -> str:
    prelude = "".join(f"    warm_up(model, {i})\n" for i in range(prelude_calls))
    return (
        "import torch\n"
        "from helpers import warm_up\n"
        "from losses import PartsLoss\n"
        "\n"
        "\n"
        "def fit(model, loader, optimizer, epochs):\n"
        "    criterion = PartsLoss(model)\n"
        f"{prelude}"
        "    for epoch in range(epochs):\n"
        "        running = torch.zeros(2)\n"
        "        for i, (images, targets) in enumerate(loader):\n"
        "            preds = model(images)\n"
        "            loss, parts = criterion(preds, targets)\n"
        "            loss.backward()\n"
        "            optimizer.step()\n"
        "            optimizer.zero_grad()\n"
        "            running = (running * i + parts) / (i + 1)\n"
        "        print(running)\n"
    )


def _retained(tmp_path: Path, second: str, prelude_calls: int) -> list[int]:
    (tmp_path / "losses.py").write_text(LOSS_MODULE.format(second=second))
    (tmp_path / "helpers.py").write_text(HELPERS_MODULE)
    script = tmp_path / "train.py"
    script.write_text(_train_script(prelude_calls))
    report = analyze_source(
        script.read_text(), str(script), LintSettings(notes_per_file=None, select=("TW001",))
    )
    assert not report.problems, report.problems
    return [f.span.line for f in report.findings if f.code == "TW001"]


# past the budget: every call to ``warm_up`` is followed, so these spend it all
SPENT = linking.MAX_ENTRIES + 4


@pytest.mark.parametrize("prelude_calls", [0, SPENT], ids=["followed", "past-the-budget"])
@pytest.mark.parametrize(
    "second", ["torch.cat((box, obj)).detach()", "torch.cat((box, obj)).detach().cpu()"]
)
def test_a_detached_item_of_a_returned_tuple_keeps_no_graph(
    tmp_path: Path, prelude_calls: int, second: str
) -> None:
    assert _retained(tmp_path, second, prelude_calls) == []


@pytest.mark.parametrize("prelude_calls", [0, SPENT], ids=["followed", "past-the-budget"])
def test_an_attached_item_of_a_returned_tuple_is_still_retained(
    tmp_path: Path, prelude_calls: int
) -> None:
    # the same helper returning the parts with their graph: the running mean keeps every
    # iteration's graph, followed or not
    lines = _retained(tmp_path, "torch.cat((box, obj))", prelude_calls)
    assert len(lines) == 1
    assert _train_script(prelude_calls).splitlines()[lines[0] - 1].strip().startswith("running =")


def _function(source: str) -> ast.FunctionDef:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "def f(x):\n    return x * 2, x.detach(), x.item(), float(x), x.shape, 3\n",
            (False, True, True, True, True, True),
        ),
        # a detaching step followed by one that keeps only its receiver's graph
        ("def f(x):\n    return x.detach().cpu(), x.cpu()\n", (True, False)),
        # every path must detach the item
        (
            "def f(x, c):\n    if c:\n        return x, x.detach()\n    return x, x\n",
            (False, False),
        ),
        (
            "def f(x, c):\n    if c:\n        return x.item(), 1\n    return 0, x.detach()\n",
            (True, True),
        ),
        # returns of a nested function are not the function's
        ("def f(x):\n    def g():\n        return 1, 2\n    return x, x.detach()\n", (False, True)),
    ],
)
def test_detached_items_reads_every_return(source: str, expected: tuple[bool, ...]) -> None:
    assert detached_items(_function(source)) == expected


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    return x.detach()\n",  # not a tuple
        "def f(x, c):\n    if c:\n        return x, x\n    return x, x, x\n",  # lengths differ
        "def f(x, c):\n    if c:\n        return\n    return x, x\n",  # a bare return
        "def f(x):\n    return (*x, x.detach())\n",  # a starred item
        "def f(x):\n    print(x)\n",  # no return at all
    ],
)
def test_detached_items_knows_nothing_of_other_shapes(source: str) -> None:
    assert detached_items(_function(source)) is None
