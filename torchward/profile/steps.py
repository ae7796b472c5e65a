"""The steps a profile runs: a training step, an inference pass, a generation.

Each runs under a :class:`~.counter.LiveStorageCounter` and names its phases:

- training (as ``train_step`` of the calibration harness, and as a plain PyTorch loop
  writes it): one warm-up step so that the optimizer state exists, then
  ``zero_grad(set_to_none=True)`` → *step start*, forward + loss → *forward*,
  ``loss.backward()`` with the outputs still referenced → *backward*, ``optimizer.step()``
  → *optimizer step*;
- inference: a ``no_grad`` forward (*forward*);
- generation: the prompt's forward (*prefill*) then greedy decoding (*decode*): with a
  ``DynamicCache`` for transformers models, by re-running the growing sequence for
  others (a model without a cache API recomputes it, as nanoGPT's ``generate`` does).

The batch is what the model's first layer takes (:func:`batch_maker`) unless the user
names a function that makes one (``--inputs module:function``); the loss is the model's
own when its output carries one (``out.loss``, or a scalar it returns with the
targets), otherwise cross-entropy against random targets shaped like its logits.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .counter import LiveStorageCounter
from .emulation import cuda_autocast
from .request import ProfileJob

__all__ = ["Batch", "batch_maker", "run_step", "torch_dtype"]

_HALF = {"bf16": torch.bfloat16, "fp16": torch.float16}
_TARGET_NAMES = ("targets", "target", "labels", "label", "y")


def torch_dtype(dtype: str) -> torch.dtype | None:
    """The parameter dtype of a pure 16-bit job (``None``: fp32 parameters)."""
    return _HALF.get(dtype)


def _precision(dtype: str, device: str):
    if dtype.startswith("amp-"):
        half = _HALF[dtype[4:]]
        if device == "cuda":
            return cuda_autocast(half)
        return torch.autocast(device, dtype=half)
    return contextlib.nullcontext()


@dataclass
class Batch:
    """One batch: how to call the model, and what to compare its output with."""

    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    targets: Any = None
    token_ids: Any = None  # the input ids of a token model (generation continues them)


class InputsUnknown(ValueError):
    """The model's input could not be inferred: the user names a function that makes it."""


def _first_input_layer(model: nn.Module) -> nn.Module | None:
    for module in model.modules():
        if isinstance(
            module,
            (nn.Embedding, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear, nn.RNNBase, nn.LayerNorm),
        ):
            return module
    return None


def _is_transformers(model: nn.Module) -> bool:
    return type(model).__module__.startswith("transformers.") and hasattr(model, "config")


def _forward_takes_targets(model: nn.Module) -> str | None:
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return next((n for n in names[1:] if n in _TARGET_NAMES), None)


def _call_with_accepted(fn: Callable, **values: Any) -> Any:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(**values)
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return fn(**values)
    return fn(**{k: v for k, v in values.items() if k in params})


def batch_maker(
    model: nn.Module, job: ProfileJob, device: str, inputs: Callable | None = None
) -> Callable[[], Batch]:
    """A function making one fresh batch for ``model`` on ``device``."""
    b, s, image = job.batch_size, job.seq_len, job.image_size
    if inputs is not None:

        def user_batch() -> Batch:
            made = _call_with_accepted(
                inputs,
                model=model,
                batch_size=b,
                seq_len=s,
                image_size=image,
                device=torch.device(device),
                mode=job.mode,
            )
            if isinstance(made, dict):
                return Batch(kwargs=made, token_ids=made.get("input_ids"))
            if isinstance(made, tuple):
                return Batch(args=made)
            return Batch(args=(made,))

        return user_batch

    if _is_transformers(model):
        config: Any = model.config
        main = getattr(model, "main_input_name", "input_ids")

        def hf_batch() -> Batch:
            if main == "pixel_values":
                labels = torch.randint(0, getattr(config, "num_labels", 2), (b,), device=device)
                pixels = torch.randn(b, 3, image, image, device=device)
                return Batch(kwargs={"pixel_values": pixels, "labels": labels})
            ids = torch.randint(0, config.vocab_size, (b, s), device=device)
            if type(model).__name__.endswith("ForSequenceClassification"):
                labels = torch.randint(0, config.num_labels, (b,), device=device)
            else:
                labels = ids  # a language model (or seq2seq) with target = source
            return Batch(kwargs={"input_ids": ids, "labels": labels}, token_ids=ids)

        return hf_batch

    first = _first_input_layer(model)
    takes = _forward_takes_targets(model)
    float_dtype = torch_dtype(job.dtype) or torch.float32

    if isinstance(first, nn.Embedding):
        vocab = first.num_embeddings

        def token_batch() -> Batch:
            ids = torch.randint(0, vocab, (b, s), device=device)
            kwargs = {takes: ids} if takes and job.mode == "train" else {}
            return Batch(args=(ids,), kwargs=kwargs, targets=ids, token_ids=ids)

        return token_batch
    if isinstance(first, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        spatial = {nn.Conv1d: (s,), nn.Conv2d: (image, image), nn.Conv3d: (s, image, image)}
        image_shape = (b, first.in_channels, *spatial[type(first)])

        def image_batch() -> Batch:
            x = torch.randn(*image_shape, device=device, dtype=float_dtype)
            return Batch(args=(x,))

        return image_batch
    if isinstance(first, (nn.Linear, nn.RNNBase, nn.LayerNorm)):
        if isinstance(first, nn.Linear):
            shape: tuple[int, ...] = (b, first.in_features)
        elif isinstance(first, nn.LayerNorm):
            shape = (b, s, *first.normalized_shape)
        else:
            shape = (b, s, first.input_size) if first.batch_first else (s, b, first.input_size)

        def vector_batch() -> Batch:
            return Batch(args=(torch.randn(*shape, device=device, dtype=float_dtype),))

        return vector_batch
    raise InputsUnknown(
        f"cannot tell what {type(model).__name__} takes as input (its first layer is "
        f"{type(first).__name__ if first is not None else 'none'}); name a function that "
        "makes one batch with --inputs module:function"
    )


def _loss_of(out: Any, batch: Batch) -> torch.Tensor:
    """The model's own loss when its output carries one, else cross-entropy / mean."""
    loss = getattr(out, "loss", None)
    if isinstance(out, dict):
        loss = out.get("loss", loss)
    if isinstance(loss, torch.Tensor):
        return loss
    tensors = list(out) if isinstance(out, (tuple, list)) else [out]
    scalars = [t for t in tensors if isinstance(t, torch.Tensor) and t.dim() == 0]
    if scalars:
        return scalars[0]
    logits = getattr(out, "logits", None)
    if logits is None:
        logits = next((t for t in tensors if isinstance(t, torch.Tensor)), None)
    if logits is None:
        raise ValueError("the model's output holds no tensor to compute a loss from")
    ids = batch.targets
    if ids is not None and logits.dim() == ids.dim() + 1 and logits.shape[:-1] == ids.shape:
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids.reshape(-1))
    if logits.dim() == 2 and logits.is_floating_point():
        labels = torch.randint(0, logits.size(-1), (logits.size(0),), device=logits.device)
        return F.cross_entropy(logits, labels)
    return logits.float().mean()


def _optimizer(model: nn.Module, name: str) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters to optimize")
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)
    if name == "adamw-fused":
        return torch.optim.AdamW(params, lr=1e-4, fused=True)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-4, foreach=True)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, foreach=True)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=True)
    if name == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-2, foreach=True)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=1.0, foreach=True)
    if name == "adagrad":
        return torch.optim.Adagrad(params, lr=1e-2, foreach=True)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=1e-2, foreach=True)
    raise ValueError(f"optimizer {name!r} cannot be profiled")


def _call(model: nn.Module, batch: Batch) -> Any:
    return model(*batch.args, **batch.kwargs)


def _train(counter: LiveStorageCounter, model, make_batch, job: ProfileJob, device: str) -> None:
    model.train()
    opt = _optimizer(model, job.optimizer)
    hooks = [
        p.register_post_accumulate_grad_hook(lambda p: counter.tag(p.grad, "gradients"))
        for p in model.parameters()
        if p.requires_grad
    ]

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        counter.set_phase("step start")
        batch = make_batch()
        counter.set_phase("forward")
        with _precision(job.dtype, device):
            out = _call(model, batch)
            loss = _loss_of(out, batch)
        counter.set_phase("backward")
        loss.backward()  # the outputs stay referenced until here, as `out = model(x)` keeps them
        del loss, out, batch
        counter.set_phase("optimizer step")
        opt.step()

    try:
        step()  # warm-up: the optimizer state now exists, as in every later step
        opt.zero_grad(set_to_none=True)
        for state in opt.state.values():
            for value in state.values():
                counter.tag(value, "optimizer_state")
        counter.reset_peak()
        step()
        opt.zero_grad(set_to_none=True)
    finally:
        for hook in hooks:
            hook.remove()


def _inference(counter: LiveStorageCounter, model, make_batch, job: ProfileJob, device) -> None:
    model.eval()
    with torch.no_grad():
        batch = make_batch()
        counter.reset_peak()
        counter.set_phase("forward")
        with _precision(job.dtype, device):
            out = _call(model, batch)
        del out


def _logits(out: Any) -> torch.Tensor:
    logits = getattr(out, "logits", None)
    if logits is None:
        logits = out[0] if isinstance(out, (tuple, list)) else out
    return logits


def _generate(counter: LiveStorageCounter, model, make_batch, job: ProfileJob, device) -> None:
    model.eval()
    with torch.no_grad():
        batch = make_batch()
        ids = batch.token_ids
        if ids is None:
            raise ValueError("generation needs a token model (its first layer an nn.Embedding)")
        counter.reset_peak()
        counter.set_phase("prefill")
        if _is_transformers(model):
            from transformers import DynamicCache

            cache = DynamicCache(config=model.config)
            with _precision(job.dtype, device):
                out = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
            scores = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
            cache = out.past_key_values
            del out
            token = scores.argmax(-1, keepdim=True)
            counter.set_phase("decode")
            for _ in range(job.max_new_tokens):
                for layer in getattr(cache, "layers", ()):
                    counter.tag(getattr(layer, "keys", None), "kv_cache")
                    counter.tag(getattr(layer, "values", None), "kv_cache")
                del scores
                with _precision(job.dtype, device):
                    out = model(
                        input_ids=token, past_key_values=cache, use_cache=True, logits_to_keep=1
                    )
                scores = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
                cache = out.past_key_values
                del out
                token = scores.argmax(-1, keepdim=True)
            del cache, scores, token
            return
        with _precision(job.dtype, device):
            logits = _logits(_call(model, Batch(args=(ids,))))
        token = logits[:, -1, :].argmax(-1, keepdim=True)
        del logits
        counter.set_phase("decode")
        for _ in range(job.max_new_tokens):
            ids = torch.cat([ids, token], dim=1)
            with _precision(job.dtype, device):
                logits = _logits(_call(model, Batch(args=(ids,))))
            token = logits[:, -1, :].argmax(-1, keepdim=True)
            del logits


def run_step(
    counter: LiveStorageCounter,
    model: nn.Module,
    job: ProfileJob,
    device: str,
    inputs: Callable | None = None,
) -> None:
    """Run ``job``'s step on ``model`` under ``counter`` (already entered)."""
    for p in model.parameters():
        counter.tag(p, "weights")
    for b in model.buffers():
        counter.tag(b, "weights")
    make_batch = batch_maker(model, job, device, inputs)
    runner = {"train": _train, "inference": _inference, "generate": _generate}[job.mode]
    runner(counter, model, make_batch, job, device)
