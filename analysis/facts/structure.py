"""Training-structure questions that several rules ask of a trace.

Which loop is a training step (it runs ``backward``), which is an evaluation pass (it
runs a model and never ``backward``), where the update boundary is, and which ``if``
gates an optimizer step every N micro-steps. Kept here so that a rule reads as its
condition, and two rules never answer the same question two ways.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..effects import traits_of
from .events import Event, EventKind, Trace
from .filefacts import FileFacts


def events(facts: FileFacts, kind: EventKind) -> Iterator[tuple[Trace, Event]]:
    for trace in facts.traces:
        for event in trace.events:
            if event.kind is kind:
                yield trace, event


def runs_backward(trace: Trace, loop_id: int) -> bool:
    """The loop (or a helper it calls) runs a backward or takes gradients."""
    return bool(trace.events_in(loop_id, EventKind.BACKWARD, EventKind.GRAD_CALL))


def is_iteration_loop(trace: Trace, loop_id: int) -> bool:
    """A loop whose iterations are training or evaluation steps, not a loop over layers."""
    return bool(trace.events_in(loop_id, EventKind.BACKWARD, EventKind.STEP, EventKind.ITERATE))


def is_framework_step(event: Event) -> bool:
    """A backward or step a framework runs (``accelerator.backward``, ``engine.step()``,
    Lightning's automatic optimization): the framework handles mixed-precision scaling
    and the order of its own update, so rules about a hand-written update skip it."""
    return traits_of(event.framework) is not None


def framework_zeroes(event: Event) -> bool:
    """A framework's backward or step after which the framework resets the gradients
    itself (a DeepSpeed engine, Lightning's automatic optimization, a HF ``Trainer``);
    ``accelerator.backward`` and ``manual_backward`` leave that to the loop."""
    traits = traits_of(event.framework)
    return traits is not None and traits.zeroes_gradients


def framework_scales(event: Event) -> bool:
    """A framework's backward or step that divides an accumulated loss by the
    accumulation count itself (``accelerator.backward``, ``engine.backward``)."""
    traits = traits_of(event.framework)
    return traits is not None and traits.scales_accumulation


def resets_gradients(trace: Trace, loop_id: int) -> bool:
    return bool(trace.events_in(loop_id, EventKind.ZERO_GRAD))


def accumulation_gate(step: Event):
    """The ``if (i + 1) % accum == 0`` that gates ``step`` inside its innermost loop."""
    if not step.loops:
        return None
    innermost = step.loops[-1]
    return next((g for g in reversed(step.gates) if g.is_modulo and g.loop == innermost), None)


def loop_header(trace: Trace, loop_id: int):
    return trace.loops[loop_id].span


def iteration(trace: Trace, loops: tuple[int, ...]) -> list[Event]:
    """The events of one iteration of the innermost of ``loops``, in execution order
    (those of loops nested in it included); the whole trace when ``loops`` is empty."""
    depth = len(loops)
    return [e for e in trace.events if e.loops[:depth] == loops]


def call_parts(facts: FileFacts, event: Event) -> tuple[str, str] | None:
    """The receiver and first argument of a one-line method call event, as written:
    ``("scaler", "opt")`` for ``scaler.step(opt)``, ``("self.opt", "")`` for
    ``self.opt.step()``. None for a replayed event or a call spread over lines."""
    span = event.span
    if span.line != span.end_line or event.via:
        return None
    text = facts.lines.line_text(span.line)[span.column : span.end_column]
    head, dot, rest = text.rpartition(".")
    opening = rest.find("(")
    if not dot or "(" in head or opening < 0 or not rest.endswith(")"):
        return None
    argument = rest[opening + 1 : -1].split(",")[0].strip()
    return head.strip(), argument
