"""The cheapest ways to run a job: GPU type × count × parallelism × remedies, each one sized
by the estimator, priced, and timed by the roofline model.

For every priced instance (one per GPU type, count and cloud: the cheapest) and every node
count, the search walks each remedy ladder (:func:`.variants.ladders`) from the bottom and,
at each rung, the parallelisms from the simplest; the **first** combination that fits ends
that ladder, and a fitting ladder ends the search for that instance (full training, then
LoRA, then QLoRA). So a plan never carries a remedy it does not need, and the search stops early
(``plan`` on the bundled examples takes well under a second: bench/bench_plan.py).

Tensor parallelism (:func:`.variants.tensor_parallel_degrees`) is searched per degree, each
with its own ladder (the global batch split over fewer replicas): a degree's plan is kept
only when it needs fewer remedies than every smaller degree's on that instance, or when
none of them fits. It then competes on modelled cost like any other plan.

"Fits" is the estimator's own verdict, ``fits`` (its whole interval under the GPU's usable
memory), and in addition the nominal peak leaves :data:`DEFAULT_HEADROOM` of it free.
Estimates are cached per (changes, GPU): the same variant on another instance with the
same GPU is not sized twice.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable
from typing import Any

import attrs

from ..estimate import Estimate, estimate_resolved
from ..hardware import Gpu
from ..remedies import _apply as apply_changes
from ..resolve import Resolved
from ..runconfig import RunConfig
from .prices import DEFAULT_MAX_AGE_DAYS, Offer
from .steptime import StepTime, step_time
from .variants import Parallelism, Rung, ladders, parallelisms, tensor_parallel_degrees

__all__ = ["DEFAULT_HEADROOM", "Plan", "Request", "config_of", "host_bytes", "search"]

DEFAULT_HEADROOM = 0.05
"""Share of the GPU's usable memory a plan leaves free beyond the estimator's interval."""


@attrs.frozen
class Request:
    """What to search: the filters of ``torchward plan``."""

    max_gpus: int = 8
    nodes: int = 1
    headroom: float = DEFAULT_HEADROOM
    max_age_days: int = DEFAULT_MAX_AGE_DAYS
    allow_stale: bool = False
    today: datetime.date = attrs.field(factory=datetime.date.today)


@attrs.frozen
class Plan:
    """One way to run the job, with what it costs and what it gives up."""

    offer: Offer
    nodes: int
    parallelism: Parallelism
    rung: Rung
    estimate: Estimate
    step: StepTime | None
    stale: bool
    host_bytes: int | None = None
    """CPU memory per node the offloaded optimizer (and parameters) take; ``None`` without
    offload. Checked against the instance's host RAM where the price table gives it."""

    @property
    def host_checked(self) -> bool:
        return self.host_bytes is not None and self.offer.host_memory_gib is not None

    @property
    def gpus(self) -> int:
        return self.offer.instance.count * self.nodes

    @property
    def changes(self) -> dict[str, Any]:
        """Every estimator field this plan sets (on top of the job as given)."""
        return {**dict(self.rung.changes), **dict(self.parallelism.changes)}

    @property
    def usd_per_hour(self) -> float:
        return self.offer.usd_per_hour * self.nodes

    @property
    def usd_per_1k_steps(self) -> float | None:
        if self.step is None:
            return None
        return self.step.seconds * 1000 / 3600 * self.usd_per_hour

    def sort_key(self) -> tuple:
        cost = self.usd_per_1k_steps
        return (
            self.stale,
            cost is None,
            cost if cost is not None else self.usd_per_hour,
            self.usd_per_hour,
            self.offer.instance.name,
            self.parallelism.name,
        )


def config_of(base: RunConfig, plan: Plan) -> RunConfig:
    """The job ``plan`` runs, as a :class:`RunConfig`: what ``torchward estimate`` sizes."""
    return base.merged(RunConfig().with_values("plan", **plan.changes))


def _fits(e: Estimate, gpu: Gpu, headroom: float) -> bool:
    return e.verdict == "fits" and e.peak <= gpu.usable_bytes * (1 - headroom)


def host_bytes(changes: dict[str, Any], gpu: Gpu, per_node: int, sized_on) -> int | None:
    """The CPU memory per node an offloading variant needs: what the same job without
    offload keeps on each GPU for the terms it moves (optimizer state and master weights;
    the weights too when parameters are offloaded), times the node's GPUs. The estimator's
    own terms: no second cost model. ``None`` for a variant that offloads nothing."""
    offload = changes.get("offload") or "none"
    if offload == "none":
        return None
    kept = sized_on({**changes, "offload": "none"}, gpu).terms
    moved = kept["optimizer_state"] + kept["master_weights"]
    if offload == "optimizer+params":
        moved += kept["weights"]
    return int(moved) * per_node


def _host_ok(
    changes: dict[str, Any], *, gpu: Gpu, per_node: int, offer: Offer, headroom: float, sized_on
) -> bool:
    """What ``changes`` offloads fits the instance's host RAM (with the same headroom), or
    the table does not give its host RAM (then the plan says it was not checked)."""
    needed = host_bytes(changes, gpu, per_node, sized_on)
    if needed is None or offer.host_memory_gib is None:
        return True
    return needed <= offer.host_memory_gib * 2**30 * (1 - headroom)


def _cheapest(offers: Iterable[Offer]) -> list[Offer]:
    """One offer per (cloud, GPU, count): the cheapest (ties: by name)."""
    best: dict[tuple, Offer] = {}
    for o in offers:
        key = (o.instance.provider, o.instance.gpu.key, o.instance.count)
        if key not in best or (o.usd_per_hour, o.instance.name) < (
            best[key].usd_per_hour,
            best[key].instance.name,
        ):
            best[key] = o
    return sorted(best.values(), key=lambda o: (o.usd_per_hour, o.instance.name))


def search(r: Resolved, offers: Iterable[Offer], request: Request = Request()) -> list[Plan]:
    """Every plan that fits, cheapest first (stale prices last, and only when allowed)."""
    if not estimate_resolved(r, None).activations_modelled:
        return []  # the estimator gives this job no verdict on any GPU: nothing can fit
    sized: dict[tuple, Estimate] = {}

    def sized_on(changes: dict[str, Any], gpu: Gpu) -> Estimate:
        key = (tuple(sorted(changes.items(), key=lambda kv: kv[0])), gpu.key)
        if key not in sized:
            sized[key] = estimate_resolved(apply_changes(r, changes), gpu)
        return sized[key]

    plans: list[Plan] = []
    for offer in _cheapest(offers):
        stale = offer.stale(request.today, request.max_age_days)
        if stale and not request.allow_stale:
            continue
        per_node, gpu = offer.instance.count, offer.instance.gpu
        for nodes in range(1, request.nodes + 1):
            if per_node * nodes > request.max_gpus:
                break
            world = per_node * nodes
            degrees = (1, *tensor_parallel_degrees(r, gpu, per_node))
            host_ok = functools.partial(
                _host_ok,
                gpu=gpu,
                per_node=per_node,
                offer=offer,
                headroom=request.headroom,
                sized_on=sized_on,
            )
            # per degree: its parallelisms and its remedy ladders (the global batch split
            # over its data-parallel replicas), each ladder keyed by its family
            by_degree = [
                (t, parallelisms(r, per_node, nodes, t), ladders(r, gpu, world // t))
                for t in degrees
            ]
            # full training first; LoRA only where it does not fit, QLoRA only where LoRA
            # does not: they change what is trained, so they are remedies of last resort
            for family in _families(ladder for _, _, found in by_degree for ladder in found):
                fewest: int | None = None  # remedies of the plan kept at a smaller degree
                for _t, options, found in by_degree:
                    ladder = next((lad for lad in found if lad[0].family == family), [])
                    fit = _first_fit(ladder, options, gpu, request.headroom, sized_on, host_ok)
                    # a larger degree only when it needs fewer remedies than every smaller
                    # one (or none of them fits): tensor parallelism costs time every layer
                    if fit is None or (fewest is not None and fit[0] >= fewest):
                        continue
                    fewest, (rung, parallel, est) = fit[0], fit[1:]
                    changed = apply_changes(r, {**dict(rung.changes), **dict(parallel.changes)})
                    step = step_time(
                        changed, gpu, per_node=per_node, nodes=nodes, hybrid=parallel.hybrid
                    )
                    both = {**dict(rung.changes), **dict(parallel.changes)}
                    host = host_bytes(both, gpu, per_node, sized_on)
                    plans.append(Plan(offer, nodes, parallel, rung, est, step, stale, host))
                if fewest is not None:
                    break
    return sorted(plans, key=Plan.sort_key)


def _families(found: Iterable[list[Rung]]) -> list[str]:
    """The ladders' families in their order (full, then LoRA, then QLoRA), each once."""
    out: list[str] = []
    for ladder in found:
        if ladder and ladder[0].family not in out:
            out.append(ladder[0].family)
    return out


def _first_fit(
    ladder: list[Rung],
    options: list[Parallelism],
    gpu: Gpu,
    headroom: float,
    sized_on,
    host_ok,
) -> tuple[int, Rung, Parallelism, Estimate] | None:
    """The lowest rung (its index: the remedies it adds), and on it the simplest
    parallelism, that fits (the GPU, and the host RAM what it offloads); ``None`` if none."""
    if not options:
        return None
    for index, rung in enumerate(ladder):
        # the last option keeps the least on each GPU (sharded and offloaded): when even it
        # does not fit the GPU, no option on this rung does, and one estimate says so
        leanest = options[-1]
        if not _fits(sized_on({**dict(rung.changes), **dict(leanest.changes)}, gpu), gpu, headroom):
            continue
        for parallel in options:
            changes = {**dict(rung.changes), **dict(parallel.changes)}
            est = sized_on(changes, gpu)
            if _fits(est, gpu, headroom) and host_ok(changes):
                return index, rung, parallel, est
    return None
