"""What a partly trained model holds beyond its trained layers' saved activations (issue 12).

When a script freezes the lower layers of a decoder and trains only its last blocks (and a
classifier in place of the LM head, rasbt's ``gpt_class_finetune.py``), the vocabulary's
logits no longer hide two terms of the step that a fully trained LM never shows:

- **the KV cache the forward returns.** A transformers decoder's forward builds a
  ``DynamicCache`` whenever ``use_cache`` is on — every LM config's default, also in training
  (only gradient checkpointing turns it off) — and ``torch.cat`` copies each layer's keys
  and values into it; the outputs hold it until the step drops them. The frozen layers save
  nothing for backward, but their cache stays: 2 × kv width × tokens per layer, counted
  here for every layer. Measured: gpt2-classifier-head-last-block-amp16-b8-s1024 is 288 MiB
  lower with ``use_cache=False`` (12 layers × 24 MiB), the qwen2.5-0.5b job 92 MiB (23 of
  its 24 layers × 4 MiB: its trained layer's attention saves the cached K/V themselves,
  so 4 MiB over). A model the script defines (a from-scratch ``GPTModel``) returns only its
  logits: no cache.
- **the backward of the first trained layer.** Autograd runs the last layer's MLP backward
  while everything the trained layers saved is still referenced: the incoming gradient of
  the down projection's input and the gradients of the activation's operands are live at
  once (:func:`mlp_backward_per_token`), beside the residual stream's gradient and the down
  projection's weight gradient; the final norm's and the down projection's saved inputs are
  freed by then. A vocabulary's logits gradients (8 bytes × vocab per token) are far larger
  and come first, so a fully trained LM never shows it; a classifier's are negligible.

Measured with the harness (``tests/calibration/measure_phases.py``, the ``*-classifier-*``
rows of ``fixtures/phase_peaks.json``): GPT-2's composite GELU backward adds 274.3 MiB over
the end of the forward (this count: 278.9), Qwen2.5-0.5B's gated SiLU 118.2 MiB (118.2),
the script-defined GPT in fp32 177.0 MiB (177.0).
"""

from __future__ import annotations

from .activations import norm_per_token
from .precision import Numerics
from .resolve import Resolved
from .shape import Stack
from .trainable import Trainable

__all__ = ["mlp_backward_per_token", "returns_cache", "tail_backward", "use_cache"]


def use_cache(r: Resolved) -> bool:
    """Whether the model's forward / ``generate`` keeps a KV cache: ``use_cache`` as the call
    (or ``--use-cache``) says, else as the model's config.json says (transformers reads
    ``config.use_cache`` when the call passes none, and ``generate`` copies it into its
    generation config), else on — the default of every transformers LM config."""
    called = r.config.use_cache
    if called is not None and called.source != "assumed":
        return bool(called.value)
    written = r.arch.config.get("use_cache")
    return written if isinstance(written, bool) else True


def returns_cache(r: Resolved) -> bool:
    """The model's training forward returns a KV cache: a transformers decoder (or
    encoder-decoder) with an LM head, ``use_cache`` on (:func:`use_cache`) and no gradient
    checkpointing (transformers turns the cache off for it). Not a model the script defines."""
    if not r.shape.lm_head or r.config.value("checkpointing"):
        return False
    if not use_cache(r):
        return False
    return not isinstance(r.config.value("structure"), dict)


def mlp_backward_per_token(stack: Stack, n: Numerics) -> float | None:
    """Bytes per token live at once in the backward of one MLP's activation, beside what
    the layer saved; ``None`` for a mixture of experts (not modelled).

    - GPT-2's composite GELU (``0.5 · x · (1 + tanh(...))`` in Python, fp32 under autocast
      as ``pow`` is on its fp32 list): the down projection's input gradient (16-bit ``mm``
      output), its cast to fp32, and the gradients of the product's two operands (``mul``'s
      backward makes both before either is consumed): ``a·i + 4·i + 2·4·i``;
    - a gated MLP (``act(gate) · up``): the incoming gradient and the product's two operand
      gradients (the activation's own backward runs after the incoming one is freed):
      ``3·a·i`` — on a real GPU ``silu_backward`` is one fused kernel;
    - a plain MLP: the incoming gradient and the activation's input gradient, ``2·a·i``.
    """
    a, i = n.activation, stack.intermediate
    if stack.moe:
        return None
    if stack.mlp == "gelu-tanh":
        up = 4 if n.weight == 4 else a
        return a * i + 2 * up * i + (up * i if up != a else 0)
    if stack.mlp == "gated":
        return 3 * a * i
    return 2 * a * i


def _freed_per_token(stack: Stack, n: Numerics) -> float:
    """What the backward has freed when it reaches the activation: the final norm's saved
    tensors (its input and the head's input), the down projection's saved input (ReLU's
    output stays, saved by ReLU's backward as well) and the dropout mask after the MLP."""
    down_input = 0 if stack.mlp == "relu" else n.activation * stack.intermediate
    mask = stack.hidden if stack.dropout else 0
    return norm_per_token(stack, n) + down_input + mask


def tail_backward(
    r: Resolved, part: Trainable | None, n: Numerics, batch: int, tokens: int
) -> float:
    """Bytes the backward of the last trained layer adds to everything saved (the backward
    start's extra, when no vocabulary's logits gradients dwarf it: a partly trained LM, or a
    fully trained model with a small head, ``part`` None — DeiT b32 peaks there); 0 when no
    transformer layer is trained."""
    if not r.shape.stacks or (part is not None and part.saved_layers == 0):
        return 0.0
    stack = r.shape.stacks[-1]
    working = mlp_backward_per_token(stack, n)
    if working is None:
        return 0.0
    residual_grad = n.residual * stack.hidden  # the gradient flowing down the residual stream
    per_token = working + residual_grad - _freed_per_token(stack, n)
    down_weight_grad = n.grad * stack.hidden * stack.intermediate
    return max(per_token, 0.0) * tokens * batch + down_weight_grad
