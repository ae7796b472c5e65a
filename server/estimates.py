"""The estimator behind a small seam: GPU fit for status bars, ``torchward/estimate``.

The server asks one question — *how much memory does this script need on this GPU?* —
through :class:`EstimateService`. Until :mod:`torchward.estimator` offers an entry point
the answer is an honest ``unavailable`` with a reason, never an invented number. The
seam expects ``torchward.estimator.estimate_source(source, path, gpu)`` returning an
object with ``gpu``, ``peak_bytes``, ``low_bytes``, ``high_bytes``, ``usable_bytes`` and
``verdict`` (``fits`` / ``tight`` / ``does-not-fit`` / ``unknown``), or ``None`` when the
script holds no training run to estimate; :func:`_from_estimator` is the only code that
reads it.

Wire shapes (camelCase, as everything on the wire):

- notification ``torchward/gpuFit`` and the ``torchward/estimate`` reply:
  ``{uri, status, gpu, peak, interval: [low, high], percent, verdict, reason}``, with
  ``status`` one of ``ok`` / ``none`` (nothing to estimate) / ``unavailable`` /
  ``disabled``; byte counts are integers, ``percent`` of the GPU's usable memory.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import attrs

log = logging.getLogger(__name__)

UNAVAILABLE_REASON = "the VRAM estimator is not available in this version of torchward"


@attrs.frozen
class GpuEstimate:
    status: str  # "ok" | "none" | "unavailable" | "disabled"
    gpu: str | None = None
    peak_bytes: int | None = None
    low_bytes: int | None = None
    high_bytes: int | None = None
    usable_bytes: int | None = None
    verdict: str | None = None
    reason: str = ""

    @property
    def percent(self) -> float | None:
        if self.peak_bytes is None or not self.usable_bytes:
            return None
        return round(100.0 * self.peak_bytes / self.usable_bytes, 1)

    def to_wire(self, uri: str) -> dict[str, Any]:
        interval = None
        if self.low_bytes is not None and self.high_bytes is not None:
            interval = [self.low_bytes, self.high_bytes]
        return {
            "uri": uri,
            "status": self.status,
            "gpu": self.gpu,
            "peak": self.peak_bytes,
            "interval": interval,
            "percent": self.percent,
            "verdict": self.verdict,
            "reason": self.reason,
        }


def _from_estimator(result: Any, gpu: str | None) -> GpuEstimate:
    if result is None:
        return GpuEstimate("none", gpu, reason="no training run found to estimate")
    return GpuEstimate(
        "ok",
        getattr(result, "gpu", gpu),
        peak_bytes=getattr(result, "peak_bytes", None),
        low_bytes=getattr(result, "low_bytes", None),
        high_bytes=getattr(result, "high_bytes", None),
        usable_bytes=getattr(result, "usable_bytes", None),
        verdict=getattr(result, "verdict", None),
    )


def _find_entry_point() -> Callable[..., Any] | None:
    try:
        from torchward import estimator
    except Exception:  # a broken estimator must not take the linter down with it
        log.exception("cannot import torchward.estimator")
        return None
    return getattr(estimator, "estimate_source", None)


class EstimateService:
    """Answers GPU-fit questions; ``unavailable`` while there is no estimator."""

    def __init__(self, entry_point: Callable[..., Any] | None = None, *, discover: bool = True) -> None:
        self._entry_point = entry_point
        self._discover = discover and entry_point is None

    @property
    def is_available(self) -> bool:
        if self._discover:
            self._entry_point = _find_entry_point()
            self._discover = False
        return self._entry_point is not None

    def estimate(self, source: str, path: str, gpu: str | None, *, enabled: bool = True) -> GpuEstimate:
        if not enabled:
            return GpuEstimate("disabled", gpu, reason="the estimator is switched off (setting 'estimator')")
        if not self.is_available:
            return GpuEstimate("unavailable", gpu, reason=UNAVAILABLE_REASON)
        try:
            return _from_estimator(self._entry_point(source, path, gpu), gpu)
        except Exception as error:  # degrade to "unavailable", never crash the server
            log.exception("estimator failed on %s", path)
            return GpuEstimate("unavailable", gpu, reason=f"the estimator failed: {error!r}")
