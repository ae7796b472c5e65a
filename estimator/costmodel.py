"""The live set of each phase of a step, per GPU; the peak is the largest phase.

Why phases and not a sum (``shared/MEMORY-MODEL.md``): at the start of backward every
activation is saved but (with ``zero_grad(set_to_none=True)``) almost no gradient exists;
at the optimizer step the activations are gone but gradients, state and the optimizer's
temporaries are live. Summing both double-counts; the reference tool's sum over-estimates
7-8B bf16 training by 35-50%. Backward in between frees activations as gradients appear,
so its live set moves linearly between the two ends and never exceeds the larger.

Phases modelled:

- training: ``step start`` (weights, state, persisting grads), ``forward`` (+ saved
  activations, autocast copies, forward-only loss temporaries), ``backward start`` (+ the
  loss / logits gradients), ``optimizer step`` (weights, grads, state, step temporaries);
- inference: ``forward`` (weights + one layer's live intermediates + logits);
- generation: ``prefill`` (the whole prompt at once, the cache filling) and ``decode``
  (the full cache, one token at a time).

Each phase is a dict of the JSON term names (``weights``, ``gradients``,
``optimizer_state``, ``master_weights``, ``activations``, ``kv_cache``, ``temporaries``);
the CUDA context and fragmentation are added by :mod:`.estimate`.

Past 400 lines (479) on purpose: each phase's live set is read next to the others, so
that what one phase frees the next does not count twice; the training, inference and
evaluation builders stay together for that reason.
"""

from __future__ import annotations

import attrs

from .activations import (
    attention_live_per_token,
    cached_keys_per_token,
    cross_kv_per_source_token,
    forward_transient_per_token,
    live_per_token,
    math_scores_per_token,
    matmul_inputs_per_token,
    saved_per_token,
    saved_terms_per_token,
    scores_per_token,
)
from .cnn import cnn_activation_elements, inference_live_elements, is_modelled
from .hardware import Gpu
from .lora import lora_params
from .precision import QUANTIZED_WEIGHT_BYTES, numerics, optimizer_cost
from .resolve import Resolved
from .shape import ModelShape, Stack
from .trainable import Trainable, trainable_parts
from .trainedtail import returns_cache, tail_backward, use_cache

__all__ = [
    "WORKSPACE_BYTES",
    "NothingToGenerate",
    "Phase",
    "attention_path",
    "inference",
    "kv_cache_bytes",
    "returned_cache",
    "stack_tokens",
    "trainable_share",
    "training",
    "workspace_bytes",
]

# cuBLAS workspace: ≈ 8 MiB per stream and thread (shared/MEMORY-MODEL.md, measured on a
# T4); the backward runs on its own thread, so training holds two. Checked against the real
# T4 runs (shared/calibration/t4_measured_peaks.json): where the peak is the optimizer step
# (distilbert / bert b4 × 128), real max_memory_allocated is 15.0 / 19.1 MiB above the
# fake-tensor peak (tests/calibration/fixtures/t4_rules_peaks.json), i.e. 2 × 8 MiB.
# Hopper (sm90+) cuBLAS asks for 32 MiB (cuBLAS documentation, "cublasSetWorkspace":
# recommended sizes per arch).
WORKSPACE_BYTES = {"pre-hopper": 8 * 2**20, "hopper": 32 * 2**20}

TERMS = (
    "weights",
    "gradients",
    "optimizer_state",
    "master_weights",
    "activations",
    "kv_cache",
    "temporaries",
)


class NothingToGenerate(LookupError):
    """``generate`` asked of a model without a language-model head (a CNN, a ViT, an
    encoder): one line, answered by the CLI as a configuration error (exit 2)."""


@attrs.frozen
class Phase:
    name: str
    parts: dict
    formulas: dict = attrs.field(factory=dict)
    """Term name → how its bytes were computed, with the inputs (``estimate --explain``)."""

    @property
    def total(self) -> float:
        return sum(self.parts.values())


def _phase(name: str, formulas: dict | None = None, **parts: float) -> Phase:
    kept = {t: f for t, f in (formulas or {}).items() if parts.get(t)}
    return Phase(name, {t: float(parts.get(t, 0.0)) for t in TERMS}, kept)


def _count(value: float) -> str:
    return f"{int(round(value)):,}"


def stack_tokens(stack: Stack, r: Resolved) -> tuple[int, int]:
    """(tokens per sequence, cross-attention source tokens) for one stack."""
    cfg, shape = r.config, r.shape
    if stack.stream == "image":
        side = int(cfg.value("image_size") or shape.image_size or 224) // (shape.patch_size or 16)
        return side * side + 1, 0
    if stack.stream == "caption":  # a contrastive text tower: captions of a fixed length
        return stack.tokens, 0
    seq = int(cfg.value("seq_len"))
    if stack.stream == "src" and r.arch.model_type == "whisper":
        return 1500, 0  # 30 s of audio → 1500 encoder frames, whatever the text length
    source = 1500 if r.arch.model_type == "whisper" else seq
    return seq, source if stack.cross_attention else 0


def attention_path(r: Resolved, gpu: Gpu | None = None) -> str:
    """Which attention computation runs: ``eager``, ``math`` (SDPA's fp32 math path) or
    ``fused`` (SDPA's flash or memory-efficient kernel: no score tensor is kept).

    SDPA picks its kernel by the GPU's compute capability (PyTorch's sdp_utils): flash needs
    sm80+, the memory-efficient kernel runs fp16 / fp32 from sm50 but bf16 only on sm80+ —
    torch 2.13's mem_eff_attention/kernels/cutlassF.h declares f16 kernels for sm50 / sm70 /
    sm75 / sm80 and bf16 ones for sm80 only. So ``sdpa`` on a T4 (sm75) in fp16 still keeps
    no scores (the fixtures t4-*-sdpa equal the sm80 ones byte for byte), but in bf16 it
    falls back to the math path; with no GPU named, the sm80+ rules apply. ``math`` names the
    math path outright (fused kernels disabled, e.g. ``sdpa_kernel(SDPBackend.MATH)``): the
    reference project's T4 runs ("flash_attention": false) are reproduced by it within 2%
    and by no other path (docs/estimator-accuracy.md).
    """
    attention = r.config.value("attention")
    if r.shape.eager_only or attention == "eager":
        return "eager"
    if attention == "math":
        return "math"
    sm = gpu.sm_version if gpu is not None else None
    if attention == "sdpa" and sm is not None:
        dtype = str(r.config.value("dtype") or "")
        if sm < 50 or (sm < 80 and "bf16" in dtype):
            return "math"
    return "fused"


def _fp32_input(n, image: int) -> float:
    """Under autocast the fp32 image batch stays referenced beside the 16-bit copy the first
    convolution saves (which the activation walks count). A pure 16-bit model is fed images
    of its own dtype (a convolution takes no other): the walks' pixels are the batch
    (convnext train bf16 b8 on the oracle: +13.1% with an fp32 batch and a double-counted
    block tensor, -0.4% after: estimator/cnn.py, ``_convnext``)."""
    return 4 * 3 * image * image if n.activation != 4 and n.weight != n.activation else 0.0


def _training_activations(
    r: Resolved, n, batch: int, path: str = "fused", part: Trainable | None = None
) -> tuple[float, float, float]:
    """(saved activations, forward-only loss temporaries, backward-start extra) per GPU.

    ``part``: with frozen parameters, only the trailing layers from the first trainable one
    save activations (:mod:`.jobparts`)."""
    shape = r.shape
    saving = None if part is None else part.saved_layers
    if not shape.stacks:
        if shape.cnn is None or not is_modelled(shape.cnn):
            return 0.0, 0.0, 0.0
        if saving == 0:  # a frozen backbone: only the head's (pooled) input is saved
            return 0.0, 0.0, 0.0
        image = int(r.config.value("image_size"))
        elements, _ = cnn_activation_elements(shape.cnn, image)
        return (elements * n.activation + _fp32_input(n, image)) * batch, 0.0, 0.0
    checkpointing = bool(r.config.value("checkpointing"))
    eager, math = path == "eager", path == "math"
    # a trained LM's forward fills a KV cache (a partly trained one: counted whole, below)
    caching = part is None and returns_cache(r) and not r.config.value("checkpointing")
    saved = 0.0
    one_layer = 0.0
    remaining = {}  # layers of each stack that save, allotted from the output side
    for stack in reversed(shape.stacks):
        layers = stack.layers if saving is None else min(stack.layers, saving)
        saving = None if saving is None else saving - layers
        remaining[id(stack)] = layers
    for stack in shape.stacks:
        seq, source = stack_tokens(stack, r)
        per = saved_per_token(
            stack, n, eager=eager, math=math, context=seq, cross_context=source, caching=caching
        )
        layer = per * seq * batch + cross_kv_per_source_token(stack, n) * source * batch
        layers = remaining[id(stack)]
        if checkpointing:  # each layer keeps its input; one layer is recomputed at a time
            saved += layers * n.residual * stack.hidden * seq * batch
            one_layer = max(one_layer, layer if layers else 0.0)
        else:
            saved += layers * layer
            if part is not None and stack is shape.stacks[0]:
                on_path = min(part.frozen_on_path, layers)
                saved -= on_path * matmul_inputs_per_token(stack, n) * seq * batch
        if layers < stack.layers and stack is not shape.stacks[-1]:
            continue  # a frozen stack before the trainable ones saves nothing
        saved += n.residual * stack.hidden * seq * batch  # embedding output / final norm input
        if stack.stream == "image" and layers == stack.layers:  # the pixels (+ 16-bit copy)
            image = int(r.config.value("image_size") or shape.image_size or 224)
            saved += (_fp32_input(n, image) + 3 * image * image * n.activation) * batch
    if not shape.lm_head:
        return saved + one_layer, 0.0, 0.0
    tokens = stack_tokens(shape.stacks[-1], r)[0] * batch
    vocab = _logits_width(shape, part)
    # lm_head output, held by the output; BART adds its fp32 final_logits_bias, so under
    # autocast its logits are fp32 and the loss needs no upcast (bart-base-train-amp16-*)
    logit_bytes = 4 if shape.fp32_logits else n.activation
    logits = logit_bytes * vocab * tokens
    if shape.logit_softcap:  # tanh(logits / cap) * cap: tanh's output is saved for backward
        logits += logit_bytes * vocab * tokens
    log_softmax = 4 * vocab * tokens  # HF's loss upcasts: fp32 log-softmax
    upcast = 4 * vocab * tokens if logit_bytes != 4 else 0  # logits.float(), transient
    # backward of the loss: d(log_softmax) and d(logits fp32), then the cast back
    backward = 8 * vocab * tokens
    if shape.own_loss and logit_bytes != 4:
        # T5's own CrossEntropyLoss under autocast: the logits' fp32 copy and a 16-bit
        # log-softmax stay to the backward, which adds the fp32 nll gradient — 2 + 4 + 2 + 4
        # bytes per logit at its peak (bench/oracle_breakdown.py mt5 / t5-small --at peak)
        log_softmax = (4 + n.activation) * vocab * tokens
        upcast, backward = 0, 4 * vocab * tokens
    # checkpointed: the layer recomputed in the backward comes after the loss's backward, whose
    # log-softmax and gradients are freed by then (the logits stay referenced by the outputs):
    # the peak holds the larger of the two, not both (oracle rows with checkpointing: Granite
    # had been +17.8%, SmolLM3 +5.8%; bench/oracle_memory.py --checkpointing)
    saved += max(0.0, one_layer - log_softmax - upcast - backward)
    return saved + logits + log_softmax, upcast, backward


def _logits_width(shape: ModelShape, part: Trainable | None) -> int:
    """The logits' last dimension: a new head's outputs when one replaced the LM head
    (:class:`.jobparts.NewHead`; every position is projected, as the head runs on the whole
    hidden state), else the vocabulary."""
    if part is not None and part.head_outputs is not None:
        return part.head_outputs
    return shape.vocab


def _weights(r: Resolved, n) -> tuple[float, float]:
    """(weight bytes, trainable parameters)."""
    shape, cfg = r.shape, r.config
    quant = cfg.value("quantize")
    rank = cfg.value("lora_rank")
    adapters = lora_params(shape, int(rank), cfg.value("lora_targets")) if rank else 0
    if quant:
        linear = min(shape.linear_params, shape.params)
        rest = shape.params - linear
        weights = linear * QUANTIZED_WEIGHT_BYTES[quant] + rest * min(n.weight, 2)
    else:
        weights = shape.params * n.weight
    if rank:  # peft keeps adapters in fp32 (autocast_adapter_dtype=True)
        return weights + 4 * adapters, adapters
    return weights, shape.params


def _weights_formula(r: Resolved, n) -> str:
    """:func:`_weights` written out with its inputs."""
    shape, cfg = r.shape, r.config
    quant = cfg.value("quantize")
    rank = cfg.value("lora_rank")
    if quant:
        linear = min(shape.linear_params, shape.params)
        text = (
            f"linear {_count(linear)} × {QUANTIZED_WEIGHT_BYTES[quant]:g} bytes ({quant}) + "
            f"other {_count(shape.params - linear)} × {min(n.weight, 2)} bytes"
        )
    else:
        text = f"params {_count(shape.params)} × {n.weight} bytes"
    if rank:
        adapters = lora_params(shape, int(rank), cfg.value("lora_targets"))
        text += f" + LoRA adapters {_count(adapters)} × 4 bytes (rank {rank}, fp32)"
    return text


def _temporaries_formula(work: float, shape: ModelShape, n, cfg) -> str:
    """The cuBLAS workspace and autocast's cached 16-bit weight copies, written out."""
    text = f"cuBLAS workspace {_count(work)}"
    if n.autocast_copies and not cfg.value("quantize"):
        matmul = shape.linear_params + shape.lm_head_params
        text += f" + autocast weight copies {_count(matmul)} × {n.autocast_copies} bytes"
    return text


_STATE_SHARDED = ("zero-1", "zero-2", "zero-3", "fsdp", "fsdp-grad-op")
_GRAD_SHARDED = ("zero-2", "zero-3", "fsdp", "fsdp-grad-op")


def _activations_formula(r: Resolved, batch: int, path: str, part: Trainable | None) -> str:
    """What :func:`_training_activations` saves, named with its inputs."""
    shape = r.shape
    if not shape.stacks:
        image = r.config.value("image_size")
        return f"each layer's saved output over image {image}² × batch {batch} (layer shapes)"
    check = (
        ", checkpointed: each layer's input + one layer" if r.config.value("checkpointing") else ""
    )
    n = numerics(r.config.value("dtype"))
    caching = part is None and returns_cache(r) and not r.config.value("checkpointing")
    parts = []
    for s in shape.stacks:
        seq, source = stack_tokens(s, r)
        terms = saved_terms_per_token(
            s, n, eager=path == "eager", math=path == "math", context=seq, cross_context=source
        )
        cached = cached_keys_per_token(s, n, eager=path == "eager") if caching else 0
        if cached and n.activation == n.residual:
            terms["training KV cache's own K and V"] = cached
        elif cached:
            terms["training KV cache's fp32 rotary keys"] = cached
        named = " + ".join(f"{name} {value:,.0f}" for name, value in terms.items())
        parts.append(
            f"{s.layers} layers × saved bytes per token ({path} attention{check}: {named}) × "
            f"seq {seq} × batch {batch} + the stack's input (final norm input) hidden "
            f"{s.hidden} × {n.residual} bytes × seq {seq} × batch {batch}"
        )
    if part is not None and part.saved_layers is not None:
        parts.append(f"only the last {part.saved_layers} layer(s) save")
    if shape.lm_head:
        tokens = stack_tokens(shape.stacks[-1], r)[0]
        vocab = _logits_width(shape, part)
        parts.append(f"logits + fp32 log-softmax vocab {vocab} × seq {tokens} × batch {batch}")
    return " + ".join(parts)


def trainable_share(r: Resolved) -> Trainable | None:
    """The model's trainable share when the script freezes parts of it and the freezing is
    one :mod:`.jobparts` can interpret (LoRA decides its own)."""
    freezing = r.config.value("frozen")
    if freezing is None or r.config.value("lora_rank") or r.config.value("mode") != "train":
        return None
    return trainable_parts(freezing, r.shape, r.arch, r.shape.params)


def training(
    r: Resolved, work: float, gpu: Gpu | None = None, frozen_forward: float = 0.0
) -> list[Phase]:
    """The training phases; ``frozen_forward``: the live set of the frozen layers' forward
    (an inference forward of the model), when the script freezes the layers before the
    trainable ones."""
    cfg, shape = r.config, r.shape
    n = numerics(cfg.value("dtype"))
    world = int(cfg.value("gpus") or 1)
    sharding = cfg.value("sharding") or "none"
    offload = cfg.value("offload") or "none"
    batch = int(cfg.value("batch_size"))
    weights, trainable = _weights(r, n)
    part = trainable_share(r)
    if part is not None:
        trainable = part.params
        weights -= part.dropped_params * n.weight  # an untied LM head replaced: not held
    lora = bool(cfg.value("lora_rank"))
    grad_bytes = 4 if lora else n.grad
    deepspeed = sharding.startswith("zero")
    state_dtype = 4 if (lora or deepspeed) else n.state_dtype
    hidden = shape.stacks[0].hidden if shape.stacks else None
    opt = optimizer_cost(cfg.value("optimizer"), state_dtype, hidden)
    grads = trainable * grad_bytes
    state = trainable * opt.states
    master = trainable * 4 if (deepspeed and n.weight == 2 and not lora) else 0.0
    temp_opt = trainable * opt.temporary
    temporaries = 2 * work
    gathered = 0.0
    if sharding in ("zero-1", "zero-2", "zero-3", "fsdp", "fsdp-grad-op"):
        state, master = state / world, master / world
        temp_opt = 0.0 if deepspeed else temp_opt / world  # DeepSpeed steps with FusedAdam
    if sharding in ("zero-2", "zero-3", "fsdp", "fsdp-grad-op"):
        grads = grads / world
    if sharding in ("zero-3", "fsdp"):
        weights = weights / world
        gathered = 2 * shape.largest_layer_params * n.weight  # current + prefetched layer
    if sharding == "ddp" and world > 1:
        temporaries += grads  # DDP's flat gradient buckets (gradient_as_bucket_view=False)
    if offload in ("optimizer", "optimizer+params"):
        state, master, temp_opt = 0.0, 0.0, 0.0
    if offload == "optimizer+params" and sharding in ("zero-3", "fsdp"):
        weights = 0.0
    persist = int(cfg.value("accumulation") or 1) > 1 or bool(cfg.value("grads_persist"))
    live_grads = grads if persist else 0.0
    matmul_params = shape.linear_params + shape.lm_head_params
    if not shape.stacks:  # a CNN: every conv / linear weight is cast (resnet50-train-amp16-b16)
        matmul_params = shape.params
    if part is not None:  # autocast caches copies only of weights that require grad
        matmul_params = min(matmul_params, trainable)
    copies = matmul_params * n.autocast_copies if not cfg.value("quantize") else 0.0
    if sharding in ("zero-3", "fsdp"):
        copies = copies / world
    acts, fwd_temp, bwd_temp = _training_activations(r, n, batch, attention_path(r, gpu), part)
    forward_acts = acts
    transient_text = ""
    if shape.stacks and part is None:  # the last layer's unsaved tensors (post-norm encoders)
        last = shape.stacks[-1]
        seq = stack_tokens(last, r)[0]
        transient = forward_transient_per_token(last, n, seq)
        forward_acts += transient * seq * batch
        if transient:
            transient_text = (
                f" + the last layer's unsaved norm outputs, dropout output and embeddings "
                f"output {transient:,.0f} bytes per token × seq {seq} × batch {batch}"
            )
    if part is not None and part.saved_layers is not None:
        # the frozen layers run as an inference forward: one layer's intermediates live
        forward_acts = max(acts, frozen_forward)
    base = dict(weights=weights + gathered, optimizer_state=state, master_weights=master)
    # the LM head's weight gradient is the first to appear (and its 16-bit matmul result)
    head = 0.0 if lora or (part is not None and not part.head) else shape.lm_head_params
    vocab = _logits_width(shape, part)
    if vocab != shape.vocab and shape.stacks:  # a new head: hidden × outputs (+ bias)
        head = (shape.stacks[-1].hidden + 1) * vocab
    first_grads = 0.0 if persist else min(grads, head * grad_bytes)
    head_temp = head * n.activation if n.weight != n.activation else 0.0
    # Two moments of the loss / head backward, never at once: first the log-softmax's grads
    # (``bwd_temp``, nothing of the head's weight gradient yet); then, with the fp32 grads
    # and the saved log-softmax freed, the 16-bit logits grad, the head's weight gradient
    # and (AMP) its 16-bit matmul result. Summing both over-estimated gpt2-train-amp16-b4-s128
    # by 9% (tests/calibration/fixtures).
    if shape.lm_head and not lora and (part is None or part.head):
        tokens = stack_tokens(shape.stacks[-1], r)[0] * batch
        later = first_grads + head_temp + (n.activation - 4) * vocab * tokens
        if later <= bwd_temp:
            first_grads = 0.0
        else:
            bwd_temp = later - first_grads
    else:
        bwd_temp += head_temp
    cache = 0.0
    if part is not None:  # what the vocabulary's logits hide in a fully trained LM
        seq = stack_tokens(shape.stacks[-1], r)[0] if shape.stacks else 0
        bwd_temp = max(bwd_temp, tail_backward(r, part, n, batch, seq))
        cache = returned_cache(r, n, batch) if returns_cache(r) else 0.0
    elif shape.stacks and not shape.lm_head:  # a classifier's head hides nothing either
        seq = stack_tokens(shape.stacks[-1], r)[0]
        bwd_temp = max(bwd_temp, tail_backward(r, None, n, batch, seq))
    split = f" ÷ {world} GPUs ({sharding})" if world > 1 and sharding != "none" else ""
    w_text = _weights_formula(r, n)
    if sharding in ("zero-3", "fsdp"):
        w_text += split + f" + 2 gathered layers × {_count(shape.largest_layer_params)} × "
        w_text += f"{n.weight} bytes"
    if part is not None and part.dropped_params:
        w_text += f" − replaced LM head {_count(part.dropped_params)} × {n.weight} bytes"
    state_split = split if sharding in _STATE_SHARDED else ""
    grad_split = split if sharding in _GRAD_SHARDED else ""
    formulas = dict(
        weights=w_text,
        gradients=f"trainable {_count(trainable)} × {grad_bytes} bytes{grad_split}",
        optimizer_state=(
            f"trainable {_count(trainable)} × {opt.states:g} bytes "
            f"({cfg.value('optimizer')}, state in {state_dtype}-byte elements){state_split}"
        ),
        master_weights=f"trainable {_count(trainable)} × 4 bytes (fp32 master copy){state_split}",
        activations=_activations_formula(r, batch, attention_path(r, gpu), part),
        kv_cache=returned_cache_formula(r, n, batch),
    )
    workspace = f"cuBLAS workspaces 2 × {_count(work)}"
    if temporaries > 2 * work:
        workspace += f" + DDP gradient buckets {_count(temporaries - 2 * work)}"
    copied = f"autocast weight copies {_count(copies)}" if copies else ""

    def temps(*more: str, grads_text: str | None = None) -> dict:
        out = dict(formulas, temporaries=" + ".join(t for t in (workspace, *more) if t))
        if grads_text is not None:
            out["gradients"] = grads_text
        return out

    # gradients persist between steps only with accumulation (else zero_grad freed them);
    # the backward's first is the LM head's
    kept = formulas["gradients"] if live_grads else ""
    first = f"LM head's gradient {_count(first_grads / grad_bytes)} × {grad_bytes} bytes"
    at_backward = " + ".join(t for t in (kept, first if first_grads else "") if t)

    return [
        _phase(
            "step start",
            temps(grads_text=kept),
            **base,
            gradients=live_grads,
            temporaries=temporaries,
        ),
        _phase(
            "forward",
            dict(
                temps(
                    copied, f"loss upcast {_count(fwd_temp)}" if fwd_temp else "", grads_text=kept
                ),
                activations=formulas["activations"] + transient_text,
            ),
            **base,
            gradients=live_grads,
            activations=forward_acts,
            kv_cache=cache,
            temporaries=temporaries + copies + fwd_temp,
        ),
        _phase(
            "backward start",
            temps(
                copied,
                f"loss / head backward {_count(bwd_temp)}" if bwd_temp else "",
                grads_text=at_backward,
            ),
            **base,
            gradients=live_grads + first_grads,
            activations=acts,
            kv_cache=cache,
            temporaries=temporaries + copies + bwd_temp,
        ),
        _phase(
            "optimizer step",
            temps(
                f"{cfg.value('optimizer')} step temporaries {_count(temp_opt)}" if temp_opt else ""
            ),
            **base,
            gradients=grads,
            temporaries=temporaries + temp_opt,
        ),
    ]


def workspace_bytes(gpu: Gpu | None) -> float:
    sm = gpu.sm_version if gpu is not None else None
    return WORKSPACE_BYTES["hopper" if (sm or 0) >= 90 else "pre-hopper"]


def _kv_layer_bytes(stack: Stack, dtype_bytes: float) -> float:
    """Cache bytes per token of one layer of ``stack``: K and V at the KV heads' width (GQA /
    MQA keep only their KV heads), or MLA's compressed latent plus its shared rotary key
    (transformers caches ``kv_lora_rank + qk_rope_head_dim`` per token, not per head)."""
    if stack.mla:
        return (stack.mla["kv_lora_rank"] + stack.mla["qk_rope_head_dim"]) * dtype_bytes
    return 2 * stack.kv_width * dtype_bytes


def kv_cache_bytes(
    shape: ModelShape,
    dtype_bytes: float,
    tokens: int,
    rows: int,
    *,
    windowed: bool = False,
    source: int = 0,
) -> float:
    """The KV cache of ``rows`` sequences of ``tokens`` tokens, all decoder layers.

    ``windowed``: a sliding layer holds its window only (decoding). After a prefill it still
    holds the whole prompt: transformers' sliding cache layer keeps a slice of the
    concatenated keys, a view that keeps the full tensor's storage until the next step
    (cache_utils.DynamicSlidingWindowLayer.update). ``source``: the encoder tokens a
    seq2seq decoder's cross-attention caches (K and V at the query width, per layer)."""
    total = 0.0
    for stack in shape.stacks:
        if stack.stream not in ("text", "tgt"):
            continue
        per_layer = _kv_layer_bytes(stack, dtype_bytes)
        windows = stack.cache_windows or (0,) * stack.layers
        for window in windows:
            if window < 0:
                continue  # a layer without keys and values (linear attention, state space)
            held = min(tokens, window) if (windowed and window > 0) else tokens
            total += per_layer * held * rows
        if stack.cross_attention:
            total += stack.layers * 2 * stack.q_width * dtype_bytes * source * rows
    return total


def kv_cache_formula(
    shape: ModelShape,
    dtype_bytes: float,
    tokens: int,
    rows: str,
    *,
    windowed: bool = False,
    source: int = 0,
) -> str:
    """:func:`kv_cache_bytes` written out with its inputs; ``rows`` names the batch rows
    (``batch 4``, ``batch 2 × beams 4``)."""
    parts = []
    for stack in shape.stacks:
        if stack.stream not in ("text", "tgt"):
            continue
        windows = stack.cache_windows or (0,) * stack.layers
        kv = [w for w in windows if w >= 0]
        if stack.mla:
            two, width = (
                "",
                (
                    f"(kv_lora_rank {stack.mla['kv_lora_rank']} + "
                    f"qk_rope_head_dim {stack.mla['qk_rope_head_dim']})"
                ),
            )
        else:
            two, width = "2 × ", f"kv_heads {stack.kv_heads} × head_dim {stack.head_dim}"
        full = sum(1 for w in kv if w == 0 or not windowed)
        sliding = sorted({w for w in kv if w > 0 and windowed})
        if not sliding:
            parts.append(
                f"{two}layers {full} × {width} × seq {tokens} × {rows} × {dtype_bytes:g} bytes"
            )
        else:
            width = two + width
            held = [f"{full} full layers × {tokens}"] if full else []
            held += [
                f"{sum(1 for w in kv if w == win)} sliding layers × min({tokens}, window {win})"
                for win in sliding
            ]
            parts.append(f"{width} × ({' + '.join(held)}) tokens × {rows} × {dtype_bytes:g} bytes")
        if stack.cross_attention and source:
            parts.append(
                f"cross-attention 2 × width {stack.q_width} × layers {stack.layers} × "
                f"source {source} × {rows} × {dtype_bytes:g} bytes"
            )
    return " + ".join(parts)


def returned_cache(r: Resolved, n, batch: int) -> float:
    """The cache a no_grad forward of an LM returns: self-attention K/V of every decoder layer
    for the whole sequence, plus a seq2seq decoder's cross-attention K/V of the source. None
    when the cache is off (:func:`.trainedtail.use_cache`) or the model is one the script
    defines (it returns its logits only, :func:`.trainedtail.returns_cache`)."""
    shape = r.shape
    if not shape.lm_head or isinstance(r.config.value("structure"), dict) or not use_cache(r):
        return 0.0
    total = 0.0
    for stack in shape.stacks:
        seq, source = stack_tokens(stack, r)
        only = _only(shape, stack)
        total += kv_cache_bytes(only, n.activation, seq, batch, source=source)
    return total


def returned_cache_formula(r: Resolved, n, batch: int) -> str:
    """:func:`returned_cache` written out with its inputs."""
    if not returned_cache(r, n, batch):
        return ""
    parts = []
    for stack in r.shape.stacks:
        seq, source = stack_tokens(stack, r)
        only = _only(r.shape, stack)
        parts.append(kv_cache_formula(only, n.activation, seq, f"batch {batch}", source=source))
    return " + ".join(p for p in parts if p)


def _only(shape: ModelShape, stack: Stack) -> ModelShape:
    return ModelShape(shape.kind, shape.params, (stack,))


def inference(r: Resolved, generate: bool, work: float, gpu: Gpu | None = None) -> list[Phase]:
    cfg, shape = r.config, r.shape
    n = numerics(cfg.value("dtype"))
    weights, _ = _weights(r, n)
    batch = int(cfg.value("batch_size"))
    if generate and not shape.lm_head:
        raise NothingToGenerate(
            f"{r.model_label} ({shape.kind}) has no language-model head to generate with; "
            "estimate --mode inference instead"
        )
    if not shape.stacks:
        acts = 0.0
        if shape.cnn is not None and is_modelled(shape.cnn):
            image = int(cfg.value("image_size"))
            _, largest = cnn_activation_elements(shape.cnn, image)
            # the fp32 input images plus k × the largest activation (a block's input, its
            # convolutions' outputs and the downsample branch overlap); k fitted per
            # precision: 3.35 to resnet50-infer-fp32-b16, 2.35 to resnet50-infer-amp16-b32
            k = 3.35 if n.activation == 4 else 2.35
            # an out-of-place ReLU (transformers' ResNet) keeps one more such tensor live
            # (resnet-infer-bf16-b32 on the oracle: -20.6% with torchvision's k)
            k += 0 if shape.cnn.config.get("inplace_relu", True) else 1
            # where the walk knows the live set op by op (ConvNeXt) it replaces k × largest
            op_by_op = inference_live_elements(shape.cnn, image, autocast=n.weight != n.activation)
            # a pure 16-bit CNN is fed images of its own dtype (a convolution takes no other)
            pixel = n.activation if n.weight == n.activation else 4
            layers = op_by_op if op_by_op is not None else k * largest
            acts = (pixel * 3 * image * image + layers * n.activation) * batch
        # autocast's cached 16-bit copies of the conv / linear weights (every parameter
        # but BatchNorm's, which are < 0.3% of a torchvision CNN)
        copies = shape.params * n.autocast_copies if not cfg.value("quantize") else 0.0
        return [_phase("forward", weights=weights, activations=acts, temporaries=work + copies)]
    path = attention_path(r, gpu)

    def transient(tokens_per_seq: int, rows: int) -> float:
        live = 0.0
        for stack in shape.stacks:
            seq, _source = stack_tokens(stack, r) if not generate else (tokens_per_seq, 0)
            per = live_per_token(stack, n) * seq * rows
            if path == "eager":  # the scores and the MLP's intermediates are never live at once
                scores = scores_per_token(stack, n, seq, training=False)
                per = max(per, (attention_live_per_token(stack, n) + scores) * seq * rows)
            elif path == "math":
                per += math_scores_per_token(stack, seq, training=False) * seq * rows
            if stack.bias_mask:
                # T5's position bias (heads × s², shared by the batch and the layers) and the
                # layer's mask made from it: mt5 generate's prefill was -6.3% without them
                per += 2 * n.activation * stack.heads * seq * seq
            live = max(live, per)
        return live

    # autocast caches a 16-bit copy of every matmul weight for the whole forward, also under
    # no_grad (the cache keys on the parameter's requires_grad, not on grad mode):
    # fixtures bert-infer-amp16-b32-s512 / resnet50-infer-amp16-b32
    copies = (
        0.0
        if cfg.value("quantize")
        else (shape.linear_params + shape.lm_head_params) * n.autocast_copies
    )
    if not generate:
        seq = stack_tokens(shape.stacks[-1], r)[0]
        logits = n.activation * shape.vocab * seq * batch if shape.lm_head else 0.0
        # a plain forward of a decoder (or seq2seq) returns its KV cache (use_cache=True is
        # every HF LM config's default): fixtures *-infer-* of llama-2-7b, pythia-1b, phi-2
        cache = returned_cache(r, n, batch)
        # the layers' intermediates are gone when the head runs: the peak is the larger of the
        # widest layer and the logits beside the final hidden state (fixtures *-infer-*)
        # the head's output and a second logits-sized tensor made from it, live together
        # for a moment: a scaled copy (Cohere, Granite), each step of a soft-cap (Gemma 2),
        # or BART's sum with final_logits_bias (fp32 under autocast, as the bias is)
        scaled = 2.0 if (shape.scaled_logits or shape.logit_softcap) else 1.0
        if shape.fp32_logits:
            scaled = 1 + (4 if n.weight == 4 else n.activation) / n.activation
        if logits:
            logits = scaled * logits + n.activation * shape.stacks[-1].hidden * seq * batch
        # the caller's fp32 image batch stays referenced through the forward, beside the
        # 16-bit copy the model casts it to (clip / siglip / vit *-infer-*: harness runs)
        pixels = 0.0
        if any(stack.stream == "image" for stack in shape.stacks):
            image = int(cfg.value("image_size") or shape.image_size or 224)
            pixels = (4 + (n.activation if n.activation != 4 else 0)) * 3 * image * image * batch
        live = transient(seq, batch) + pixels
        if logits > live:
            acts_text = (
                (f"{scaled:g} × (logits and the copy made from them) " if scaled > 1 else "")
                + f"logits vocab {shape.vocab} × seq {seq} × batch {batch} × {n.activation} bytes"
                f" + final hidden {shape.stacks[-1].hidden} × seq {seq} × batch {batch} × "
                f"{n.activation} bytes (more than one layer's live intermediates, "
                f"{_count(live)} bytes)"
            )
        else:
            acts_text = f"one layer's live intermediates over seq {seq} × batch {batch} ({path})"
            if pixels:
                acts_text += f" + input images 3 × {image}² × batch {batch} (fp32 and its cast)"
        formulas = dict(
            weights=_weights_formula(r, n),
            kv_cache=returned_cache_formula(r, n, batch),
            activations=acts_text,
            temporaries=_temporaries_formula(work, shape, n, cfg),
        )
        return [
            _phase(
                "forward",
                formulas,
                weights=weights,
                kv_cache=cache,
                activations=max(live, logits),
                temporaries=work + copies,
            )
        ]
    beams = int(cfg.value("num_beams") or 1)
    prompt = int(cfg.value("seq_len"))
    new = int(cfg.value("max_new_tokens"))
    context = int(cfg.value("max_context") or prompt + new)
    kv_dtype = 2 if cfg.value("quantize") else n.activation
    # generate expands the inputs before the prefill: to batch × beams for beam search, else
    # to batch × num_return_sequences (sampling several continuations of each prompt)
    returned = int(cfg.value("num_return_sequences") or 1)
    copies_per_prompt = beams if beams > 1 else returned
    rows = batch * copies_per_prompt
    last_logits = 4 * shape.vocab * rows  # generate keeps last-position logits, fp32 scores
    label = f"batch {batch}" + (
        f" × beams {beams}"
        if beams > 1
        else (f" × num_return_sequences {returned}" if returned > 1 else "")
    )
    head = f"last-position logits 4 × vocab {shape.vocab} × {label}"
    # beam search (transformers' _beam_search) holds each step's fp32 logits copy, its
    # log-softmax and their sum with the running beam scores at once: three of them, at the
    # prefill's end and at every step (read from the source: the harness cannot run
    # generate, whose stopping checks read values)
    scored = ("3 × ", "3 × ") if beams > 1 else ("", "2 × ")
    if not use_cache(r):
        # generate(use_cache=False): no cache; every new token re-runs the whole sequence
        return [
            _phase(
                "decode (no cache)",
                dict(
                    weights=_weights_formula(r, n),
                    activations=f"one layer's live intermediates over seq {context} × {label}",
                    temporaries=f"cuBLAS workspace {_count(work)} + 2 × {head}",
                ),
                weights=weights,
                activations=transient(context, rows),
                temporaries=work + 2 * last_logits,
            )
        ]
    seq2seq = any(stack.cross_attention for stack in shape.stacks)
    # a decoder-only model caches the prompt, then the whole context; a seq2seq decoder its
    # own tokens (one at the prefill) and, per layer, the encoded prompt for cross-attention
    filled = (1, context - prompt) if seq2seq else (prompt, context)
    source = prompt if seq2seq else 0
    # a seq2seq model's prefill is its encoder's pass: the decoder's cache (and the encoded
    # prompt's cross-attention K/V) is filled afterwards, when the encoder's intermediates are
    # gone and only its output stays, referenced through the decoding
    # (bench/oracle_memory.py pegasus generate: +14.8% with both counted at once)
    prefill_cache = 0.0 if seq2seq else kv_cache_bytes(shape, kv_dtype, prompt, rows)
    encoded = n.activation * shape.stacks[0].hidden * prompt * rows if seq2seq else 0.0
    decode_acts = f"one layer's live intermediates for 1 token × {label}"
    if seq2seq:
        decode_acts += f" + encoded prompt {shape.stacks[0].hidden} × seq {prompt} × {label}"
        decode_acts += f" × {n.activation} bytes"
    return [
        _phase(
            "prefill",
            dict(
                weights=_weights_formula(r, n),
                kv_cache=""
                if seq2seq
                else kv_cache_formula(shape, kv_dtype, filled[0], label, source=source),
                activations=f"one layer's live intermediates over seq {prompt} × {label}",
                temporaries=f"cuBLAS workspace {_count(work)} + {scored[0]}{head}",
            ),
            weights=weights,
            kv_cache=prefill_cache,
            activations=transient(prompt, rows),
            temporaries=work + (3 if beams > 1 else 1) * last_logits,
        ),
        _phase(
            "decode",
            dict(
                weights=_weights_formula(r, n),
                kv_cache=kv_cache_formula(
                    shape, kv_dtype, filled[1], label, windowed=True, source=source
                ),
                activations=decode_acts,
                temporaries=f"cuBLAS workspace {_count(work)} + {scored[1]}{head}",
            ),
            weights=weights,
            kv_cache=kv_cache_bytes(shape, kv_dtype, filled[1], rows, windowed=True, source=source),
            activations=transient(1, rows) + encoded,
            temporaries=work + (3 if beams > 1 else 2) * last_logits,
        ),
    ]
