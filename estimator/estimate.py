"""One estimate: the peak phase, the interval around it, and the verdict for a GPU.

``allocated`` is the peak of live tensor storage (what ``torch.cuda.max_memory_allocated``
reports); ``peak`` adds the caching allocator's fragmentation and the CUDA context, i.e.
what occupies the card. The interval:

- the model's own error band on ``allocated``: −5% / +8% (the allowance the issue sets
  for under- and over-estimates; across the 52 calibration fixtures the errors lie in
  −4.9% … +5.5% before kernel workspaces — docs/estimator-accuracy.md);
- fragmentation 10.5% nominal, 6.2%–12.5% across the real-model T4 runs
  (``shared/calibration/t4_allocator_constants.json``);
- every *assumed* input is re-evaluated at its optimistic and pessimistic alternative
  (:data:`.resolve.ALTERNATIVES`): the interval widens by what we do not know;
- a structure borrowed from another checkpoint (``--params`` only) widens by ±20%;
- a workspace ``nn.Module`` with layers that could not be sized widens the high end by
  50% (:data:`.resolve.UNSIZED_LAYERS_SPREAD`).

Verdict against the GPU's usable memory: ``oom`` when the nominal peak exceeds it,
``tight`` when only the high end does, ``fits`` otherwise. With assumed inputs the
verdict is over the interval: ``oom`` only when its low end exceeds the usable memory
too, ``tight`` (may not fit) when the interval straddles it. Confidence is ``low`` when a
critical input (batch, sequence, precision) was assumed, the structure is borrowed, or
the activations of this kind of model are not modelled; TW010 stays silent then.
"""

from __future__ import annotations

import attrs

from .costmodel import TERMS, Phase
from .hardware import Gpu
from .jobphases import freezing_not_interpreted, phases, structure_notes
from .resolve import ALTERNATIVES, Resolved, is_critical, resolve
from .runconfig import Field, RunConfig

__all__ = ["FRAGMENTATION", "Estimate", "estimate", "estimate_resolved"]

# shared/calibration/t4_allocator_constants.json: adopted 0.105 from six real-model runs
# (range 0.062-0.125); synthetic stacks fragment less (0.024-0.083) and are not used.
FRAGMENTATION = {"nominal": 0.105, "low": 0.062, "high": 0.125}
MODEL_ERROR = {"low": 0.05, "high": 0.08}
PROXY_ERROR = 0.20


@attrs.frozen
class Estimate:
    resolved: Resolved
    gpu: Gpu | None
    phases: tuple[Phase, ...]
    peak_phase: Phase
    allocated: int
    low: int
    high: int
    context: int
    fragmentation: int
    confidence: str
    notes: tuple[str, ...] = ()
    activations_modelled: bool = True
    """False when a term that can dominate (the activations) is not modelled: the peak is
    then a lower bound (weights, gradients, optimizer state), so there is no "fits"."""

    @property
    def peak(self) -> int:
        return self.allocated + self.fragmentation + self.context

    @property
    def usable(self) -> int | None:
        return self.gpu.usable_bytes if self.gpu else None

    @property
    def verdict(self) -> str | None:
        if self.gpu is None:
            return None
        usable = self.gpu.usable_bytes
        if self.peak > usable and not (self.resolved.missing and self.low <= usable):
            return "oom"  # even the lower bound does not fit
        if not self.activations_modelled:
            return "unknown"
        return "tight" if self.high > usable else "fits"

    @property
    def terms(self) -> dict[str, int]:
        parts = {t: int(round(self.peak_phase.parts[t])) for t in TERMS}
        parts["cuda_context"] = self.context
        parts["fragmentation"] = self.fragmentation
        return parts


def _peak(r: Resolved, gpu: Gpu | None) -> tuple[list[Phase], Phase]:
    found = phases(r, gpu)
    return found, max(found, key=lambda p: p.total)


def _alternative(r: Resolved, side: int) -> Resolved:
    """``r`` with every assumed input moved to its optimistic (0) or pessimistic (1) end."""
    changes = {}
    for name in r.missing:
        if name in ALTERNATIVES:
            value = r.config.value(name)
            changes[name] = Field(ALTERNATIVES[name][side](value), "assumed", "low")
    return attrs.evolve(r, config=attrs.evolve(r.config, **changes)) if changes else r


def estimate_resolved(r: Resolved, gpu: Gpu | None) -> Estimate:
    all_phases, peak = _peak(r, gpu)
    allocated = int(round(peak.total))
    low_alloc = _peak(_alternative(r, 0), gpu)[1].total if r.missing else allocated
    high_alloc = _peak(_alternative(r, 1), gpu)[1].total if r.missing else allocated
    low_alloc, high_alloc = min(low_alloc, allocated), max(high_alloc, allocated)
    spread = PROXY_ERROR if r.proxy else 0.0
    low_alloc *= 1 - MODEL_ERROR["low"] - spread
    high_alloc *= 1 + MODEL_ERROR["high"] + spread + r.widen
    context = gpu.context_bytes if gpu else 0
    notes = list(r.notes)
    modelled = bool(r.shape.stacks) or (
        r.shape.cnn is not None and r.shape.kind == "cnn" and r.arch.model_type != "unknown"
    )
    if not r.shape.stacks and r.shape.kind != "cnn":
        modelled = False
        label = f"`{r.model_label}`" if r.shape.kind == "custom" else f"{r.shape.kind} models"
        notes.append(
            f"unknown: activations of {label} are not modelled; the estimate is a lower bound "
            "(weights, gradients and optimizer state), so there is no fit verdict, smallest "
            "GPU or largest batch"
        )
    structure, unknowns = structure_notes(r)  # frozen parameters, other models on the device
    notes += structure + unknowns
    modelled = modelled and not unknowns
    confidence = "high"
    if any(f.confidence != "high" for _, f in r.config.fields() if f.source != "assumed"):
        confidence = "medium"
    if r.missing or r.proxy:
        confidence = "medium"
    if any(is_critical(m) for m in r.missing) or r.proxy or not modelled:
        confidence = "low"
    if freezing_not_interpreted(r):  # every parameter counted trainable: an upper bound
        confidence = "low"
    return Estimate(
        resolved=r,
        gpu=gpu,
        phases=tuple(all_phases),
        peak_phase=peak,
        allocated=allocated,
        low=int(low_alloc * (1 + FRAGMENTATION["low"])) + context,
        high=int(high_alloc * (1 + FRAGMENTATION["high"])) + context,
        context=context,
        fragmentation=int(allocated * FRAGMENTATION["nominal"]),
        confidence=confidence,
        notes=tuple(notes),
        activations_modelled=modelled,
    )


def estimate(config: RunConfig, gpu: Gpu | None = None, models: tuple = ()) -> Estimate:
    """Estimate ``config`` on ``gpu`` (``None``: no verdict). Raises ``LookupError`` for no model.

    ``models``: the user's architectures (``EstimatorSettings.models``), found before the catalog.
    """
    return estimate_resolved(resolve(config, models), gpu)
