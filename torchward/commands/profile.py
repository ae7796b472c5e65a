"""``torchward profile SCRIPT_OR_FACTORY``: measure the peak memory of your own model's step.

Unlike ``check`` and ``estimate``, this **imports and runs your code**: the model's
construction (its module's imports and definitions; for a script, only the statements the
construction needs — never the data loading or the training loop) and one step of the
job on fake tensors. Nothing is allocated, no weights are read or downloaded, no GPU is
needed. It needs torch: ``pip install "torchward[profile]"``.

The model: a factory ``module:function`` (or ``path/to/file.py:function``) with ``k=v``
arguments, the construction the static reader finds in a script, or a catalog / Hugging
Face name (built from its config with transformers). The job (mode, batch, sequence or
image size, precision, optimizer) is layered as for ``estimate``: the script, then
``[tool.torchward.estimate]``, then the flags. The output is ``estimate``'s breakdown
and verdict, marked *measured*, with every phase's peak; ``--format json`` prints the
object of docs/estimate-json.md plus ``source: "measured"``. The result is cached under
``.torchward_cache/profiles`` keyed by the model's source and the job, and ``torchward
estimate`` shows it for the same model and job.

Exit status: 0 measured, 2 for a usage error, a model that cannot be built or torch
missing (the message says which).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..arguments import positive_int

NAME = "profile"
HELP = (
    "Measure the peak GPU memory of your model's training / inference / generation step "
    "on fake tensors (no GPU). IMPORTS AND RUNS YOUR CODE; needs torchward[profile]."
)
ORDER = 45

_EPILOG = """\
This command imports your code: the module of a factory, or a script's imports,
definitions and the assignments its model construction needs (never its training loop).
Only run it on code you trust. Nothing is allocated and no weights are downloaded.

examples:
  torchward profile train.py --batch-size 8 --seq-len 1024 --dtype amp-bf16
  torchward profile models.py:make_gpt n_layer=12 d_model=768 --gpu a100-80gb
  torchward profile mypkg.nets:UNet channels=64 --mode inference --image-size 512
  torchward profile gpt2 --mode generate --max-new-tokens 32 --format json
"""


def configure(parser: argparse.ArgumentParser) -> None:
    from ..estimator.runconfig import DTYPES, MODES
    from ..profile.request import MEASURED_OPTIMIZERS

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument(
        "target",
        metavar="SCRIPT_OR_FACTORY",
        help="a training script, module:function / file.py:function, or a catalog model name",
    )
    parser.add_argument(
        "arguments",
        nargs="*",
        metavar="NAME=VALUE",
        help="factory arguments (Python literals; anything else is a string)",
    )
    parser.add_argument("--gpu", metavar="NAME", help="GPU for the verdict: a100-80gb, 'H100'")
    parser.add_argument("--mode", choices=MODES)
    for flag in ("batch-size", "seq-len", "image-size", "max-new-tokens"):
        parser.add_argument(f"--{flag}", type=positive_int, metavar="N")
    parser.add_argument("--dtype", choices=DTYPES, help="fp32, amp-bf16 / amp-fp16 (autocast)")
    parser.add_argument("--optimizer", choices=MEASURED_OPTIMIZERS)
    parser.add_argument(
        "--inputs",
        metavar="MODULE:FUNCTION",
        help="a function making one batch (takes any of model, batch_size, seq_len, "
        "image_size, device, mode); default: inferred from the model's first layer",
    )
    parser.add_argument(
        "--format", choices=("terminal", "json"), default="terminal", help="output format"
    )
    parser.add_argument(
        "--config", metavar="PATH", help="the pyproject.toml to read (default: the nearest one)"
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="do not store the result for estimate / editor"
    )


def _estimate_args(args: argparse.Namespace, script: str | None) -> argparse.Namespace:
    """The namespace ``estimate.build_config`` reads, from this command's flags."""
    from .estimate import _FLAGS

    values = {name: getattr(args, name, None) for name in _FLAGS}
    values.update(
        script=script,
        script_args="",  # the job a plain `python SCRIPT` runs, as estimate reads by default
        gpu=args.gpu,
        config=args.config,
        checkpointing=None,
        use_cache=None,
    )
    return argparse.Namespace(**values)


def plan(args: argparse.Namespace) -> tuple[Any, Any, Any, list[str], dict | None, tuple]:
    """(recipe, planned job, GPU choice, notes, static estimate report or None, models)."""
    from ..errors import UsageError
    from ..estimator.runconfig import Field, RunConfig
    from ..profile import plan as planning
    from .estimate import ScriptProblem, build_config

    target = args.target
    is_file = os.path.isfile(target)
    factory = ":" in target and not is_file
    if args.arguments and not factory:
        raise UsageError("NAME=VALUE arguments are for a factory (module:function)")
    script: str | None = None
    if is_file:
        script = target
    elif factory:
        found = planning.factory_file(target)
        script = str(found) if found is not None else None  # read for the job's values only
    try:
        config, choice, notes, models = build_config(_estimate_args(args, script))
    except ScriptProblem as problem:  # not Python: nothing to build a model from
        raise UsageError(f"{problem.line} (no profile: the script could not be read)") from None
    gpu = choice.gpu if choice else None
    try:
        if factory:
            arguments = planning.parse_arguments(args.arguments)
            recipe = planning.factory_recipe(target, arguments, args.inputs or "")
            config = config.merged(RunConfig(model=Field(recipe.label, target)))
        elif is_file:
            with open(target, encoding="utf-8-sig") as handle:
                source = handle.read()
            recipe = planning.script_recipe(target, source, config, args.inputs or "")
        else:
            config = config.merged(RunConfig(model=Field(target, "SCRIPT_OR_FACTORY")))
            recipe = planning.recipe_for_config(config, models, args.inputs or "")
        job = planning.job_of(config, gpu, models)
    except planning.PlanError as error:
        raise UsageError(str(error)) from None
    except (OSError, SyntaxError) as error:
        raise UsageError(f"cannot read {target}: {error}") from None
    base = None
    if not factory:
        base = _static_estimate(config, gpu, models)
    return recipe, job, choice, notes, base, models


def _static_estimate(config: Any, gpu: Any, models: tuple) -> dict | None:
    from ..estimator.estimate import estimate
    from ..estimator.report import estimate_report

    try:
        return estimate_report(estimate(config, gpu, models), search=False)
    except (LookupError, ValueError):
        return None


_SHAPE_FLAGS = {"image_size": "--image-size", "seq_len": "--seq-len", "batch_size": "--batch-size"}


def _assumed_shapes(planned: Any) -> str:
    """A failed step whose input shape was assumed, not read: say which, and the flag."""
    assumed = [name for name in _SHAPE_FLAGS if name in planned.assumed]
    if not assumed:
        return ""
    shown = ", ".join(
        f"{name}={getattr(planned.job, name)} ({_SHAPE_FLAGS[name]} N)" for name in assumed
    )
    return f". Not read from the script, assumed: {shown}"


def run(args: argparse.Namespace) -> int:
    import json

    from ..errors import UsageError
    from ..profile import cache
    from ..profile.build import UserCodeError
    from ..profile.report import measured_report

    recipe, planned, choice, notes, base, _models = plan(args)
    try:
        from ..profile.worker import measure

        result = measure(recipe, planned.job)
    except UserCodeError as error:
        raise UsageError(str(error) + _assumed_shapes(planned)) from None
    except ImportError as error:
        raise UsageError(f"torchward profile needs torch: {error}") from None
    except ValueError as error:  # the job does not fit the model (no tokens to generate from...)
        raise UsageError(f"{recipe.label}: {error}") from None
    gpu = choice.gpu if choice else None
    config = {
        name: {
            "value": value,
            "source": planned.sources.get(name, "assumed"),
            "confidence": "low" if name in planned.assumed else "high",
        }
        for name, value in planned.job.to_dict().items()
        if name != "sm"
    }
    data = measured_report(result, gpu, base, config, planned.assumed)
    if base is not None:  # the measured job, not the estimate's, is what the numbers are for
        data["config"] = {
            **base["config"],
            **{k: v for k, v in config.items() if k in base["config"]},
            "params": {"value": result.params, "source": "measured", "confidence": "high"},
        }
    data["notes"] = notes + data["notes"]
    if not args.no_cache:
        anchor = args.target if os.path.exists(args.target) else "."
        stored = cache.store(recipe, planned.job, result, anchor)
        if stored is not None:
            data["cached_at"] = str(stored)
    if args.format == "json":
        print(json.dumps(data, indent=2))
    else:
        from ..reporters.memory import render

        print("MEASURED (torchward profile ran one step of your model on fake tensors)")
        render(data, sys.stdout)
    return 0
