"""Measure script-defined models (``tests/calibration/scripts/*.py``) with the harness.

Each script is a training script the estimator reads statically; here its classes are
imported (its ``main()`` does not run) and the same job — the model ``main()`` builds, its
``batch_size`` and ``seq_len`` / ``image_size``, its precision, and the harness's AdamW
step — is measured with fake tensors on the fake CUDA device, as ``measure.py`` measures
catalog models. Writes ``fixtures/script_peaks.json``;
``tests/estimator/test_script_model_accuracy.py`` compares ``torchward estimate SCRIPT``
against it (no torch needed there).

    tests/calibration/.venv/bin/python tests/calibration/measure_scripts.py
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fakecuda  # noqa: E402

fakecuda.load()

import calib_harness as harness  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

SCRIPTS = {  # script → (dtype the script trains in, what its main() builds)
    "gpt_from_scratch.py": ("amp-bf16", "gpt"),
    "resnet_from_scratch.py": ("fp32", "resnet"),
    "unet_from_scratch.py": ("amp-bf16", "unet"),
}


def _job(module, kind: str):
    """(model, make_batch, loss_of) as the script's main() builds them."""
    batch = module.batch_size
    if kind == "gpt":
        seq, vocab = module.seq_len, 50304
        model = module.GPT(module.Config(vocab_size=vocab))

        def make_batch():
            return {"x": torch.randint(0, vocab, (batch, seq), device="cuda")}

        def loss_of(model, b):
            logits, loss = model(b["x"], b["x"])
            return loss, logits

        return model, make_batch, loss_of, seq
    side = module.image_size
    model = module.ResNet([2, 2, 2, 2]) if kind == "resnet" else module.UNet()
    target = (batch,) if kind == "resnet" else (batch, side, side)  # classes / a mask

    def make_images():
        return {
            "x": torch.randn(batch, 3, side, side, device="cuda"),
            "y": torch.randint(0, 2, target, device="cuda"),
        }

    def image_loss(model, b):
        out = model(b["x"])
        return F.cross_entropy(out, b["y"]), out

    return model, make_images, image_loss, side


OUT = HERE / "fixtures" / "script_peaks.json"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # classes and constants only: main() is guarded
    return module


def measure(name: str, dtype: str, kind: str) -> dict:
    harness.patch_transformers()  # F.scaled_dot_product_attention: the sm80 kernel rules
    harness.set_sdpa_sm(80)
    harness.KERNELS_USED.clear()
    module = _load(HERE / "scripts" / name)
    batch = module.batch_size
    counter = harness.LiveStorageCounter("cuda")
    with FakeTensorMode(), counter:
        with torch.device("cuda"):
            model, make_batch, loss_of, seq = _job(module, kind)
        model.train()
        harness.train_step(counter, model, make_batch, loss_of, dtype, "cuda")
    peak_phase = max(counter.phase_peaks, key=counter.phase_peaks.get)
    return dict(
        script=name,
        dtype=dtype,
        batch_size=batch,
        seq=seq,
        params=sum(p.numel() for p in model.parameters()),
        measured_allocated_bytes=counter.peak,
        peak_phase=peak_phase,
        phase_peaks=dict(counter.phase_peaks),
        sdpa_kernels=dict(harness.KERNELS_USED),
    )


def main() -> int:
    runs = [measure(name, dtype, kind) for name, (dtype, kind) in SCRIPTS.items()]
    for r in runs:
        print(
            f"{r['script']:28s} {r['measured_allocated_bytes'] / 2**30:8.3f} GiB  {r['peak_phase']}"
        )
    OUT.write_text(
        json.dumps(
            {
                "note": "Peaks of live tensor storage of script-defined models, measured with "
                "fake tensors (tests/calibration/measure_scripts.py); AdamW(foreach=True), "
                "zero_grad(set_to_none=True), one steady-state step.",
                "torch_version": torch.__version__.split("+")[0],
                "runs": runs,
            },
            indent=1,
        )
        + "\n",
        "utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
