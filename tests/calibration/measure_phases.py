"""Measure jobs with structure (issue 12): frozen parameters and a second model on the device.

Each job is a catalog model built as ``measure.py`` builds it, frozen the way training
scripts freeze (``requires_grad_(False)`` on the model or a sub-module, then the head or the
last blocks made trainable again), or trained beside a frozen teacher that runs under
``torch.no_grad()``; the step is the harness's (AdamW over ``model.parameters()``: frozen
parameters never get a gradient, so AdamW gives them no state); each is measured a second
time without its structure (``plain_allocated_bytes``). Writes
``fixtures/phase_peaks.json``; ``tests/estimator/test_job_phases.py`` compares the estimate
(``frozen`` / ``device_models`` in the run configuration) against it.

    tests/calibration/.venv/bin/python tests/calibration/measure_phases.py
    tests/calibration/.venv/bin/python tests/calibration/measure_phases.py --only llama  # merge
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fakecuda  # noqa: E402

fakecuda.load()

import calib_harness as harness  # noqa: E402
import calib_models as models  # noqa: E402
import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

# silu_backward / mish_backward as one fused op, as on a GPU: harness.patch_transformers()
# registers them (torchward.profile.emulation.register_fused_backwards).

OUT = HERE / "fixtures" / "phase_peaks.json"

# name, model, dtype, batch, seq (image side for resnet), frozen, trainable again ("=x": x
# replaced by a new Linear of HEAD_OUTPUTS outputs, the loss the model's own over them),
# teacher
JOBS = [
    ("bert-frozen-backbone-amp16-b32-s512", "bert-base-uncased", "amp-fp16", 32, 512,
     ["bert"], [], None),
    ("gpt2-last-block-amp16-b8-s1024", "gpt2", "amp-fp16", 8, 1024,
     [""], ["transformer.h[-1]", "transformer.ln_f", "lm_head"], None),
    ("gpt2-classifier-head-last-block-amp16-b8-s1024", "gpt2", "amp-fp16", 8, 1024,
     [""], ["transformer.h[-1]", "transformer.ln_f", "=lm_head"], None),
    ("llama3.2-1b-lower-half-frozen-bf16-b4-s2048", "llama-3.2-1b", "bf16", 4, 2048,
     ["model.layers[:8]"], [], None),
    ("llama3.2-1b-embeddings-lower-half-frozen-bf16-b4-s2048", "llama-3.2-1b", "bf16", 4, 2048,
     ["model.embed_tokens", "model.layers[:8]"], [], None),
    ("resnet50-linear-probe-fp32-b256", "resnet50", "fp32", 256, 224, [""], ["fc"], None),
    ("distilbert-bert-teacher-amp16-b32-s512", "distilbert-base-uncased", "amp-fp16", 32, 512,
     [], [], "bert-base-uncased"),
    ("gpt2-gpt2-medium-teacher-bf16-b8-s1024", "gpt2", "bf16", 8, 1024, [], [], "gpt2-medium"),
    ("qwen2.5-0.5b-classifier-head-last-layer-bf16-b4-s2048", "qwen2.5-0.5b", "bf16", 4, 2048,
     [""], ["model.layers[-1]", "model.norm", "=lm_head"], None),
    ("script-gpt-classifier-head-last-block-fp32-b8-s1024", "script:gpt_classifier_head.py",
     "fp32", 8, 1024, [""], ["=out_head", "trf_blocks[-1]", "final_norm"], None),
]  # fmt: skip
SCRIPTS = HERE.parent / "estimator" / "scripts"  # scripts the estimator reads
HEAD_OUTPUTS = 2  # a new head's classes (a binary classifier, as rasbt's ch06)
_ITEM = re.compile(r"^(\w+)\[(-?\d*)(:?)(-?\d*)\]$")


def _modules(model, path: str) -> list:
    """The modules ``path`` names under ``model`` (``""``: the model; ``h[-1]``, ``layers[:8]``)."""
    found = [model]
    for part in path.split(".") if path else []:
        match = _ITEM.match(part)
        name = match.group(1) if match else part
        found = [getattr(m, name) for m in found]
        if match:
            start, colon, stop = match.group(2), match.group(3), match.group(4)
            if colon:
                s = slice(int(start) if start else None, int(stop) if stop else None)
                found = [x for m in found for x in list(m)[s]]
            else:
                found = [m[int(start)] for m in found]
    return found


def _script_job(name: str, batch: int, seq: int):
    """(model, make_batch, loss_of) of a script the estimator reads (``script:NAME`` in
    ``tests/estimator/scripts/``): its classes and its ``loss_of``, its ``main()`` not run."""
    spec = importlib.util.spec_from_file_location(Path(name).stem, SCRIPTS / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # classes and constants only: main() is guarded
    cfg = module.BASE_CONFIG
    model = module.GPTModel(cfg)

    def make_batch():
        return {
            "x": torch.randint(0, cfg["vocab_size"], (batch, seq), device="cuda"),
            "y": torch.randint(0, module.num_classes, (batch,), device="cuda"),
        }

    def loss_of(model, b):
        return module.loss_of(model, b["x"], b["y"]), None

    return model, make_batch, loss_of


def _loss(kind: str, teacher):
    """The job's loss: the model's own, plus a distillation term against a no_grad teacher
    (KL between the softened distributions, as distillation scripts write it)."""
    own = models.loss_of(kind)
    if teacher is None:
        return own

    def distilled(model, b):
        with torch.no_grad():
            inputs = {k: v for k, v in b.items() if k != "labels"}
            target = teacher(**inputs).logits
        loss, out = own(model, b)
        kd = torch.nn.functional.kl_div(
            torch.log_softmax(out.logits, -1), torch.softmax(target, -1), reduction="batchmean"
        )
        return loss + kd, (out, target)

    return distilled


class _Counter(harness.LiveStorageCounter):
    """The harness's counter, also noting what is live when the backward starts (the saved
    activations, the outputs and the cache the forward returned)."""

    end_of_forward = 0

    def set_phase(self, name: str) -> None:
        if name == "backward":
            self.end_of_forward = self.current
        super().set_phase(name)


def run(job, structure: bool = True, use_cache: bool | None = None) -> dict:
    """Measure ``job``; ``structure=False``: the same model and batch, nothing frozen, no
    teacher (the plain job the structure is compared with); ``use_cache=False``: the
    model's config with the cache off (the share of the KV cache its forward returns)."""
    name, model_name, dtype, batch, seq, frozen, trainable, teacher_name = job
    if not structure:
        frozen, trainable, teacher_name = [], [], None
    harness.patch_transformers()
    harness.emulate_device_capability()
    harness.set_sdpa_sm(80)
    counter = _Counter("cuda")
    started = time.time()
    torch.manual_seed(0)
    with FakeTensorMode(), counter:
        default = torch.get_default_dtype()
        if dtype in ("bf16", "fp16"):
            torch.set_default_dtype(harness.DTYPES[dtype])
        try:
            with torch.device("cuda"):
                script = None
                if model_name.startswith("script:"):
                    model, *script = _script_job(model_name[7:], batch, seq)
                    kind = "script"
                else:
                    model, kind = models.build(model_name, "train", seq)
                teacher = None
                if teacher_name:
                    teacher, _ = models.build(teacher_name, "train", seq)
                    teacher.requires_grad_(False)
                    teacher.eval()
        finally:
            torch.set_default_dtype(default)
        if use_cache is not None and hasattr(model, "config"):
            model.config.use_cache = use_cache
        for path in frozen:
            for module in _modules(model, path):
                module.requires_grad_(False)
        for path in trainable:
            if path.startswith("="):  # a new 2-class layer instead (trainable, as created)
                parent, _, attribute = path[1:].rpartition(".")
                owner = _modules(model, parent)[0]
                width = getattr(owner, attribute).in_features
                new = torch.nn.Linear(width, HEAD_OUTPUTS, device="cuda")
                setattr(owner, attribute, new)
                if hasattr(model, "config"):
                    model.config.vocab_size = HEAD_OUTPUTS  # the loss reads the logits' width
                continue
            for module in _modules(model, path):
                module.requires_grad_(True)
        model.train()
        image = seq if kind == "image" else 224
        make_batch, loss_of = script or (
            models.batch_maker(kind, model, batch, seq, image, "cuda"),
            _loss(kind, teacher),
        )
        harness.train_step(counter, model, make_batch, loss_of, dtype, "cuda")
        trainable_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return dict(
        name=name,
        model=model_name,
        dtype=dtype,
        batch_size=batch,
        seq=seq,
        frozen=frozen,
        trainable=trainable,
        head_outputs=HEAD_OUTPUTS if any(t.startswith("=") for t in trainable) else None,
        teacher=teacher_name,
        trainable_params=trainable_params,
        measured_allocated_bytes=counter.peak,
        end_of_forward_bytes=counter.end_of_forward,
        peak_phase=max(counter.phase_peaks, key=counter.phase_peaks.get),
        phase_peaks=dict(counter.phase_peaks),
        seconds=round(time.time() - started, 1),
    )


def main(argv: list[str]) -> int:
    only = argv[argv.index("--only") + 1] if "--only" in argv else None  # re-measure, merge
    old = {r["name"]: r for r in json.loads(OUT.read_text("utf-8"))["runs"]} if only else {}
    runs = []
    for job in JOBS:
        if only and only not in job[0] and job[0] in old:
            runs.append(old[job[0]])
            continue
        result = run(job)
        result["plain_allocated_bytes"] = run(job, structure=False)["measured_allocated_bytes"]
        if result["head_outputs"] and not job[1].startswith("script:"):
            # the job's parts: without the KV cache a transformers decoder's forward returns
            no_cache = run(job, use_cache=False)
            result["no_cache_allocated_bytes"] = no_cache["measured_allocated_bytes"]
            result["no_cache_end_of_forward_bytes"] = no_cache["end_of_forward_bytes"]
        print(f"{result['name']:48s} {result['measured_allocated_bytes'] / 2**30:8.3f} GiB "
              f"{result['peak_phase']}", flush=True)  # fmt: skip
        runs.append(result)
    import transformers

    OUT.write_text(
        json.dumps(
            {
                "note": "Peak bytes of live tensor storage of one steady-state training step "
                "with frozen parameters or a frozen no_grad teacher, fake tensors on a fake "
                "CUDA device (sm80 rules), AdamW(foreach=True) over model.parameters().",
                "command": "tests/calibration/.venv/bin/python tests/calibration/measure_phases.py",
                "torch_version": torch.__version__.split("+")[0],
                "transformers_version": transformers.__version__,
                "runs": runs,
            },
            indent=1,
        )
        + "\n",
        "utf-8",
    )
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
