"""The planner's extra facts about a GPU: its peak dense TFLOPS and its link to its peers.

Both are additive fields of ``data/gpus.json`` (``peak_dense_tflops``, ``gpu_link``), each
with its source next to it; :mod:`..hardware` keeps the memory facts and ignores these.
A GPU without a figure gets no step time (never a guessed one).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from types import MappingProxyType

__all__ = ["PCIE_FALLBACK_GB_S", "link_gb_per_s", "link_kind", "peak_tflops"]

PCIE_FALLBACK_GB_S = 15.75
"""PCIe 3.0 x16, one direction: the slowest link a data-centre GPU has, used when a card's
link is not in the data (and for CPU-offload copies)."""


@functools.cache
def _extras() -> MappingProxyType:
    text = (
        resources.files("torchward.estimator")
        .joinpath("data")
        .joinpath("gpus.json")
        .read_text("utf-8")
    )
    found = {}
    for record in json.loads(text)["gpus"]:
        found[record["key"]] = (
            MappingProxyType(dict(record.get("peak_dense_tflops", {}))),
            (record.get("gpu_link") or {}).get("gb_per_s"),
            (record.get("gpu_link") or {}).get("kind"),
        )
    return MappingProxyType(found)


def peak_tflops(gpu_key: str) -> MappingProxyType | None:
    """Precision (``bf16``, ``fp16``, ``fp32``) → dense peak TFLOPS; ``None`` if not known."""
    entry = _extras().get(gpu_key)
    return entry[0] if entry and entry[0] else None


def link_gb_per_s(gpu_key: str) -> float | None:
    """GB/s one GPU sends to its peers in one direction (NVLink or PCIe x16)."""
    entry = _extras().get(gpu_key)
    return float(entry[1]) if entry and entry[1] else None


def link_kind(gpu_key: str) -> str | None:
    """``nvlink2`` … ``nvlink5`` when the GPUs of one node talk over NVLink, else ``None``
    (PCIe, or not known): tensor parallelism is planned over NVLink only."""
    entry = _extras().get(gpu_key)
    kind = entry[2] if entry else None
    return kind if kind and str(kind).startswith("nvlink") else None
