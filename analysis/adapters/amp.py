"""Automatic mixed precision: ``torch.amp`` (and the older ``torch.cuda.amp`` spelling).

``autocast`` changes dtypes, not the training structure: it has no event. A
``GradScaler`` does: ``scaler.scale(loss)`` hands back the loss multiplied (not divided:
it scales nothing for accumulation), ``scaler.unscale_(optimizer)`` divides the
gradients back before clipping, and ``scaler.step(optimizer)`` is the optimizer step —
skipped when gradients overflowed. The scaler events are what the grad-scaler rule
checks the order of; the step is also a ``STEP`` on the optimizer passed, so the rules
about zeroing and accumulation see the update. ``GradScaler`` from ``torch.amp``,
``torch.cuda.amp``, ``torch.cpu.amp`` and ``torch`` is one constructor (``names.py``
folds the spellings; ``catalog.GRAD_SCALERS``).
"""

from __future__ import annotations

from ..events import EventKind
from ..values import UNKNOWN, Kind
from . import Adapter

_SCALER_EVENTS = {
    "scale": EventKind.SCALER_SCALE,
    "unscale_": EventKind.SCALER_UNSCALE,
    "step": EventKind.SCALER_STEP,
}


class AmpAdapter(Adapter):
    def method(self, run, receiver, method, node):
        if receiver.kind is not Kind.SCALER:
            return None
        if method in _SCALER_EVENTS:
            run.emit(_SCALER_EVENTS[method], node, target=receiver)
        args, _ = run.arguments(node)
        first = args[0] if args else UNKNOWN
        if method == "step":
            run.emit(EventKind.STEP, node, target=first)
        elif method == "scale":
            return first
        return UNKNOWN


ADAPTER = AmpAdapter()
