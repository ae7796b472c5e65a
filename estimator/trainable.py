"""The trainable share of a model the script freezes (issue 12, job structure): which
parameters get gradients and optimizer state, which layers save activations, and what the
logits are when a new head replaces the LM head.

It reads :class:`.jobparts.Freezing` against the model's shape with the vocabulary of
sub-module names in :mod:`.jobparts`; a name outside it is not guessed:
:func:`trainable_parts` answers ``None`` and the estimate keeps every parameter trainable
(an upper bound, said in a note).
"""

from __future__ import annotations

import re

import attrs

from .architecture import Architecture
from .jobparts import _BACKBONES, _BLOCKS, _EMBEDDINGS, _HEADS, _NORMS, Freezing, _last
from .shape import ModelShape

__all__ = ["Trainable", "head_width_unknown", "trainable_parts"]

_SLICE = re.compile(r"^(\w+)\[(-?\d*)(:?)(-?\d*)\]$")


@attrs.frozen
class Trainable:
    """The estimated model's trainable share, as the cost model needs it."""

    params: float
    """Parameters that get gradients and optimizer state."""
    saved_layers: int | None
    """Trailing layers (over all stacks, from the output side) whose activations are saved;
    ``None``: every layer."""
    head: bool = True
    """The output head is trainable (an LM head's logits are then saved for backward)."""
    frozen_on_path: int = 0
    """Frozen layers the gradient still flows through (to a trainable embedding before
    them): they save what the gradient of their input needs, but not their matmuls' inputs,
    which only a weight's gradient needs (autograd saves an operand only when the other
    requires grad)."""
    head_outputs: int | None = None
    """A new head replaced the LM head: the logits are batch × seq × this (a classifier's
    classes), not the vocabulary's; ``None``: the model's own head."""
    dropped_params: float = 0.0
    """Parameters no longer held: the replaced head's, when it was not tied to the input
    embedding (a tied one stays, as the embedding)."""


# The vocabulary of sub-module names (torchvision, transformers and the common from-scratch
# GPTs). Anything else is not interpreted.
def _layers(shape: ModelShape) -> int:
    return sum(s.layers for s in shape.stacks)


def _layer_params(shape: ModelShape) -> float:
    """Parameters of one transformer layer (linear weights; norms and biases are < 1%)."""
    layers = _layers(shape)
    return shape.linear_params / layers if layers else 0.0


def _head_params(shape: ModelShape, arch: Architecture) -> float | None:
    if shape.stacks:
        if shape.lm_head:
            return float(shape.lm_head_params)
        h = shape.stacks[-1].hidden
        return float(2 * h + 2)  # a 2-class classifier (HF's pooler lives in the backbone)
    if arch.model_type == "torchvision-resnet":
        c = arch.config
        width = 512 * (4 if c["block"] == "bottleneck" else 1)
        classes = c.get("num_classes", 1000)
        return float(width * classes + classes)
    return None


def _new_head(freezing: Freezing, part: str, shape: ModelShape) -> tuple[float, int, float] | None:
    """(trainable parameters, logits width, parameters dropped) of a new layer replacing the
    LM head ``part``; ``None`` when ``part`` is no head. Without the width the script gives,
    the logits are taken as wide as the hidden state (a classifier is narrower): an upper
    bound, and the estimate's confidence stays low (:func:`head_width_unknown`)."""
    if _last(part) not in _HEADS or not shape.stacks:
        return None
    h = shape.stacks[-1].hidden
    head = freezing.new_head
    outputs = head.outputs if head is not None and head.outputs else h
    dropped = float(shape.lm_head_params) if _untied_head(shape) else 0.0
    return float(h * outputs + outputs), outputs, dropped


def _untied_head(shape: ModelShape) -> bool:
    """The LM head has weights of its own (replacing it frees them). A model the script
    defines is counted from its constructors, with the family's tying convention in its
    shape: a separate head shows as a vocabulary × hidden surplus over the tied layout
    (rasbt's ``GPTModel``: 163.0 M counted, 124.4 M tied, its ``out_head`` 38.6 M)."""
    if not shape.tied_head:
        return True
    surplus = shape.params - shape.linear_params - shape.embedding_params
    return surplus >= 0.9 * shape.lm_head_params


def head_width_unknown(freezing: Freezing | None) -> bool:
    """A new layer replaces a head but the script's width for it was not read."""
    if freezing is None or not any(p.startswith("=") for p in freezing.trainable):
        return False
    return freezing.new_head is None or freezing.new_head.outputs is None


def _blocks(part: str, layers: int) -> int | None:
    """How many trailing layers ``trf_blocks[-1]`` / ``layers[-2:]`` names (``None``: not a
    trailing selection of blocks)."""
    match = _SLICE.match(part.rsplit(".", 1)[-1])
    if not match or match.group(1) not in _BLOCKS:
        return None
    start, colon, stop = match.group(2), match.group(3), match.group(4)
    if start.startswith("-") and (not colon or not stop):
        return min(-int(start), layers) if colon else 1
    return None


def _leading_blocks(part: str, layers: int) -> int | None:
    """How many leading layers ``layers[:6]`` names (frozen lower layers)."""
    match = _SLICE.match(part.rsplit(".", 1)[-1])
    if not match or match.group(1) not in _BLOCKS:
        return None
    start, colon, stop = match.group(2), match.group(3), match.group(4)
    if colon and not start and stop and not stop.startswith("-"):
        return min(int(stop), layers)
    return None


def trainable_parts(
    freezing: Freezing, shape: ModelShape, arch: Architecture, params: float
) -> Trainable | None:
    """The trainable share of a model of ``params`` parameters under ``freezing``; ``None``
    when a frozen or re-enabled name is outside the vocabulary (nothing is guessed)."""
    layers = _layers(shape)
    head = _head_params(shape, arch)
    backbone_frozen = any(p == "" or _last(p) in _BACKBONES for p in freezing.frozen)
    if backbone_frozen:
        if head is None:
            return None
        whole = "" in freezing.frozen
        trainable = 0.0 if whole else head
        saved = 0
        head_on = not whole
        replaced: tuple[float, int, float] | None = None
        for part in freezing.trainable:
            k = _blocks(part, layers)
            if part.startswith("=") and shape.lm_head:
                replaced = _new_head(freezing, part[1:], shape)
                if replaced is None:
                    return None  # a new layer elsewhere: not interpreted
                # the model's own head (counted when only a backbone is frozen) is gone
                trainable += replaced[0] - (head if not whole else 0.0)
                head_on = True
                continue
            part = part.lstrip("=")
            if _last(part) in _HEADS:
                trainable += head
                head_on = True
            elif _last(part) in _NORMS:
                trainable += shape.stacks[-1].hidden * 2 if shape.stacks else 0
            elif k is not None and shape.stacks:
                trainable += k * _layer_params(shape)
                saved = max(saved, k)
            else:
                return None
        if replaced is not None:
            # the new head is no embedding: only the trailing layers save (the gradient
            # stops at the first trainable layer)
            return Trainable(min(trainable, params), saved, True, 0, replaced[1], replaced[2])
        if shape.tied_head and head_on and shape.lm_head:
            # the head is the input embedding: the gradient flows through every layer
            on_path = layers - min(saved, layers)
            return Trainable(min(trainable, params), None, head_on, on_path)
        return Trainable(min(trainable, params), saved, head_on)
    frozen = 0.0
    saved_from_output = None
    for part in freezing.frozen:
        lead = _leading_blocks(part, layers)
        if _last(part) in _EMBEDDINGS:
            untied_head = shape.lm_head and not shape.tied_head
            frozen += shape.embedding_params - (shape.lm_head_params if untied_head else 0)
        elif lead is not None and shape.stacks:
            frozen += lead * _layer_params(shape)
            saved_from_output = layers - lead
        else:
            return None
    if freezing.trainable:
        return None  # re-enabling parts of a partly frozen model: not interpreted
    embeddings_frozen = any(_last(p) in _EMBEDDINGS for p in freezing.frozen)
    on_path = 0
    if saved_from_output is not None and not embeddings_frozen:
        # the gradient flows back to the trainable embedding through the frozen layers
        on_path, saved_from_output = layers - saved_from_output, None
    head = not (embeddings_frozen and shape.tied_head)  # a tied head is the embedding
    return Trainable(max(params - frozen, 0.0), saved_from_output, head, on_path)
