"""Forgiving name matching shared by the GPU, instance and model catalogs.

Users type hardware and model names the way they remember them: ``A100 80GB``,
``a100-80gb``, ``a100_80g``, ``NVIDIA GeForce RTX 4090``, ``Llama 2 7B``,
``meta-llama/Llama-2-7b-hf``. Rather than listing every spelling, each catalog registers
a few aliases and both sides go through one normalisation: lower case, vendor words
dropped, separators removed, ``80gb`` written ``80g``. Two different entries must never
normalise to the same key; the catalogs' tests check that.

An unknown name is an error that carries the closest known names (``difflib``), so the
CLI can say "did you mean ...?" instead of guessing.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

__all__ = [
    "AmbiguousNameError",
    "UnknownNameError",
    "normalize",
    "suggestions",
]

# Words that carry no identity in a hardware name: "NVIDIA GeForce RTX 4090" and
# "RTX 4090" are the same card. "rtx" itself is kept (RTX A6000 vs A6000 is fine, but
# the aliases list both where people drop it).
_NOISE_WORDS = ("nvidia", "geforce", "tesla", "amd", "instinct", "intel", "habana")
_GB_SUFFIX = re.compile(r"(?<=\d)gb\b")
_SEPARATORS = re.compile(r"[^a-z0-9.]")


def normalize(name: str) -> str:
    """Return the lookup key of ``name``: what two spellings of one thing share.

    >>> normalize("NVIDIA A100 80GB") == normalize("a100_80g") == "a10080g"
    True
    """
    text = name.strip().lower()
    for word in _NOISE_WORDS:
        text = re.sub(rf"\b{word}\b", " ", text)
    text = _GB_SUFFIX.sub("g", text)
    return _SEPARATORS.sub("", text)


def suggestions(query: str, keys: Mapping[str, str] | Iterable[str], limit: int = 5) -> list[str]:
    """Names close to ``query``; ``keys`` maps normalised key → display name.

    The cutoff (0.6, difflib's default) is loose on purpose: a suggestion list that
    is a little long is more useful than an empty one.
    """
    mapping = keys if isinstance(keys, Mapping) else {normalize(k): k for k in keys}
    close = difflib.get_close_matches(normalize(query), list(mapping), n=limit * 3, cutoff=0.6)
    seen: list[str] = []
    for key in close:
        display = mapping[key]
        if display not in seen:
            seen.append(display)
    return seen[:limit]


class UnknownNameError(LookupError):
    """A name that no catalog entry answers to; ``candidates`` are the closest ones."""

    def __init__(self, kind: str, name: str, candidates: list[str]) -> None:
        self.kind = kind
        self.name = name
        self.candidates = candidates
        hint = f"; did you mean {', '.join(candidates)}?" if candidates else ""
        super().__init__(f"unknown {kind} {name!r}{hint}")


class AmbiguousNameError(LookupError):
    """A name that several entries answer to equally well; ``candidates`` lists them."""

    def __init__(self, kind: str, name: str, candidates: list[str]) -> None:
        self.kind = kind
        self.name = name
        self.candidates = candidates
        super().__init__(f"ambiguous {kind} {name!r}: one of {', '.join(candidates)}")
