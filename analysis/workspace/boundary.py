"""Values crossing back from another module: their evidence moves to the call.

A value a call into another project module returns (a loader ``make_loader()`` built, a
model a class of ``models.py`` constructs) carries evidence in that module: where it was
constructed, where its graph comes from, where ``forward`` applies softmax. A rule may
report a finding *at* such a place (TW012 at the loader's construction), and a finding
of this file must lie in this file. So at the boundary every piece of evidence in
another file is re-anchored at the call that brought the value here, its message saying
where it really is (``data.py:18``): the finding then points at ``make_loader(...)`` —
the line of this file that the user can act on — and still names the place inside.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs

from ..facts.values import Value
from ..finding import Evidence, Span, evidence_order

if TYPE_CHECKING:
    from ..facts.events import Event, EventKind
    from ..facts.filefacts import FileFacts
    from .linking import ProjectSession


def at_call(value: Any, call: Span, here: str | None) -> Any:
    """``value`` (a :class:`Value`, an event field, a tuple of them) with every piece of
    evidence outside the file ``here`` re-anchored at ``call``."""
    return _rewrite(value, call, here, {})


def _rewrite(item: Any, call: Span, here: str | None, memo: dict[int, Any]) -> Any:
    if isinstance(item, Evidence):
        if not item.path or item.path == here:
            return item
        where = f"{os.path.basename(item.path)}:{item.span.line}"
        return Evidence(call, f"{item.message} (in {where})", here)
    if isinstance(item, (str, int, float, bool, Span)) or item is None:
        return item
    key = id(item)
    if key in memo:
        return memo[key]
    result = item
    if isinstance(item, tuple):
        parts = tuple(_rewrite(part, call, here, memo) for part in item)
        result = item if all(a is b for a, b in zip(parts, item)) else parts
    elif isinstance(item, frozenset) and any(isinstance(part, Evidence) for part in item):
        result = frozenset(_rewrite(part, call, here, memo) for part in item)
    elif attrs.has(type(item)):
        changes = {}
        for field in attrs.fields(type(item)):
            old = getattr(item, field.name)
            new = _rewrite(old, call, here, memo)
            if new is not old:
                changes[field.alias or field.name] = new
        if changes:
            result = attrs.evolve(item, **changes)
            if isinstance(result, Value) and result.other_origins and result.origin is not None:
                ordered = sorted({result.origin, *result.other_origins}, key=evidence_order)
                result = attrs.evolve(
                    result, origin=ordered[0], other_origins=frozenset(ordered[1:])
                )
    memo[key] = result
    return result


# --- the way back: what a re-anchored value stood for ------------------------------------
# A rule that pairs a value with the event that built it (TW021: the loader iterated here
# with the ``DistributedSampler`` built for it) finds the event in the other module's
# trace and the value at the call; these two queries join them again.


def constructed_inside(facts: FileFacts, origin: Evidence) -> tuple[Evidence, ...]:
    """The places inside other modules where a value whose ``origin`` is a call of the
    analysed file was constructed (their evidence names their module); () for a value
    this file constructs, or when the analysis followed other modules only in part."""
    session = _session(facts)
    if session is None or (origin.path and origin.path != facts.analyzer.evidence_path):
        return ()
    return tuple(sorted(session.brought.get(origin.span, ()), key=evidence_order))


def foreign_events(facts: FileFacts, kind: EventKind) -> Iterator[tuple[str, Event]]:
    """``kind`` events of the other modules' functions as this file's analysis called
    them, with the path of the module whose trace holds each; none when the analysis
    followed other modules only in part (quiet rather than guessing)."""
    session = _session(facts)
    for owner in list(session.analyzers.values()) if session is not None else ():
        for trace in owner.traces:
            for event in trace.events:
                if event.kind is kind:
                    yield owner.path, event


def foreign_sources(facts: FileFacts) -> Iterator[str]:
    """The texts of the other modules this file's analysis followed calls into."""
    session = _session(facts)
    for owner in list(session.analyzers.values()) if session is not None else ():
        yield owner.source


def _session(facts: FileFacts) -> ProjectSession | None:
    project = facts.analyzer.project
    if project is None or project.session.partial:
        return None
    return project.session
