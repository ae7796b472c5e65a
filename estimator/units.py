"""Counts and sizes as people read them: one spelling for the CLI, the profile command and
the labels the estimator makes (``1.2M`` parameters, ``696 MiB``), so that no output
prints a 1.2M-parameter net as ``0.00B``."""

from __future__ import annotations

import math
import re

__all__ = ["count_text", "gpu_name", "percent", "size"]

_COUNT_UNITS = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"))
MIB = 1 << 20
GIB = 1 << 30


def count_text(value: float) -> str:
    """A parameter count in the unit that shows it: ``1.2M``, ``125M``, ``7.0B`` (two
    significant digits under 10 of the unit, whole units above), ``850`` as is."""
    for size, suffix in _COUNT_UNITS:
        if value >= size:
            scaled = value / size
            return f"{scaled:.1f}{suffix}" if scaled < 9.95 else f"{scaled:.0f}{suffix}"
    return f"{int(value)}"


def _half_up(value: float, digits: int = 0) -> float:
    scale = 10**digits
    return math.floor(value * scale + 0.5) / scale


def size(value: float | None) -> str:
    """Bytes in the unit that shows them, rounded half up: ``12.3 GiB`` (no decimal from
    100 GiB), ``244 MiB`` under 1 GiB, ``< 1 MiB`` for a few bytes (never ``0.0 GiB`` for
    something that is there), ``?`` for a size not known. The CLI, the profile report, the
    runtime guard and every editor surface print sizes through this one rule."""
    if value is None:
        return "?"
    if value >= GIB:
        gib = value / GIB
        return f"{_half_up(gib):.0f} GiB" if gib >= 100 else f"{_half_up(gib, 1):.1f} GiB"
    if value >= MIB:
        mib = _half_up(value / MIB)
        return "1.0 GiB" if mib >= 1024 else f"{mib:.0f} MiB"
    return "< 1 MiB" if value > 0 else "0 MiB"


def percent(value: float | None) -> str:
    """``3257%``: half up, no decimals (Python's ``{:.0f}`` rounds half to even and
    JavaScript's ``Math.round`` half up, which once made the lens and the status bar
    disagree); ``?%`` when unknown."""
    return "?%" if value is None else f"{_half_up(value):.0f}%"


_VENDOR = re.compile(r"^(?:NVIDIA|AMD|Tesla)\s+", re.IGNORECASE)


def gpu_name(name: str | None) -> str:
    """A GPU as torchward names it to people: ``NVIDIA A100 80GB SXM4`` → ``A100 80GB
    SXM4``. TW010's message and every editor surface print the GPU through this one rule,
    so the diagnostic and the status bar name the same card the same way."""
    return _VENDOR.sub("", name) if name else "no GPU"
