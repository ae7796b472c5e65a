"""How numbers read in the editor: memory sizes, percentages, the GPU a fit is for.

One module, so the status bar, the tooltip, the code lens, the inlay hints and the hover
never disagree: the server formats, and the ``torchward/gpuFit`` notification carries
the formatted strings (``display``) for the status bar to show as they are. Before,
the lens printed Python's ``{:.0f}`` (round half to even: "3256%") and the status bar
JavaScript's ``Math.round`` (half up: "3257%"); a 244 MiB peak read "0.2 GiB" in the
lens and "244 MiB" in the status bar; a small model got rows of "0.0 GiB".

- :func:`size` and :func:`percent` are the estimator's (``torchward.estimator.units``),
  so the CLI prints the same numbers as the editor;
- :func:`placement`: a chosen *instance* stays an instance — "8× H100 80GB
  (p5.48xlarge) · 1 of 8 used" — and a single GPU is its name.
"""

from __future__ import annotations

__all__ = ["gpu_name", "percent", "placement", "size"]


def size(value: float | None) -> str:
    """The estimator's one rule for sizes (:func:`torchward.estimator.units.size`), imported
    on first use so that starting the server does not load the estimator."""
    from ..estimator.units import size as estimator_size

    return estimator_size(value)


def percent(value: float | None) -> str:
    """The estimator's one rounding rule for percentages, imported on first use."""
    from ..estimator.units import percent as estimator_percent

    return estimator_percent(value)


def gpu_name(name: str | None) -> str:
    """The estimator's one way of naming a GPU to people, imported on first use."""
    from ..estimator.units import gpu_name as estimator_gpu_name

    return estimator_gpu_name(name)


def placement(gpu: str | None, count: int = 1, instance: str | None = None, used: int = 1) -> str:
    """The hardware a fit is for: ``8× H100 80GB (p5.48xlarge) · 1 of 8 used`` for an
    instance (or ``4× A100 80GB`` chosen by count), the GPU's name for one GPU — in TW010's
    words (``projected_oom.Placement.describe``), so the rule and the editor say it alike."""
    from ..analysis.rules.projected_oom import Placement

    return Placement(gpu_count=count, instance=instance, gpus_used=used).describe(gpu_name(gpu))
