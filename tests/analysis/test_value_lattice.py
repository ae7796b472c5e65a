"""The merge of abstract values is a lattice join, proven over generated values.

The dataflow joins values where branches meet and around loop back edges. If that join
depended on which side came first, swapping an ``if``/``else`` (with the condition
negated) would change findings, and loop fixpoints would depend on visiting order. These
properties pin every field of :class:`~torchward.analysis.facts.values.Value`: the strategies
draw each field from a small pool so that generated values often agree on some fields
and disagree on others, the cases where an order-dependent merge shows.
"""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from torchward.analysis.facts.conditions import PathCondition
from torchward.analysis.facts.constants import UNDECIDED, ConstantFact
from torchward.analysis.facts.values import (
    UNKNOWN,
    CriterionFacts,
    DatasetFacts,
    Kind,
    LoaderFacts,
    Loc,
    Mode,
    ModeFact,
    ModelFacts,
    SamplerFacts,
    Value,
    join,
    join_env,
    merge_fields,
)
from torchward.analysis.finding import Confidence, Evidence, Span, evidence_order

EVIDENCE = st.builds(
    Evidence,
    st.builds(Span, st.integers(1, 3), st.integers(0, 1), st.just(9), st.just(0)),
    st.sampled_from(["proof", "another proof"]),
    st.sampled_from([None, "helper.py"]),
)
MAYBE_EVIDENCE = st.none() | EVIDENCE
CONFIDENCE = st.sampled_from(list(Confidence))
KINDS = st.sampled_from([Kind.MODEL, Kind.LOADER, Kind.TENSOR, Kind.CONTAINER])
MODE_FACT = st.builds(
    ModeFact,
    st.sampled_from(list(Mode)),
    EVIDENCE,
    st.sampled_from([(), (0,), (0, 1)]),
    st.sampled_from(["", "train"]),
)
LOC = st.builds(
    Loc, st.sampled_from(["main", "fit"]), st.integers(1, 2), st.just(0), st.just("history")
)
FACT_RECORDS = {
    "criterion_facts": st.builds(
        CriterionFacts,
        st.sampled_from(["cross_entropy", "bce", "other"]),
        st.sampled_from([None, "sum", "mean"]),
    ),
    "loader_facts": st.builds(
        LoaderFacts, st.booleans(), st.booleans(), st.sampled_from([None, "deepspeed", "x"])
    ),
    "model_facts": st.builds(ModelFacts, MAYBE_EVIDENCE, st.booleans(), st.booleans()),
    "sampler_facts": st.builds(SamplerFacts, st.booleans()),
    "dataset_facts": st.builds(DatasetFacts, st.booleans()),
}


# every field of Value the strategy below draws; a flag added later is drawn generically
DRAWN = {
    "kind",
    "confidence",
    "graph",
    "graph_confidence",
    "backwarded",
    "activation",
    "scaled",
    "locs",
    "mode",
    "eval_forward",
    "origin",
    "other_origins",
    "class_name",
    "attributes",
    "ambiguous_kinds",
    "elements",
    "prepared",
    "constant",
    *FACT_RECORDS,
}
FLAGS = [f.name for f in attrs.fields(Value) if f.name not in DRAWN and f.type in (bool, "bool")]


# launch facts: values that agree and disagree, conditions better and worse, and the
# undecided top, so that the lexicographic join is exercised on every combination
CONSTANT = st.builds(
    ConstantFact,
    st.sampled_from([1, 2, 1.0, "bf16", True, None, UNDECIDED]),
    EVIDENCE,
    st.sampled_from(list(PathCondition)),
)


# items and attributes: small values, enough to show that nested values merge by the rules
NESTED = st.builds(
    Value,
    kind=st.none() | KINDS,
    graph=MAYBE_EVIDENCE,
    activation=st.sampled_from([None, "softmax", "raw"]),
    scaled=st.sampled_from([False, True, None]),
)


@st.composite
def values(draw, depth: int = 1) -> Value:
    """A value respecting the invariants documented on :class:`Value`."""
    kind = draw(st.none() | KINDS)
    ambiguous: frozenset[Kind] = frozenset()
    if kind is None and draw(st.booleans()):
        ambiguous = frozenset(draw(st.sets(KINDS, min_size=2, max_size=3)))
    graph = draw(MAYBE_EVIDENCE)
    origins = sorted(draw(st.sets(EVIDENCE, max_size=3)), key=evidence_order)
    nested = NESTED if depth > 0 else st.just(UNKNOWN)
    names = draw(st.sets(st.sampled_from(["model", "opt", "losses"]), max_size=2))
    records = {name: draw(st.none() | strategy) for name, strategy in FACT_RECORDS.items()}
    return Value(
        kind=kind,
        confidence=draw(CONFIDENCE) if kind is not None else Confidence.HIGH,
        graph=graph,
        graph_confidence=draw(CONFIDENCE) if graph is not None else Confidence.HIGH,
        backwarded=draw(MAYBE_EVIDENCE),
        activation=draw(st.sampled_from([None, "softmax", "sigmoid", "raw"])),
        scaled=draw(st.sampled_from([False, True, None])),
        locs=frozenset(draw(st.sets(LOC, max_size=2))),
        mode=draw(st.none() | MODE_FACT),
        eval_forward=draw(st.none() | MODE_FACT),
        origin=origins[0] if origins else None,
        other_origins=frozenset(origins[1:]),
        class_name=draw(st.sampled_from([None, "Net", "Trainer"])),
        attributes=tuple((name, draw(nested)) for name in sorted(names)),
        ambiguous_kinds=ambiguous,
        elements=draw(st.none() | st.lists(nested, max_size=2).map(tuple)),
        prepared=draw(st.booleans()),
        constant=draw(st.none() | CONSTANT),
        **records,
        **{flag: draw(st.booleans()) for flag in FLAGS},
    )


def test_the_strategy_draws_every_field():
    """A field the strategy leaves at its default would escape the properties below."""
    missed = {f.name for f in attrs.fields(Value)} - DRAWN - set(FLAGS)
    assert not missed, f"add a strategy for {sorted(missed)} to values()"


VALUES = values()


@settings(max_examples=200, deadline=None)
@given(VALUES, VALUES)
def test_join_is_commutative(a, b):
    assert join(a, b) == join(b, a)


@settings(max_examples=200, deadline=None)
@given(VALUES, VALUES, VALUES)
def test_join_is_associative(a, b, c):
    assert join(join(a, b), c) == join(a, join(b, c))


@settings(max_examples=200, deadline=None)
@given(VALUES)
def test_join_is_idempotent_field_by_field(a):
    # ``join`` returns an equal value at once; its field rules must agree with that
    assert merge_fields(a, a) == a
    assert join(a, a) == a


@settings(max_examples=200, deadline=None)
@given(VALUES, VALUES)
def test_join_is_an_upper_bound(a, b):
    """Joining the result with either side changes nothing: the join absorbs its inputs."""
    joined = join(a, b)
    assert join(joined, a) == joined
    assert join(joined, b) == joined


@settings(max_examples=200, deadline=None)
@given(VALUES, VALUES, VALUES)
def test_disagreeing_kinds_stay_unknown_whatever_the_order(a, b, c):
    kinds = {v.kind for v in (a, b, c) if v.kind is not None}
    for v in (a, b, c):
        kinds |= v.ambiguous_kinds
    merged = join(join(a, b), c)
    assert merged.kind == (next(iter(kinds)) if len(kinds) == 1 else None)


ENVS = st.dictionaries(st.sampled_from(["loader", "model", "loss"]), VALUES, max_size=3)


@settings(max_examples=100, deadline=None)
@given(ENVS, ENVS, ENVS)
def test_environment_merge_is_commutative_and_associative(a, b, c):
    assert join_env(a, b) == join_env(b, a)
    assert join_env(join_env(a, b), c) == join_env(a, join_env(b, c))


def test_a_sampler_on_either_branch_survives_the_merge():
    """The TW012 case: one branch builds its loader with a DistributedSampler."""
    with_sampler = Value(kind=Kind.LOADER, loader_facts=LoaderFacts(sampler=True))
    without = Value(kind=Kind.LOADER, loader_facts=LoaderFacts())
    for merged in (join(with_sampler, without), join(without, with_sampler)):
        assert merged.loader_facts == LoaderFacts(sampler=True)


def test_a_must_fact_needs_both_sides():
    scaled, unscaled = Value(kind=Kind.TENSOR, scaled=True), Value(kind=Kind.TENSOR)
    assert join(scaled, unscaled).scaled is False
    assert join(scaled, Value(kind=Kind.TENSOR, scaled=None)).scaled is None
    assert join(Value(activation="softmax"), Value(activation="sigmoid")).activation is None


def test_a_typo_in_a_fact_name_is_an_error():
    """Typed facts: a misspelt field fails loudly instead of reading as absent."""
    loader = Value(kind=Kind.LOADER, loader_facts=LoaderFacts(sampler=True))
    try:
        loader.loader_facts.samplr  # type: ignore[union-attr]
    except AttributeError:
        pass
    else:  # pragma: no cover - the assertion that fires if records accept any name
        raise AssertionError("a misspelt fact read as a value")
    try:
        LoaderFacts(samplr=True)  # type: ignore[call-arg]
    except TypeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("a misspelt fact was accepted")


def test_construction_sites_of_both_branches_are_kept():
    """A finding about where a value was built belongs at every site, in either order."""
    first = Evidence(Span(3, 4, 3, 30), "built here")
    second = Evidence(Span(5, 4, 5, 30), "built here")
    a, b = Value(kind=Kind.LOADER, origin=second), Value(kind=Kind.LOADER, origin=first)
    for merged in (join(a, b), join(b, a)):
        assert merged.origin == first
        assert merged.origins() == (first, second)
