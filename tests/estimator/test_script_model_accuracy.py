"""Script-defined models: ``torchward estimate SCRIPT`` (the static path, no torch) against
the peak the calibration harness measured for the same job
(``tests/calibration/measure_scripts.py`` → ``fixtures/script_peaks.json``).

Target (issue 12): within 15%, for a from-scratch GPT, a ResNet-style CNN and a small UNet.
Modelled: GPT-style decoders (shape from their config) and CNNs traced from their
constructors (convolutions, BatchNorm, pooling, residual blocks, UNet up / down blocks);
anything untraceable is answered "unknown" (tests/estimator/test_script_paths.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from torchward.analysis.job.runconfig import read_script
from torchward.estimator.costmodel import WORKSPACE_BYTES
from torchward.estimator.estimate import estimate

CALIBRATION = Path(__file__).resolve().parents[1] / "calibration"
FIXTURE = CALIBRATION / "fixtures" / "script_peaks.json"


def test_script_defined_models_are_estimated_within_15_percent_through_the_static_path():
    runs = json.loads(FIXTURE.read_text("utf-8"))["runs"]
    assert {r["script"] for r in runs} == {
        "gpt_from_scratch.py",
        "resnet_from_scratch.py",
        "unet_from_scratch.py",
    }
    for run in runs:
        config, _notes = read_script(str(CALIBRATION / "scripts" / run["script"]))
        assert config.value("params") == run["params"]  # the layers counted exactly
        assert config.value("batch_size") == run["batch_size"]
        size = config.value("seq_len") or config.value("image_size")
        assert size == run["seq"] and config.value("dtype") == run["dtype"]
        assert config.structure is not None  # a shape: activations are modelled
        e = estimate(config)
        assert e.activations_modelled
        allocated = e.allocated - 2 * WORKSPACE_BYTES["pre-hopper"]  # fake tensors see none
        error = allocated / run["measured_allocated_bytes"] - 1
        assert abs(error) <= 0.15, f"{run['script']}: {error:+.1%}"
