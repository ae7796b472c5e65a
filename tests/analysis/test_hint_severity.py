"""``Severity.HINT``: below a note, where a lowered note ends (issue 28)."""

from __future__ import annotations

from torchward.analysis import Severity
from torchward.analysis.finding import Confidence, Span
from torchward.analysis.rules.pin_memory_without_workers import PinMemoryWithoutWorkers


def test_a_hint_ranks_below_a_note_and_stays_a_hint_when_lowered():
    ranks = [s.rank for s in (Severity.HINT, Severity.NOTE, Severity.WARNING, Severity.ERROR)]
    assert ranks == sorted(set(ranks))
    assert Severity.NOTE.lowered() is Severity.HINT
    assert Severity.HINT.lowered() is Severity.HINT
    assert Severity.WARNING.lowered() is Severity.NOTE


def test_a_low_confidence_note_is_built_as_a_hint():
    span = Span(1, 0, 1, 1)
    rule = PinMemoryWithoutWorkers()
    assert rule.finding(span, "m", confidence=Confidence.LOW).severity is Severity.HINT
    assert rule.finding(span, "m", confidence=Confidence.MEDIUM).severity is Severity.NOTE
