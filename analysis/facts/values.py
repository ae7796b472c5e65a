"""The abstract values the dataflow computes for expressions and variables.

A :class:`Value` says what the analysis knows about one runtime value: what it is (its
*kind*: model, optimizer, loader, tensor...), whether it carries an autograd graph and
what proves it, which activation produced it, whether it was divided on its way (for
gradient accumulation), which containers it was read from (for "does this list reach a
backward?") and, for models, their train/eval mode. Every fact that a rule relies on
carries its :class:`~torchward.analysis.finding.Evidence`, so a finding can show the
statements that made it true. Kind-specific facts (what a criterion computes, how a
loader samples...) are typed records (:class:`CriterionFacts`, :class:`LoaderFacts`...),
so a misspelt fact is an attribute error, not a silently missing key.

Values are immutable and hashable: the dataflow compares environments to find loop
fixpoints, and summaries are memoised by argument values.

:func:`join` is a lattice join: commutative, associative and idempotent, field by field,
so the value after an ``if``/``else`` does not depend on which branch came first nor on
the order in which loop back edges are merged (``tests/analysis/test_value_lattice.py``
proves it over generated values).

Past 400 lines for now: the value, its typed facts, their fast copies (:func:`evolve`,
:func:`with_constant`) and their join are one lattice. The seam for the next change: the
kind-specific fact records (``CriterionFacts``...) and their joins in a module of their own.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs

from ..finding import Confidence, Evidence, evidence_order
from .constants import ConstantFact, join_constants

T = TypeVar("T")
_Evolved = TypeVar("_Evolved")


class Kind(str, enum.Enum):
    MODEL = "model"  # any nn.Module instance: a whole network or one layer
    OPTIMIZER = "optimizer"
    SCHEDULER = "scheduler"
    LOADER = "loader"
    SAMPLER = "sampler"
    DATASET = "dataset"
    CRITERION = "criterion"
    TENSOR = "tensor"
    SCALAR = "scalar"
    CONTAINER = "container"
    TOKENIZER = (
        "tokenizer"  # tokenizers, processors, feature extractors: callables that are not models
    )
    SCALER = "scaler"  # torch.amp.GradScaler
    ACCELERATOR = "accelerator"  # accelerate.Accelerator, lightning Fabric
    ENGINE = "engine"  # a DeepSpeed engine: its backward/step handle scaling and zeroing
    INSTANCE = "instance"  # an instance of a class defined in the analysed file
    FUNCTION = "function"  # a reference to a function defined in the analysed file


class Mode(str, enum.Enum):
    TRAIN = "train"
    EVAL = "eval"


@attrs.frozen
class ModeFact:
    """A model's train/eval mode, where it was set, and in which loops of the function."""

    mode: Mode
    evidence: Evidence
    loops: tuple[int, ...] = ()
    owner: str = ""  # the function whose loop ids ``loops`` are


@attrs.frozen
class Loc:
    """An abstract storage place: a container or accumulator, named by its creation site."""

    function: str
    line: int
    column: int
    name: str


# --- kind-specific facts ----------------------------------------------------------------
# Each record is absent (None) on a value that has no such facts; joining with an absent
# record keeps the other side's, like joining an unknown kind with a known one.

OTHER_LOSS = "other"  # a loss whose type the catalog does not name, or paths disagreeing


@attrs.frozen
class CriterionFacts:
    """What a criterion computes; also carried by the loss tensor it returns."""

    loss: str = OTHER_LOSS  # catalog loss type: "cross_entropy", "bce", ... or "other"
    reduction: str | None = None  # the literal ``reduction=``; None: default or not known

    def join(self, other: CriterionFacts) -> CriterionFacts:
        return CriterionFacts(
            loss=self.loss if self.loss == other.loss else OTHER_LOSS,
            reduction=_same_or_none(self.reduction, other.reduction),
        )


@attrs.frozen
class LoaderFacts:
    """How a data loader picks its samples: what lets each rank see its own shard.

    The flags are may-facts (true when some path makes them true): they only ever
    silence a finding, so a merge that keeps them errs on the quiet side.
    """

    sampler: bool = False  # an explicit sampler / batch_sampler was passed
    iterable_dataset: bool = False  # its dataset is an IterableDataset (shards itself)
    framework: str | None = None  # a framework that builds and shards it ("deepspeed")

    def join(self, other: LoaderFacts) -> LoaderFacts:
        return LoaderFacts(
            sampler=self.sampler or other.sampler,
            iterable_dataset=self.iterable_dataset or other.iterable_dataset,
            framework=_least(self.framework, other.framework, str),
        )


@attrs.frozen
class ModelFacts:
    """What the analysis knows about a model beyond its activation and mode."""

    activation_site: Evidence | None = None  # where ``forward`` applies its final activation
    lightning: bool = False  # a LightningModule: the trainer runs its loop
    ddp: bool = False  # wrapped by DistributedDataParallel / FSDP

    def join(self, other: ModelFacts) -> ModelFacts:
        return ModelFacts(
            activation_site=_same_or_none(self.activation_site, other.activation_site),
            lightning=self.lightning or other.lightning,
            ddp=self.ddp or other.ddp,
        )


@attrs.frozen
class SamplerFacts:
    distributed: bool = False  # a sampler that gives each rank its own shard

    def join(self, other: SamplerFacts) -> SamplerFacts:
        return SamplerFacts(distributed=self.distributed or other.distributed)


@attrs.frozen
class DatasetFacts:
    iterable: bool = False  # an IterableDataset: a loader over it needs no sampler

    def join(self, other: DatasetFacts) -> DatasetFacts:
        return DatasetFacts(iterable=self.iterable or other.iterable)


# not slotted: a frozen slotted class sets two dozen fields one ``__setattr__`` at a time
@attrs.frozen(cache_hash=True, slots=False)
class Value:
    """What is known about one runtime value.

    Invariants the join relies on: ``confidence`` is meaningful only with a ``kind`` and
    ``graph_confidence`` only with a ``graph`` (both are HIGH otherwise); ``attributes``
    is sorted by name without repeats; ``ambiguous_kinds`` is set only when ``kind`` is
    None because paths disagreed; ``other_origins`` only with an ``origin`` that sorts
    before all of them.
    """

    kind: Kind | None = None
    confidence: Confidence = Confidence.HIGH  # how we know the kind
    graph: Evidence | None = None  # set: carries an autograd graph, proven by this
    graph_confidence: Confidence = Confidence.HIGH
    backwarded: Evidence | None = None  # backward() already ran on it in this iteration
    activation: str | None = (
        None  # "softmax" | "log_softmax" | "sigmoid" | "raw"; for models: what calling them yields
    )
    scaled: bool | None = (
        False  # divided on its path; None when a call we cannot see may have done it
    )
    locs: frozenset[Loc] = frozenset()  # containers/accumulators it was read from
    mode: ModeFact | None = None  # models only
    eval_forward: ModeFact | None = None  # tensors: produced by a model that was in eval mode
    origin: Evidence | None = None  # where the value was constructed (first in the file)
    class_name: str | None = None  # INSTANCE / FUNCTION: the local class or function
    attributes: tuple[tuple[str, Value], ...] = ()  # INSTANCE: what its methods see on self
    # the kinds different paths gave it, when they disagree (kind is then None): keeps
    # "model on one path, optimizer on another" from becoming a model after a third join
    ambiguous_kinds: frozenset[Kind] = frozenset()
    elements: tuple[Value, ...] | None = None  # CONTAINER: a tuple/list literal's items
    prepared: bool = False  # passed through ``accelerator.prepare``
    # construction sites on other paths than ``origin`` (branches building it differently)
    other_origins: frozenset[Evidence] = frozenset()
    criterion_facts: CriterionFacts | None = None
    loader_facts: LoaderFacts | None = None
    model_facts: ModelFacts | None = None
    sampler_facts: SamplerFacts | None = None
    dataset_facts: DatasetFacts | None = None
    # a must-fact: proven a ``torch.Tensor`` (a loss, a tensor method's or a tensor
    # function's result, arithmetic with one), not merely a value with a graph that may be
    # a tuple, dict or ``ModelOutput``; a fix that calls ``.detach()`` on it relies on this
    proven_tensor: bool = False
    # a must-fact, models only: a ``torch.nn`` layer whose call returns one tensor
    # (:data:`~torchward.analysis.facts.tensors.TENSOR_LAYERS`), so its output is proven a tensor
    tensor_forward: bool = False
    # launch mode only (:mod:`.launch`): the value a plain launch gives it, where it was
    # set and the path condition it holds under; None in a lint run
    constant: ConstantFact | None = None

    def attribute(self, name: str) -> Value | None:
        return dict(self.attributes).get(name)

    def origins(self) -> tuple[Evidence, ...]:
        """Every place that may have constructed it, first in the file first: a finding
        about the construction belongs at each of them, whichever branch comes first."""
        return tuple(sorted(_origins(self), key=evidence_order))


_VALUE_FIELDS = frozenset(f.name for f in attrs.fields(Value))
_HASH_CACHE = "_attrs_cached_hash"  # where ``cache_hash`` keeps a value's hash


def evolve(instance: _Evolved, **changes: Any) -> _Evolved:
    """``attrs.evolve``, with a fast path for :class:`Value`: a copy of the other's
    fields with the changes, its cached hash reset (a value is evolved at most
    expressions the dataflow evaluates; ``attrs.evolve`` builds its keyword arguments
    field by field, and ``Value(...)`` sets two dozen fields: each cost a tenth of
    launch mode)."""
    if instance.__class__ is not Value:
        return attrs.evolve(instance, **changes)  # type: ignore[misc]  # any attrs class
    assert _VALUE_FIELDS.issuperset(changes), changes
    evolved = object.__new__(Value)
    fields = evolved.__dict__
    fields.update(instance.__dict__)
    fields.update(changes)
    fields[_HASH_CACHE] = None
    return evolved  # type: ignore[return-value]


def with_constant(value: Value, fact: ConstantFact | None) -> Value:
    """``value`` with another launch fact (launch mode gives every evaluated expression
    one: :func:`evolve`'s copy, without its keyword arguments)."""
    evolved = object.__new__(Value)
    fields = evolved.__dict__
    fields.update(value.__dict__)
    fields["constant"] = fact
    fields[_HASH_CACHE] = None
    return evolved


UNKNOWN = Value()
SCALAR = Value(kind=Kind.SCALAR)


def join(a: Value, b: Value) -> Value:
    """The value that could be either ``a`` or ``b`` (branches merging, loop back edges).

    May-facts (carries a graph, read from a container, a loader has a sampler) are
    unions; must-facts (was scaled, backward already ran, the activation) hold only when
    both sides have them. Where both sides prove a may-fact with different evidence, the
    evidence that comes first in the file is kept, so the result never depends on which
    side is ``a``.
    """
    if a is b:
        return a
    # Values cache their hash: unequal ones (most joins that do work) differ there in O(1),
    # without attrs' field-by-field comparison
    return a if hash(a) == hash(b) and a == b else merge_fields(a, b)


def merge_fields(a: Value, b: Value) -> Value:
    """:func:`join` without its shortcut for equal values: every field merged by its rule.

    Separate so that the tests can prove idempotence of the field rules themselves
    (``merge_fields(a, a) == a``), which is what makes the shortcut in :func:`join` sound.
    """
    kinds = _kinds(a) | _kinds(b)
    kind = next(iter(kinds)) if len(kinds) == 1 else None
    confidence = Confidence.HIGH
    if kind is not None:
        confidence = max((v.confidence for v in (a, b) if v.kind is kind), key=_confidence_rank)
    graph_confidence = Confidence.HIGH
    if a.graph or b.graph:
        graph_confidence = max(
            (v.graph_confidence for v in (a, b) if v.graph), key=_confidence_rank
        )
    scaled: bool | None
    if a.scaled is None or b.scaled is None:
        scaled = None
    else:
        scaled = a.scaled and b.scaled
    origins = _origins(a) | _origins(b)
    origin = min(origins, key=evidence_order) if origins else None
    return Value(
        kind=kind,
        confidence=confidence,
        graph=_least(a.graph, b.graph, evidence_order),
        graph_confidence=graph_confidence,
        # "every graph it may carry was backpropagated": vacuous on a side with no graph
        # (an empty list before the loop), so only a side with an unfreed graph clears it
        backwarded=_least(a.backwarded, b.backwarded, evidence_order)
        if (a.backwarded or a.graph is None) and (b.backwarded or b.graph is None)
        else None,
        activation=_same_or_none(a.activation, b.activation),
        scaled=scaled,
        locs=a.locs | b.locs,
        mode=_join_modes(a.mode, b.mode),
        eval_forward=_least(a.eval_forward, b.eval_forward, _mode_key),
        origin=origin,
        other_origins=origins - {origin} if origin is not None else frozenset(),
        class_name=_same_or_none(a.class_name, b.class_name),
        attributes=a.attributes if a.attributes == b.attributes else _join_attributes(a, b),
        ambiguous_kinds=kinds if len(kinds) > 1 else frozenset(),
        elements=_join_elements(a.elements, b.elements),
        prepared=a.prepared or b.prepared,
        criterion_facts=_join_records(a.criterion_facts, b.criterion_facts, CriterionFacts.join),
        loader_facts=_join_records(a.loader_facts, b.loader_facts, LoaderFacts.join),
        model_facts=_join_records(a.model_facts, b.model_facts, ModelFacts.join),
        sampler_facts=_join_records(a.sampler_facts, b.sampler_facts, SamplerFacts.join),
        dataset_facts=_join_records(a.dataset_facts, b.dataset_facts, DatasetFacts.join),
        proven_tensor=a.proven_tensor and b.proven_tensor,
        tensor_forward=a.tensor_forward and b.tensor_forward,
        constant=join_constants(a.constant, b.constant),
    )


def join_env(a: dict[str, Value], b: dict[str, Value]) -> dict[str, Value]:
    """Two environments merging: each variable's values joined; one-sided ones kept."""
    merged = dict(a)
    for key, value in b.items():
        known = merged.get(key)
        if known is not value:  # the same object on both sides: nothing to join
            merged[key] = value if known is None else join(known, value)
    return merged


def _kinds(value: Value) -> frozenset[Kind]:
    """The kinds the paths into ``value`` gave it (empty: nothing known)."""
    return frozenset({value.kind}) if value.kind is not None else value.ambiguous_kinds


def _origins(value: Value) -> frozenset[Evidence]:
    if value.origin is None:
        return value.other_origins
    return value.other_origins | {value.origin}


def _same_or_none(a: T | None, b: T | None) -> T | None:
    """A must-fact: kept only when both sides agree on it."""
    return a if a == b else None


def _least(a: T | None, b: T | None, key: Callable[[T], object]) -> T | None:
    """A may-fact: whichever side has it; when both do, the one that sorts first."""
    if a is None:
        return b
    if b is None:
        return a
    return a if key(a) <= key(b) else b  # type: ignore[operator]


def _join_records(a: T | None, b: T | None, join_record: Callable[[T, T], T]) -> T | None:
    """Kind-specific facts: an absent record is no information, two are joined field-wise."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    return join_record(a, b)


def _join_elements(
    a: tuple[Value, ...] | None, b: tuple[Value, ...] | None
) -> tuple[Value, ...] | None:
    """Items of a literal: joined position by position; different lengths know none (())."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if len(a) != len(b):
        return ()
    return tuple(join(x, y) for x, y in zip(a, b))


def _mode_key(fact: ModeFact) -> tuple[object, ...]:
    return (fact.mode.value, evidence_order(fact.evidence), fact.loops, fact.owner)


def _join_modes(a: ModeFact | None, b: ModeFact | None) -> ModeFact | None:
    """May-eval: if either path leaves the model in eval mode, eval may be in force."""
    if a is not None and b is not None and (a.mode is Mode.EVAL) != (b.mode is Mode.EVAL):
        return a if a.mode is Mode.EVAL else b
    return _least(a, b, _mode_key)


def _join_attributes(a: Value, b: Value) -> tuple[tuple[str, Value], ...]:
    left, right = dict(a.attributes), dict(b.attributes)
    names = sorted(set(left) | set(right))
    return tuple((n, join(left.get(n, UNKNOWN), right.get(n, UNKNOWN))) for n in names)


def _confidence_rank(confidence: Confidence) -> int:
    return {Confidence.LOW: 0, Confidence.MEDIUM: 1, Confidence.HIGH: 2}[confidence]


def combine(values: Iterable[Value]) -> Value:
    """A tensor computed from ``values`` (arithmetic, an unknown call): graph and locs flow."""
    graph = None
    graph_confidence = Confidence.HIGH
    locs: frozenset[Loc] = frozenset()
    eval_forward = None
    backwarded = None
    for value in values:
        if value.graph and graph is None:
            graph, graph_confidence = value.graph, value.graph_confidence
        if value.graph and value.backwarded and backwarded is None:
            backwarded = value.backwarded  # one graph: a backward through part of it freed it
        locs |= value.locs
        eval_forward = eval_forward or value.eval_forward
    return Value(
        kind=Kind.TENSOR if graph else None,
        graph=graph,
        graph_confidence=graph_confidence,
        locs=locs,
        eval_forward=eval_forward if graph else None,
        backwarded=backwarded,
    )
