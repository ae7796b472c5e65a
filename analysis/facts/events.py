"""The training structure of a function, as an ordered trace of events.

The dataflow walks each function once per calling context and records what happens in
training terms — a backward, an optimizer step, a gradient reset, a mode switch, a
forward pass, a loss computed, a tensor stored into a longer-lived container, a loop
over a data loader — each with the loops and ``if`` gates that enclose it. Rules query
these traces (see :mod:`torchward.analysis.facts.structure`); they never walk syntax trees.

Events of a called helper are replayed into the caller's trace at the call site (with
the helper's own statement as evidence), so "the epoch loop calls ``train_one_epoch``
which steps the optimizer" is one query, not a special case in every rule.
"""

from __future__ import annotations

import enum

import attrs

from ..finding import Evidence, Span
from .conditions import PathCondition
from .values import Loc, Mode, Value


class EventKind(str, enum.Enum):
    BACKWARD = "backward"
    STEP = "step"  # an optimizer update
    ZERO_GRAD = "zero_grad"
    MODE = "mode"  # model.train() / model.eval()
    FORWARD = "forward"  # a model called on inputs
    LOSS = "loss"  # a criterion applied
    STORE = "store"  # a value put into a container or accumulator
    ITERATE = "iterate"  # a loop over a data loader
    # a helper's loop over a data loader, replayed at the call (``self.train_epoch()`` in
    # the epoch loop): a kind of its own, so that rules asking "is this loop a batch loop"
    # do not take the caller's epoch loop for one
    ITERATE_IN_CALL = "iterate_in_call"
    DDP_WRAP = "ddp_wrap"
    GRAD_CALL = "grad_call"  # torch.autograd.grad: gradients taken on purpose
    GRAD_SCALE = "grad_scale"  # p.grad /= n, p.grad.div_(n): gradients normalised by hand
    # calls the second catalog asks about (see analysis/facts/observed.py)
    OPTIMIZER_BUILT = "optimizer_built"
    LOADER_BUILT = "loader_built"
    SAMPLER_BUILT = "sampler_built"  # a DistributedSampler
    SCHEDULER_STEP = "scheduler_step"
    SCALER_SCALE = "scaler_scale"  # GradScaler.scale(loss)
    SCALER_UNSCALE = "scaler_unscale"  # GradScaler.unscale_(optimizer)
    SCALER_STEP = "scaler_step"  # GradScaler.step(optimizer), also recorded as a STEP
    CLIP_GRAD = "clip_grad"  # clip_grad_norm_ / clip_grad_value_
    SET_EPOCH = "set_epoch"
    COMPILE = "compile"  # torch.compile(...)
    TRANSFER = "transfer"  # x.to(device) / x.cuda() / model.cpu(): what moved, see CallFacts.moved
    SYNC = (
        "sync"  # tensor.item()/.cpu()/.numpy()/.tolist() (target: the tensor), cuda.synchronize()
    )


@attrs.frozen
class Gate:
    """An ``if`` enclosing an event: its span and whether its test is a modulo check."""

    span: Span
    is_modulo: bool
    loop: int | None  # the innermost loop enclosing the ``if`` (None: outside loops)
    # launch mode: the path condition of the ``if``'s body on a plain launch (None in a lint
    # run, which does not decide tests by their values)
    condition: PathCondition | None = None


@attrs.frozen
class StoreFacts:
    """STORE: what was stored where, in the words of the source."""

    container: str  # the container's path ("history", "self.bank") or "container"
    stored_text: str  # the stored expression as written
    created_loops: tuple[int, ...] = ()  # loops in which the container itself was created


@attrs.frozen
class LossFacts:
    """LOSS: which criterion was applied, to what."""

    loss: str  # catalog loss type ("cross_entropy", "bce", ... "other")
    input_text: str = ""  # the first argument as written


@attrs.frozen
class ModeSwitch:
    """MODE: the mode a ``.train()``/``.eval()`` call sets, and on which model path."""

    mode: Mode | None  # None: ``.train(flag)`` with a flag that is not a literal
    path: str | None = None  # the switched model's dotted path, when it has one


@attrs.frozen
class CallFacts:
    """Facts about the API call behind an event of the second catalog (observed.py)."""

    rebuilt_inputs: bool = False  # OPTIMIZER_BUILT: its params are rebound in the same loop
    stateless: bool = False  # OPTIMIZER_BUILT: plain SGD without momentum keeps no state
    shuffles: bool = True  # SAMPLER_BUILT: not built with a literal shuffle=False
    # LOADER_BUILT: where its sampler= may have been built (every path's site, in file order)
    sampler_origins: tuple[Span, ...] = ()
    workers: int | None = None  # LOADER_BUILT: a literal num_workers=
    workers_given: bool = False
    pin_memory: bool | None = None  # LOADER_BUILT: a literal pin_memory=
    pin_memory_given: bool = False
    weights_only: bool | None = None  # torch.load (facts/loads.py): a literal weights_only=
    weights_only_given: bool = False
    pickle_module_given: bool = False  # torch.load: a pickle_module= (weights_only rejects it)
    opaque_arguments: bool = False  # *args / **kwargs may pass anything
    # TRANSFER: "model", "factory" (a torch.tensor(...) of loop-invariant values), "invariant"
    # (a tensor bound outside the loop), "model-to-host"; None: anything else (a batch)
    moved: str | None = None


@attrs.frozen
class Event:
    kind: EventKind
    span: Span  # in the function whose trace holds the event (a call site when replayed)
    loops: tuple[int, ...]  # ids of the enclosing loops of that function, outermost first
    gates: tuple[Gate, ...] = ()
    grad_enabled: bool = True
    value: Value | None = None  # the tensor backwarded / stored / the loss, the loader iterated
    target: Value | None = None  # the model switched / called, the container stored into
    loc: Loc | None = None  # STORE: where the value was stored
    # BACKWARD / STEP: the library whose backward or step this is (scaling, zeroing and
    # accumulation are then its business): "accelerate", "deepspeed", ... None: plain torch
    framework: str | None = None
    retain_graph: bool = False  # BACKWARD: ``retain_graph=True`` (a harness, not a bug)
    store: StoreFacts | None = None  # STORE events only
    loss: LossFacts | None = None  # LOSS events only
    switch: ModeSwitch | None = None  # MODE events only
    call: CallFacts | None = None  # events of the second catalog: the call's facts
    via: tuple[Evidence, ...] = ()  # replayed from helpers: the helper's own statements
    in_accumulate: bool = False  # inside ``with accelerator.accumulate(...)``
    in_helper_loop: bool = False  # replayed from a loop inside the helper itself


@attrs.frozen
class Loop:
    id: int
    span: Span  # the loop header
    parent: int | None
    end_line: int = 0  # the last line of the loop's body

    def contains_line(self, line: int) -> bool:
        return self.span.line <= line <= self.end_line


@attrs.define
class Trace:
    """Everything one analysis of one function (in one calling context) saw."""

    function: str  # qualified name within the file ("Trainer.fit", "<module>")
    events: list[Event] = attrs.field(factory=list)
    loops: dict[int, Loop] = attrs.field(factory=dict)
    returned_locs: frozenset[Loc] = frozenset()
    returns_graph: bool = False  # some ``return`` hands back a value that carries a graph
    contextual: bool = False  # analysed with the caller's argument values

    def ancestors(self, loop_id: int) -> list[int]:
        chain = []
        current: int | None = loop_id
        while current is not None:
            chain.append(current)
            current = self.loops[current].parent
        return chain

    def events_in(self, loop_id: int, *kinds: EventKind) -> list[Event]:
        return [e for e in self.events if loop_id in e.loops and (not kinds or e.kind in kinds)]
