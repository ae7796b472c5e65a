"""``VRAMGuard``: measure one step of the live model before training starts (needs torch).

Part of the opt-in ``[profile]`` extra; imported by the user's training script, never by
the linter, the estimator or the server::

    from torchward.guard import VRAMGuard

    with VRAMGuard(model, optimizer, batch_shape=(16, 1024), dtype="amp-bf16"):
        for batch in loader:
            ...

On entry it runs one step of *this* model and optimizer the way
``torchward profile`` does — forward, loss, backward, ``optimizer.step()`` — on fake
copies of the parameters (``FakeTensorMode``: no memory is allocated, the live weights
are untouched, the real optimizer state is untouched), and compares the projected
peak with the memory the device can still give: free memory plus what PyTorch already
holds (the live model is part of the projection). It raises :class:`VRAMError` only when
the run cannot fit even at the optimistic end; with ``strict=True`` also when it
probably will not (the pessimistic end). On exit, on a GPU, it reports the projection
against ``torch.cuda.max_memory_allocated()``.

:func:`check_vram` is the same check as a function: it returns the :class:`GuardReport`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .estimator.units import size

__all__ = ["GuardReport", "VRAMError", "VRAMGuard", "check_vram"]

_FRAGMENTATION = {"nominal": 0.105, "low": 0.062, "high": 0.125}
_WORKSPACE_ALLOWANCE = 0.05  # kernel workspaces a fake device cannot see (MEMORY-MODEL.md)


class VRAMError(RuntimeError):
    """The measured step does not fit the device's free memory."""

    def __init__(self, message: str, report: GuardReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class GuardReport:
    """The projection of one step and, after the run, what the GPU actually used."""

    projected_allocated: int  # peak of live tensor storage in the measured step
    projected_low: int  # with the allocator's fragmentation, optimistic
    projected_high: int  # pessimistic (fragmentation, kernel workspaces)
    peak_phase: str
    phases: dict[str, int]
    available: int | None  # free device memory + what PyTorch already holds; None on CPU
    verdict: str | None  # fits / tight / oom (None: no device limit known)
    actual_allocated: int | None = None  # torch.cuda.max_memory_allocated() after the run

    def summary(self) -> str:
        text = (
            f"torchward VRAMGuard: projected peak {size(self.projected_allocated)} of tensors "
            f"({size(self.projected_low)} - {size(self.projected_high)} on the card) "
            f"in {self.peak_phase}"
        )
        if self.available is not None:
            text += f"; {size(self.available)} available → {self.verdict}"
        if self.actual_allocated is not None:
            ratio = self.actual_allocated / max(1, self.projected_allocated) - 1
            text += (
                f"; used {size(self.actual_allocated)} "
                f"(max_memory_allocated, {ratio:+.1%} against the projection)"
            )
        return text


def _device_of(model: Any) -> Any:
    import torch

    for tensor in model.parameters():
        return tensor.device
    return torch.device("cpu")


def _available_bytes(device: Any) -> int | None:
    import torch

    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    free, _total = torch.cuda.mem_get_info(device)
    return int(free + torch.cuda.memory_reserved(device))


def _fake_optimizer(optimizer: Any, model: Any, params: dict, trainable: list) -> Any:
    """The live optimizer's class and hyperparameters (group by group) over the fake copies."""
    import inspect

    accepted = inspect.signature(type(optimizer).__init__).parameters
    defaults = {k: v for k, v in optimizer.defaults.items() if k in accepted}
    by_id = {id(p): params[n] for n, p in model.named_parameters()}
    groups = []
    for group in optimizer.param_groups:
        fake_group = {k: v for k, v in group.items() if k == "params" or k in accepted}
        fake_group["params"] = [by_id[id(p)] for p in group["params"] if id(p) in by_id]
        groups.append(fake_group)
    if not any(g["params"] for g in groups):
        groups = [{"params": trainable}]
    return type(optimizer)(groups, **defaults)


def _measure(
    model: Any,
    optimizer: Any,
    batch_shape: tuple[int, ...] | None,
    example_inputs: Any,
    dtype: str,
    inputs: Callable | None,
    loss_fn: Callable | None,
) -> tuple[int, str, dict[str, int]]:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.func import functional_call
    from torch.utils._pytree import tree_map

    from .profile.counter import BLOCK, LiveStorageCounter
    from .profile.request import ProfileJob
    from .profile.steps import Batch, _loss_of, _precision, batch_maker

    device = _device_of(model)
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    counter = LiveStorageCounter(device.type, BLOCK if device.type == "cuda" else 1)
    was_training = model.training
    with fake_mode, counter:
        params = {
            name: fake_mode.from_tensor(p).detach().requires_grad_(p.requires_grad)
            for name, p in model.named_parameters()
        }
        buffers = {name: fake_mode.from_tensor(b) for name, b in model.named_buffers()}
        for tensor in [*params.values(), *buffers.values()]:
            counter.tag(tensor, "weights")
        if example_inputs is not None:

            def make() -> Batch:
                fake = tree_map(
                    lambda t: fake_mode.from_tensor(t) if isinstance(t, torch.Tensor) else t,
                    example_inputs,
                )
                if isinstance(fake, dict):
                    return Batch(kwargs=fake)
                return Batch(args=fake if isinstance(fake, tuple) else (fake,))

        else:
            shape = tuple(batch_shape or (1,))
            job = ProfileJob(
                mode="train" if optimizer is not None else "inference",
                batch_size=shape[0],
                seq_len=shape[1] if len(shape) > 1 else 1,
                image_size=shape[-1] if len(shape) > 2 else 224,
                dtype=dtype,
            )
            make = batch_maker(model, job, device.type, inputs)

        def forward(batch: Batch) -> Any:
            return functional_call(model, {**params, **buffers}, batch.args, batch.kwargs)

        def loss_of(out: Any, batch: Batch) -> Any:
            return loss_fn(out, batch) if loss_fn is not None else _loss_of(out, batch)

        if optimizer is None:
            with torch.no_grad():
                batch = make()
                counter.reset_peak()
                counter.set_phase("forward")
                with _precision(dtype, device.type):
                    out = forward(batch)
                del out
        else:
            trainable = [p for p in params.values() if p.requires_grad]
            hooks = [
                p.register_post_accumulate_grad_hook(lambda p: counter.tag(p.grad, "gradients"))
                for p in trainable
            ]
            fake_opt = _fake_optimizer(optimizer, model, params, trainable)

            def step() -> None:
                fake_opt.zero_grad(set_to_none=True)
                counter.set_phase("step start")
                batch = make()
                counter.set_phase("forward")
                with _precision(dtype, device.type):
                    out = forward(batch)
                    loss = loss_of(out, batch)
                counter.set_phase("backward")
                loss.backward()
                del loss, out, batch
                counter.set_phase("optimizer step")
                fake_opt.step()

            model.train()
            try:
                step()
                fake_opt.zero_grad(set_to_none=True)
                for state in fake_opt.state.values():
                    for value in state.values():
                        counter.tag(value, "optimizer_state")
                counter.reset_peak()
                step()
            finally:
                for hook in hooks:
                    hook.remove()
                model.train(was_training)
    return counter.peak, counter.peak_phase, dict(counter.phase_peaks)


def check_vram(
    model: Any,
    optimizer: Any = None,
    batch_shape: tuple[int, ...] | None = None,
    *,
    example_inputs: Any = None,
    dtype: str = "fp32",
    inputs: Callable | None = None,
    loss_fn: Callable | None = None,
    strict: bool = False,
    available_bytes: int | None = None,
) -> GuardReport:
    """Measure one step (training when ``optimizer`` is given, else inference) and judge it.

    ``batch_shape``: ``(batch, seq)`` for a token model, ``(batch, channels, h, w)`` or
    ``(batch, ..., size)`` for others (the first layer decides, as in ``torchward profile``);
    or ``example_inputs``: one real batch (tensor, tuple or dict; only its shapes are used).
    ``dtype``: ``fp32``, ``amp-bf16`` / ``amp-fp16`` (the step runs under autocast).
    ``available_bytes`` overrides the device's free memory (e.g. to plan for another GPU).
    Raises :class:`VRAMError` when the optimistic end does not fit (``strict``: the
    pessimistic end).
    """
    allocated, phase, phases = _measure(
        model, optimizer, batch_shape, example_inputs, dtype, inputs, loss_fn
    )
    low = int(allocated * (1 + _FRAGMENTATION["low"]))
    high = int(allocated * (1 + _WORKSPACE_ALLOWANCE) * (1 + _FRAGMENTATION["high"]))
    available = (
        available_bytes if available_bytes is not None else _available_bytes(_device_of(model))
    )
    verdict = None
    if available is not None:
        verdict = "oom" if low > available else "tight" if high > available else "fits"
    report = GuardReport(allocated, low, high, phase, phases, available, verdict)
    if verdict == "oom" or (strict and verdict == "tight"):
        raise VRAMError(
            report.summary()
            + (
                ": it cannot fit"
                if verdict == "oom"
                else ": it probably does not fit (strict=True)"
            ),
            report,
        )
    return report


class VRAMGuard(contextlib.AbstractContextManager):
    """Context manager form of :func:`check_vram`; reports projected vs used peak on exit."""

    def __init__(
        self,
        model: Any,
        optimizer: Any = None,
        batch_shape: tuple[int, ...] | None = None,
        *,
        report: Callable[[str], None] | None = None,
        **options: Any,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.batch_shape = batch_shape
        self.options = options
        self.report_to = report or (lambda text: print(text, file=sys.stderr))
        self.report: GuardReport | None = None

    def __enter__(self) -> VRAMGuard:
        import torch

        self.report = check_vram(self.model, self.optimizer, self.batch_shape, **self.options)
        device = _device_of(self.model)
        if device.type == "cuda" and torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats(device)
        self.report_to(self.report.summary())
        return self

    def __exit__(self, *exc_info: Any) -> None:
        import torch

        device = _device_of(self.model)
        if self.report is not None and device.type == "cuda" and torch.cuda.is_available():
            self.report.actual_allocated = int(torch.cuda.max_memory_allocated(device))
            self.report_to(self.report.summary())
        return None
