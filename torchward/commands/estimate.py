"""``torchward estimate [SCRIPT]``: will this job fit the GPU, and what would make it fit.

Inputs are layered, later over earlier: what the script says (read with ``ast``, never
imported or run), then ``[tool.torchward]`` (``target-gpu`` and the
``[tool.torchward.estimate]`` overrides), then the flags. Architectures added under
``[tool.torchward.models]`` or in ``models-file`` are found before the catalog. Every value in the
output says where it came from; an input nobody gave is assumed, named in the output and
widens the interval. ``--format json`` prints the object documented in
docs/estimate-json.md.

Exit status: 0 when an estimate was printed (whatever its verdict, unless
``--fail-on-oom``: then 1 for an ``oom`` verdict); 1 when the script could not be
analysed (unreadable, not UTF-8, binary, a syntax error: the same line ``check`` prints);
2 for usage and configuration errors (unknown flag value, model or GPU, missing file).
"""

from __future__ import annotations

import argparse
import os
import shlex
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
    "num_return_sequences",
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
        "--script-args",
        metavar="ARGS",
        default="",
        help="the script's own command line, one string: --script-args='config/train_x.py "
        "--batch_size=32' (a configurator the script executes applies it; default: a plain "
        "`python SCRIPT`, no arguments)",
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
        "num-return-sequences",
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
        "--use-cache",
        choices=("true", "false"),
        help="the forward / generate keeps a KV cache (default: the call's use_cache, then the "
        "model's config.json, then true)",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="show each term of the peak phase as its formula with its inputs",
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
    parser.add_argument(
        "--fail-on-oom",
        action="store_true",
        help="exit 1 when the verdict is oom (even the low estimate exceeds the GPU); needs a GPU",
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


class ScriptProblem(Exception):
    """The script cannot be read as Python; ``line`` is what ``check`` prints for it."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def read_script_like_check(path: str, argv: tuple[str, ...] = ()):
    """(RunConfig, notes) of the script at ``path``, read the way ``check`` reads files.

    Every input ``check`` handles is handled here with check's words: a missing file is
    a usage error (exit 2); an unreadable, binary or non-UTF-8 file, a notebook that is
    not one, or a file Python cannot parse (a syntax error, an expression nested too
    deep for the parser) raises :class:`ScriptProblem` with the same
    ``path:line:col: kind message`` line (exit 1, as ``check`` exits for a file it
    could not analyse). A notebook's code cells are read as one program.
    """
    from ..analysis import LintSettings, Problem, decode_source
    from ..analysis.engine import parse
    from ..analysis.job.runconfig import read_source
    from ..errors import UsageError
    from ..reporters.terminal import problem_line
    from ..runner import check_one

    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file or directory")
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a folder; give one script")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        source = decode_source(data)
    except (OSError, UnicodeDecodeError, ValueError):
        # check's own reading, for its exact problem (unreadable / encoding)
        _, report = check_one(path, os.path.abspath(path), LintSettings(select=()))
        problem = report["problems"][0]
        raise ScriptProblem(f"{path}:1:1: {problem['kind']} {problem['message']}") from None
    if path.endswith(".ipynb"):
        from ..notebook import NotebookError, program

        try:
            source = program(source).text
        except NotebookError as error:
            raise ScriptProblem(f"{path}:1:1: malformed-notebook {error}") from None
    tree, problem = parse(source, path)
    if problem is not None:
        raise ScriptProblem(problem_line(path, problem))
    try:
        return read_source(source, path, argv, tree)
    except RecursionError:  # nesting the parser took but the reader cannot follow
        too_deep = Problem("internal-error", "file too deeply nested to analyse")
        raise ScriptProblem(problem_line(path, too_deep)) from None


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
        config, script_notes = read_script_like_check(
            args.script, tuple(shlex.split(args.script_args))
        )
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
    from ..estimator.report import estimate_report
    from ..reporters.memory import render

    try:
        config, choice, notes, models = build_config(args)
    except ScriptProblem as problem:
        print(problem.line, file=sys.stderr)
        print("No estimate: the script could not be analysed.", file=sys.stderr)
        return 1
    try:
        result = estimate(config, choice.gpu if choice else None, models)
    except LookupError as error:
        reason = unsized_reason(error, config, args.script)
        # a script was read: show what it says, with an honest "unknown" (exit 0)
        from ..estimator.report import unknown_model_report

        data = unknown_model_report(config, reason, notes)
        if args.format == "json":
            print(json.dumps(data, indent=2))
        else:
            print(f"{data['model'] or 'model'}: {data['notes'][0]}")
            for name, field in data["config"].items():
                print(
                    f"  {name:<14} {field['value']!s:<24} {field['source']} ({field['confidence']})"
                )
            for note in data["notes"][1:]:
                print(f"  note: {note}")
        return 0
    data = estimate_report(result)
    if args.fail_on_oom and choice is None:
        raise UsageError("--fail-on-oom needs a GPU to judge against: give --gpu or target-gpu")
    data["notes"] = notes + data["notes"]
    measured = None
    if args.script:  # a `torchward profile` of the same model source and job: show it
        from ..profile.cache import for_script
        from ..profile.report import apply_measurement

        measured = for_script(args.script, config, choice.gpu if choice else None, models)
        if measured is not None:
            data = apply_measurement(data, measured, choice.gpu if choice else None)
    if args.format == "json":
        print(json.dumps(data, indent=2))
    else:
        if measured is not None:
            print("MEASURED (cached result of `torchward profile` for this model and job)")
        render(data, sys.stdout, explain=args.explain)
    if args.fail_on_oom and data.get("verdict") == "oom":
        return 1
    return 0


def unsized_reason(error: LookupError, config, script: str | None, prefix: str = "") -> str:
    """Why the job cannot be sized, for ``estimate`` and ``plan`` alike. A model named on
    the command line (nothing was read from a script to show) is a usage error; a script
    that was read gets the reason shown beside what it runs, with an honest "unknown"."""
    from ..errors import UsageError
    from ..estimator.names import UnknownNameError

    hint = "add its structure under [tool.torchward.models], or give --params N"
    if not script or config.params is not None:
        suffix = f" ({hint})" if isinstance(error, UnknownNameError) else ""
        raise UsageError(f"{prefix}{error}{suffix}") from None
    if isinstance(error, UnknownNameError):
        return f"{error} ({hint})"
    return "the script names no model that can be sized: give --model ID or --params N"
