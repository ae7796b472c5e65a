"""Argument types shared by the subcommands' parsers."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """A whole number of at least 1 (``--jobs``, ``--batch-size``...), or a usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
