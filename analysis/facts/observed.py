"""API calls the later rules ask about, recorded as training events.

The dataflow already records backward, step, zero_grad and mode switches; the rules of
the second catalog (TW015-TW024) ask about a few more calls: where an optimizer is built
and whether its parameters are rebuilt in the same loop, where a scheduler or a
``GradScaler`` steps, where gradients are clipped, where a ``DistributedSampler`` is
built and whether it shuffles, which loader it feeds and how that loader is tuned,
where ``torch.compile`` runs, and where ``set_epoch`` is called (``torch.load`` calls are
read from the whole module by :mod:`.loads`).

These hooks are called by :mod:`torchward.analysis.facts.calls` with arguments it has already
evaluated; they never evaluate an expression themselves (that would record the events
inside it twice). The facts they record are :class:`~torchward.analysis.facts.events.CallFacts`.
"""

from __future__ import annotations

import ast

from ..finding import Confidence, Span
from ..syntax.names import dotted
from . import catalog
from .events import CallFacts, EventKind
from .values import Kind, Value

# Optimizers that keep no state between steps when built without momentum: rebuilding
# them costs time but loses nothing.
_STATELESS_WITHOUT_MOMENTUM = {"torch.optim.SGD"}
_CLIPPING = {
    "torch.nn.utils.clip_grad_norm_",
    "torch.nn.utils.clip_grad_value_",
    "torch.nn.utils.clip_grad.clip_grad_norm_",
    "torch.nn.utils.clip_grad.clip_grad_value_",
    "torch.nn.utils.clip_grad_norm",
}
_NOT_GIVEN = object()
_TRANSFERS = {"to", "cuda", "cpu"}
_SYNCING = {"item", "cpu", "numpy", "tolist"}  # wait for the device to hand a value over
# torch functions that build a tensor on the host from Python values
_HOST_FACTORIES = {
    "torch.tensor",
    "torch.as_tensor",
    "torch.zeros",
    "torch.ones",
    "torch.full",
    "torch.arange",
    "torch.eye",
    "torch.linspace",
    "torch.Tensor",
    "torch.FloatTensor",
    "torch.LongTensor",
}


def observe_api(
    run, name: str, node: ast.Call, args: list[Value], kwargs: dict[str, Value]
) -> None:
    """Record the call of the imported API ``name`` (already evaluated by the caller)."""
    kind = catalog.kind_of_constructor(name)
    if kind is Kind.OPTIMIZER:
        run.emit(EventKind.OPTIMIZER_BUILT, node, call=_optimizer_facts(run, name, node))
    elif kind is Kind.LOADER:
        dataset = args[0] if args else kwargs.get("dataset")
        run.emit(
            EventKind.LOADER_BUILT,
            node,
            value=dataset,
            call=_loader_facts(run, node, args, kwargs),
        )
    elif kind is Kind.SAMPLER and name in catalog.DISTRIBUTED_SAMPLERS:
        shuffle = _literal_argument(node, "shuffle", 3)
        run.emit(EventKind.SAMPLER_BUILT, node, call=CallFacts(shuffles=shuffle is not False))
    elif name in _CLIPPING:
        run.emit(EventKind.CLIP_GRAD, node)
    elif name == "torch.cuda.synchronize":
        run.emit(EventKind.SYNC, node)
    elif name == "torch.compile":
        run.emit(EventKind.COMPILE, node, target=args[0] if args else None)


def observe_method(run, receiver: Value, method: str, node: ast.Call) -> None:
    """Record a method call on a value whose kind the dataflow knows (or on anything,
    for ``set_epoch``, which samplers, loaders and datasets all spell the same way)."""
    if method == "set_epoch":
        run.emit(EventKind.SET_EPOCH, node)
    elif method in _SYNCING and run.loops and receiver.kind is Kind.TENSOR:
        run.emit(EventKind.SYNC, node, target=receiver)
    elif method in _TRANSFERS and run.loops:
        moved = _moved(run, receiver, method, node)
        if moved is not None:
            run.emit(EventKind.TRANSFER, node, target=receiver, call=CallFacts(moved=moved))
    elif receiver.kind is Kind.SCHEDULER and method == "step":
        run.emit(EventKind.SCHEDULER_STEP, node, target=receiver)
    # a scaler's scale / unscale_ / step: the library-effects table (effects/library.py)


def torch_load_facts(node: ast.Call) -> CallFacts:
    """What a ``torch.load(...)`` call's arguments say about unpickling (read by
    :mod:`.loads`, which finds the calls in the whole module, not only in training code)."""
    weights_only = _literal_argument(node, "weights_only", None)
    return CallFacts(
        weights_only=weights_only if isinstance(weights_only, bool) else None,
        weights_only_given=weights_only is not _NOT_GIVEN,
        pickle_module_given=keyword(node, "pickle_module", 2) is not None,
        opaque_arguments=_has_unpacked_arguments(node),
    )


def _optimizer_facts(run, name: str, node: ast.Call) -> CallFacts:
    params = keyword(node, "params", 0)
    momentum = _literal_argument(node, "momentum", 2)
    stateless = name in _STATELESS_WITHOUT_MOMENTUM and momentum in (_NOT_GIVEN, 0, 0.0)
    return CallFacts(
        rebuilt_inputs=params is not None
        and _rebound_in_loop(run, params, wraps_keep_objects=True),
        stateless=stateless,
    )


def _loader_facts(run, node: ast.Call, args: list[Value], kwargs: dict[str, Value]) -> CallFacts:
    sampler_node = keyword(node, "sampler", 3)
    sampler_origins: tuple[Span, ...] = ()
    if sampler_node is not None:
        # the sampler's value was evaluated with the call's arguments: read it back
        # without evaluating again (by position or keyword, as the call passed it)
        sampler_value = _argument_value(node, sampler_node, args, kwargs)
        if sampler_value is not None:
            sampler_origins = tuple(origin.span for origin in sampler_value.origins())
    workers = _literal_argument(node, "num_workers", 5)
    pin = _literal_argument(node, "pin_memory", 7)
    return CallFacts(
        sampler_origins=sampler_origins,
        workers=workers if isinstance(workers, int) and not isinstance(workers, bool) else None,
        workers_given=workers is not _NOT_GIVEN,
        pin_memory=pin if isinstance(pin, bool) else None,
        pin_memory_given=pin is not _NOT_GIVEN,
        opaque_arguments=_has_unpacked_arguments(node),
    )


def keyword(node: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
    """An argument by keyword or, failing that, by position (before any ``*args``).

    The one place call arguments are matched; :mod:`.calls` uses it too."""
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    if (
        position is not None
        and len(node.args) > position
        and not any(isinstance(a, ast.Starred) for a in node.args[: position + 1])
    ):
        return node.args[position]
    return None


def _argument_value(
    node: ast.Call, argument: ast.expr, args: list[Value], kwargs: dict[str, Value]
) -> Value | None:
    for i, positional in enumerate(node.args):
        if positional is argument and i < len(args):
            return args[i]
    for kw in node.keywords:
        if kw.value is argument and kw.arg is not None:
            return kwargs.get(kw.arg)
    return None


def _literal_argument(node: ast.Call, name: str, position: int | None) -> object:
    """The literal value of an argument; ``_NOT_GIVEN`` when absent; ``...`` when it is
    an expression whose value is not a literal."""
    argument = keyword(node, name, position)
    if argument is None:
        return _NOT_GIVEN
    if isinstance(argument, ast.Constant):
        return argument.value
    return ...


def _has_unpacked_arguments(node: ast.Call) -> bool:
    """``f(*args)`` / ``f(**kwargs)``: any argument may be hidden in them."""
    return any(isinstance(a, ast.Starred) for a in node.args) or any(
        kw.arg is None for kw in node.keywords
    )


def _rebound_in_loop(run, expression: ast.expr, *, wraps_keep_objects: bool = False) -> bool:
    """Whether a variable ``expression`` reads is (re)assigned inside the innermost loop
    enclosing the call: then each iteration may hand the call different objects (a fresh
    model per fold, a fresh leaf tensor per guidance step).

    ``wraps_keep_objects``: a path rebound only to a call that is handed the path itself
    (``model, opt = accelerator.prepare(model, opt)``, ``model = DDP(model)``,
    ``model = model.to(device)``) still holds the same parameters, so it does not count
    (a copy, ``copy.deepcopy(model)`` or ``model.clone()``, does)."""
    if not run.loops:
        return False
    loop = run.trace.loops[run.loops[-1]]
    assigned = _assigned_paths(run, loop.span.line, loop.end_line)
    if wraps_keep_objects:
        assigned = assigned - _only_self_wrapped(run, loop.span.line, loop.end_line)
    for node in ast.walk(expression):
        path = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if path is None:
            continue
        parts = path.split(".")
        if any(".".join(parts[: i + 1]) in assigned for i in range(len(parts))):
            return True
    return False


_COPYING = {"deepcopy", "copy", "clone"}


def _only_self_wrapped(run, first_line: int, last_line: int) -> frozenset[str]:
    """Paths whose every assignment between the two lines is ``x = f(..., x, ...)`` or
    ``x = x.method(...)`` (alone or in a tuple target): a wrap of the object itself."""
    wrapped: set[str] = set()
    other: set[str] = set()
    for node in ast.walk(ast.Module(body=list(run.body), type_ignores=[])):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if not isinstance(node, ast.Assign) or not first_line <= node.lineno <= last_line:
            continue
        value = node.value
        handed: set[str] = set()
        if isinstance(value, ast.Call):
            func = value.func
            leaf = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if leaf not in _COPYING:
                handed = {p for p in map(dotted, value.args) if p}
                if isinstance(func, ast.Attribute) and dotted(func.value):
                    handed.add(dotted(func.value))  # type: ignore[arg-type]
        for target in node.targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            for element in elements:
                path = dotted(element)
                if path:
                    (wrapped if path in handed else other).add(path)
    return frozenset(wrapped - other)


def _assigned_paths(run, first_line: int, last_line: int) -> frozenset[str]:
    """Every variable or attribute path assigned between two lines of the function run
    (loop targets, ``with ... as``, augmented assignments and walrus included)."""
    cache = run.__dict__.setdefault("_assigned_paths_cache", {})
    key = (first_line, last_line)
    if key in cache:
        return cache[key]
    found: set[str] = set()
    stack: list[ast.AST] = list(run.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        line = getattr(node, "lineno", None)
        end = getattr(node, "end_lineno", None) or line
        if line is not None and end is not None and (end < first_line or line > last_line):
            continue  # a statement wholly outside the loop
        if (
            isinstance(node, (ast.Name, ast.Attribute))
            and isinstance(node.ctx, (ast.Store, ast.Del))
            and first_line <= node.lineno <= last_line
        ):
            path = dotted(node)
            if path:
                found.add(path)
        stack.extend(ast.iter_child_nodes(node))
    cache[key] = frozenset(found)
    return cache[key]


def _to_host(method: str, node: ast.Call) -> bool:
    """``x.cpu()`` or ``x.to("cpu")`` / ``x.to(torch.device("cpu"))``."""
    if method == "cpu":
        return True
    if method != "to" or not node.args:
        return False
    first = node.args[0]
    if isinstance(first, ast.Constant):
        return first.value == "cpu"
    return (
        isinstance(first, ast.Call)
        and bool(first.args)
        and isinstance(first.args[0], ast.Constant)
        and first.args[0].value == "cpu"
    )


def _moves_device(method: str, node: ast.Call) -> bool:
    """``x.cuda()`` or ``x.to(<a device>)`` (not ``x.to(torch.float16)``, a cast)."""
    if method == "cuda":
        return True
    if method != "to":
        return False
    argument = (
        node.args[0]
        if node.args
        else next((k.value for k in node.keywords if k.arg == "device"), None)
    )
    if argument is None:
        return False
    path = dotted(argument) or ""
    return not path.startswith("torch.") or path.startswith("torch.device")


def _moved(run, receiver: Value, method: str, node: ast.Call) -> str | None:
    """What ``receiver.<method>(...)`` inside a loop moves, when it is worth a rule's
    question: the model; a host factory of loop-invariant values; a tensor bound outside
    the loop; a model sent to the host. None for everything else (a batch, a cast)."""
    func = node.func
    assert isinstance(func, ast.Attribute)
    if receiver.kind is Kind.MODEL and _to_host(method, node):
        return "model-to-host"
    if method == "cpu" or _to_host(method, node) or not _moves_device(method, node):
        return None
    path = dotted(func.value)
    # a model the function is handed (``def train(model, loader, ...)``) exists before any
    # of its loops, however little the dataflow knows of its construction
    handed_in = isinstance(func.value, ast.Name) and func.value.id in run.params
    if receiver.kind is Kind.MODEL and (receiver.confidence is Confidence.HIGH or handed_in):
        # ``model = model.cuda()`` rebinds it to itself: what matters is that the model was
        # built before the loop (a fresh model per fold must be moved each time)
        loop = run.trace.loops[run.loops[-1]]
        built_before = handed_in or (
            receiver.origin is not None and not loop.contains_line(receiver.origin.span.line)
        )
        if not built_before or path is None or _bound_in_loop_to_another(run, path):
            return None
        return "model"
    source = func.value
    if isinstance(source, ast.Call):
        name = run.qualified(source.func)
        if name in _HOST_FACTORIES and all(
            _is_constant(a) or _untouched_parameter(run, a)
            for a in [*source.args, *(k.value for k in source.keywords)]
        ):
            return "factory"
        return None
    if (
        isinstance(source, ast.Name)
        and receiver.kind is Kind.TENSOR
        and not receiver.graph
        and not _rebound_in_loop(run, source)
        and source.id not in run.params
    ):
        return "invariant"
    return None


def _bound_in_loop_to_another(run, path: str) -> bool:
    """Whether the innermost loop binds ``path`` to anything but itself moved or cast
    (``model = model.cuda()`` keeps the model; ``model = build()`` is a new one)."""
    first, last = _loop_lines(run)
    if path not in _assigned_paths(run, first, last):
        return False
    stack: list[ast.AST] = list(run.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))
        if not isinstance(node, ast.stmt) or not first <= node.lineno <= last:
            continue
        if isinstance(node, ast.Assign) and any(dotted(t) == path for t in node.targets):
            value = node.value
            if not (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and dotted(value.func.value) == path
            ):
                return True
        elif _binds(node, path):
            return True  # a loop or ``with`` target, an augmented assignment
    return False


def _binds(statement: ast.stmt, path: str) -> bool:
    """A loop target, ``with ... as``, augmented or annotated assignment binding ``path``."""
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in statement.items if item.optional_vars]
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        targets = [statement.target]
    else:
        return False
    return any(
        isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) == path
        for target in targets
        for n in ast.walk(target)
    )


def _untouched_parameter(run, node: ast.expr) -> bool:
    """A parameter of the function (``class_weights``) that the innermost loop only hands
    to this host factory: it holds the same values on every iteration. Any other use in the
    loop (``class_weights.append(w)``, an assignment, another call) may change it."""
    if not isinstance(node, ast.Name) or node.id not in run.params:
        return False
    loop = run.trace.loops[run.loops[-1]]
    for statement in run.body:
        for inner in ast.walk(statement):
            if (
                isinstance(inner, ast.Name)
                and inner.id == node.id
                and inner is not node
                and loop.contains_line(inner.lineno)
            ):
                return False
    return True


def _is_constant(node: ast.expr) -> bool:
    """A literal (numbers, strings, nested lists/tuples of them, a negated number) or a
    torch attribute such as ``torch.float32``: the same value every iteration."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _is_constant(node.operand)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_is_constant(e) for e in node.elts)
    path = dotted(node) if isinstance(node, ast.Attribute) else None
    return path is not None and path.startswith("torch.")


def _loop_lines(run) -> tuple[int, int]:
    loop = run.trace.loops[run.loops[-1]]
    return loop.span.line, loop.end_line
