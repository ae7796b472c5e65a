"""``torchward plan [SCRIPT]``: the cheapest way to run this job, priced and dated.

The job is read exactly as ``torchward estimate`` reads it (script, then
``[tool.torchward]``, then the same flags); the planner then tries GPU type × count ×
parallelism × remedies over the priced instances, sizes every candidate with the same
estimator, and ranks those that fit by cost per 1,000 steps (docs/plan.md).

Exit status, as ``estimate``: 0 when plans were printed (even none, and for a script whose
model cannot be sized), 1 when the script could not be analysed, or with ``--fail-on-oom``
when no plan fits a job the estimator can judge; 2 for usage and configuration errors.
"""

from __future__ import annotations

import argparse
import sys
from typing import cast

NAME = "plan"
HELP = "Find the cheapest GPU plan (instance × count × sharding × remedies) that fits the job."
ORDER = 45


def configure(parser: argparse.ArgumentParser) -> None:
    from . import estimate

    # the job flags are estimate's own (one definition); the ones plan means differently
    # (--gpu filters, --format has a skypilot block, --fail-on-oom) are defined below instead
    skipped = _Without(parser, ("--gpu", "--format", "--fail-on-oom"))
    estimate.configure(cast(argparse.ArgumentParser, skipped))
    parser.add_argument(
        "--gpu",
        metavar="NAME",
        action="append",
        help="only these GPUs (repeatable): a100, h100-sxm, 'A100 80GB', l4",
    )
    parser.add_argument(
        "--cloud", metavar="NAME", action="append", help="only these clouds (repeatable): lambda"
    )
    parser.add_argument(
        "--max-gpus", type=_positive, default=8, metavar="N", help="most GPUs in all (default 8)"
    )
    parser.add_argument(
        "--nodes", type=_positive, default=1, metavar="N", help="up to N nodes (default 1)"
    )
    parser.add_argument(
        "--budget", type=float, metavar="USD", help="most the run may cost (see --steps)"
    )
    parser.add_argument(
        "--max-hours", type=float, metavar="H", help="longest the run may take (see --steps)"
    )
    parser.add_argument(
        "--steps",
        type=_positive,
        metavar="N",
        help="optimizer steps of the run (default: one epoch with --dataset-size, else 1000)",
    )
    parser.add_argument(
        "--dataset-size", type=_positive, metavar="N", help="samples in one epoch of the dataset"
    )
    parser.add_argument(
        "--headroom",
        type=float,
        default=None,
        metavar="F",
        help="share of GPU memory each plan leaves free (default 0.05)",
    )
    parser.add_argument(
        "--allow-stale-prices",
        action="store_true",
        help="rank plans whose price is older than price-max-age-days (flagged STALE)",
    )
    parser.add_argument("--top", type=_positive, default=10, metavar="N", help="rows shown")
    parser.add_argument(
        "--rank", type=_positive, default=1, metavar="N", help="plan --format skypilot writes"
    )
    parser.add_argument(
        "--format",
        choices=("terminal", "json", "skypilot"),
        default="terminal",
        help="output: a table, the JSON of docs/plan.md, or a SkyPilot resources: block",
    )
    parser.add_argument("--fail-on-oom", action="store_true", help="exit 1 when no plan fits")


def _unsized(config, reason: str, notes: list[str], output: str) -> int:
    """No plan for a script whose model cannot be sized: what it runs, and why (exit 0)."""
    import json

    from ..estimator.report import config_json

    model = config.model.value if config.model is not None else None
    data = {
        "version": 1,
        "model": str(model) if model is not None else None,
        "config": config_json(config),
        "plans": [],
        "notes": [f"unknown: {reason}", *notes],
    }
    if output == "json":
        print(json.dumps(data, indent=2))
    else:
        print(f"No plan for {data['model'] or 'this script'}: {reason}")
    return 0


class _Without:
    """``parser`` as ``estimate.configure`` sees it, ignoring the flags named in ``skip``."""

    def __init__(self, parser: argparse.ArgumentParser, skip: tuple[str, ...]) -> None:
        self._parser, self._skip = parser, skip

    def add_argument(self, *names: str, **options):
        if any(n in self._skip for n in names):
            return None
        return self._parser.add_argument(*names, **options)

    def add_mutually_exclusive_group(self, **options):
        return self._parser.add_mutually_exclusive_group(**options)


def _positive(text: str) -> int:
    from ..arguments import positive_int

    return positive_int(text)


def _gpu_matches(gpu, names: list[str]) -> bool:
    from ..estimator.names import normalize

    spellings = {normalize(s) for s in (gpu.key, gpu.name, gpu.family, *gpu.aliases)}
    return any(normalize(n) in spellings for n in names)


def run(args: argparse.Namespace) -> int:
    import datetime
    import json

    from ..config import resolve_config
    from ..errors import UsageError
    from ..estimator.estimate import estimate_resolved
    from ..estimator.planning.prices import offers as priced
    from ..estimator.planning.report import (
        plan_report,
        render_skypilot,
        render_table,
        steps_per_epoch,
    )
    from ..estimator.planning.search import DEFAULT_HEADROOM, Request, search
    from ..estimator.planning.variants import global_batch
    from ..estimator.resolve import resolve
    from ..estimator.tensor_parallel import TensorParallelError
    from .estimate import ScriptProblem, build_config, unsized_reason

    filters = list(args.gpu or ())
    job_args = argparse.Namespace(**{**vars(args), "gpu": None})
    try:
        config, _choice, notes, models = build_config(job_args)
    except ScriptProblem as problem:
        print(problem.line, file=sys.stderr)
        print("No plan: the script could not be analysed.", file=sys.stderr)
        return 1
    try:
        r = resolve(config, models)
    except LookupError as error:
        # a script was read: say what it runs and why nothing can be planned (exit 0)
        reason = unsized_reason(error, config, args.script, prefix="no plan: ")
        return _unsized(config, reason, notes, args.format)
    settings = resolve_config(args.config, args.script or ".")
    headroom = DEFAULT_HEADROOM if args.headroom is None else args.headroom
    if not 0 <= headroom < 1:
        raise UsageError("--headroom must be at least 0 and below 1 (a share of GPU memory)")
    request = Request(
        max_gpus=args.max_gpus,
        nodes=args.nodes,
        headroom=headroom,
        max_age_days=settings.price_max_age_days,
        allow_stale=args.allow_stale_prices,
        today=datetime.date.today(),
    )
    offers = list(priced(settings.prices, request.today))
    if args.cloud:
        clouds = {c.lower() for c in args.cloud}
        offers = [o for o in offers if o.instance.provider in clouds]
    if filters:
        offers = [o for o in offers if _gpu_matches(o.instance.gpu, filters)]
    if not offers:
        raise UsageError(
            "no priced instance matches --cloud / --gpu (see `torchward gpus --instances`)"
        )
    try:
        plans = search(r, offers, request)
    except TensorParallelError as error:  # --tensor-parallel this model or job cannot take
        raise UsageError(str(error)) from None
    if args.steps:
        steps, basis = args.steps, "--steps"
    elif args.dataset_size:
        steps = steps_per_epoch(args.dataset_size, global_batch(r))
        basis = f"one epoch of {args.dataset_size:,} samples"
    else:
        steps, basis = 1000, "default; --steps or --dataset-size to change"
    data = plan_report(
        r,
        plans,
        offers,
        request,
        steps=steps,
        steps_basis=basis,
        notes=notes,
        budget=args.budget,
        max_hours=args.max_hours,
    )
    if args.format == "json":
        print(json.dumps(data, indent=2))
    elif args.format == "skypilot":
        if not render_skypilot(data, sys.stdout, args.rank):
            print(f"no plan ranked {args.rank}: {len(data['plans'])} fit", file=sys.stderr)
            return 1
    else:
        render_table(data, sys.stdout, args.top)
    # --fail-on-oom: nothing fits a job the estimator can judge (no verdict is not an oom)
    judged = estimate_resolved(r, None).activations_modelled
    return 1 if args.fail_on_oom and judged and not data["plans"] else 0
