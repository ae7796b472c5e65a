"""A plain forward whose head makes a second logits-sized tensor (issue 27: Gemma-2 and
BART inference were about −30%).

Gemma 2 soft-caps its logits (``/ cap``, ``tanh``, ``* cap``: each step's input and output
live together), Cohere and Granite scale them by a constant, BART adds its
``final_logits_bias`` (fp32 under autocast). Measured with the calibration harness
(tests/calibration, fake CUDA tensors), e.g.::

    .venv/bin/python tests/calibration/measure.py --one '{"name": "x", "model": "gemma-2-2b",
        "mode": "inference", "dtype": "bf16", "batch_size": 4, "seq": 2048, "new_tokens": 0}'

The estimator's cuBLAS workspace is taken off before comparing (the harness does not see it).
"""

from __future__ import annotations

import pytest
from torchward.estimator.costmodel import workspace_bytes
from torchward.estimator.estimate import estimate
from torchward.estimator.runconfig import Field, RunConfig

# (model, dtype, batch, seq, measured max allocated bytes) — harness, torch 2.13, transformers 5.25
MEASURED = [
    ("gemma-2-2b", "bf16", 4, 2048, 14_527_529_472),
    ("bart-base", "bf16", 8, 512, 1_266_094_080),
    ("bart-base", "amp-fp16", 8, 512, 2_244_979_712),
    ("falcon-7b", "bf16", 4, 2048, 15_050_427_392),
]


@pytest.mark.parametrize(("model", "dtype", "batch", "seq", "measured"), MEASURED)
def test_inference_forward_is_within_two_percent_of_the_harness(model, dtype, batch, seq, measured):
    config = RunConfig(
        model=Field(model, "--model"),
        mode=Field("inference", "--mode"),
        dtype=Field(dtype, "--dtype"),
        batch_size=Field(batch, "--batch-size"),
        seq_len=Field(seq, "--seq-len"),
    )
    ours = estimate(config).allocated - workspace_bytes(None)
    assert ours == pytest.approx(measured, rel=0.02)
