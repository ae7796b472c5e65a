"""Running a framework-called method inside a loop that stands for the framework's own.

Lightning's fit loop calls ``training_step`` once per batch and then, in automatic
optimization, runs backward on what it returned, steps the optimizer and zeroes the
gradients; a Hugging Face ``Trainer`` does the same around ``compute_loss``. The user's
file holds only the loop's body. Analysed on its own, that body has no loop, so a loss
appended to ``self.training_step_outputs`` would not outlive any iteration and a missing
``zero_grad`` under manual optimization would be in no loop at all: the rules, which
ask about loops, would miss the bugs.

So the method's body runs here as the body of a loop headed at its ``def`` line, exactly
as a hand-written loop runs (quiet passes to a fixpoint, then one recording pass), with
an ``ITERATE`` over the framework's loader at the head and, after the body, the events
the framework adds — tagged with its name so that :func:`~torchward.analysis.effects.traits_of`
tells the rules what it does for them. Every rule then applies unchanged.
"""

from __future__ import annotations

import ast
from typing import Any

from ..facts.binding import bind_parameters
from ..facts.events import EventKind, Trace
from ..facts.interpreter import FunctionRun
from ..facts.values import UNKNOWN, Kind, LoaderFacts, Value, combine, evolve
from . import HookPlan


def drive_hook(analyzer, info, plan: HookPlan, class_name: str) -> None:
    """Analyse ``info`` as its framework calls it on an instance of ``class_name``: once
    per batch, inside a loop."""
    self_value = analyzer.entry_instance(class_name, info)  # __init__, then setup(stage)
    own = dict(self_value.attributes)
    missing = {name: value for name, value in plan.self_attributes if name not in own}
    if missing:
        own.update(missing)
        self_value = evolve(self_value, attributes=tuple(sorted(own.items())))
    env = bind_parameters(info, [], {}, self_value, analyzer.index.imports)
    if plan.model_parameter is not None and plan.model_parameter in env:
        env[plan.model_parameter] = Value(kind=Kind.MODEL)  # the framework passes its model
    trace = Trace(info.qualname)
    run = FunctionRun(
        analyzer,
        trace,
        info.node.body,
        env=env,
        outer={},
        grad_enabled=plan.grad_enabled,
        params=frozenset(env),
    )
    head = _at(info.node, analyzer.lines)
    returned_node = _first_returned(info.node)
    if plan.backward_returned:
        _prove_returned(run, info.node)
    after = _at(returned_node, analyzer.lines) if returned_node is not None else head
    loader = Value(kind=Kind.LOADER, loader_facts=LoaderFacts(framework=plan.framework))

    def one_iteration() -> None:
        run.emit(EventKind.ITERATE, head, value=loader)
        first = len(run.returns)
        run.execute(info.node.body)
        returned = run.returns[first:]
        if plan.backward_returned and returned_node is not None:
            loss = combine(returned) if returned else UNKNOWN
            run.backward(loss, after, framework=plan.framework)
        if plan.steps and (returned_node is not None or not plan.backward_returned):
            run.emit(
                EventKind.STEP, after, target=Value(kind=Kind.OPTIMIZER), framework=plan.framework
            )

    run.loop(info.node, one_iteration)
    analyzer._register(info, trace)


def _prove_returned(run, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """The framework runs backward on what the method returns: each name a ``return``
    hands back (``return loss``, ``return (loss, outputs) if return_outputs else loss``)
    carries a graph, as if ``name.backward()`` followed — the same proof a hand-written
    backward gives, so a loss from a model the file cannot type is still known."""
    targets: dict[str, tuple[Any, ...]] = dict(run.backward_targets)
    for node in _own_nodes(function):
        if isinstance(node, ast.Return) and node.value is not None:
            for name in _returned_names(node.value):
                targets[name] = targets.get(name, ()) + (node,)
    run.backward_targets = targets


def _returned_names(value: ast.expr) -> list[str]:
    if isinstance(value, ast.Name):
        return [value.id]
    if isinstance(value, ast.IfExp):
        return _returned_names(value.body) + _returned_names(value.orelse)
    if isinstance(value, ast.Tuple) and value.elts:
        return _returned_names(value.elts[0])  # ``(loss, outputs)``: the loss comes first
    if isinstance(value, ast.Dict):
        return [
            name
            for key, item in zip(value.keys, value.values, strict=True)
            if isinstance(key, ast.Constant) and key.value == "loss"
            for name in _returned_names(item)
        ]
    return []


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef):
    """The nodes of the function's own body, not of functions nested in it."""
    stack: list[ast.AST] = list(reversed(function.body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _first_returned(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    """The first ``return <value>`` of the function's own body (not of nested functions)."""
    return next(
        (n.value for n in _own_nodes(function) if isinstance(n, ast.Return) and n.value),
        None,
    )


def _at(node: ast.AST, lines) -> ast.Call:
    """A call node with no arguments on ``node``'s first line: where an event the framework
    adds is reported (a function header would otherwise span the whole body)."""
    call = ast.Call(func=ast.Name(id="<framework>", ctx=ast.Load()), args=[], keywords=[])
    line = getattr(node, "lineno", 1)
    call.lineno, call.col_offset, call.end_lineno = line, getattr(node, "col_offset", 0), line
    if getattr(node, "end_lineno", line) == line and not isinstance(node, ast.stmt):
        call.end_col_offset = getattr(node, "end_col_offset", call.col_offset)
    else:
        call.end_col_offset = len(lines.line_text(line).rstrip().encode("utf-8"))
    return call
