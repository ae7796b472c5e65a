"""The changes a plan may make to the job: how it is spread over GPUs, and what it gives up.

Each variant is a set of :class:`~..runconfig.RunConfig` field changes, so the memory of
every plan is what :func:`..estimate.estimate_resolved` says for the changed job: there is
no second cost model. Two orders matter for the search (:mod:`.search`):

- **parallelism** (:func:`parallelisms`), simplest first: DDP, ZeRO-1, ZeRO-2, ZeRO-3 /
  FSDP full shard, FSDP hybrid shard across nodes, then optimizer offload to the CPU, then
  optimizer and parameter offload (ZeRO-Infinity's CPU tier; its host RAM is checked by
  :mod:`.search`); and,
  per tensor-parallel degree (:func:`tensor_parallel_degrees`: within one node's NVLink
  GPUs, where the model's heads and MLP split evenly), tensor parallelism alone, with DDP
  or with FSDP over the replicas;
- **remedy ladders** (:func:`ladders`), least given up first, each step adding one change
  to the previous: an evaluation batch no larger than the training micro-batch, mixed
  precision, gradient checkpointing, 8-bit AdamW, then halving the
  micro-batch with gradient accumulation that keeps the global batch. LoRA and QLoRA are
  ladders of their own, offered only when the script loads trained weights (``pretrained``
  read as true): they change what is trained, not just how.

Tensor parallelism is sized by the estimator itself (:mod:`...tensor_parallel`): a plan
only sets ``tensor_parallel`` and ``gpus``, like any other field.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..hardware import Gpu
from ..resolve import Resolved
from ..tensor_parallel import degree, why_not
from . import hardware_extra

__all__ = [
    "Parallelism",
    "Rung",
    "global_batch",
    "ladders",
    "parallelisms",
    "tensor_parallel_degrees",
]

_ADAM = ("adamw", "adam", "adamw-fused", "lion")


@attrs.frozen
class Parallelism:
    """How the job is spread: its label and the estimator fields that size it."""

    name: str
    label: str
    changes: tuple[tuple[str, Any], ...]
    hybrid: bool = False
    tensor_parallel: int = 1
    """GPUs each layer is split over (1: none); the data-parallel replicas are the rest."""


@attrs.frozen
class Rung:
    """One step of a remedy ladder: what it is called and every change up to it."""

    family: str
    """``full`` (full training), ``lora`` or ``qlora``."""
    titles: tuple[str, ...]
    changes: tuple[tuple[str, Any], ...]


def global_batch(r: Resolved) -> int:
    """Samples per optimizer step over all GPUs, as the script runs: kept by every plan.
    A tensor-parallel group of GPUs shares its samples: only the replicas multiply them."""
    cfg = r.config
    gpus = int(cfg.value("gpus") or 1)
    return (
        int(cfg.value("batch_size") or 1)
        * int(cfg.value("accumulation") or 1)
        * max(1, gpus // degree(cfg))
    )


def tensor_parallel_degrees(r: Resolved, gpu: Gpu, per_node: int) -> list[int]:
    """Tensor-parallel degrees worth sizing on nodes of ``per_node`` ``gpu``: powers of two
    up to the node (its all-reduces run every layer, so never across nodes), on NVLink GPUs
    only (over PCIe they would dominate the step), that the model splits evenly into."""
    if hardware_extra.link_kind(gpu.key) is None or r.config.value("frozen") is not None:
        return []
    found, t = [], 2
    while t <= per_node:
        if per_node % t == 0 and why_not(r.shape, t) is None:
            found.append(t)
        t *= 2
    return found


def _tensor_parallel(r: Resolved, per_node: int, nodes: int, t: int) -> list[Parallelism]:
    """Tensor parallelism of degree ``t``: alone when it takes every GPU, else with DDP or
    FSDP over the replicas."""
    world = per_node * nodes
    split = (("gpus", world), ("tensor_parallel", t))
    if world == t:
        alone = (*split, ("sharding", "none"))
        return [Parallelism("tp", f"tensor parallel {t}", alone, False, t)]
    if r.config.value("mode") != "train":  # inference: one group, no replicas to plan
        return []
    replicas = world // t
    return [
        Parallelism(
            "tp-ddp",
            f"tensor parallel {t} × DDP {replicas}",
            (*split, ("sharding", "ddp")),
            False,
            t,
        ),
        Parallelism(
            "tp-fsdp",
            f"tensor parallel {t} × FSDP {replicas}",
            (*split, ("sharding", "fsdp")),
            False,
            t,
        ),
    ]


def parallelisms(r: Resolved, per_node: int, nodes: int, t: int = 1) -> list[Parallelism]:
    """Ways to run on ``per_node × nodes`` GPUs with tensor-parallel degree ``t``, simplest
    (fastest) first; the last keeps the least on each GPU."""
    if t > 1:
        return _tensor_parallel(r, per_node, nodes, t)
    found = _data_parallel(r, per_node, nodes)
    if degree(r.config) != 1:  # the job as given runs tensor parallel: these plans do not
        found = [attrs.evolve(p, changes=(*p.changes, ("tensor_parallel", 1))) for p in found]
    return found


def _data_parallel(r: Resolved, per_node: int, nodes: int) -> list[Parallelism]:
    """Data parallelism alone: DDP, ZeRO, FSDP (and hybrid), CPU offload of the optimizer,
    then of the optimizer and the parameters."""
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
            Parallelism(
                "zero-3-offload-params",
                "ZeRO-3 + optimizer and parameter offload to CPU (ZeRO-Infinity)",
                (("gpus", 1), ("sharding", "zero-3"), ("offload", "optimizer+params")),
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
    found.append(
        Parallelism(
            "fsdp-offload-params",
            "ZeRO-3 / FSDP + optimizer and parameter offload to CPU (ZeRO-Infinity)",
            (("gpus", world), ("sharding", "zero-3"), ("offload", "optimizer+params")),
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
