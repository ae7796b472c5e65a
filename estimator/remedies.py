"""What would make the job fit: single changes ranked by saving, stacked greedily, and the
hardware that fits as is; plus the inverse question, the largest batch / sequence that fits.

Each remedy is a change to the run configuration (never to the estimate), so its saving is
what the same cost model says after the change — there is no separate table of savings to
drift from the arithmetic. Its ``cost`` says what the change gives up: speed, quality or
complexity, in the words users weigh them.
"""

from __future__ import annotations

import attrs

from .cnn import input_resolution
from .estimate import Estimate, estimate_resolved
from .hardware import Gpu, all_gpus, all_instances
from .resolve import Resolved

__all__ = [
    "ImageLimits",
    "Remedy",
    "image_limits",
    "max_fitting",
    "max_image_size",
    "remedies",
    "smallest_gpu",
    "smallest_instance",
    "stacked",
]


@attrs.frozen
class Remedy:
    title: str
    cost: str
    estimate: Estimate

    def saving(self, base: Estimate) -> int:
        return base.peak - self.estimate.peak

    def to_dict(self, base: Estimate) -> dict:
        return {
            "title": self.title,
            "saving_bytes": self.saving(base),
            "peak_bytes": self.estimate.peak,
            "verdict": self.estimate.verdict,
            "cost": self.cost,
        }


def _v(r: Resolved, name: str):
    return r.config.value(name)


def _candidates(r: Resolved) -> list[tuple[str, str, dict]]:
    """(title, cost, field changes) for every change that applies to ``r``."""
    out: list[tuple[str, str, dict]] = []
    train = _v(r, "mode") == "train"
    dtype = _v(r, "dtype")
    batch = int(_v(r, "batch_size") or 1)
    if dtype == "fp32":
        out.append(
            (
                "train with bf16 autocast (amp-bf16)" if train else "run in bf16",
                "speed: faster on tensor cores; quality: usually neutral, needs bf16 hardware",
                {"dtype": "amp-bf16" if train else "bf16"},
            )
        )
    if train and dtype in ("amp-bf16", "amp-fp16"):
        out.append(
            (
                "pure bf16 weights and optimizer state",
                "quality: bf16 weight updates lose "
                "precision on long runs (use Kahan summation or keep fp32 master weights)",
                {"dtype": "bf16"},
            )
        )
    if train and r.shape.stacks and not _v(r, "checkpointing"):
        out.append(
            (
                "gradient checkpointing",
                "speed: ~30% slower (the forward runs twice)",
                {"checkpointing": True},
            )
        )
    if _v(r, "attention") == "eager" and not r.shape.eager_only:
        out.append(
            (
                "SDPA / flash attention",
                "none for most models; needs a kernel-supported dtype",
                {"attention": "sdpa"},
            )
        )
    if train and batch > 1:
        half = max(1, batch // 2)
        accum = int(_v(r, "accumulation") or 1) * (batch // half)
        out.append(
            (
                f"micro-batch {half} with gradient accumulation {accum}",
                "speed: more, smaller steps; quality: same effective batch",
                {"batch_size": half, "accumulation": accum},
            )
        )
    opt = _v(r, "optimizer")
    if train and opt in ("adamw", "adam", "adamw-fused", "lion"):
        out.append(
            (
                "8-bit AdamW (bitsandbytes)",
                "quality: usually neutral; adds a dependency",
                {"optimizer": "adamw-8bit"},
            )
        )
    if train and opt in ("adamw", "adam"):
        out.append(
            (
                "fused AdamW (fused=True)",
                "none: removes the foreach temporaries",
                {"optimizer": "adamw-fused"},
            )
        )
    # LoRA adapts trained weights: no remedy for a model trained from scratch
    if train and not _v(r, "lora_rank") and r.shape.stacks and _v(r, "pretrained") is not False:
        out.append(
            (
                "LoRA rank 16 on all linear layers",
                "quality: adapts fewer parameters than full fine-tuning",
                {"lora_rank": 16, "lora_targets": "all-linear"},
            )
        )
        if not _v(r, "quantize"):
            out.append(
                (
                    "QLoRA: 4-bit base weights + LoRA rank 16",
                    "quality: small loss from 4-bit weights; speed: slower matmuls",
                    {"lora_rank": 16, "lora_targets": "all-linear", "quantize": "4bit"},
                )
            )
    world = int(_v(r, "gpus") or 1)
    sharding = _v(r, "sharding") or "none"
    if train and world > 1 and sharding not in ("zero-3", "fsdp"):
        out.append(
            (
                f"ZeRO-3 / FSDP full sharding over {world} GPUs",
                "speed: more communication per step",
                {"sharding": "zero-3"},
            )
        )
    if train and _v(r, "offload") in (None, "none") and sharding.startswith("zero"):
        out.append(
            (
                "ZeRO offload of optimizer state to CPU",
                "speed: CPU optimizer step, often 2-5× slower",
                {"offload": "optimizer"},
            )
        )
    if train and world < 8:
        more = max(2, world * 2)
        out.append(
            (
                f"{more} GPUs with ZeRO-3 / FSDP",
                "money: more GPUs; speed: communication",
                {"gpus": more, "sharding": "zero-3"},
            )
        )
    if not train and not _v(r, "quantize") and r.shape.stacks:
        out.append(
            (
                "8-bit weights (bitsandbytes LLM.int8)",
                "speed: slower matmuls; quality: near-lossless",
                {"quantize": "8bit"},
            )
        )
    if not train and batch > 1:
        out.append(
            (
                f"batch {max(1, batch // 2)}",
                "throughput: fewer sequences at once",
                {"batch_size": max(1, batch // 2)},
            )
        )
    return out


def _apply(r: Resolved, changes: dict) -> Resolved:
    """``r`` with ``changes`` set; a changed field is no longer an assumption."""
    config = r.config.merged(r.config.__class__().with_values("remedy", **changes))
    return attrs.evolve(r, config=config, missing=tuple(m for m in r.missing if m not in changes))


def remedies(base: Estimate) -> list[Remedy]:
    """Every applicable single change that lowers the peak, largest saving first."""
    found = []
    for title, cost, changes in _candidates(base.resolved):
        after = estimate_resolved(_apply(base.resolved, changes), base.gpu)
        if after.peak < base.peak:
            found.append(Remedy(title, cost, after))
    return sorted(found, key=lambda m: (-(base.peak - m.estimate.peak), m.title))


def stacked(base: Estimate, limit: int = 5) -> list[Remedy]:
    """Changes applied one after another, largest saving first, until the job fits."""
    chain: list[Remedy] = []
    current = base
    while current.verdict in ("oom", "tight") and len(chain) < limit:
        options = remedies(current)
        if not options:
            break
        best = options[0]
        chain.append(best)
        current = best.estimate
    return chain


def smallest_gpu(base: Estimate) -> Gpu | None:
    """The GPU with the least usable memory on which this job fits unchanged."""
    for gpu in sorted(all_gpus(), key=lambda g: (g.usable_bytes, g.key)):
        if estimate_resolved(base.resolved, gpu).verdict == "fits":
            return gpu
    return None


def smallest_instance(base: Estimate):
    """The cloud instance with the least total GPU memory whose GPUs each fit the job."""
    fitting = {}
    for inst in all_instances():
        key = inst.gpu.key
        if key not in fitting:
            fitting[key] = estimate_resolved(base.resolved, inst.gpu).verdict == "fits"
    options = [i for i in all_instances() if fitting[i.gpu.key]]
    return min(options, key=lambda i: (i.gpu.usable_bytes * i.count, i.name), default=None)


@attrs.frozen
class ImageLimits:
    """What input resolutions a vision model takes."""

    step: int = 1
    """The side must be a multiple of this (the network's total down-sampling)."""
    fixed: int | None = None
    """Only this side works (position embeddings sized to it, or a flattened map)."""
    why: str = ""


def image_limits(r: Resolved) -> ImageLimits | None:
    """The input resolutions ``r``'s model takes (``None``: not an image model)."""
    shape = r.shape
    if shape.kind in ("vision-transformer", "clip", "diffusion-transformer"):
        side = int(shape.image_size or 224)
        return ImageLimits(
            shape.patch_size or 1,
            side,
            f"{r.model_label}'s position embeddings are sized for {side}×{side} "
            f"({side // (shape.patch_size or 1)}² patches)",
        )
    if shape.kind == "diffusion-unet" and shape.cnn is not None:
        levels = len(shape.cnn.config.get("block_out_channels", ())) or 1
        return ImageLimits(2 ** (levels - 1), None, "the UNet halves the side at each level")
    if shape.kind == "cnn" and shape.cnn is not None:
        step, fixed = input_resolution(shape.cnn)
        side = r.config.value("image_size")
        if fixed and side:
            return ImageLimits(
                step, int(side), f"{r.model_label} flattens a map whose size the input fixes"
            )
        return ImageLimits(step, None, f"{r.model_label} down-samples the side {step}×")
    return None


def max_image_size(base: Estimate, upper: int = 1 << 13) -> int | None:
    """The largest image side that fits the GPU and that the model takes (a multiple of its
    down-sampling; only its own side when the side is fixed)."""
    limits = image_limits(base.resolved)
    if base.gpu is None or limits is None or base.resolved.config.image_size is None:
        return None
    if limits.fixed is not None:
        r = _apply(base.resolved, {"image_size": limits.fixed})
        return limits.fixed if _fits(r, base.gpu) else 0
    return max_fitting(base, "image_size", upper=upper // limits.step, step=limits.step)


def _fits(r: Resolved, gpu: Gpu) -> bool:
    return estimate_resolved(r, gpu).peak <= gpu.usable_bytes


def max_fitting(base: Estimate, field: str, upper: int = 1 << 20, step: int = 1) -> int | None:
    """The largest value of ``field`` (batch_size, seq_len, image_size) whose nominal peak
    fits the GPU; with ``step``, the largest multiple of it (``upper`` counts steps)."""
    if base.gpu is None:
        return None
    gpu = base.gpu

    def fits(value: int) -> bool:
        return _fits(_apply(base.resolved, {field: value * step}), gpu)

    if not fits(1):
        return 0
    low, high = 1, 2
    while high <= upper and fits(high):
        low, high = high, high * 2
    if high > upper:  # the model's own limit (max positions) or the search bound
        if fits(upper):
            return upper
        high = upper
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low * step
