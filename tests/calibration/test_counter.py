"""The calibration harness's counter, checked against real execution (needs torch).

Without torch (the project's own venv) every test here is skipped with the reason; the
estimator's accuracy test (tests/estimator/test_calibration_accuracy.py) reads the
committed fixtures instead and needs no torch.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip(
    "torch",
    reason="torch is a calibration-only dependency "
    "(tests/calibration/README.md); not installed here",
)
pytest.importorskip(
    "transformers",
    reason="transformers is a calibration-only dependency "
    "(tests/calibration/README.md); not installed here",
)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import measure  # noqa: E402

TINY = {
    "gpt2": {"n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 512, "n_positions": 256},
    "llama-3.2-1b": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "intermediate_size": 128,
        "vocab_size": 512,
    },
    "bert-base-uncased": {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 512,
    },
    "t5-small": {
        "d_model": 64,
        "d_ff": 128,
        "d_kv": 16,
        "num_heads": 4,
        "num_layers": 2,
        "num_decoder_layers": 2,
        "vocab_size": 512,
    },
    "resnet50": {"layers": [1, 1, 1, 1]},
}
CASES = [
    ("gpt2", "train", "fp32", 2, 64, 0),
    ("gpt2", "inference", "fp32", 4, 128, 0),
    ("llama-3.2-1b", "train", "amp-bf16", 2, 64, 0),
    ("llama-3.2-1b", "train", "bf16", 3, 32, 0),
    ("llama-3.2-1b", "generate", "fp32", 2, 32, 4),
    ("bert-base-uncased", "train", "fp32", 4, 32, 0),
    ("t5-small", "train", "fp32", 2, 32, 0),
    ("resnet50", "train", "fp32", 2, 64, 0),
    ("resnet50", "inference", "fp32", 2, 64, 0),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c[:4])))
def test_fake_tensor_peak_equals_real_cpu_execution_to_the_byte(case):
    model, mode, dtype, batch, seq, new = case
    cfg = dict(
        name="tiny",
        model=model,
        mode=mode,
        dtype=dtype,
        batch_size=batch,
        seq=seq,
        new_tokens=new,
        overrides=TINY[model],
    )
    real = measure.run_one(cfg, device="cpu", fake=False)
    fake = measure.run_one(cfg, device="cpu", fake=True)
    assert real["measured_allocated_bytes"] > real["weight_bytes"]
    assert fake["measured_allocated_bytes"] == real["measured_allocated_bytes"]
    assert fake["phase_peaks"] == real["phase_peaks"]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the fake CUDA device")
def test_fake_cuda_device_runs_a_training_step_with_flash_attention_and_autocast():
    cfg = dict(
        name="tiny",
        model="gpt2",
        mode="train",
        dtype="amp-bf16",
        batch_size=2,
        seq=64,
        new_tokens=0,
        overrides=TINY["gpt2"],
    )
    proc = subprocess.run(
        [sys.executable, str(HERE / "measure.py"), "--one", json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["sdpa_kernels"] == {"flash": 4}  # 2 layers, warm-up step + measured step
    assert result["peak_phase"] in ("backward", "optimizer step")
    # fp32 weights + grads + two AdamW moments + the foreach temporary, at least
    assert result["measured_allocated_bytes"] >= 5 * result["weight_bytes"]
