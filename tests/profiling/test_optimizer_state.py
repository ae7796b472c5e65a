"""The estimator's optimizer state and step temporaries (``estimator/precision.py``)
against torch.optim's own step, measured on fake tensors (needs torch: the profile extra).

Each optimizer runs its real ``foreach`` (or fused) step on a small MLP: the measured
state must be what :func:`~torchward.estimator.precision.optimizer_cost` charges per
parameter, to within the per-tensor ``step`` counters torch keeps beside it, and the
optimizer step must hold the gradients and exactly the temporaries it charges."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip(
    "torch",
    reason="torch is the profile extra's dependency (pip install 'torchward[profile]'); "
    "not installed in this environment",
)

from torchward.estimator.precision import optimizer_cost  # noqa: E402

from torchward.profile.request import ModelRecipe, ProfileJob  # noqa: E402
from torchward.profile.worker import measure  # noqa: E402

from .models import MLP_AND_LSTM  # noqa: E402


@pytest.fixture
def nets(tmp_path, monkeypatch):
    (tmp_path / "nets.py").write_text(MLP_AND_LSTM)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("nets", None)


@pytest.mark.parametrize(
    "name",
    [
        "adadelta",
        "adagrad",
        "rmsprop",
        "rmsprop-momentum",
        "rmsprop-centered",
        "rmsprop-momentum-centered",
        "adamw",
        "adam",
        "adamw-fused",
        "sgd-momentum",
    ],
)
def test_state_and_step_temporaries_are_what_the_estimate_charges(nets, name):
    recipe = ModelRecipe(kind="factory", target="nets.py:make_mlp", label="mlp")
    result = measure(recipe, ProfileJob(batch_size=1, optimizer=name), device="cpu")
    cost = optimizer_cost(name, 4, None)  # fp32 parameters: fp32 state
    params = result.params
    counters = 64 * 4 * 8  # a scalar ``step`` per parameter tensor, rounded up generously
    state = result.terms["optimizer_state"]  # held in every phase of the measured step
    assert cost.states * params <= state <= cost.states * params + counters
    # the optimizer step holds what the step start does, plus the gradients (fp32) and the
    # implementation's temporaries
    phases = dict(result.phases)
    extra = phases["optimizer step"] - phases["step start"]
    expected = (4 + cost.temporary) * params
    assert abs(extra - expected) <= 0.02 * 4 * params, (extra, expected)
