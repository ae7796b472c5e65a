"""Real-GPU calibration: measured peaks on CUDA, against ``estimate`` and ``profile``.

For each configuration (a decoder LM, an encoder and a CNN, training, inference and
generation; :data:`CONFIGS`, 13 of them) it runs, each in a fresh process:

- **real**: the model built on the GPU (from the estimator's catalog config, as
  ``calib_models.py`` builds it — no download, random weights) and the step of
  ``harness.py`` (warm-up step, then ``zero_grad(set_to_none=True)``, forward + loss,
  backward, ``AdamW(foreach=True).step()``; or a ``no_grad`` forward; or prefill +
  greedy decoding), recording ``torch.cuda.max_memory_allocated``,
  ``max_memory_reserved`` (peak stats reset after the warm-up), the CUDA context
  (``total - free`` from ``mem_get_info`` right after CUDA initialisation, before any
  tensor: other processes on the card would count too — the machine is expected to be
  idle) and the live-storage count of the real run;
- **profile**: the same configuration on fake tensors (``torchward profile``'s counter
  and emulation, ``measure.run_one``);
- **estimate**: ``torchward.estimator`` for the same catalog model, job and GPU.

and writes ``fixtures/gpu_measured_peaks.json`` with every figure and the errors of
estimate and profile against the real allocated peak (target: profile within 5%).

    tests/calibration/.venv/bin/python tests/calibration/gpu_calibration.py          # on a GPU
    tests/calibration/.venv/bin/python tests/calibration/gpu_calibration.py --fake   # no GPU

``--fake`` runs the whole pipeline without a GPU (the "real" run on the fake CUDA device:
no allocator, no context — those fields are null) to check the script itself; its output
goes to ``--out`` (default: ``build/gpu_calibration_fake.json``, never the fixture).
Needs torch and transformers (README.md, Setup). ``--only SUBSTRING`` picks configs,
``--jobs N`` runs N at a time (default 1 on a GPU: peaks must not share the card).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURE = HERE / "fixtures" / "gpu_measured_peaks.json"

# (name, catalog model, architecture, mode, dtype, batch, seq or image side, new tokens)
CONFIGS = [
    ("gpt2-train-amp16-b8-s512", "gpt2", "decoder", "train", "amp-fp16", 8, 512, 0),
    ("gpt2-train-fp32-b4-s256", "gpt2", "decoder", "train", "fp32", 4, 256, 0),
    ("gpt2-infer-fp32-b8-s1024", "gpt2", "decoder", "inference", "fp32", 8, 1024, 0),
    (
        "llama3.2-1b-train-ampbf16-b2-s1024",
        "llama-3.2-1b",
        "decoder",
        "train",
        "amp-bf16",
        2,
        1024,
        0,
    ),
    ("qwen2.5-0.5b-train-bf16-b4-s1024", "qwen2.5-0.5b", "decoder", "train", "bf16", 4, 1024, 0),
    ("llama3.2-1b-gen-bf16-b8-p512-n16", "llama-3.2-1b", "decoder", "generate", "bf16", 8, 512, 16),
    ("bert-train-amp16-b16-s256", "bert-base-uncased", "encoder", "train", "amp-fp16", 16, 256, 0),
    ("bert-train-fp32-b8-s512", "bert-base-uncased", "encoder", "train", "fp32", 8, 512, 0),
    (
        "distilbert-train-ampbf16-b32-s128",
        "distilbert-base-uncased",
        "encoder",
        "train",
        "amp-bf16",
        32,
        128,
        0,
    ),
    (
        "roberta-infer-amp16-b32-s512",
        "roberta-base",
        "encoder",
        "inference",
        "amp-fp16",
        32,
        512,
        0,
    ),
    ("resnet50-train-amp16-b32", "resnet50", "cnn", "train", "amp-fp16", 32, 224, 0),
    ("resnet50-train-fp32-b16", "resnet50", "cnn", "train", "fp32", 16, 224, 0),
    ("resnet50-infer-fp32-b64", "resnet50", "cnn", "inference", "fp32", 64, 224, 0),
]
FIELDS = ("name", "model", "architecture", "mode", "dtype", "batch_size", "seq", "new_tokens")


def _config(row: tuple) -> dict:
    return dict(zip(FIELDS, row))


# -- in the child: the real run on the GPU ---------------------------------------------------
def real_run(cfg: dict, fake: bool) -> dict:
    """Build and step the model for real on ``cuda`` (``fake``: on the fake device)."""
    import measure

    if fake:  # the pipeline without a GPU: the counter's peak stands in for the allocator
        out = measure.run_one(dict(cfg, seq=cfg["seq"]), device="cuda", fake=True)
        return {
            "allocated_bytes": out["measured_allocated_bytes"],
            "reserved_bytes": None,
            "context_bytes": None,
            "counted_bytes": out["measured_allocated_bytes"],
            "peak_phase": out["peak_phase"],
            "phase_peaks": out["phase_peaks"],
            "device_name": "fake cuda (no GPU)",
            "seconds": out["seconds"],
        }
    import torch

    torch.cuda.init()
    free, total = torch.cuda.mem_get_info()
    context = total - free  # before any tensor: the CUDA context (and any other process)
    started = time.time()
    reset = {"done": False}
    import calib_harness as harness

    original = harness.LiveStorageCounter.reset_peak

    def reset_peak(self):  # the harness resets after its warm-up: the allocator's stats too
        original(self)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        reset["done"] = True

    harness.LiveStorageCounter.reset_peak = reset_peak
    out = measure.run_one(cfg, device="cuda", fake=False)
    torch.cuda.synchronize()
    return {
        "allocated_bytes": int(torch.cuda.max_memory_allocated()),
        "reserved_bytes": int(torch.cuda.max_memory_reserved()),
        "context_bytes": int(context),
        "counted_bytes": out["measured_allocated_bytes"],
        "peak_phase": out["peak_phase"],
        "phase_peaks": out["phase_peaks"],
        "device_name": torch.cuda.get_device_name(),
        "total_bytes": int(total),
        "stats_reset_after_warmup": reset["done"],
        "seconds": round(time.time() - started, 1),
    }


def profile_run(cfg: dict) -> dict:
    """The same configuration on fake tensors, as ``torchward profile`` measures it."""
    import measure

    out = measure.run_one(cfg, device="cuda", fake=True)
    return {
        "allocated_bytes": out["measured_allocated_bytes"],
        "peak_phase": out["peak_phase"],
        "sdpa_kernels": out["sdpa_kernels"],
        "seconds": out["seconds"],
    }


def estimate_run(cfg: dict, device_name: str | None) -> dict:
    """``torchward estimate`` for the catalog model and the job (no torch needed)."""
    sys.path.insert(0, str(ROOT))
    from torchward.estimator.estimate import estimate
    from torchward.estimator.hardware import lookup_gpu
    from torchward.estimator.runconfig import Field, RunConfig

    values = {
        "model": cfg["model"],
        "mode": cfg["mode"],
        "batch_size": cfg["batch_size"],
        "dtype": cfg["dtype"],
        "attention": "sdpa",
    }
    if cfg["architecture"] == "cnn":
        values["image_size"] = cfg["seq"]
    else:
        values["seq_len"] = cfg["seq"]
    if cfg["mode"] == "train":
        values["optimizer"] = "adamw"
    if cfg["mode"] == "generate":
        values["max_new_tokens"] = cfg["new_tokens"]
    gpu = None
    if device_name and not device_name.startswith("fake"):
        try:
            gpu = lookup_gpu(device_name)
        except Exception:
            gpu = None
    config = RunConfig(**{k: Field(v, "gpu_calibration") for k, v in values.items()})
    result = estimate(config, gpu)
    return {
        "allocated_bytes": result.allocated,
        "peak_phase": result.peak_phase.name,
        "gpu": gpu.name if gpu else None,
    }


def child(cfg: dict, what: str, fake: bool) -> dict:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from torchward.profile.fakecuda import prepare

    if what == "profile" or fake:
        # FakeTensors on cuda: natively on a CUDA build of torch, else the no-op shim
        prepare()
    return real_run(cfg, fake) if what == "real" else profile_run(cfg)


# -- the parent ------------------------------------------------------------------------------
def _spawn(cfg: dict, what: str, fake: bool, timeout: float) -> dict:
    args = [sys.executable, __file__, "--child", what, json.dumps(cfg)] + (
        ["--fake"] if fake else []
    )
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _error(value: int | None, truth: int | None) -> float | None:
    if not value or not truth:
        return None
    return round(value / truth - 1, 4)


def measure_config(cfg: dict, fake: bool, timeout: float) -> dict:
    real = _spawn(cfg, "real", fake, timeout)
    profile = _spawn(cfg, "profile", fake, timeout)
    try:
        est = estimate_run(cfg, real.get("device_name"))
    except Exception as error:  # a catalog or estimator gap is a finding, not a crash
        est = {"error": f"{type(error).__name__}: {error}"}
    truth = real.get("allocated_bytes")
    return dict(
        cfg,
        real=real,
        profile=profile,
        estimate=est,
        profile_error=_error(profile.get("allocated_bytes"), truth),
        estimate_error=_error(est.get("allocated_bytes"), truth),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=2, metavar=("WHAT", "CONFIG"), help=argparse.SUPPRESS)
    parser.add_argument("--fake", action="store_true", help="no GPU: check the pipeline")
    parser.add_argument("--only", help="substring of configuration names")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.child:
        what, text = args.child
        print(json.dumps(child(json.loads(text), what, args.fake)))
        return 0
    configs = [_config(c) for c in CONFIGS if not args.only or args.only in c[0]]
    jobs = args.jobs or (2 if args.fake else 1)
    out = (
        Path(args.out)
        if args.out
        else (HERE / "build" / "gpu_calibration_fake.json" if args.fake else FIXTURE)
    )
    started = time.time()
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda c: measure_config(c, args.fake, args.timeout), configs))
    for r in results:
        real, prof = r["real"], r["profile"]
        if "error" in real or "error" in prof:
            print(f"{r['name']:38s} ERROR {(real.get('error') or prof.get('error'))[-300:]}")
            continue

        def pct(x):
            return "   n/a" if x is None else f"{100 * x:+6.1f}%"

        print(
            f"{r['name']:38s} real {real['allocated_bytes'] / 2**30:7.3f} GiB"
            + (
                f" reserved {real['reserved_bytes'] / 2**30:7.3f}"
                if real.get("reserved_bytes")
                else ""
            )
            + f"  profile {pct(r['profile_error'])}  estimate {pct(r['estimate_error'])}"
        )
    import torch
    import transformers

    device = next(
        (r["real"].get("device_name") for r in results if "device_name" in r["real"]), None
    )
    payload = {
        "note": "Real CUDA peaks (torch.cuda.max_memory_allocated / max_memory_reserved after a "
        "warm-up step, CUDA context from mem_get_info before any tensor) against torchward "
        "profile (fake tensors) and torchward estimate; errors are relative to the real "
        "allocated peak. Written by tests/calibration/gpu_calibration.py"
        + (" --fake (NO GPU: the 'real' figures are the fake device's)" if args.fake else ""),
        "device": device,
        "fake": args.fake,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "seconds": round(time.time() - started, 1),
        "runs": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1) + "\n", "utf-8")
    ok = sum("error" not in r["real"] and "error" not in r["profile"] for r in results)
    print(f"wrote {out}: {ok} of {len(results)} measured")
    return 0 if ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
