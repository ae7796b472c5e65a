"""The changes a plan may make to the job: how it is spread over GPUs, and what it gives up.

Each variant is a set of :class:`~..runconfig.RunConfig` field changes, so the memory of
every plan is what :func:`..estimate.estimate_resolved` says for the changed job: there is
no second cost model. Two orders matter for the search (:mod:`.search`):

- **parallelism** (:func:`parallelisms`), simplest first: DDP, ZeRO-1, ZeRO-2, ZeRO-3 /
  FSDP full shard, FSDP hybrid shard across nodes, then optimizer offload to the CPU;
- **remedy ladders** (:func:`ladders`), least given up first, each step adding one change
  to the previous: an evaluation batch no larger than the training micro-batch, mixed
  precision, gradient checkpointing, 8-bit AdamW, then halving the
  micro-batch with gradient accumulation that keeps the global batch. LoRA and QLoRA are
  ladders of their own, offered only when the script loads trained weights (``pretrained``
  read as true): they change what is trained, not just how.

Tensor parallelism is not offered: the estimator does not size it, and a plan the
estimator cannot size is not a plan.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..hardware import Gpu
from ..resolve import Resolved

__all__ = ["Parallelism", "Rung", "global_batch", "ladders", "parallelisms"]

_ADAM = ("adamw", "adam", "adamw-fused", "lion")


@attrs.frozen
class Parallelism:
    """How the job is spread: its label and the estimator fields that size it."""

    name: str
    label: str
    changes: tuple[tuple[str, Any], ...]
    hybrid: bool = False


@attrs.frozen
class Rung:
    """One step of a remedy ladder: what it is called and every change up to it."""

    family: str
    """``full`` (full training), ``lora`` or ``qlora``."""
    titles: tuple[str, ...]
    changes: tuple[tuple[str, Any], ...]


def global_batch(r: Resolved) -> int:
    """Samples per optimizer step over all GPUs, as the script runs: kept by every plan."""
    cfg = r.config
    return (
        int(cfg.value("batch_size") or 1)
        * int(cfg.value("accumulation") or 1)
        * int(cfg.value("gpus") or 1)
    )


def parallelisms(r: Resolved, per_node: int, nodes: int) -> list[Parallelism]:
    """Ways to run on ``per_node × nodes`` GPUs, simplest (fastest) first."""
    world = per_node * nodes
    if r.config.value("mode") != "train":
        return [Parallelism("single", "1 GPU", (("gpus", 1),))] if world == 1 else []
    if world == 1:
        base = r.config.value("sharding") or "none"
        single = "ddp" if base == "ddp" else "none"
        return [
            Parallelism("single", "1 GPU", (("gpus", 1), ("sharding", single))),
            Parallelism(
                "zero-2-offload",
                "ZeRO-2 + optimizer offload to CPU",
                (("gpus", 1), ("sharding", "zero-2"), ("offload", "optimizer")),
            ),
        ]
    found = [
        Parallelism("ddp", "DDP", (("gpus", world), ("sharding", "ddp"))),
        Parallelism("zero-1", "ZeRO-1", (("gpus", world), ("sharding", "zero-1"))),
        Parallelism("zero-2", "ZeRO-2", (("gpus", world), ("sharding", "zero-2"))),
        Parallelism("fsdp", "ZeRO-3 / FSDP full shard", (("gpus", world), ("sharding", "fsdp"))),
    ]
    if nodes > 1:
        found.append(
            Parallelism(
                "fsdp-hybrid",
                f"FSDP hybrid shard ({per_node} per node, {nodes} replicas)",
                (("gpus", per_node), ("sharding", "fsdp")),
                hybrid=True,
            )
        )
    found.append(
        Parallelism(
            "fsdp-offload",
            "ZeRO-3 / FSDP + optimizer offload to CPU",
            (("gpus", world), ("sharding", "zero-3"), ("offload", "optimizer")),
        )
    )
    return found


def _micro_steps(per_gpu: int, micro: int) -> list[tuple[int, int]]:
    """(micro-batch, accumulation) pairs that keep ``per_gpu`` samples, halving the micro."""
    steps = []
    while micro > 1:
        micro //= 2
        while per_gpu % micro:
            micro -= 1
        steps.append((micro, per_gpu // micro))
    return steps


def _ladder(
    r: Resolved, gpu: Gpu, family: str, base: tuple[tuple[str, ...], dict], micro: int, per_gpu: int
) -> list[Rung]:
    """``base`` (its titles and changes) then one more remedy per rung."""
    cfg = r.config
    train = cfg.value("mode") == "train"
    rungs: list[tuple[str, dict]] = [("", base[1])]
    if train and int(cfg.value("eval_batch_size") or 0) > micro:  # costs evaluation speed only
        rungs.append((f"evaluation batch {micro}", {"eval_batch_size": micro}))
    if cfg.value("dtype") == "fp32":
        mixed = "amp-bf16" if gpu.bf16 else "amp-fp16"
        if train:
            rungs.append((f"mixed precision ({mixed})", {"dtype": mixed}))
        else:
            rungs.append(("16-bit weights", {"dtype": "bf16" if gpu.bf16 else "fp16"}))
    if train and r.shape.stacks and not cfg.value("checkpointing"):
        rungs.append(("gradient checkpointing", {"checkpointing": True}))
    if train and cfg.value("optimizer") in _ADAM and family == "full":
        rungs.append(("8-bit AdamW", {"optimizer": "adamw-8bit"}))
    if not train and r.shape.stacks and not cfg.value("quantize"):
        rungs.append(("8-bit weights", {"quantize": "8bit"}))
    for m, accumulation in _micro_steps(per_gpu, micro):
        if train:
            change = {"batch_size": m, "accumulation": accumulation}
            rungs.append((f"micro-batch {m} × accumulation {accumulation}", change))
        else:
            rungs.append((f"batch {m}", {"batch_size": m}))
    out: list[Rung] = []
    titles: list[str] = list(base[0])
    changes: dict[str, Any] = {}
    for title, change in rungs:
        if title and "batch_size" in change:  # a new split replaces the previous one
            titles = [t for t in titles if not t.startswith(("micro-batch", "batch "))]
        if title:
            titles.append(title)
        changes.update(change)
        out.append(Rung(family, tuple(titles), tuple(changes.items())))
    return out


def ladders(r: Resolved, gpu: Gpu, world: int) -> list[list[Rung]]:
    """The remedy ladders for ``r`` on ``world`` GPUs, each taking its own micro-batches (DDP,
    ZeRO and FSDP all split the data over every GPU). Empty when the global batch cannot be
    split evenly over them: a plan never changes the global batch."""
    cfg = r.config
    train = cfg.value("mode") == "train"
    total = global_batch(r) if train else int(cfg.value("batch_size") or 1)
    replicas = world if train else 1
    if total % replicas:
        return []
    per_gpu = total // replicas
    micro = min(int(cfg.value("batch_size") or 1), per_gpu)
    while per_gpu % micro:
        micro -= 1
    # what every rung needs on this hardware: the global batch split over `world` GPUs, and
    # fp16 on a card without bf16
    first: dict[str, Any] = {"batch_size": micro, "accumulation": per_gpu // micro} if train else {}
    split = ""
    if train and (micro, per_gpu // micro) != (
        int(cfg.value("batch_size") or 1),
        int(cfg.value("accumulation") or 1),
    ):
        split = f"micro-batch {micro} × accumulation {per_gpu // micro} (global batch {total})"
    needed = (split,) if split else ()
    dtype = cfg.value("dtype")
    if dtype in ("amp-bf16", "bf16") and not gpu.bf16:  # the card has no bf16: run fp16
        first["dtype"] = "amp-fp16" if dtype == "amp-bf16" else "fp16"
        needed = (f"{first['dtype']} (no bf16 on {gpu.name})", *needed)
    found = [_ladder(r, gpu, "full", (needed, first), micro, per_gpu)]
    fine_tunes = cfg.value("pretrained") is True and bool(r.shape.stacks)
    if train and fine_tunes and not cfg.value("lora_rank"):
        lora = {**first, "lora_rank": 16, "lora_targets": "all-linear"}
        found.append(_ladder(r, gpu, "lora", (("LoRA r16", *needed), lora), micro, per_gpu))
        if not cfg.value("quantize"):
            qlora = {**lora, "quantize": "4bit"}
            titles = ("QLoRA r16 (4-bit)", *needed)
            found.append(_ladder(r, gpu, "qlora", (titles, qlora), micro, per_gpu))
    return found
