"""What to profile, decided from source only: the model recipe and the job (no torch here).

This is the static half of ``torchward profile``, shared by the CLI, ``torchward
estimate`` (to find a cached measurement of the same model and job) and the language
server (to build the request it sends to a subprocess). It reads; it never imports or
runs the user's code.

- :func:`script_recipe`: the call that builds the model the static reader named
  (:mod:`.construction`: a class or function of the project, torchvision, timm,
  transformers — the model ``torchward estimate`` sizes) becomes an expression in which
  every value the reader resolved (literals, module constants, ``argparse`` defaults,
  JSON config keys) is written in as a literal, plus only the statements it needs,
  transitively: the imports, ``def`` / ``class`` statements and constants its names
  lead to, and the assignments that define the rest — never the argument parsing, the
  data loading or the training loop (a value only those decide is a refusal naming it).
  A catalog or Hugging Face model becomes a ``config`` recipe built with transformers
  from its config fields. Which statements run, and the values written in:
  :mod:`.prelude`.
- :func:`factory_recipe`: ``module:function`` with ``k=v`` arguments.
- :func:`job_of`: the job from the layered run configuration (script, settings, flags),
  each assumed field named.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .prelude import prepare
from .request import MEASURED_OPTIMIZERS, ModelRecipe, ProfileJob

__all__ = [
    "PlanError",
    "factory_recipe",
    "job_of",
    "model_source_digest",
    "parse_arguments",
    "recipe_for_config",
    "script_recipe",
]


class PlanError(ValueError):
    """The model or the job cannot be told from the source: the message says what to pass.

    ``problem`` is the refusal without the command-line advice, and ``needs_factory`` says
    that naming the function that builds the model would answer it: an editor offers that
    as an action instead of the CLI's syntax (typed, so nothing matches the message text).
    """

    def __init__(self, message: str, *, problem: str = "", needs_factory: bool = False) -> None:
        super().__init__(message)
        self.problem = problem or message
        self.needs_factory = needs_factory


# -- factories -------------------------------------------------------------------------------
def parse_arguments(pairs: Iterable[str]) -> dict[str, Any]:
    """``["n_layer=12", "name=tiny", "dropout=0.1"]`` → values (Python literals, else text)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.isidentifier():
            raise PlanError(f"{pair!r}: factory arguments are NAME=VALUE")
        try:
            out[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            out[key] = text
    return out


def factory_recipe(target: str, arguments: dict[str, Any], inputs: str = "") -> ModelRecipe:
    module, sep, function = target.rpartition(":")
    if not sep or not module or not function:
        raise PlanError(f"{target!r}: a factory is module:function (or path/to/file.py:function)")
    return ModelRecipe(
        kind="factory", target=target, label=function, arguments=arguments, inputs=inputs
    )


def factory_file(target: str, cwd: str = ".") -> Path | None:
    """The source file of a factory's module, found without importing anything."""
    module = target.rpartition(":")[0]
    if module.endswith(".py") or "/" in module:
        path = Path(cwd, module)
        return path if path.is_file() else None
    base = Path(cwd, *module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


# -- scripts ---------------------------------------------------------------------------------


def _not_built(path: str, call: ast.Call | None, why: str) -> PlanError:
    """A refusal that names the construct and what the user can do about it."""
    where = f"{path}:{call.lineno}: " if call is not None else f"{path}: "
    construct = f" `{ast.unparse(call)}`" if call is not None else ""
    problem = f"{where}cannot build the model{construct}: {why}"
    return PlanError(
        f"{problem}. Set the value in the script, or profile a function that returns the "
        "model: torchward profile FILE.py:FUNCTION [NAME=VALUE ...]",
        problem=problem,
        needs_factory=True,
    )


def _named_elsewhere(path: str, source: str, model: Any, error: PlanError) -> PlanError:
    """The reader named a model the script does not build with a call torchward builds
    (``MoCo(partial(models.__dict__[args.arch]))``, ``Model(args.cfg)`` of a YAML file),
    and no config of that name is known: say where it is built and what to do."""
    from .construction import line_of

    line = line_of(str(model.source))
    lines = source.splitlines()
    where = f"{path}: "
    construct = ""
    if line is not None and 0 < line <= len(lines) and str(model.source).startswith(path):
        where = f"{path}:{line}: "
        construct = f" (`{lines[line - 1].strip()[:120]}`)"
    reason = str(error).split(";")[0]
    problem = (
        f"{where}cannot build the model {model.value!r}{construct}: it is not a call of a "
        f"class or function of the project, of torchvision, timm or transformers, and {reason}"
    )
    return PlanError(
        f"{problem}. Profile a function that returns the model: torchward profile "
        "FILE.py:FUNCTION [NAME=VALUE ...]",
        problem=problem,
        needs_factory=True,
    )


def script_recipe(path: str, source: str, config: Any, inputs: str = "") -> ModelRecipe:
    """The recipe for the model ``config`` (read from ``source``) names, or :class:`PlanError`.

    The construction is the call the static reader found (:mod:`.construction`), so the
    profile builds the model ``torchward estimate`` sized; a model named by a hub id or
    a checkpoint (``from_pretrained``) is built from its config."""
    from torchward.analysis.syntax.parsing import parse_module  # the process-wide parse lock

    from .construction import find_construction

    tree = parse_module(source, path)  # the server plans while it analyses: one parse at a time
    found = find_construction(tree, path, config)
    if found is None:
        if config.model is not None:
            try:
                return recipe_for_config(config, inputs=inputs)
            except PlanError as error:
                raise _named_elsewhere(path, source, config.model, error) from None
        raise _not_built(
            path,
            None,
            "no construction of it was found (a call of a class or function of the project, "
            "of torchvision, timm or transformers, assigned to a name like `model` or `net`)",
        )
    call = found.call
    prepared = prepare(
        tree, path, source, call, drop_weights=found.library in ("torchvision", "timm")
    )
    if prepared.missing:
        shown = ", ".join(f"`{name}`" for name in sorted(prepared.missing))
        raise _not_built(
            path,
            call,
            f"the value of {shown} is not known from the source (it is set only when the "
            "script runs: a command-line argument without a default, data or a file it "
            "loads)",
        )
    return ModelRecipe(
        kind="script",
        target=str(Path(path).resolve()),
        label=found.label,
        prelude=prepared.prelude,
        expression=prepared.expression,
        inputs=inputs,
    )


# -- catalog / Hugging Face architectures ----------------------------------------------------
def recipe_for_config(config: Any, models: tuple = (), inputs: str = "") -> ModelRecipe:
    """A transformers architecture the estimator knows (catalog, settings, offline cache)."""
    from torchward.estimator.resolve import resolve

    try:
        resolved = resolve(config, models)
    except LookupError as error:
        raise PlanError(
            f"{error}; profile the script that builds the model (torchward profile train.py) "
            "or a function that returns it (torchward profile FILE.py:FUNCTION)"
        ) from None
    arch = resolved.arch
    if (
        resolved.proxy
        or arch.model_type in ("custom", "unknown")
        or arch.model_type.startswith("torchvision")
    ):
        raise PlanError(
            f"{resolved.model_label}: only a transformers architecture is built from a name "
            "alone; profile the script that builds this model (torchward profile train.py) "
            "or a function that returns it (torchward profile FILE.py:FUNCTION)"
        )
    return ModelRecipe(
        kind="config",
        target=arch.hf_id or arch.name,
        label=arch.name,
        model_type=arch.model_type,
        config=dict(arch.config),
        inputs=inputs,
    )


# -- the job ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedJob:
    job: ProfileJob
    assumed: tuple[str, ...]  # fields nobody gave: the defaults are named in the output
    sources: dict[str, str]  # field → where it came from


def job_of(config: Any, gpu: Any = None, models: tuple = ()) -> PlannedJob:
    """The job of the layered run configuration; values the estimator would assume too."""
    filled = config
    try:
        from torchward.estimator.resolve import resolve

        filled = resolve(config, models).config
    except (LookupError, ValueError):
        pass
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    assumed: list[str] = []
    for name in ("mode", "batch_size", "seq_len", "image_size", "dtype", "optimizer"):
        field = getattr(filled, name, None)
        if field is None:
            assumed.append(name)
            continue
        values[name] = field.value
        sources[name] = field.source
        if field.source == "assumed":
            assumed.append(name)
    if "batch_size" not in values:  # the estimator's assumption for a model it cannot resolve
        values["batch_size"] = 8 if values.get("mode", "train") == "train" else 1
    new_tokens = filled.max_new_tokens
    if new_tokens is not None:
        values["max_new_tokens"] = new_tokens.value
        sources["max_new_tokens"] = new_tokens.source
    if values.get("optimizer") not in (None, *MEASURED_OPTIMIZERS):
        raise PlanError(
            f"optimizer {values['optimizer']!r} ({sources['optimizer']}) cannot be profiled: "
            f"torch.optim has {', '.join(MEASURED_OPTIMIZERS)} (--optimizer overrides)"
        )
    if gpu is not None:
        try:
            values["sm"] = int(round(float(gpu.compute_capability) * 10))
        except (TypeError, ValueError):
            pass
    try:
        job = ProfileJob(**values)
    except (TypeError, ValueError) as error:
        raise PlanError(str(error)) from None
    return PlannedJob(job, tuple(dict.fromkeys(assumed)), sources)


# -- identity --------------------------------------------------------------------------------
def _local_imports(path: Path, source: str) -> list[Path]:
    """Sibling modules a script imports (``from model import GPT``): part of its model."""
    from torchward.analysis.syntax.parsing import parse_module  # the process-wide parse lock

    try:
        tree = parse_module(source, str(path))
    except SyntaxError:
        return []
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    found = []
    for name in sorted(names):
        for candidate in (path.parent / f"{name}.py", path.parent / name / "__init__.py"):
            if candidate.is_file():
                found.append(candidate)
    return found


def model_source_digest(recipe: ModelRecipe, cwd: str = ".") -> str:
    """A digest of everything that decides the model: its source files and the recipe."""
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps(recipe.to_dict(), sort_keys=True, default=str).encode())
    files: list[Path] = []
    if recipe.kind == "script":
        files.append(Path(recipe.target))
    elif recipe.kind == "factory":
        found = factory_file(recipe.target, cwd)
        if found is not None:
            files.append(found)
    for path in list(files):
        try:
            text = path.read_text("utf-8-sig")
        except OSError:
            continue
        files += _local_imports(path, text)
    for path in dict.fromkeys(files):
        try:
            h.update(str(path.resolve()).encode() + b"\0" + path.read_bytes())
        except OSError:
            h.update(b"missing:" + str(path).encode())
    return h.hexdigest()
