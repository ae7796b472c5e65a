"""``torchward.plan``: the cheapest way to run the document's job, in the editor.

- command ``torchward.plan [uri]`` (also through ``workspace/executeCommand`` for generic
  clients) → ``{uri, status, summary, plans, assumptions, notes}``: the planner of
  ``torchward plan`` (docs/plan.md) run on the job of the document's last estimate, the top
  :data:`TOP` plans in the JSON shape of ``plan --format json``. The summary is also shown
  with ``window/showMessage`` (generic clients drop a command's return value);
- once planned, a **code lens** on the training entry (the line of the peak lens):
  ``cheapest fit: 1× L4 24GB, gradient checkpointing, ~$0.80/h, ~1.90 s/step`` (the
  times are modelled: ``~``), and a **hover** on that line with a table of the top plans;
- command ``torchward.choosePlan [uri, rank]`` (the lens's click, rank 1) → the plan's
  instance becomes the session's GPU (as ``torchward.selectGpu`` does, so the document is
  estimated again on it) and the remedies the plan assumes are named with
  ``window/showMessage``: the estimate on the new GPU is of the script as written until they
  are applied. ``{uri, status, gpu, remedies, actions}``;
- once a plan is chosen, its remedies that one change of the script applies (gradient
  checkpointing, mixed precision, 8-bit AdamW, micro-batch and accumulation: see
  :mod:`.plan_edits`) are offered as code actions of kind :data:`REMEDY_ACTIONS` on the
  document, each until it is applied; ``actions`` lists their titles. The chosen plan stays
  until another is chosen: choosing it re-estimates the document, which drops the plan
  report but not the choice.

Planning sizes dozens of variants of the job (0.05-0.5 s), so it runs on the executor and
only when asked: the result is kept for the estimate it was made from and dropped when the
document is estimated again (its lens and hover disappear until the next plan). Prices are
the bundled table's (``[tool.torchward] prices`` are read by the command line only).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from lsprotocol import types

from .documents import Document
from .estimates import GpuEstimate
from .server import TorchwardServer

PLAN = "torchward.plan"
CHOOSE_PLAN = "torchward.choosePlan"
REMEDY_ACTIONS = "refactor.rewrite.torchward.plan"
TOP = 5

# server → uri → (the estimate planned from, the plan report): per server, freed with it
_PLANNED: weakref.WeakKeyDictionary[TorchwardServer, dict[str, tuple[GpuEstimate, dict]]] = (
    weakref.WeakKeyDictionary()
)
# server → uri → (the chosen plan, the job as read: field → value)
_CHOSEN: weakref.WeakKeyDictionary[TorchwardServer, dict[str, tuple[dict, dict]]] = (
    weakref.WeakKeyDictionary()
)
# server → uri → (document version, chosen plan, its remedy edits for that version's text)
_BUILT: weakref.WeakKeyDictionary[TorchwardServer, dict[str, tuple[Any, dict, list]]] = (
    weakref.WeakKeyDictionary()
)


def _plan_estimate(estimate: GpuEstimate) -> dict[str, Any]:
    """The planner's report for the job an estimate sized (runs on the executor)."""
    from torchward.estimator.planning.prices import offers
    from torchward.estimator.planning.report import plan_report
    from torchward.estimator.planning.search import Request, search

    resolved = estimate.detail.resolved
    request = Request()
    found = list(offers(today=request.today))
    plans = search(resolved, found, request)
    return plan_report(
        resolved, plans, found, request, steps=1000, steps_basis="default (the editor)"
    )


def summary(data: dict[str, Any]) -> str:
    """One line for the lens and the message: the cheapest plan, or why there is none."""
    if not data["plans"]:
        reason = next(iter(data["notes"]), "no priced instance runs this job")
        return f"torchward: no plan fits ({reason})"
    best = data["plans"][0]
    remedies = ", ".join(best["remedies"]) or "as is"
    step = (best["step_time"] or {}).get("seconds")
    timing = f", ~{step:.2f} s/step" if step is not None else ""
    return (
        f"cheapest fit: {best['gpus']}× {best['gpu_name']}, {remedies}, "
        f"~${best['price']['usd_per_hour']:.2f}/h{timing}"
    )


def planned(server: TorchwardServer, uri: str) -> dict[str, Any] | None:
    """The plan report of the document's current estimate, if it was planned."""
    kept = _PLANNED.get(server, {}).get(uri)
    if kept is None or server.last_fit.get(uri) is not kept[0]:
        return None
    return kept[1]


async def plan_document(server: TorchwardServer, uri: Any) -> dict[str, Any]:
    estimate = server.last_fit.get(uri) if isinstance(uri, str) else None
    if estimate is None or estimate.status != "ok" or estimate.detail is None:
        reason = (
            estimate.reason
            if estimate is not None and estimate.reason
            else ("no estimate of this document yet: open a training script")
        )
        _show(server, f"torchward: nothing to plan ({reason})")
        return {"uri": uri, "status": "error", "reason": reason}
    loop = asyncio.get_running_loop()
    data = await loop.run_in_executor(server.executor, _plan_estimate, estimate)
    _PLANNED.setdefault(server, {})[uri] = (estimate, data)
    line = summary(data)
    _show(server, line if line.startswith("torchward") else f"torchward: {line}")
    from .lenses import refresh

    refresh(server)
    return {
        "uri": uri,
        "status": "ok",
        "summary": line,
        "plans": data["plans"][:TOP],
        "assumptions": data["assumptions"],
        "notes": data["notes"],
    }


def _show(server: TorchwardServer, message: str) -> None:
    try:
        server.window_show_message(types.ShowMessageParams(types.MessageType.Info, message))
    except Exception:  # no client (unit tests): the answer still says it
        pass


def plan_lens(
    server: TorchwardServer, document: Document, estimate: GpuEstimate
) -> types.CodeLens | None:
    """The cheapest plan on the training entry, once the document was planned."""
    from .lenses import step_line

    data = planned(server, document.uri)
    line = step_line(estimate, document)
    if data is None or line is None:
        return None
    start = types.Position(min(max(line, 1), len(document.lines)) - 1, 0)
    command = types.Command(title=summary(data), command=CHOOSE_PLAN, arguments=[document.uri, 1])
    return types.CodeLens(range=types.Range(start, start), command=command)


def hover_markdown(server: TorchwardServer, uri: str, line: int) -> str | None:
    """The top plans as a table, on the training entry's (1-based) ``line``, once planned."""
    from .lenses import step_line

    data = planned(server, uri)
    document = server.documents.get(uri)
    estimate = server.last_fit.get(uri)
    if data is None or document is None or estimate is None:
        return None
    if line != step_line(estimate, document):
        return None
    rows = [
        "| # | instance | GPUs | parallelism | remedies | $/h | step~ |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in data["plans"][:TOP]:
        step = (p["step_time"] or {}).get("seconds")
        rows.append(
            f"| {p['rank']} | {p['instance']} ({p['provider']}) | {p['gpus']}× {p['gpu_name']} "
            f"| {p['parallelism']['label']} | {', '.join(p['remedies']) or 'none'} "
            f"| {p['price']['usd_per_hour']:.2f} | {f'{step:.2f} s' if step else 'n/a'} |"
        )
    a = data["assumptions"]
    dates = ", ".join(sorted({p["date"] for p in a["prices"]}))
    return "\n".join(
        [
            "**torchward plan** — cheapest first",
            "",
            *rows,
            "",
            f"~ modelled, not measured: MFU {a['mfu']:.0%} assumed; {a['headroom']:.0%} "
            f"memory headroom; prices of {dates} (docs/plan.md)",
        ]
    )


async def choose_plan(server: TorchwardServer, uri: Any, rank: Any = 1) -> dict[str, Any]:
    """Make the plan ranked ``rank`` the session's GPU, say what it assumes, and offer the
    remedies a change of the script applies as code actions."""
    from .commands import select_gpu

    data = planned(server, uri) if isinstance(uri, str) else None
    chosen = next((p for p in (data or {}).get("plans", ()) if p["rank"] == rank), None)
    if chosen is None:
        reason = "plan this document first (torchward.plan)" if data is None else f"no plan {rank}"
        _show(server, f"torchward: {reason}")
        return {"uri": uri, "status": "error", "reason": reason}
    read = {name: field["value"] for name, field in (data or {}).get("config", {}).items()}
    _CHOSEN.setdefault(server, {})[uri] = (chosen, read)
    document = server.documents.get(uri)
    offered = await remedy_edits_of(server, document) if document is not None else []
    nodes = f" × {chosen['nodes']} nodes" if chosen["nodes"] > 1 else ""
    answer = select_gpu(server, chosen["instance"])
    remedies = list(chosen["remedies"])
    assumed = f"; the plan assumes {', '.join(remedies)}" if remedies else ""
    actions = [f"{ACTION_PREFIX}{remedy.title}" for remedy in offered]
    available = f" (code actions: {', '.join(r.title for r in offered)})" if offered else ""
    _show(
        server,
        f"torchward: GPU set to {chosen['instance']}{nodes} ({chosen['parallelism']['label']})"
        f"{assumed}{available}",
    )
    return {
        "uri": uri,
        "status": answer.get("status"),
        "gpu": chosen["instance"],
        "remedies": remedies,
        "actions": actions,
    }


ACTION_PREFIX = "torchward plan: apply "


async def remedy_edits_of(server: TorchwardServer, document: Document) -> list:
    """The chosen plan's remedies that a change of ``document``'s current text applies
    (:class:`.plan_edits.RemedyEdit`), built on the executor; empty when no plan was chosen
    or the document changed meanwhile (edits for older text would land wrong)."""
    kept = _CHOSEN.get(server, {}).get(document.uri)
    if kept is None:
        return []
    from .plan_edits import remedy_edits

    chosen, read = kept
    version, text = document.version, document.text
    built = _BUILT.setdefault(server, {}).get(document.uri)
    if built is not None and built[0] == version and built[1] is chosen:
        return built[2]  # code actions are asked for at every cursor move: parse once
    loop = asyncio.get_running_loop()
    found = await loop.run_in_executor(server.executor, remedy_edits, text, chosen["changes"], read)
    if document.version != version:
        return []
    _BUILT[server][document.uri] = (version, chosen, found)
    return found


def register(server: TorchwardServer) -> None:
    from .lenses import LENS_PROVIDERS

    if plan_lens not in LENS_PROVIDERS:
        LENS_PROVIDERS.append(plan_lens)

    @server.command(PLAN)
    async def plan_command(*arguments: Any) -> dict[str, Any]:
        return await plan_document(server, arguments[0] if arguments else None)

    @server.command(CHOOSE_PLAN)
    async def choose_plan_command(*arguments: Any) -> dict[str, Any]:
        uri = arguments[0] if arguments else None
        return await choose_plan(server, uri, arguments[1] if len(arguments) > 1 else 1)
