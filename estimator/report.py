"""The estimate as one JSON-able object: the stable shape documented in docs/estimate-json.md.

Required keys (the issue's contract): ``model, params, mode, gpu, usable_bytes,
peak_bytes, low_bytes, high_bytes, allocated_bytes, verdict, terms, config, remedies``.
Added keys (also documented): ``confidence, peak_phase, phases, missing, unknown, notes, gpus,
stacked_remedies, smallest_gpu, smallest_instance, max_batch_size, max_seq_len``.
All sizes are bytes.
"""

from __future__ import annotations

import attrs

from .estimate import Estimate
from .remedies import (
    image_limits,
    max_fitting,
    max_image_size,
    remedies,
    smallest_gpu,
    smallest_instance,
    stacked,
)
from .resolve import max_positions, unknown_fields

__all__ = ["config_json", "estimate_report", "unknown_model_report"]


def config_json(config) -> dict:
    """``config.to_dict()`` with the typed job-structure facts (:mod:`.jobparts`) as plain
    JSON values: ``frozen`` as ``{"frozen": [...], "trainable": [...]}``, ``device_models``
    as a list of ``{"name", "variable", "trained", "source"}``."""
    data = config.to_dict()
    for name in ("frozen", "device_models"):
        if name in data:
            value = data[name]["value"]
            if isinstance(value, tuple):
                value = [attrs.asdict(m) for m in value]
            elif attrs.has(type(value)):
                value = attrs.asdict(value)
            data[name] = dict(data[name], value=value)
    return data


def estimate_report(e: Estimate, *, search: bool = True) -> dict:
    """Everything the CLI prints, as plain values (``search``: remedies and max sizes too)."""
    r = e.resolved
    data = {
        "model": r.model_label,
        "params": int(r.shape.params),
        "mode": r.config.value("mode"),
        "gpu": e.gpu.name if e.gpu else None,
        "usable_bytes": e.usable,
        "peak_bytes": e.peak,
        "low_bytes": e.low,
        "high_bytes": e.high,
        "allocated_bytes": e.allocated,
        "verdict": e.verdict,
        "terms": e.terms,
        "config": config_json(r.config),
        "remedies": [],
        "confidence": e.confidence,
        "peak_phase": e.peak_phase.name,
        "formulas": dict(e.peak_phase.formulas),
        "phases": [{"name": p.name, "allocated_bytes": int(round(p.total))} for p in e.phases],
        "missing": list(r.missing),
        "unknown": unknown_fields(r),
        "notes": list(e.notes),
        "gpus": int(r.config.value("gpus") or 1),
        "stacked_remedies": [],
        "smallest_gpu": None,
        "smallest_instance": None,
        "max_batch_size": None,
        "max_seq_len": None,
        "max_image_size": None,
    }
    if not search or e.gpu is None:
        return data
    if e.verdict != "fits":
        data["remedies"] = [m.to_dict(e) for m in remedies(e)]
        data["stacked_remedies"] = [m.to_dict(e) for m in stacked(e)]
    gpu = smallest_gpu(e)
    data["smallest_gpu"] = gpu.name if gpu else None
    inst = smallest_instance(e)
    data["smallest_instance"] = f"{inst.name} ({inst.count} × {inst.gpu.name})" if inst else None
    if not e.activations_modelled:
        # a term that can dominate is missing: no "fits", no smallest GPU, no max batch
        data["smallest_gpu"] = data["smallest_instance"] = None
        data["remedies"] = data["stacked_remedies"] = []
        return data
    data["max_batch_size"] = max_fitting(e, "batch_size", upper=1 << 16)
    if r.shape.stacks and r.shape.kind != "vision-transformer":
        # never beyond the positions the model has (a 512-position BERT, a 1024-block GPT)
        data["max_seq_len"] = max_fitting(e, "seq_len", upper=max_positions(r) or 1 << 22)
    # the largest image side the model takes: a multiple of its down-sampling, or its own
    # side when position embeddings / a flattened map fix it (a ViT at 224 only)
    data["max_image_size"] = max_image_size(e)
    limits = image_limits(r)
    if limits is not None and limits.fixed is not None and data["max_image_size"] is not None:
        data["notes"].append(f"image size fixed at {limits.fixed}: {limits.why}")
    return data


def unknown_model_report(config, reason: str, notes: list[str] | tuple[str, ...] = ()) -> dict:
    """The answer when the model cannot be sized: what the script says, and ``unknown``.

    Same keys as :func:`estimate_report`; sizes are ``null`` (nothing is invented), the
    verdict is ``"unknown"`` and ``reason`` says what is missing (the model has no default,
    or its name is not in the catalog). ``config`` keeps every value read, with its source,
    so the editor and the user still see the job the script runs.
    """
    model = config.model.value if config.model is not None else None
    return {
        "model": str(model) if model is not None else None,
        "params": None,
        "mode": config.value("mode"),
        "gpu": None,
        "usable_bytes": None,
        "peak_bytes": None,
        "low_bytes": None,
        "high_bytes": None,
        "allocated_bytes": None,
        "verdict": "unknown",
        "terms": {},
        "config": config_json(config),
        "remedies": [],
        "confidence": "low",
        "peak_phase": None,
        "phases": [],
        "missing": [],
        "unknown": [],
        "notes": [f"unknown: {reason}", *notes],
        "gpus": int(config.value("gpus") or 1),
        "stacked_remedies": [],
        "smallest_gpu": None,
        "smallest_instance": None,
        "max_batch_size": None,
        "max_seq_len": None,
        "max_image_size": None,
    }
