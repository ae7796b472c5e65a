"""Counts and sizes as people read them: one spelling for the CLI, the profile command and
the labels the estimator makes (``1.2M`` parameters, ``696.2 MiB``), so that no output
prints a 1.2M-parameter net as ``0.00B``."""

from __future__ import annotations

__all__ = ["bytes_text", "count_text"]

_COUNT_UNITS = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"))
_BYTE_UNITS = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def count_text(value: float) -> str:
    """A parameter count in the unit that shows it: ``1.2M``, ``125M``, ``7.0B`` (two
    significant digits under 10 of the unit, whole units above), ``850`` as is."""
    for size, suffix in _COUNT_UNITS:
        if value >= size:
            scaled = value / size
            return f"{scaled:.1f}{suffix}" if scaled < 9.95 else f"{scaled:.0f}{suffix}"
    return f"{int(value)}"


def bytes_text(value: float | None) -> str:
    """Bytes in the unit that shows them: ``12.34 GiB``, ``696.3 MiB`` under 1 GiB, ``?``
    for a size not known."""
    if value is None:
        return "?"
    for size, unit in _BYTE_UNITS:
        if abs(value) >= size:
            return f"{value / size:.2f} {unit}" if unit == "GiB" else f"{value / size:.1f} {unit}"
    return f"{int(value)} B"
