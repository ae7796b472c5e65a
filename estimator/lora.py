"""LoRA adapter sizes: which linear layers peft wraps, and how many parameters it adds.

A LoRA adapter of rank ``r`` on a linear layer ``in → out`` adds ``r·(in + out)``
trainable parameters (A: r × in, B: out × r). peft's defaults for Llama-style models
(``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``) wrap ``q_proj`` and ``v_proj``
only; ``"all-linear"`` wraps every linear layer of the blocks (not the LM head).
Names follow the Llama modules; other families' names are mapped onto them
(``c_attn`` → q, k, v; ``query_key_value`` → q, k, v; ``fc1``/``c_fc`` → up; ...).
"""

from __future__ import annotations

from collections.abc import Iterable

from .shape import ModelShape, Stack

__all__ = ["DEFAULT_TARGETS", "lora_params"]

DEFAULT_TARGETS = ("q_proj", "v_proj")
_ALIASES = {
    "c_attn": ("q_proj", "k_proj", "v_proj"),
    "query_key_value": ("q_proj", "k_proj", "v_proj"),
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
    "Wqkv": ("q_proj", "k_proj", "v_proj"),
    "query": ("q_proj",),
    "key": ("k_proj",),
    "value": ("v_proj",),
    "q": ("q_proj",),
    "k": ("k_proj",),
    "v": ("v_proj",),
    "o": ("o_proj",),
    "dense": ("o_proj",),
    "out_proj": ("o_proj",),
    "c_proj": ("o_proj", "down_proj"),
    "fc1": ("up_proj",),
    "c_fc": ("up_proj",),
    "fc2": ("down_proj",),
    "gate_up_proj": ("gate_proj", "up_proj"),
    "w1": ("gate_proj",),
    "w3": ("up_proj",),
    "w2": ("down_proj",),
    "wi": ("up_proj",),
    "wo": ("down_proj",),
    "dense_h_to_4h": ("up_proj",),
    "dense_4h_to_h": ("down_proj",),
}
_ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _targets(targets: str | Iterable[str] | None) -> set[str]:
    if targets is None:
        return set(DEFAULT_TARGETS)
    if isinstance(targets, str):
        if targets in ("all-linear", "all"):
            return set(_ALL)
        targets = [targets]
    found: set[str] = set()
    for name in targets:
        found.update(_ALIASES.get(name, (name,)))
    return found & set(_ALL) or set(DEFAULT_TARGETS)


def _layer(stack: Stack, rank: int, targets: set[str]) -> int:
    h, q, kv = stack.hidden, stack.q_width, stack.kv_width
    if stack.moe:
        inner, copies = stack.moe["expert_intermediate"], stack.moe["experts"]
    else:
        inner, copies = stack.intermediate, 1
    sizes = {
        "q_proj": (h, q),
        "k_proj": (h, kv),
        "v_proj": (h, kv),
        "o_proj": (q, h),
        "gate_proj": (h, inner),
        "up_proj": (h, inner),
        "down_proj": (inner, h),
    }
    if stack.mlp != "gated":
        targets = targets - {"gate_proj"}
    total = 0
    for name in targets:
        fan_in, fan_out = sizes[name]
        if name in ("gate_proj", "up_proj", "down_proj"):
            factor = copies
        else:  # a decoder layer with cross-attention has two attention blocks
            factor = 2 if stack.cross_attention else 1
        total += rank * (fan_in + fan_out) * factor
    return total


def lora_params(shape: ModelShape, rank: int, targets=None) -> int:
    """Trainable parameters that LoRA of ``rank`` on ``targets`` adds to ``shape``."""
    chosen = _targets(targets)
    return sum(s.layers * _layer(s, rank, chosen) for s in shape.stacks)
