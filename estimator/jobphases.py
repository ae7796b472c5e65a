"""The phases of a whole job: the training step of :mod:`.costmodel`, plus what the job does
around it — an evaluation pass at its own batch, frozen layers that run as an inference
forward, and the other models it keeps on the device (:mod:`.jobparts`).

The peak is still the largest phase (``shared/MEMORY-MODEL.md``); the additions are phases
of their own (``evaluation``, ``other models' forward``) or terms of the phases they live
through (the other models' weights in every phase, a teacher's logits from its forward to
the loss's backward), never a sum over the step.
"""

from __future__ import annotations

import attrs

from .cnn import is_modelled
from .costmodel import (
    Phase,
    inference,
    returned_cache,
    stack_tokens,
    trainable_share,
    training,
    workspace_bytes,
)
from .hardware import Gpu
from .jobparts import device_model_shapes
from .precision import numerics
from .resolve import Resolved
from .runconfig import Field
from .tensor_parallel import shard
from .trainable import Trainable, head_width_unknown
from .trainedtail import returns_cache

__all__ = ["freezing_not_interpreted", "other_models", "phases", "structure_notes"]


def phases(r: Resolved, gpu: Gpu | None = None) -> list[Phase]:
    """The phases of one step of the resolved job, per GPU."""
    r = shard(r)  # a tensor-parallel job: what one GPU of its group holds
    mode = r.config.value("mode")
    work = workspace_bytes(gpu)
    if mode == "train":
        part = trainable_share(r)
        frozen_forward = 0.0
        if part is not None and part.saved_layers is not None:
            # the frozen layers' live set; a new head instead of the LM head: no vocabulary
            # logits (the cache they return is a term of the training phases)
            shape = r.shape if part.head_outputs is None else attrs.evolve(r.shape, lm_head=False)
            frozen_forward = inference(_as_inference(r, shape=shape), False, work, gpu)[0].parts[
                "activations"
            ]
        found = training(r, work, gpu, frozen_forward)
        modelled = r.shape.stacks or (r.shape.cnn is not None and is_modelled(r.shape.cnn))
        if r.config.eval_batch_size is not None and modelled:
            found.append(_evaluation(r, found[-1], work, gpu, part))
    else:
        found = inference(r, mode == "generate", work, gpu)
    return _with_other_models(r, found, work, gpu)


def _as_inference(r: Resolved, **changes) -> Resolved:
    """``r`` as a no_grad forward (of its own model, or of ``changes``' arch and shape)."""
    config = attrs.evolve(
        r.config,
        mode=Field("inference", "no_grad forward"),
        checkpointing=Field(False, "no_grad forward"),
        lora_rank=None,
        frozen=None,
        device_models=None,
    )
    return attrs.evolve(r, config=config, **changes)


def _evaluation(
    r: Resolved, step: Phase, work: float, gpu: Gpu | None, part: Trainable | None
) -> Phase:
    """The evaluation pass between training steps, at its own batch: a ``no_grad`` forward
    beside everything training keeps (weights, optimizer state, and the gradients of the
    last step, which live until the next ``zero_grad``) — the peak of a script that
    evaluates at a larger batch than it trains (MNIST-style ``test_batch_size=1000``). A new
    head in place of the LM head computes no vocabulary logits there either."""
    at_eval_batch = attrs.evolve(r.config, batch_size=r.config.eval_batch_size)
    evaluated = _as_inference(attrs.evolve(r, config=at_eval_batch))
    cache = 0.0
    if part is not None and part.head_outputs is not None:
        n = numerics(r.config.value("dtype"))
        cache = returned_cache(evaluated, n, int(evaluated.config.value("batch_size")))
        evaluated = attrs.evolve(evaluated, shape=attrs.evolve(r.shape, lm_head=False))
    forward = inference(evaluated, False, work, gpu)
    parts = dict(step.parts)
    for term in ("kv_cache", "activations", "temporaries"):
        parts[term] = forward[0].parts[term]
    parts["kv_cache"] += cache
    return Phase("evaluation", parts)


def other_models(r: Resolved) -> tuple[list[tuple[str, Resolved]], list[str]]:
    """(sized, unsized) other models on the device: ``sized`` holds ``(label, the model as a
    no_grad forward of this job)``; ``unsized`` labels those the estimate cannot size — the
    catalog does not know them, their activations are not modelled (a diffusion UNet), the
    job lacks the input size their forward needs, or they are trained too (their
    activations, gradients and state are not modelled)."""
    models = r.config.value("device_models") or ()
    found, unknown = device_model_shapes(tuple(models))
    label = lambda m: f"`{m.variable}` ({m.name})" if m.variable != m.name else f"`{m.name}`"  # noqa: E731
    sized, unsized = [], [label(m) for m in unknown]
    for model, arch, shape in found:
        needs = "seq_len" if shape.stacks and shape.stacks[0].stream != "image" else "image_size"
        modelled = bool(shape.stacks) or (
            shape.kind == "cnn" and shape.cnn is not None and is_modelled(shape.cnn)
        )
        if model.trained or not modelled or r.config.value(needs) is None:
            unsized.append(label(model))
            continue
        sized.append((label(model), _as_inference(r, arch=arch, shape=shape)))
    return sized, unsized


def _with_other_models(r: Resolved, found: list[Phase], work: float, gpu) -> list[Phase]:
    """Every phase with the other models' weights; training adds their no_grad forward (its
    one-layer live set, before the trained model's forward) and keeps a decoder's logits (a
    teacher's) and a distillation loss's tensors through the forward and the loss's backward
    (gpt2-gpt2-medium-teacher-bf16-b8-s1024 in tests/calibration/fixtures/phase_peaks.json)."""
    sized, _ = other_models(r)
    if not sized:
        return found
    n = numerics(r.config.value("dtype"))
    batch = int(r.config.value("batch_size"))
    weights = forward = kept = 0.0
    for _label, other in sized:
        # a frozen model is held in the job's weight dtype (fp32 under autocast)
        weights += other.shape.params * n.weight
        forward = max(forward, inference(other, False, 0.0, gpu)[0].parts["activations"])
        if other.shape.lm_head and r.config.value("mode") == "train":
            # a teacher's logits and their softmax, the distillation loss's target (KL between
            # softmaxes), both kept until the loss's backward
            tokens = stack_tokens(other.shape.stacks[-1], other)[0] * batch
            kept += 2 * n.activation * other.shape.vocab * tokens
    out = []
    for phase in found:
        parts = dict(phase.parts, weights=phase.parts["weights"] + weights)
        if phase.name in ("forward", "backward start"):
            parts["activations"] += kept
        out.append(Phase(phase.name, parts))
    if r.config.value("mode") == "train":
        start = dict(out[0].parts, activations=forward)
        out.insert(1, Phase("other models' forward", start))
    return out


def freezing_not_interpreted(r: Resolved) -> bool:
    """The script freezes parameters in a way :mod:`.jobparts` does not interpret: every
    parameter is then counted trainable, an upper bound that can turn a fit into "oom" —
    the estimate's confidence is low (TW010 stays silent)."""
    if r.config.value("frozen") is None or r.config.value("mode") != "train":
        return False
    if r.config.value("lora_rank"):
        return False
    # a new head whose width the script does not give: its logits are an upper bound
    return trainable_share(r) is None or head_width_unknown(r.config.value("frozen"))


def structure_notes(r: Resolved) -> tuple[list[str], list[str]]:
    """(notes, unknowns): what the estimate did with the script's frozen parameters and other
    models; ``unknowns`` are "unknown: ..." sentences for terms it could not size (the
    verdict is then "unknown": such a model can dominate)."""
    notes: list[str] = []
    freezing = r.config.value("frozen")
    where = r.config.frozen.source if r.config.frozen is not None else ""
    if freezing is not None and r.config.value("mode") == "train":
        part = trainable_share(r)
        if r.config.value("lora_rank"):
            pass  # LoRA freezes the base itself; its adapters are what trains
        elif part is None:
            notes.append(
                f"{freezing} ({where}): not interpreted, so every parameter "
                "is counted trainable — gradients, optimizer state and activations are an "
                "upper bound"
            )
        else:
            if part.saved_layers is None:
                saved = "every layer saves activations"
                if part.frozen_on_path:
                    saved += f" ({part.frozen_on_path} frozen ones only what the gradient needs)"
            elif part.saved_layers == 0:
                saved = "no layer saves activations (the frozen part runs as an inference forward)"
            else:
                saved = (
                    f"the last {part.saved_layers} layer(s) save activations, the frozen ones "
                    "run as an inference forward"
                )
            if part.head_outputs is not None:
                width = (
                    f"{part.head_outputs} outputs"
                    if not head_width_unknown(freezing)
                    else f"width not read, taken as the hidden size ({part.head_outputs})"
                )
                saved += f"; a new head replaces the LM head ({width}): no vocabulary logits" + (
                    "; the KV cache the forward returns is counted" if returns_cache(r) else ""
                )
            notes.append(
                f"{freezing} ({where}): gradients and optimizer state for "
                f"{part.params:,.0f} trainable parameters; {saved}"
            )
    sized, unsized = other_models(r)
    for label, other in sized:
        notes.append(
            f"{label} is also on the device: {other.shape.params:,} parameters held in the "
            "job's weight dtype, and its no_grad forward counted as a phase"
        )
    unknowns = [
        f"unknown: {label} is also loaded on the device and could not be sized (not in the "
        "catalog, activations not modelled, no input size for it, or trained as well); the "
        "estimate is a lower bound"
        for label in unsized
    ]
    return notes, unknowns
