"""Stage effects: receives a library call the dataflow meets and produces what it does, as
training events and value kinds: the library-effects table (:mod:`.table`, data in
``analysis/data/library_effects.toml``) and one adapter module per framework for what is
structure rather than a call's effect (Lightning's hooks, the Trainer, DeepSpeed,
distributed wraps). A plug-in of the facts stage: it builds on
:mod:`torchward.analysis.facts` values, and the dataflow asks it.

Framework adapters: each framework's API translated into the engine's training events.

Real training code hides its loop behind a framework: Lightning calls ``training_step``
and then runs backward, step and zero_grad itself; ``accelerator.backward`` divides the
loss by the accumulation count; a DeepSpeed engine's ``step()`` zeroes the gradients; a
Hugging Face ``Trainer`` calls an overridden ``compute_loss`` once per batch. Rules must
stay framework-agnostic queries over events, so the knowledge of each framework lives in
one adapter module here, and the engine asks the registry at four points:

- an imported API call (``deepspeed.initialize``, ``fully_shard``): :func:`api_call`;
- a method call on a value of a framework's kind (``accelerator.backward(loss)``,
  ``engine.step()``, ``self.manual_backward(loss)`` in a LightningModule): :func:`method_call`;
- a method the framework itself calls once per batch (``training_step``,
  ``compute_loss``): :func:`framework_hook` gives the plan that
  :mod:`.driver` runs inside a loop standing for the framework's own;
- calling a library object (timm's ``loss_scaler(loss, optimizer)``): :func:`value_call`;
- what a framework-tagged event means for the update (:func:`traits_of`): whether the
  framework zeroes the gradients, divides an accumulated loss, owns the optimizer step.

What library calls do (which call runs backward, steps, scales, wraps a model, builds a
model) is data: the library-effects table of :mod:`.table`, which :mod:`.library`
applies to methods and calls and :mod:`torchward.analysis.facts.catalog` asks for constructors.
The adapters keep what is structure rather than a call's effect: Lightning's and the
Trainer's hooks, ``deepspeed.initialize``'s four results, the distributed wraps.

An adapter answers ``None`` when a call is not its business, so the registry tries them in
order and the engine's own torch semantics apply when none claims the call.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import attrs

from ..facts.values import Value
from .table import FrameworkTraits, current

if TYPE_CHECKING:
    from ..facts.semantic import FunctionInfo, ModuleIndex


@attrs.frozen
class HookPlan:
    """How a framework calls one method of a user's class, once per batch.

    ``framework``: the tag of the events the framework adds after the method returns
    (``"lightning"``); ``backward_returned``: it runs backward on what the method returns
    (Lightning's automatic optimization, a Trainer's ``compute_loss``); ``steps``: it steps
    the optimizer and resets the gradients after each call; ``model_parameter``: the
    parameter the framework passes its model in (``compute_loss(self, model, inputs)``);
    ``self_attributes``: attributes the framework's base class sets on ``self``
    (a Trainer's ``self.accelerator``), for those the class's own ``__init__`` does not.
    """

    framework: str
    backward_returned: bool
    steps: bool
    grad_enabled: bool = True
    model_parameter: str | None = None
    self_attributes: tuple[tuple[str, Value], ...] = ()


class Adapter:
    """One framework's translation. Every hook answers None when the call is not its own."""

    def api(self, run, name: str, node: ast.Call, args: list[Value], kwargs: dict[str, Value]):
        """The value of a call to the imported API ``name`` (arguments already evaluated)."""
        return None

    def method(self, run, receiver: Value, method: str, node: ast.Call):
        """The value of ``receiver.method(...)``; the adapter evaluates the arguments."""
        return None

    def call(self, run, callee: Value, node: ast.Call):
        """The value of calling the object ``callee`` (``loss_scaler(loss, optimizer)``)."""
        return None

    def hook(self, index: ModuleIndex, info: FunctionInfo) -> HookPlan | None:
        """The plan by which the framework calls ``info`` once per batch, if it does."""
        return None


def _registry() -> tuple[Adapter, ...]:
    from . import deepspeed, distributed, library, lightning, transformers

    return (
        lightning.ADAPTER,
        library.ADAPTER,
        deepspeed.ADAPTER,
        transformers.ADAPTER,
        distributed.ADAPTER,
    )


ADAPTERS: tuple[Adapter, ...] = _registry()


def api_call(run, name: str, node: ast.Call, args: list[Value], kwargs: dict[str, Value]):
    for adapter in ADAPTERS:
        value = adapter.api(run, name, node, args, kwargs)
        if value is not None:
            return value
    return None


def method_call(run, receiver: Value, method: str, node: ast.Call):
    for adapter in ADAPTERS:
        value = adapter.method(run, receiver, method, node)
        if value is not None:
            return value
    return None


def value_call(run, callee: Value, node: ast.Call):
    for adapter in ADAPTERS:
        value = adapter.call(run, callee, node)
        if value is not None:
            return value
    return None


def framework_hook(index: ModuleIndex, info: FunctionInfo) -> HookPlan | None:
    if info.class_name is None or not info.is_method:
        return None
    for adapter in ADAPTERS:
        plan = adapter.hook(index, info)
        if plan is not None:
            return plan
    return None


def traits_of(framework: str | None) -> FrameworkTraits | None:
    """What the framework that tagged an event does; None for plain torch."""
    return current().frameworks.get(framework) if framework else None
