"""What the dataflow proves for a fix, asked by the rules that record it on a finding.

A fixer works on the syntax tree long after the analysis (see
:mod:`torchward.analysis.fixes`), so the facts a *safe* fix depends on — "this value is
a tensor", "nothing computed in this loop reaches a backward" — are decided here, from
the traces, and travel on the finding as :class:`~torchward.analysis.finding.Proof`
members. Each function answers one question and errs towards "not proven".
"""

from __future__ import annotations

from ..finding import Confidence
from .events import Event, EventKind, Trace
from .values import Kind, Value

GRADIENT_EVENTS = (EventKind.BACKWARD, EventKind.GRAD_CALL)


def loop_never_backpropagated(trace: Trace, loop_id: int) -> bool:
    """Nothing computed in the loop can reach a ``backward()`` or ``autograd.grad``.

    Proven when, in the function's trace: no gradient is taken inside the loop, inside a
    loop around it, or anywhere after its header (program order: an earlier backward
    cannot read what the loop computes later); no value the loop stores goes into a
    container that outlives the function (a parameter's, ``self``'s, a returned one); and
    the function returns no value that carries a graph (its caller might backpropagate).
    """
    loop = trace.loops[loop_id]
    around = set(trace.ancestors(loop_id))
    for event in trace.events:
        if event.kind in GRADIENT_EVENTS and (
            around & set(event.loops) or _at_or_after(event, loop.span.line)
        ):
            return False
        if event.kind is EventKind.STORE and loop_id in event.loops and _escapes(trace, event):
            return False
    return not trace.returns_graph


def _at_or_after(event: Event, line: int) -> bool:
    return event.span.line >= line


def _escapes(trace: Trace, store: Event) -> bool:
    """The stored-into container outlives the function, or nothing says where it lives."""
    loc = store.loc
    return (
        loc is None or loc.line == 0 or loc.function != trace.function or loc in trace.returned_locs
    )


def is_torch_optimizer(value: Value | None) -> bool:
    """``value`` was built by a ``torch.optim`` constructor the analysis followed: its kind
    is known from that call (high confidence, with its origin), not guessed from a name."""
    return (
        value is not None
        and value.kind is Kind.OPTIMIZER
        and value.confidence is Confidence.HIGH
        and value.origin is not None
    )
