"""The estimate as one JSON-able object: the stable shape documented in docs/estimate-json.md.

Required keys (the issue's contract): ``model, params, mode, gpu, usable_bytes,
peak_bytes, low_bytes, high_bytes, allocated_bytes, verdict, terms, config, remedies``.
Added keys (also documented): ``confidence, peak_phase, phases, missing, notes, gpus,
stacked_remedies, smallest_gpu, smallest_instance, max_batch_size, max_seq_len``.
All sizes are bytes.
"""

from __future__ import annotations

from .estimate import Estimate
from .remedies import max_fitting, remedies, smallest_gpu, smallest_instance, stacked

__all__ = ["estimate_report"]


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
        "config": r.config.to_dict(),
        "remedies": [],
        "confidence": e.confidence,
        "peak_phase": e.peak_phase.name,
        "phases": [{"name": p.name, "allocated_bytes": int(round(p.total))} for p in e.phases],
        "missing": list(r.missing),
        "notes": list(e.notes),
        "gpus": int(r.config.value("gpus") or 1),
        "stacked_remedies": [],
        "smallest_gpu": None,
        "smallest_instance": None,
        "max_batch_size": None,
        "max_seq_len": None,
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
    if r.shape.kind != "custom":  # activations not modelled: the batch changes nothing here
        data["max_batch_size"] = max_fitting(e, "batch_size", upper=1 << 16)
    if r.shape.stacks and r.shape.kind != "vision-transformer":
        data["max_seq_len"] = max_fitting(e, "seq_len", upper=1 << 22)
    return data
