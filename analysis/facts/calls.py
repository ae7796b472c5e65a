"""Evaluating calls: where values get their kinds and where training events happen.

A call is resolved in this order, strongest evidence first:

1. an imported API by canonical qualified name (``nn.CrossEntropyLoss()``, ``F.softmax``);
2. a function or class defined in the file (analysed with the caller's values);
3. a method of a value whose kind is known (``optimizer.step()``, ``model.eval()``,
   ``loss.backward()``, ``losses.append(loss)``);
4. otherwise an unknown call, whose result carries on the graph of its arguments but
   whose "was it scaled?" is unknown (``None``), so rules that need it stay quiet.

Past 400 lines for now: every method is a branch of one dispatch (:meth:`Calls.call`)
over the same interpreter state. The seam for the next change: the per-kind method
handlers (``model_method``, ``container_method``, ``tensor_method``) into a ``methods``
module. Frameworks' objects (accelerators, engines, scalers, LightningModules) are
translated by :mod:`torchward.analysis.effects`, asked before the torch semantics here.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .. import effects as adapters
from ..effects.table import current as library_effects
from ..finding import Confidence
from ..syntax.names import dotted
from ..workspace.hooks import linked_call, linked_method
from . import catalog, tensors
from .events import EventKind, LossFacts, ModeSwitch
from .expressions import element_of
from .fallback import kind_from_name
from .observed import keyword, observe_api, observe_method
from .values import (
    SCALAR,
    UNKNOWN,
    CriterionFacts,
    DatasetFacts,
    Kind,
    LoaderFacts,
    Mode,
    ModeFact,
    SamplerFacts,
    Value,
    combine,
    evolve,
)

if TYPE_CHECKING:
    from .interpreter import FunctionRun

_CALLABLE_KINDS = (
    Kind.MODEL,
    Kind.CRITERION,
    Kind.FUNCTION,
    Kind.ENGINE,
    Kind.INSTANCE,
    Kind.TOKENIZER,
    Kind.SCALER,  # timm's ``self.loss_scaler(loss, optimizer)``
)
_MODEL_SELF_RETURNING = {
    "to",
    "cuda",
    "cpu",
    "half",
    "float",
    "double",
    "bfloat16",
    "requires_grad_",
    "train_",
    "share_memory",
    "apply",
    "type",
}


#: a mode switch only an ``nn.Module`` has: a value of no known kind switched so is a
#: model. ``train()`` without a flag is not one (a trainer object has a ``train()``), nor
#: ``load_state_dict`` (optimizers and schedulers share it). ``.parameters()`` is a
#: module's too, but a model known from it makes every later call of it a forward with a
#: graph, and the dev corpus showed that graph flowing through an untyped loss helper's
#: tuple into a false TW001: a mode switch is the use the mode rules need, and enough.
_MODEL_ONLY_METHODS = {"eval"}


def _uses_as_model(method: str, node: ast.Call) -> bool:
    """``x.eval()``, ``x.train(False)``: a use only a module has."""
    if method == "train":
        return len(node.args) == 1 and isinstance(literal(node.args[0]), bool) and not node.keywords
    return method in _MODEL_ONLY_METHODS and not node.args and not node.keywords


def literal(node: ast.expr | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _is_gradient_path(path: str | None) -> bool:
    """``p.grad`` or ``p.grad.data``: a parameter's gradient, by the attribute that holds it."""
    return path is not None and path.endswith((".grad", ".grad.data"))


def _argument_value(
    node: ast.Call, args: list[Value], kwargs: dict[str, Value], name: str, position: int
) -> Value:
    """The evaluated argument ``name`` (by keyword, else by position) of a call."""
    if name in kwargs:
        return kwargs[name]
    starred = any(isinstance(a, ast.Starred) for a in node.args[: position + 1])
    return args[position] if len(args) > position and not starred else UNKNOWN


def _single_root(roots: ast.expr | None) -> str | None:
    """The variable a backward function frees: ``loss`` in ``backward(loss)`` or
    ``backward(ctx, [loss])``; None for several roots or an expression."""
    if isinstance(roots, (ast.List, ast.Tuple)) and len(roots.elts) == 1:
        roots = roots.elts[0]
    return dotted(roots) if roots is not None else None


def _known_unsharded(sampler: Value) -> bool:
    """A torch sampler known to give every rank the whole dataset."""
    return (
        sampler.kind is Kind.SAMPLER
        and sampler.sampler_facts is not None
        and not sampler.sampler_facts.distributed
    )


def reduction_of(node: ast.Call) -> str | None:
    """The literal ``reduction=`` of a loss call or criterion (None: default or computed)."""
    value = literal(keyword(node, "reduction"))
    return value if isinstance(value, str) else None


class Calls:
    """Call evaluation for one :class:`~torchward.analysis.facts.interpreter.FunctionRun`:
    a collaborator that reads and changes the run's state through ``run`` (its
    environment, its events, its stores); the frameworks' adapters and the workspace are
    handed the run itself, the object they know."""

    def __init__(self, run: FunctionRun) -> None:
        self.run = run
        self.analyzer = run.analyzer

    def call(self, node: ast.Call) -> Value:
        func = node.func
        linked = linked_call(self.run, node)
        if linked is not None:
            return linked  # a function or class of another module of the project
        name = self.run.qualified(func)
        if name is not None:
            return self.call_api(name, node)
        if isinstance(func, ast.Attribute):
            path = dotted(func)
            stored = self.run.env.get(path) if path else None
            receiver = self.run.evaluate(func.value)
            if stored is None and receiver.kind in (Kind.INSTANCE, Kind.MODEL):
                stored = receiver.attribute(func.attr)
            if stored is not None and stored.kind in _CALLABLE_KINDS:
                return self.call_value(
                    stored, node
                )  # self.softmax(x): a stored layer, not a method
            return self.call_method(receiver, func.attr, node)
        callee = self.run.evaluate(func)
        if isinstance(func, ast.Name) and callee is UNKNOWN and func.id not in self.run.env:
            return self.call_unresolved_name(func.id, node)
        return self.call_value(callee, node)

    def arguments(self, node: ast.Call) -> tuple[list[Value], dict[str, Value]]:
        positional = [self.run.evaluate(a) for a in node.args]
        named = {kw.arg or "**": self.run.evaluate(kw.value) for kw in node.keywords}
        if "**" in named and self.analyzer.launch is not None:
            named = self.run.folding.bindings.expand_keywords(named)
        return positional, named

    # --- calling a value ----------------------------------------------------------
    def call_value(self, callee: Value, node: ast.Call) -> Value:
        if callee.kind is Kind.FUNCTION and callee.class_name:
            info = self.analyzer.index.functions.get(callee.class_name)
            if info is not None:
                args, kwargs = self.arguments(node)
                return self.run.call_local(info, args, kwargs, node)
        if callee.kind in (Kind.MODEL, Kind.ENGINE):
            return self.forward(callee, node)
        adapted = adapters.value_call(self.run, callee, node)
        if adapted is not None:
            return adapted  # a library object called: timm's ``loss_scaler(loss, optimizer)``
        if callee.kind is Kind.CRITERION:
            args, kwargs = self.arguments(node)
            facts = callee.criterion_facts or CriterionFacts()
            return self.loss(facts.loss, facts.reduction, [*args, *kwargs.values()], node, callee)
        if callee.kind is Kind.INSTANCE and callee.class_name:
            method = self.analyzer.index.find_method(callee.class_name, "__call__")
            if method is not None:
                args, kwargs = self.arguments(node)
                return self.run.call_local(method, args, kwargs, node, self_value=callee)
            linked = linked_method(self.run, callee, "__call__", node, None)
            if linked is not None:
                return linked  # an instance of a class another project module defines
        args, kwargs = self.arguments(node)
        if callee.kind in (Kind.TOKENIZER, Kind.OPTIMIZER, Kind.SCHEDULER, Kind.LOADER):
            return UNKNOWN
        # A callable passed in (``loss_fn(out, y)``) does not know the accumulation
        # count: what it returns is as scaled as what it was given.
        joined = combine([*args, *kwargs.values()])
        graphs = [a for a in args if a.graph]
        scaled = None if any(a.scaled is None for a in graphs) else any(a.scaled for a in graphs)
        return evolve(joined, scaled=scaled if graphs else None)

    def call_unresolved_name(self, name: str, node: ast.Call) -> Value:
        index = self.analyzer.index
        args, kwargs = self.arguments(node)
        if name in index.classes:
            return self.analyzer.instantiate(name, args, kwargs, node, self.run)
        if name == "super" and not args:
            return self.run.super_self()
        if name == "zero_grad":
            self.run.emit(EventKind.ZERO_GRAD, node)  # a reset helper the file does not define
            return UNKNOWN
        if name in catalog.GRAPH_KEEPING_BUILTINS and args:
            # ``abs(loss)``, ``round(loss, 4)``: the tensor's own operator, still on the graph
            operand = args[0]
            return evolve(combine((operand,)), scaled=operand.scaled)
        if name in catalog.DETACHING_BUILTINS:
            return SCALAR
        if name in ("list", "dict", "set", "tuple", "sorted", "reversed"):
            if not args:
                return Value(kind=Kind.CONTAINER)
            source = args[0]
            return Value(
                kind=Kind.CONTAINER,
                graph=source.graph,
                graph_confidence=source.graph_confidence,
                locs=source.locs,
            )
        if name in ("sum", "max", "min", "next", "iter", "getattr"):
            joined = combine(args)
            return evolve(
                joined, scaled=all(a.scaled for a in args if a.graph) if joined.graph else False
            )
        if name in ("enumerate", "zip"):
            return combine(args)
        return evolve(combine([*args, *kwargs.values()]), scaled=None)

    def forward(self, model: Value, node: ast.Call) -> Value:
        args, kwargs = self.arguments(node)
        inputs = combine([*args, *kwargs.values()])
        result = Value(
            kind=Kind.TENSOR,
            locs=inputs.locs,
            activation=model.activation,
            scaled=False,
            proven_tensor=model.tensor_forward,
        )
        if model.activation:
            ending = (
                "a linear layer (raw logits)" if model.activation == "raw" else model.activation
            )
            built = f" (the model built at line {model.origin.span.line})" if model.origin else ""
            site = model.model_facts.activation_site if model.model_facts else None
            result = evolve(
                result,
                origin=site
                if site is not None
                else self.run.evidence(node, f"`{self.run.text(node)}` ends in {ending}{built}"),
            )
        if self.run.grad_enabled:
            graph = self.run.evidence(
                node, f"`{self.run.text(node)}` runs a model with gradients enabled"
            )
            result = evolve(
                result,
                graph=graph,
                graph_confidence=model.confidence,
                eval_forward=model.mode
                if model.mode and model.mode.mode is Mode.EVAL
                else inputs.eval_forward,
            )
        self.run.emit(EventKind.FORWARD, node, target=model, value=result)
        return result

    def loss(
        self,
        loss_type: str,
        reduction: str | None,
        args: list[Value],
        node: ast.Call,
        criterion: Value | None = None,
    ) -> Value:
        inputs = combine(args)
        result = Value(
            kind=Kind.TENSOR,
            graph=inputs.graph,
            graph_confidence=inputs.graph_confidence,
            locs=inputs.locs,
            # a summed loss is normalised elsewhere by design (by a token count, after
            # the fact): whether it is scaled is not for this statement to say
            scaled=None if reduction == "sum" else False,
            eval_forward=inputs.eval_forward,
        )
        result = evolve(
            result,
            criterion_facts=CriterionFacts(loss=loss_type, reduction=reduction),
            # a torch criterion returns one tensor; one known only by its name may not be one
            proven_tensor=criterion is None or criterion.confidence is Confidence.HIGH,
        )
        first = args[0] if args else UNKNOWN
        self.run.emit(
            EventKind.LOSS,
            node,
            value=first,
            target=criterion,
            loss=LossFacts(
                loss=loss_type, input_text=self.run.text(node.args[0]) if node.args else ""
            ),
        )
        return result

    # --- imported APIs --------------------------------------------------------------
    def call_api(self, name: str, node: ast.Call) -> Value:
        args, kwargs = self.arguments(node)
        first = args[0] if args else UNKNOWN
        origin = self.run.evidence(node, f"`{self.run.text(node)}` is constructed here")
        observe_api(self.run, name, node, args, kwargs)
        if name.rsplit(".", 1)[-1] == "zero_grad":
            # a project's own reset helper (``zero_grad(model_params)``), imported from a
            # module this file cannot see: named like the method it stands for
            self.run.emit(EventKind.ZERO_GRAD, node)
            return UNKNOWN
        adapted = adapters.api_call(self.run, name, node, args, kwargs)
        if adapted is not None:
            return adapted  # a framework's API (DDP / FSDP wraps, deepspeed.initialize)
        if name in catalog.ACTIVATION_FUNCTIONS:
            activation = catalog.ACTIVATION_FUNCTIONS[name]
            applied = self.run.evidence(node, f"`{self.run.text(node)}` applies {activation}")
            return evolve(
                combine(args),
                kind=Kind.TENSOR,
                activation=activation,
                scaled=first.scaled,
                origin=applied,
            )
        if name in catalog.LOSS_FUNCTIONS or catalog.is_functional_loss(name):
            loss_type = catalog.LOSS_FUNCTIONS.get(name, "other")
            return self.loss(loss_type, reduction_of(node), args, node)
        if name in catalog.DETACHING_TORCH_FUNCTIONS:
            return Value(kind=Kind.TENSOR)
        if name in catalog.SCALING_FUNCTIONS:
            return evolve(combine(args), scaled=True)
        if name in catalog.MODEL_PASSTHROUGH_FUNCTIONS or name in library_effects().model_wrappers:
            return first if first.kind is Kind.MODEL else Value(kind=Kind.MODEL, origin=origin)
        if name == "torch.autograd.grad":
            self.run.emit(EventKind.GRAD_CALL, node, value=first)
            return Value(kind=Kind.CONTAINER)
        if name in catalog.BACKWARD_FUNCTIONS:
            argument, position, framework = catalog.BACKWARD_FUNCTIONS[name]
            roots = keyword(node, argument, position)
            self.run.backward(
                _argument_value(node, args, kwargs, argument, position),
                node,
                framework=framework,
                # third in both signatures: (tensors, grad_tensors, retain_graph) and
                # (context_id, roots, retain_graph)
                retain_graph=literal(keyword(node, "retain_graph", 2)) is True,
                path=_single_root(roots),
            )
            return UNKNOWN
        kind = catalog.kind_of_constructor(name)
        if kind is not None:
            return self.construct(kind, name, node, args, kwargs, origin)
        if name.startswith(("numpy.", "math.", "statistics.", "np.")):
            return SCALAR
        if name.startswith("torch."):
            joined = combine(args)
            leaf = name.rsplit(".", 1)[-1]
            kept = first.activation if leaf in catalog.ACTIVATION_PRESERVING_METHODS else None
            scaled = all(a.scaled for a in args if a.graph) if joined.graph else False
            return evolve(
                joined,
                activation=kept,
                scaled=scaled,
                proven_tensor=leaf in tensors.TORCH_FUNCTIONS,
            )
        return evolve(
            combine([*args, *kwargs.values()]), scaled=None, graph_confidence=Confidence.MEDIUM
        )

    def construct(
        self,
        kind: Kind,
        name: str,
        node: ast.Call,
        args: list[Value],
        kwargs: dict[str, Value],
        origin,
    ) -> Value:
        value = Value(kind=kind, origin=origin)
        if kind is Kind.CRITERION:
            return evolve(
                value,
                criterion_facts=CriterionFacts(
                    loss=catalog.loss_type_of_class(name),
                    reduction=reduction_of(node),
                ),
            )
        if kind is Kind.MODEL:
            leaf = name.rsplit(".", 1)[-1]
            value = evolve(value, tensor_forward=name in tensors.TENSOR_LAYERS)
            if name in catalog.ACTIVATION_MODULES:
                return evolve(value, activation=catalog.ACTIVATION_MODULES[name])
            if name in catalog.RAW_OUTPUT_MODULES:
                return evolve(value, activation="raw")
            if leaf == "Sequential" and args:
                last = args[-1] if args[-1].kind is Kind.MODEL else UNKNOWN
                return evolve(value, activation=last.activation, tensor_forward=last.tensor_forward)
            return value
        if kind is Kind.LOADER:
            dataset = args[0] if args else kwargs.get("dataset", UNKNOWN)
            # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
            sampler = keyword(node, "sampler", 3)
            batch_sampler = keyword(node, "batch_sampler", 4)
            given = [
                _argument_value(node, args, kwargs, name, position)
                for s, name, position in (
                    (sampler, "sampler", 3),
                    (batch_sampler, "batch_sampler", 4),
                )
                if s is not None and not (isinstance(s, ast.Constant) and s.value is None)
            ]
            # an explicit sampler may shard the data per rank, unless it is one of torch's
            # own samplers built over no DistributedSampler (``RandomSampler(ds)``)
            may_shard = any(not _known_unsharded(v) for v in given)
            iterable = dataset.dataset_facts is not None and dataset.dataset_facts.iterable
            return evolve(
                value,
                loader_facts=LoaderFacts(sampler=may_shard, iterable_dataset=iterable),
            )
        if kind is Kind.SAMPLER:
            # a sampler over a distributed one (``BatchSampler(DistributedSampler(ds))``)
            # shards like it
            inner = args[0] if args else kwargs.get("sampler", UNKNOWN)
            distributed = name in catalog.DISTRIBUTED_SAMPLERS or (
                inner.sampler_facts is not None and inner.sampler_facts.distributed
            )
            return evolve(value, sampler_facts=SamplerFacts(distributed=distributed))
        if kind is Kind.DATASET:
            iterable = name in catalog.ITERABLE_DATASET_BASES
            return evolve(value, dataset_facts=DatasetFacts(iterable=iterable))
        return value

    # --- methods --------------------------------------------------------------------
    def call_method(self, receiver: Value, method: str, node: ast.Call) -> Value:
        func = node.func
        assert isinstance(func, ast.Attribute)
        kind = receiver.kind
        receiver_path = dotted(func.value) or self.run.super_path(func.value)
        confidence = receiver.confidence
        guessed_only = kind is None or (kind is Kind.MODEL and confidence is Confidence.LOW)
        if (
            guessed_only
            and receiver_path is not None  # a named value, not ``deepcopy(m).eval()``
            and not receiver.graph
            and _uses_as_model(method, node)
        ):
            # recognised by use: only a module switches mode with ``.eval()``; weaker than
            # a constructor, stronger than a name
            receiver = self.model_by_use(receiver, receiver_path, node)
            kind, confidence = receiver.kind, receiver.confidence
        if kind is None and receiver_path and not receiver.graph:
            guessed = kind_from_name(receiver_path)
            if guessed in (Kind.MODEL, Kind.OPTIMIZER) and method in (
                "step",
                "eval",
                "train",
                "zero_grad",
            ):
                kind, confidence = guessed, Confidence.LOW
        observe_method(self.run, receiver, method, node)
        if method == "detach_" and not (receiver_path and receiver_path.endswith(".grad")):
            self.run.detached_in_place(func.value)
        if method == "zero_grad" or (
            method in ("zero_", "detach_") and receiver_path and receiver_path.endswith(".grad")
        ):
            self.arguments(node)
            self.run.emit(EventKind.ZERO_GRAD, node, target=receiver)
            return UNKNOWN
        if method in catalog.GRAD_SCALING_METHODS and _is_gradient_path(receiver_path):
            self.arguments(node)
            self.run.emit(EventKind.GRAD_SCALE, node)
            return UNKNOWN
        if kind in (Kind.INSTANCE, Kind.MODEL) and receiver.class_name:
            info = self.analyzer.index.find_method(receiver.class_name, method)
            # a model's train()/eval() switch its mode; a trainer's train() is its loop
            if info is not None and not (
                kind is Kind.MODEL and method in ("eval", "train", "forward")
            ):
                args, kwargs = self.arguments(node)
                return self.run.call_local(
                    info, args, kwargs, node, self_value=receiver, receiver_path=receiver_path
                )
            linked = (
                linked_method(self.run, receiver, method, node, receiver_path)
                if info is None
                else None
            )
            if linked is not None:
                return linked  # a method of a class another project module defines
        adapted = adapters.method_call(self.run, receiver, method, node)
        if adapted is not None:
            return adapted  # a framework's object: accelerator, engine, scaler, LightningModule
        if kind is Kind.OPTIMIZER and method == "step":
            self.arguments(node)
            self.run.emit(EventKind.STEP, node, target=evolve(receiver, confidence=confidence))
            return UNKNOWN
        if kind is Kind.MODEL:
            return self.model_method(receiver, method, node, receiver_path, confidence)
        if kind is Kind.CONTAINER or (
            method in catalog.STORING_METHODS and receiver.locs and not receiver.graph
        ):
            return self.container_method(receiver, method, node, receiver_path)
        if kind in (
            Kind.OPTIMIZER,
            Kind.SCHEDULER,
            Kind.LOADER,
            Kind.SAMPLER,
            Kind.CRITERION,
            Kind.TOKENIZER,
            Kind.DATASET,
            Kind.INSTANCE,
        ):
            self.arguments(node)
            return UNKNOWN
        return self.tensor_method(receiver, method, node, receiver_path)

    def model_by_use(self, value: Value, path: str, node: ast.Call) -> Value:
        """``value`` (of no known kind, or a model only by its name) as the model its use
        at ``node`` shows it to be, with MEDIUM confidence; rebound at ``path`` so later
        calls of it are forwards."""
        run = self.run
        origin = value.origin or run.evidence(node, f"`{run.text(node)}` uses it as a model")
        model = evolve(value, kind=Kind.MODEL, confidence=Confidence.MEDIUM, origin=origin)
        run.env[path] = model
        return model

    def model_method(
        self, model: Value, method: str, node: ast.Call, path: str | None, confidence: Confidence
    ) -> Value:
        if method in ("eval", "train"):
            flag = literal(node.args[0]) if node.args else True
            mode = (
                Mode.EVAL
                if method == "eval" or flag is False
                else Mode.TRAIN
                if flag is True
                else None
            )
            fact = (
                ModeFact(
                    mode,
                    self.run.evidence(
                        node, f"`{self.run.text(node)}` switches the model to {mode.value} mode"
                    ),
                    tuple(self.run.loops),
                    self.run.trace.function,
                )
                if mode
                else None
            )
            self.run.emit(
                EventKind.MODE,
                node,
                target=model,
                switch=ModeSwitch(mode=mode, path=path),
            )
            if path:
                self.run.set_mode(path, fact)
            return evolve(model, mode=fact)
        if method == "forward":
            return self.forward(model, node)
        if method in _MODEL_SELF_RETURNING:
            return model
        if method in (
            "generate",
            "parameters",
            "named_parameters",
            "state_dict",
            "modules",
            "children",
            "buffers",
        ):
            return UNKNOWN
        if method == "load_state_dict":
            self.arguments(node)  # model.load_state_dict(torch.load(path)): the load is an event
        return UNKNOWN

    def container_method(
        self, container: Value, method: str, node: ast.Call, path: str | None
    ) -> Value:
        args, kwargs = self.arguments(node)
        if method in catalog.STORING_METHODS:
            stored = combine([*args, *kwargs.values()])
            if args and not kwargs:  # the stored item is the last argument (``insert(i, x)``)
                stored = evolve(stored, proven_tensor=args[-1].proven_tensor)
            self.run.store(container, stored, node, path, node.args[-1] if node.args else node)
            return UNKNOWN
        if method in ("pop", "get", "popleft", "values", "items", "copy", "__getitem__"):
            return element_of(container) if method != "copy" else container
        if method == "clear" and path:
            self.run.emptied(path, container, node)
        return UNKNOWN

    def tensor_method(self, tensor: Value, method: str, node: ast.Call, path: str | None) -> Value:
        args, kwargs = self.arguments(node)
        if method == "backward":
            retain = literal(keyword(node, "retain_graph", 1)) is True
            self.run.backward(tensor, node, framework=None, retain_graph=retain, path=path)
            return UNKNOWN
        if method in catalog.DETACHING_METHODS:
            return SCALAR if method in ("item", "tolist") else Value(kind=Kind.TENSOR)
        if method in ("to", "type") and any(
            self.run.qualified(a) in catalog.INTEGER_DTYPES
            for a in [*node.args, *(k.value for k in node.keywords)]
        ):
            return Value(kind=Kind.TENSOR)
        if not tensor.graph and not tensor.locs and not tensor.activation and tensor.kind is None:
            return (
                evolve(combine([*args, *kwargs.values()]), scaled=None)
                if any(a.graph for a in args)
                else UNKNOWN
            )
        result = combine([tensor, *args])
        if method in catalog.ACTIVATION_METHODS:
            activation = catalog.ACTIVATION_METHODS[method]
            applied = self.run.evidence(node, f"`{self.run.text(node)}` applies {activation}")
            return evolve(
                result,
                kind=Kind.TENSOR,
                activation=activation,
                scaled=tensor.scaled,
                origin=applied,
            )
        if method in catalog.SCALING_METHODS:
            return evolve(result, scaled=True, proven_tensor=tensor.proven_tensor)
        kept = tensor.activation if method in catalog.ACTIVATION_PRESERVING_METHODS else None
        return evolve(
            result,
            activation=kept,
            scaled=tensor.scaled,
            backwarded=tensor.backwarded,
            origin=tensor.origin if kept else None,
            proven_tensor=tensor.proven_tensor and method in tensors.TENSOR_METHODS,
        )
