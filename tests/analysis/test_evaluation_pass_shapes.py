"""TW024 on evaluation passes written as comprehensions and on models built inline from
``torch.nn`` layers (issue 28's recall examples missed both shapes).

A comprehension that iterates a data loader runs the model once per batch exactly as a
``for`` statement does; a model built as ``nn.Sequential(...)`` has no class to read, so
its mode dependence is read from the layers written in the construction itself.
"""

from torchward.analysis.engine import analyze_source
from torchward.analysis.fixes import fixes_for
from torchward.analysis.settings import LintSettings

NET = """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(self.drop(x))
"""


def _tw024(source: str) -> list:
    report = analyze_source(source, "train.py", LintSettings(select=("TW024",)))
    return [f for f in report.findings if f.code == "TW024"]


def test_a_generator_over_the_validation_loader_is_an_evaluation_pass():
    source = NET + (
        "\ndef fit(train_loader, val_loader, opt):\n"
        "    model = Net()\n"
        "    for epoch in range(3):\n"
        "        model.train()\n"
        "        for x, y in train_loader:\n"
        "            opt.zero_grad()\n"
        "            nn.functional.cross_entropy(model(x), y).backward()\n"
        "            opt.step()\n"
        "        with torch.no_grad():\n"
        "            hits = sum((model(x).argmax(1) == y).sum().item() for x, y in val_loader)\n"
    )
    (finding,) = _tw024(source)
    assert (
        finding.span.line
        == source.splitlines().index(
            "            hits = sum((model(x).argmax(1) == y).sum().item() for x, y in val_loader)"
        )
        + 1
    )
    # a comprehension is not a statement: eval()/train() cannot be put around it
    assert fixes_for(source, finding) == ()


def test_a_comprehension_after_eval_is_quiet():
    source = NET + (
        "\ndef fit(train_loader, val_loader, opt):\n"
        "    model = Net()\n"
        "    model.train()\n"
        "    for x, y in train_loader:\n"
        "        opt.zero_grad()\n"
        "        nn.functional.cross_entropy(model(x), y).backward()\n"
        "        opt.step()\n"
        "    model.eval()\n"
        "    with torch.no_grad():\n"
        "        outputs = [model(x) for x, _ in val_loader]\n"
    )
    assert _tw024(source) == []


def test_a_comprehension_over_a_range_is_not_an_evaluation_pass():
    source = NET + (
        "\ndef probe():\n"
        "    model = Net()\n"
        "    model.train()\n"
        "    with torch.no_grad():\n"
        "        return [model(torch.randn(4, 8)) for _ in range(3)]\n"
    )
    assert _tw024(source) == []


SEQUENTIAL = """
import torch
import torch.nn as nn

def main(test_loader):
    model = nn.Sequential({layers})
    with torch.no_grad():
        for images, labels in test_loader:
            print((model(images).argmax(1) == labels).float().mean())
"""


def test_an_inline_sequential_with_batch_norm_never_switched_to_eval():
    layers = "nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10)"
    source = SEQUENTIAL.format(layers=layers)
    (finding,) = _tw024(source)
    assert any("never switched to eval" in e.message for e in finding.evidence)
    # a loop statement: eval() before it, train() after restores the mode it ran in
    (fix,) = fixes_for(source, finding)
    assert "model.eval()" in fix.title


def test_an_inline_sequential_of_linear_layers_is_quiet_the_mode_changes_nothing():
    layers = "nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10)"
    assert _tw024(SEQUENTIAL.format(layers=layers)) == []


def test_an_inline_sequential_of_library_layers_is_quiet_without_positive_evidence():
    source = SEQUENTIAL.format(layers="timm.layers.Mlp(8), nn.Linear(8, 2)").replace(
        "import torch\n", "import torch\nimport timm\n", 1
    )
    assert _tw024(source) == []


def test_an_inline_sequential_in_a_file_that_calls_eval_somewhere_is_quiet():
    layers = "nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2)"
    source = SEQUENTIAL.format(layers=layers) + "\ndef switch(m):\n    m.eval()\n"
    assert _tw024(source) == []
