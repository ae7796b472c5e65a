"""Inverse answers within the model's limits (issue 12): the largest image side a vision
model takes — a multiple of its down-sampling, or only its own side when position
embeddings or a flattened map fix it — and unknown verdicts for unmodelled phases."""

from __future__ import annotations

import json
import subprocess
import sys

import attrs
from torchward.estimator.estimate import estimate
from torchward.estimator.hardware import lookup_gpu
from torchward.estimator.jobparts import DeviceModel
from torchward.estimator.report import estimate_report
from torchward.estimator.runconfig import Field, RunConfig


def _job(model: str, batch: int, side: int, gpu: str = "t4", **more):
    config = RunConfig().with_values(
        "test", model=model, mode="train", batch_size=batch, image_size=side, dtype="amp-fp16"
    )
    return estimate(config.with_values("test", **more) if more else config, lookup_gpu(gpu))


def test_a_vit_takes_only_its_own_image_size():
    report = estimate_report(_job("vit-base-patch16-224", 32, 224))
    assert report["verdict"] == "fits" and report["max_image_size"] == 224
    assert any("fixed at 224" in n and "position embeddings" in n for n in report["notes"])
    too_big = estimate_report(_job("vit-large-patch16-224", 512, 224))
    assert too_big["verdict"] == "oom" and too_big["max_image_size"] == 0


def test_a_cnn_s_largest_image_is_a_multiple_of_its_down_sampling_and_just_fits():
    e = _job("resnet50", 64, 224)
    side = estimate_report(e)["max_image_size"]
    assert side and side % 32 == 0 and side > 224
    at = lambda s: _job("resnet50", 64, s).peak  # noqa: E731
    assert at(side) <= e.gpu.usable_bytes < at(side + 32)


def test_a_script_net_that_flattens_a_fixed_map_takes_only_its_own_side(tmp_path):
    script = tmp_path / "mnist.py"
    script.write_text(
        "import torch, torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.features = nn.Sequential(\n"
        "            nn.Conv2d(1, 32, 3, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 1), nn.ReLU(),\n"
        "            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(),\n"
        "            nn.Linear(128, 10),\n"
        "        )\n"
        "model = Net()\n"
        "loader = torch.utils.data.DataLoader(ds, batch_size=64)\n"
        "opt = torch.optim.Adadelta(model.parameters())\n"
        "loss.backward()\n",
        "utf-8",
    )
    out = subprocess.run(
        [sys.executable, "-m", "torchward", "estimate", str(script), "--image-size", "28"]
        + ["--gpu", "t4", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    data = json.loads(out)
    assert data["max_image_size"] == 28 and data["max_batch_size"] > 64
    assert any("fixed at 28" in n for n in data["notes"])


def test_language_models_have_no_image_answer():
    config = RunConfig().with_values(
        "test", model="gpt2", mode="train", batch_size=4, seq_len=512, dtype="amp-bf16"
    )
    report = estimate_report(estimate(config, lookup_gpu("t4")))
    assert report["max_image_size"] is None and report["max_seq_len"] <= 1024


def test_an_unmodelled_model_on_the_device_leaves_no_fit_and_no_inverse():
    """Confidence honesty for the new phases: a diffusion UNet beside the job (activations
    not modelled) is a term that can dominate: no 'fits', no largest batch."""
    base = _job("resnet50", 8, 224, gpu="a100-80gb")
    unet = DeviceModel("stable-diffusion-v1-5-unet", "unet", source="t.py")
    config = attrs.evolve(base.resolved.config, device_models=Field((unet,), "t.py"))
    e = estimate(config, base.gpu)
    report = estimate_report(e)
    assert base.verdict == "fits" and e.verdict == "unknown"
    assert report["max_batch_size"] is None and report["smallest_gpu"] is None
