"""A measured profile in the shape of ``torchward estimate --format json`` (no torch here).

Same keys, same meaning (docs/estimate-json.md), so every reader of an estimate — the
terminal view, the editor's hover and status bar, CI scripts — reads a measurement too.
What differs:

- ``allocated_bytes`` is the measured peak of live tensor storage; ``terms`` are what was
  live at that moment (weights, gradients, optimizer state, activations, KV cache,
  optimizer temporaries), plus the CUDA context and fragmentation of the GPU, which a
  fake device cannot measure and which come from the estimator's constants;
- the interval is narrow: the count is exact at the level of aten outputs (checked to
  the byte against real CPU execution); real GPUs add kernel workspaces (cuBLAS /
  cuDNN), 1-3% on the reference runs, so the high end allows :data:`MEASURED_ERROR`;
- ``source`` is ``"measured"`` and ``measured`` says how (device, seconds, torch);
  ``confidence`` is ``measured``.
"""

from __future__ import annotations

from typing import Any

from ..estimator.costmodel import TERMS
from ..estimator.estimate import FRAGMENTATION
from ..estimator.units import size
from .request import ProfileResult

__all__ = ["MEASURED_ERROR", "apply_measurement", "measured_report"]

MEASURED_ERROR = {"low": 0.0, "high": 0.05}


def _verdict(peak: int, high: int, usable: int | None) -> str | None:
    if usable is None:
        return None
    if peak > usable:
        return "oom"
    return "tight" if high > usable else "fits"


def measured_report(
    result: ProfileResult,
    gpu: Any = None,
    base: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    assumed: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The estimate-shaped report of ``result`` on ``gpu`` (an estimator ``Gpu`` or ``None``).

    ``base``: the static estimate's report, when there is one (its config, notes and
    world size are kept; its remedies, which were computed for the estimate, are not).
    """
    allocated = result.allocated_bytes
    context = int(gpu.context_bytes) if gpu is not None else 0
    usable = int(gpu.usable_bytes) if gpu is not None else None
    fragmentation = int(allocated * FRAGMENTATION["nominal"])
    peak = allocated + fragmentation + context
    low = int(allocated * (1 - MEASURED_ERROR["low"]) * (1 + FRAGMENTATION["low"])) + context
    high = int(allocated * (1 + MEASURED_ERROR["high"]) * (1 + FRAGMENTATION["high"])) + context
    terms = {name: int(result.terms.get(name, 0)) for name in TERMS}
    terms["cuda_context"] = context
    terms["fragmentation"] = fragmentation
    data: dict[str, Any] = dict(base or {})
    notes = [
        f"measured by torchward profile on {result.device} in {result.seconds:.1f} s "
        f"(torch {result.torch_version}): one {result.job.mode} step of the model's own code",
        *result.notes,
    ]
    if base and base.get("allocated_bytes"):
        delta = base["allocated_bytes"] / max(1, allocated) - 1
        notes.append(
            f"the static estimate was {size(base['allocated_bytes'])} of live "
            f"tensors ({delta:+.0%} off the measurement)"
        )
    notes += list((base or {}).get("notes", []))
    data.update(
        {
            "model": result.model,
            "params": result.params,
            "mode": result.job.mode,
            "gpu": gpu.name if gpu is not None else None,
            "usable_bytes": usable,
            "peak_bytes": peak,
            "low_bytes": low,
            "high_bytes": high,
            "allocated_bytes": allocated,
            "verdict": _verdict(peak, high, usable),
            "terms": terms,
            "config": (base or {}).get("config") or dict(config or {}),
            "remedies": [],
            "confidence": "measured",
            "peak_phase": result.peak_phase,
            "phases": [{"name": n, "allocated_bytes": b} for n, b in result.phases],
            "missing": list(assumed) if not base else list(base.get("missing", [])),
            "notes": notes,
            "gpus": int((base or {}).get("gpus", 1)),
            "stacked_remedies": [],
            "smallest_gpu": None,
            "smallest_instance": None,
            "max_batch_size": None,
            "max_seq_len": None,
            "max_image_size": None,
            "source": "measured",
            "measured": {
                "device": result.device,
                "seconds": result.seconds,
                "torch_version": result.torch_version,
                "job": result.job.to_dict(),
                "sdpa_kernels": dict(result.sdpa_kernels),
                "weight_bytes": result.weight_bytes,
            },
        }
    )
    if gpu is not None:
        data["smallest_gpu"] = _smallest_gpu(allocated + fragmentation)
    return data


def _smallest_gpu(on_card: int) -> str | None:
    """The GPU with the least memory that holds the measured step and its own context."""
    from torchward.estimator.hardware import all_gpus

    fitting = [g for g in all_gpus() if g.usable_bytes >= on_card + g.context_bytes]
    if not fitting:
        return None
    return min(fitting, key=lambda g: (g.usable_bytes, g.name)).name


def apply_measurement(
    estimate_data: dict[str, Any], result: ProfileResult, gpu: Any = None
) -> dict[str, Any]:
    """``torchward estimate``'s report replaced by the cached measurement of the same job."""
    return measured_report(result, gpu, base=estimate_data)
