"""TW007 is quiet in test code: a per-step sync there costs a test run, not a training run.

Found on PyTorch's own tree (``torch/testing/_internal/distributed/distributed_test.py``):
test methods that train a few steps and call ``torch.cuda.synchronize()`` on each, to
compare gradients with ``self.assertEqual``. TW007 is a throughput warning; a test's steps
are there to check a result, often on the host, and their speed is not what the warning
protects. Test code is what the runners collect by their default conventions: a module
named ``test_*.py`` / ``*_test.py`` (pytest's ``python_files``), a function or method
named ``test_*``, and a ``test*`` method of a ``unittest.TestCase``. Each quiet case has
its twin in training code that still warns.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torchward.analysis import LintSettings, analyze_source

STEPS = (
    "        for _ in range(3):\n"
    "            model(x).sum().backward()\n"
    "            opt.step()\n"
    "            torch.cuda.synchronize()\n"
)

UNITTEST = (
    "import unittest\nimport torch\n\n\nclass GradTest(unittest.TestCase):\n"
    "    def testGradients(self):\n"
    "        model = torch.nn.Linear(2, 2)\n"
    "        opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "        x = torch.ones(1, 2)\n" + STEPS + "        self.assertIsNotNone(model.weight.grad)\n"
)
PYTEST = (
    "import torch\n\n\ndef test_gradients():\n"
    "    if True:\n"
    "        model = torch.nn.Linear(2, 2)\n"
    "        opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "        x = torch.ones(1, 2)\n" + STEPS + "    assert model.weight.grad is not None\n"
)
HELPER = (
    "import torch\n\n\ndef _run_steps(model, opt, x):\n"
    "    if True:\n" + STEPS + "    return model\n"
)


def _lines(tmp_path: Path, name: str, source: str) -> list[int]:
    path = tmp_path / name
    path.write_text(source)
    report = analyze_source(source, str(path), LintSettings(select=("TW007",)))
    assert not report.problems, report.problems  # a broken analysis is not a quiet one
    return [f.span.line for f in report.findings]


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("checks.py", UNITTEST),  # a TestCase's test method
        ("checks.py", PYTEST),  # a pytest test function
        ("checks.py", PYTEST.replace("def test_gradients", "def test_")),
        ("test_steps.py", HELPER),  # a helper of a test module
        ("steps_test.py", HELPER),
    ],
)
def test_a_sync_every_step_in_test_code_is_quiet(tmp_path: Path, name: str, source: str):
    assert _lines(tmp_path, name, source) == []


@pytest.mark.parametrize(
    ("name", "source", "line"),
    [
        ("checks.py", UNITTEST.replace("testGradients", "run_gradients"), 13),
        # a class that is no TestCase: `testGradients` is just a method
        ("checks.py", UNITTEST.replace("(unittest.TestCase)", ""), 13),
        ("checks.py", PYTEST.replace("def test_gradients", "def train_gradients"), 12),
        # `test` alone is pytorch/examples' evaluation function, not a test
        ("checks.py", PYTEST.replace("def test_gradients", "def test"), 12),
        ("steps.py", HELPER, 9),
        ("contest.py", HELPER, 9),
    ],
)
def test_the_same_steps_in_training_code_still_warn(
    tmp_path: Path, name: str, source: str, line: int
):
    assert _lines(tmp_path, name, source) == [line]
