"""Path conditions: under what launch a statement runs, and what that does to confidence.

The dataflow joins every path (a rule must see what *may* happen); the estimator needs the
path a job *does* take on a default launch (``python SCRIPT``, no flags, one GPU). A
:class:`PathCondition` names that relation for a statement, from its enclosing ``if``
gates decided by the defaults, its grad mode and the function it is in
(:mod:`torchward.analysis.job.runconfig_paths` computes it for the script reader, and the
dataflow in launch mode, :mod:`torchward.analysis.facts.launch`, for the engine's facts):

- ``default``: every enclosing gate is decided by the defaults and holds;
- ``unsure``: some gate cannot be decided statically;
- ``validation``: grad is off (``torch.no_grad()`` / ``inference_mode`` — the engine's
  :func:`~torchward.analysis.facts.catalog.is_grad_disabling`) or the function evaluates,
  samples or generates: the training job is elsewhere;
- ``multi-gpu``: only under a distributed launch (``if ddp:``);
- ``off``: the branch does not run by default.

A value read there is believed at most :attr:`PathCondition.cap`: the one rule by which
a path lowers the confidence of what it holds.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from ..finding import Confidence

__all__ = ["PathCondition"]


class PathCondition(str, enum.Enum):
    """From best to worst: the order :meth:`worst` and :meth:`best` compare by."""

    DEFAULT = "default"
    UNSURE = "unsure"
    VALIDATION = "validation"
    MULTI_GPU = "multi-gpu"
    OFF = "off"

    @property
    def runs(self) -> bool:
        """Whether the statement runs on a default single-GPU launch (perhaps evaluating)."""
        return self not in (PathCondition.OFF, PathCondition.MULTI_GPU)

    @property
    def cap(self) -> Confidence:
        """The most a value read under this condition can be believed."""
        if self is PathCondition.DEFAULT:
            return Confidence.HIGH
        return Confidence.MEDIUM if self is PathCondition.UNSURE else Confidence.LOW

    @property
    def confidence_cap(self) -> str:
        """:attr:`cap` as the run configuration's fields spell confidence."""
        return self.cap.value

    def worst(self, other: PathCondition) -> PathCondition:
        """Both conditions must hold (a gate inside a gate)."""
        if self is other:
            return self  # the common case: launch mode asks per folded operand
        return self if _RANK[self] >= _RANK[other] else other

    @staticmethod
    def best(conditions: Iterable[PathCondition]) -> PathCondition:
        """Any one must hold (the call sites of a function); none: the default."""
        return min(conditions, key=_RANK.__getitem__, default=PathCondition.DEFAULT)


_RANK = {condition: rank for rank, condition in enumerate(PathCondition)}
