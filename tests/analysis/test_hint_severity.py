"""``Severity.HINT``: below a note; a rule chooses it by evidence, confidence never does
(issue 28)."""

from __future__ import annotations

from torchward.analysis import Severity
from torchward.analysis.finding import Confidence, Span
from torchward.analysis.rules.pin_memory_without_workers import PinMemoryWithoutWorkers


def test_a_hint_ranks_below_a_note_and_lowering_stops_at_a_note():
    ranks = [s.rank for s in (Severity.HINT, Severity.NOTE, Severity.WARNING, Severity.ERROR)]
    assert ranks == sorted(set(ranks))
    assert Severity.WARNING.lowered() is Severity.NOTE
    assert Severity.NOTE.lowered() is Severity.NOTE
    assert Severity.HINT.lowered() is Severity.HINT


def test_low_confidence_keeps_a_note_and_a_chosen_hint_as_they_are():
    span = Span(1, 0, 1, 1)
    rule = PinMemoryWithoutWorkers()
    assert rule.finding(span, "m", confidence=Confidence.LOW).severity is Severity.NOTE
    chosen = rule.finding(span, "m", confidence=Confidence.LOW, severity=Severity.HINT)
    assert chosen.severity is Severity.HINT
