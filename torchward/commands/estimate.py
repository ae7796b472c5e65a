"""``torchward estimate [SCRIPT]``: will this job fit the GPU, and what would make it fit.

Inputs are layered, later over earlier: what the script says (read with ``ast``, never
imported or run), then ``[tool.torchward]`` (``target-gpu`` and the
``[tool.torchward.estimate]`` overrides), then the flags. Architectures added under
``[tool.torchward.models]`` or in ``models-file`` are found before the catalog. Every value in the
output says where it came from; an input nobody gave is assumed, named in the output and
widens the interval. ``--format json`` prints the object documented in
docs/estimate-json.md.
"""

from __future__ import annotations

import argparse
import sys

from ..arguments import positive_int

NAME = "estimate"
HELP = "Estimate the peak GPU memory of a training, inference or generation job."
ORDER = 40

# flag destination → RunConfig field (the flags' spellings are kebab-case; fields snake_case)
_FLAGS = (
    "model",
    "params",
    "mode",
    "batch_size",
    "seq_len",
    "image_size",
    "max_context",
    "max_new_tokens",
    "num_beams",
    "dtype",
    "optimizer",
    "attention",
    "lora_rank",
    "quantize",
    "sharding",
    "offload",
    "gpus",
    "accumulation",
)


def configure(parser: argparse.ArgumentParser) -> None:
    from ..estimator.runconfig import (
        ATTENTIONS,
        DTYPES,
        MODES,
        OFFLOADS,
        OPTIMIZERS,
        QUANTIZE,
        SHARDINGS,
    )

    parser.add_argument(
        "script", nargs="?", metavar="SCRIPT", help="a training / inference script to read"
    )
    parser.add_argument(
        "--gpu",
        metavar="NAME",
        help="GPU or instance: a100-80gb, 'A100 80GB', p4de.24xlarge, 8xh100",
    )
    model = parser.add_mutually_exclusive_group()
    model.add_argument(
        "--model", metavar="ID", help="HF id, short name or torchvision name, or a config.json path"
    )
    model.add_argument(
        "--params", metavar="N", help="parameter count when the model is unknown (7B, 125M)"
    )
    parser.add_argument("--mode", choices=MODES)
    for flag in (
        "batch-size",
        "seq-len",
        "image-size",
        "max-context",
        "max-new-tokens",
        "num-beams",
        "lora-rank",
        "gpus",
        "accumulation",
    ):
        parser.add_argument(f"--{flag}", type=positive_int, metavar="N")
    parser.add_argument("--dtype", choices=DTYPES)
    parser.add_argument("--optimizer", choices=OPTIMIZERS)
    parser.add_argument("--attention", choices=ATTENTIONS)
    parser.add_argument(
        "--checkpointing", action="store_true", default=None, help="gradient checkpointing on"
    )
    parser.add_argument(
        "--use-cache", choices=("true", "false"), help="generation keeps a KV cache (default true)"
    )
    parser.add_argument("--quantize", choices=QUANTIZE)
    parser.add_argument("--sharding", choices=SHARDINGS)
    parser.add_argument("--offload", choices=OFFLOADS)
    parser.add_argument(
        "--format", choices=("terminal", "json"), default="terminal", help="output format"
    )
    parser.add_argument(
        "--config", metavar="PATH", help="the pyproject.toml to read (default: the nearest one)"
    )


def _flags(args: argparse.Namespace):
    from ..estimator.runconfig import Field, RunConfig

    values = {}
    for name in _FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            values[name] = Field(value, "--" + name.replace("_", "-"))
    if args.checkpointing:
        values["checkpointing"] = Field(True, "--checkpointing")
    if getattr(args, "use_cache", None) is not None:
        values["use_cache"] = Field(args.use_cache == "true", "--use-cache")
    return RunConfig(**values)


def build_config(args: argparse.Namespace):
    """(RunConfig from script + settings + flags, GPU choice or None, notes, user models)."""
    from ..config import resolve_config
    from ..errors import UsageError
    from ..estimator.hardware import lookup_hardware
    from ..estimator.names import UnknownNameError
    from ..estimator.runconfig import Field, RunConfig

    notes: list[str] = []
    config = RunConfig()
    if args.script:
        from ..analysis.runconfig import read_script

        try:
            config, script_notes = read_script(args.script)
        except OSError as error:
            raise UsageError(f"cannot read {args.script}: {error.strerror or error}") from None
        notes.extend(script_notes)
    settings = resolve_config(args.config, args.script or ".")
    gpu_name = args.gpu or getattr(settings, "target_gpu", None)
    extra = settings.estimator_settings()
    models = ()
    if extra is not None:
        config, models = config.merged(extra.run_config()), extra.models
    config = config.merged(_flags(args))
    choice = None
    if gpu_name:
        try:
            choice = lookup_hardware(gpu_name)
        except (UnknownNameError, ValueError) as error:
            raise UsageError(str(error)) from None
        if choice.alternatives:
            notes.append(
                f"{gpu_name!r} read as {choice.gpu.name} (the smallest of its family); "
                f"also: {', '.join(choice.alternatives)}"
            )
        if choice.count > 1 and config.gpus is None:
            source = "--gpu" if args.gpu else "settings target-gpu"
            config = config.merged(RunConfig(gpus=Field(choice.count, source)))
    return config, choice, notes, models


def run(args: argparse.Namespace) -> int:
    import json

    from ..errors import UsageError
    from ..estimator.estimate import estimate
    from ..estimator.names import UnknownNameError
    from ..estimator.report import estimate_report
    from ..reporters.memory import render

    config, choice, notes, models = build_config(args)
    try:
        result = estimate(config, choice.gpu if choice else None, models)
    except UnknownNameError as error:
        raise UsageError(
            f"{error} (add its structure under [tool.torchward.models], or give --params N)"
        ) from None
    except LookupError as error:
        raise UsageError(str(error)) from None
    data = estimate_report(result)
    data["notes"] = notes + data["notes"]
    if args.format == "json":
        print(json.dumps(data, indent=2))
    else:
        render(data, sys.stdout)
    return 0
