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
from typing import Any

import attrs

from ..finding import Evidence, Span
from ..values import Value, _evidence_key


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
                ordered = sorted({result.origin, *result.other_origins}, key=_evidence_key)
                result = attrs.evolve(
                    result, origin=ordered[0], other_origins=frozenset(ordered[1:])
                )
    memo[key] = result
    return result
