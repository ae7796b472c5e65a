"""The abstract values the dataflow computes for expressions and variables.

A :class:`Value` says what the analysis knows about one runtime value: what it is (its
*kind*: model, optimizer, loader, tensor...), whether it carries an autograd graph and
what proves it, which activation produced it, whether it was divided on its way (for
gradient accumulation), which containers it was read from (for "does this list reach a
backward?") and, for models, their train/eval mode. Every fact that a rule relies on
carries its :class:`~torchward.analysis.finding.Evidence`, so a finding can show the
statements that made it true.

Values are immutable and hashable: the dataflow compares environments to find loop
fixpoints, and summaries are memoised by argument values.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs

from .finding import Confidence, Evidence


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


@attrs.frozen(cache_hash=True)
class Value:
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
    detail: tuple[
        tuple[str, object], ...
    ] = ()  # kind-specific facts (criterion type, loader sampler...)
    origin: Evidence | None = None  # where the value was constructed
    class_name: str | None = None  # INSTANCE / FUNCTION: the local class or function
    attributes: tuple[tuple[str, Value], ...] = ()  # INSTANCE: what its methods see on self

    def get(self, key: str, default: object = None) -> object:
        return dict(self.detail).get(key, default)

    def with_detail(self, **updates: object) -> Value:
        merged = dict(self.detail)
        merged.update(updates)
        return attrs.evolve(self, detail=tuple(sorted(merged.items())))

    def attribute(self, name: str) -> Value | None:
        return dict(self.attributes).get(name)


UNKNOWN = Value()
SCALAR = Value(kind=Kind.SCALAR)


def join(a: Value, b: Value) -> Value:
    """The value that could be either ``a`` or ``b`` (branches merging, loop back edges).

    May-facts (carries a graph, read from a container) are unions; must-facts (was
    scaled, backward already ran) hold only when both sides have them.
    """
    if a == b:
        return a
    kind = (
        a.kind
        if a.kind == b.kind
        else (a.kind or b.kind if (a.kind is None or b.kind is None) else None)
    )
    scaled: bool | None
    if a.scaled is None or b.scaled is None:
        scaled = None
    else:
        scaled = a.scaled and b.scaled
    return Value(
        kind=kind,
        confidence=max(a.confidence, b.confidence, key=_confidence_rank)
        if kind
        else Confidence.HIGH,
        graph=a.graph or b.graph,
        graph_confidence=a.graph_confidence if a.graph else b.graph_confidence,
        backwarded=a.backwarded if (a.backwarded and b.backwarded) else None,
        activation=a.activation if a.activation == b.activation else None,
        scaled=scaled,
        locs=a.locs | b.locs,
        mode=_join_modes(a.mode, b.mode),
        eval_forward=a.eval_forward or b.eval_forward,
        detail=a.detail if a.detail == b.detail else (a.detail or b.detail),
        origin=a.origin or b.origin,
        class_name=a.class_name if a.class_name == b.class_name else None,
        attributes=a.attributes if a.attributes == b.attributes else _join_attributes(a, b),
    )


def join_env(a: dict[str, Value], b: dict[str, Value]) -> dict[str, Value]:
    """Two environments merging: each variable's values joined; one-sided ones kept."""
    merged = dict(a)
    for key, value in b.items():
        merged[key] = join(merged[key], value) if key in merged else value
    return merged


def _join_modes(a: ModeFact | None, b: ModeFact | None) -> ModeFact | None:
    """May-eval: if either path leaves the model in eval mode, eval may be in force."""
    if a is not None and a.mode is Mode.EVAL:
        return a
    if b is not None and b.mode is Mode.EVAL:
        return b
    return a or b


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
