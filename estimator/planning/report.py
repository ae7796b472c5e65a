"""What ``torchward plan`` prints: the JSON object of docs/plan.md, the table, and a SkyPilot
``resources:`` block.

The JSON object is the one fact; the table and the SkyPilot block are rendered from it, so
the three never disagree. Times are modelled (``"modelled": true`` on every step time, and
a line under the table says so): nothing here was measured.
"""

from __future__ import annotations

import math
from typing import Any, TextIO

from ..estimate import estimate_resolved
from ..report import config_json
from ..resolve import Resolved
from ..units import count_text
from .prices import Offer
from .search import Plan, Request
from .steptime import ASSUMED_MFU, CPU_ADAM_PARAMS_PER_S, NETWORK_GBIT
from .variants import global_batch

__all__ = ["SCHEMA_VERSION", "plan_report", "render_skypilot", "render_table"]

SCHEMA_VERSION = 1
GIB = 2**30


def _run(plan: Plan, steps: int) -> dict[str, float | None]:
    if plan.step is None:
        return {"hours": None, "usd": None}
    hours = plan.step.seconds * steps / 3600
    return {"hours": hours, "usd": hours * plan.usd_per_hour}


def _within(plan: Plan, steps: int, budget: float | None, max_hours: float | None) -> bool:
    run = _run(plan, steps)
    if budget is not None and (run["usd"] is None or run["usd"] > budget):
        return False
    return max_hours is None or (run["hours"] is not None and run["hours"] <= max_hours)


def _plan_dict(plan: Plan, rank: int, steps: int, fastest: bool) -> dict[str, Any]:
    est, inst = plan.estimate, plan.offer.instance
    return {
        "rank": rank,
        "instance": inst.name,
        "provider": inst.provider,
        "gpu": inst.gpu.key,
        "gpu_name": inst.gpu.name,
        "gpus_per_node": inst.count,
        "nodes": plan.nodes,
        "gpus": plan.gpus,
        "parallelism": {
            "name": plan.parallelism.name,
            "label": plan.parallelism.label,
            "tensor_parallel": plan.parallelism.tensor_parallel,
        },
        "family": plan.rung.family,
        "remedies": list(plan.rung.titles),
        "changes": {k: list(v) if isinstance(v, tuple) else v for k, v in plan.changes.items()},
        "memory": {
            "peak_bytes": est.peak,
            "high_bytes": est.high,
            "usable_bytes": est.usable,
            "verdict": est.verdict,
            "confidence": est.confidence,
        },
        "price": {**plan.offer.to_dict(), "usd_per_hour": plan.usd_per_hour, "stale": plan.stale},
        "step_time": plan.step.to_dict() if plan.step else None,
        "usd_per_1k_steps": plan.usd_per_1k_steps,
        "run": _run(plan, steps),
        "offload": _offload(plan),
        "fastest": fastest,
    }


def _offload(plan: Plan) -> dict[str, Any] | None:
    """What an offloading plan puts in each node's CPU memory, and whether the instance's
    host RAM was known to check it against; ``None`` for a plan that offloads nothing."""
    if plan.host_bytes is None:
        return None
    host = plan.offer.host_memory_gib
    return {
        "host_bytes_per_node": plan.host_bytes,
        "host_memory_bytes": int(host * 2**30) if host is not None else None,
        "checked": plan.host_checked,
    }


def _price_sources(offers: list[Offer]) -> list[dict[str, str]]:
    seen: dict[tuple[str, str, str], dict[str, str]] = {}
    for o in offers:
        key = (o.source, o.date.isoformat(), o.date_basis)
        seen.setdefault(key, {"source": o.source, "date": key[1], "date_basis": o.date_basis})
    return list(seen.values())


def plan_report(
    r: Resolved,
    plans: list[Plan],
    offers: list[Offer],
    request: Request,
    *,
    steps: int,
    steps_basis: str,
    notes: list[str] | None = None,
    budget: float | None = None,
    max_hours: float | None = None,
) -> dict[str, Any]:
    """The JSON object of ``torchward plan --format json`` (docs/plan.md). With ``budget``
    (dollars) or ``max_hours``, only plans whose modelled run of ``steps`` keeps within them
    (a plan without a step time cannot be shown to, so it is left out)."""
    plans = [p for p in plans if _within(p, steps, budget, max_hours)]
    timed = [(p.step.seconds, p.sort_key(), p) for p in plans if p.step is not None]
    fastest = min(timed, key=lambda t: t[:2])[2] if timed else None
    stale = [o for o in offers if o.stale(request.today, request.max_age_days)]
    extra = list(notes or ())
    if stale and not request.allow_stale:
        extra.append(
            f"{len(stale)} price(s) older than {request.max_age_days} days left out "
            "(--allow-stale-prices to rank them, flagged)"
        )
    base = estimate_resolved(r, None)
    if not base.activations_modelled:  # the estimator gives no verdict: plan guesses none
        extra += [n for n in base.notes if n.startswith("unknown:")]
    unchecked = sorted(
        {p.offer.instance.name for p in plans if p.host_bytes is not None and not p.host_checked}
    )
    if unchecked:
        extra.append(
            "host RAM not checked for offload plans on "
            f"{', '.join(unchecked)}: the price table does not give their CPU memory"
        )
    if not r.shape.stacks:
        extra.append("no step time: training FLOPs are modelled for transformer stacks only")
    return {
        "version": SCHEMA_VERSION,
        "model": r.model_label,
        "params": r.shape.params,
        "mode": r.config.value("mode"),
        "global_batch": global_batch(r),
        "seq_len": r.config.value("seq_len"),
        "config": config_json(r.config),
        "assumed": list(r.missing),
        "assumptions": {
            "mfu": ASSUMED_MFU,
            "headroom": request.headroom,
            "network_gbit_per_node": NETWORK_GBIT,
            "cpu_adam_params_per_s": CPU_ADAM_PARAMS_PER_S,
            "price_max_age_days": request.max_age_days,
            "prices": _price_sources(offers),
            "run_steps": steps,
            "run_steps_basis": steps_basis,
            "times": "modelled (roofline), not measured",
        },
        "plans": [_plan_dict(p, i + 1, steps, p is fastest) for i, p in enumerate(plans)],
        "notes": extra,
    }


def _money(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if value >= 0.01 else f"{value:.4f}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f} s" if value >= 0.01 else f"{value * 1000:.1f} ms"


def _run_text(run: dict[str, Any] | None) -> str:
    """The run's modelled hours and dollars, ``-`` without a step time."""
    if not run or run.get("hours") is None:
        return "-"
    hours = run["hours"]
    length = f"{hours:.1f} h" if hours >= 0.1 else f"{hours * 60:.0f} min"
    return f"{length}, ${_money(run['usd'])}"


def render_table(data: dict[str, Any], out: TextIO, top: int = 10) -> None:
    """The ranked table, cheapest first, and the assumptions under it."""
    head = (
        f"Plans for {data['model']} ({count_text(data['params'])} parameters), {data['mode']}, "
        f"global batch {data['global_batch']}"
        + (f" × {data['seq_len']} tokens" if data.get("seq_len") else "")
    )
    print(head, file=out)
    plans = data["plans"]
    if not plans:
        print("  no plan fits: no priced instance runs this job, even with every remedy", file=out)
    else:
        rows = [
            (
                "#",
                "instance (cloud)",
                "GPUs",
                "parallelism",
                "remedies",
                "peak/GPU",
                "$/h",
                "step~",
                "$/1k steps~",
                "run~",
                "",
            )
        ]
        for p in plans[:top]:
            mem = p["memory"]
            rows.append(
                (
                    str(p["rank"]),
                    f"{p['instance']} ({p['provider']})",
                    f"{p['gpus']}× {p['gpu']}"
                    + (f" ({p['nodes']} nodes)" if p["nodes"] > 1 else ""),
                    p["parallelism"]["label"],
                    ", ".join(p["remedies"]) or "none",
                    f"{mem['peak_bytes'] / GIB:.1f}/{mem['usable_bytes'] / GIB:.0f} GiB",
                    _money(p["price"]["usd_per_hour"]) + (" STALE" if p["price"]["stale"] else ""),
                    _seconds((p["step_time"] or {}).get("seconds")),
                    _money(p["usd_per_1k_steps"]),
                    _run_text(p["run"]),
                    "fastest" if p["fastest"] else "",
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            print("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip(), file=out)
        if len(plans) > top:
            print(f"  ... {len(plans) - top} more (--top N, or --format json)", file=out)
    a = data["assumptions"]
    print(
        f"~ modelled, not measured: roofline step time at an assumed MFU of {a['mfu']:.0%} of the "
        f"GPU's dense peak, communication over NVLink/PCIe in a node and "
        f"{a['network_gbit_per_node']:.0f} Gbit/s between nodes (docs/plan.md)",
        file=out,
    )
    print(
        f"fits: the estimator's verdict `fits` with {a['headroom']:.0%} of usable memory left "
        f"free; run length {a['run_steps']:,} steps ({a['run_steps_basis']})",
        file=out,
    )
    for src in a["prices"]:
        basis = {
            "git": "commit date",
            "retrieved": "retrieved; commit date not recorded",
            "given": "date given",
            "user": "your price",
        }.get(src["date_basis"], "")
        print(
            f"prices: {src['source']}, {src['date']} ({basis}); stale after "
            f"{a['price_max_age_days']} days",
            file=out,
        )
    for note in data["notes"]:
        print(f"note: {note}", file=out)


def render_skypilot(data: dict[str, Any], out: TextIO, rank: int = 1) -> bool:
    """A SkyPilot task's ``resources:`` block for the plan ranked ``rank``; False if none."""
    chosen = next((p for p in data["plans"] if p["rank"] == rank), None)
    if chosen is None:
        return False
    step = (chosen["step_time"] or {}).get("seconds")
    print(
        f"# torchward plan, rank {rank}: {chosen['parallelism']['label']}; remedies: "
        f"{', '.join(chosen['remedies']) or 'none'}",
        file=out,
    )
    if step is not None:
        print(
            f"# modelled (not measured): ~{step:.2f} s/step, "
            f"${chosen['usd_per_1k_steps']:.2f} per 1,000 steps",
            file=out,
        )
    offload = chosen.get("offload")
    if offload is not None:
        needed = offload["host_bytes_per_node"] / GIB
        checked = (
            f"checked against its {offload['host_memory_bytes'] / GIB:.0f} GiB"
            if offload["checked"]
            else "not checked: the price table does not give its host RAM"
        )
        print(
            f"# offload: {needed:.1f} GiB per node of optimizer state"
            + (" and parameters" if "params" in chosen["parallelism"]["name"] else "")
            + f" in the instance's CPU memory ({checked})",
            file=out,
        )
    print("resources:", file=out)
    print(f"  cloud: {chosen['provider']}", file=out)
    print(f"  instance_type: {chosen['instance']}", file=out)
    accelerator = chosen["price"].get("accelerator") or ""
    if accelerator:
        print(f"  accelerators: {accelerator}:{chosen['gpus_per_node']}", file=out)
    print(f"num_nodes: {chosen['nodes']}", file=out)
    return True


def steps_per_epoch(dataset_size: int, batch: int) -> int:
    return max(1, math.ceil(dataset_size / max(batch, 1)))
