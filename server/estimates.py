"""The estimator behind a small seam: GPU fit for status bars, ``torchward/estimate``.

The server asks one question — *how much memory does this script need on this GPU?* —
through :class:`EstimateService`. The answer comes from :mod:`torchward.estimator` the
way ``torchward estimate SCRIPT --gpu NAME`` computes it: the script's run configuration
read from the editor's text (:func:`torchward.analysis.job.runconfig.read_source`, ``ast``
only), the GPU or instance looked up in the catalog (an instance's GPU count becomes the
world size unless the script says otherwise), then
:func:`torchward.estimator.estimate.estimate`. :func:`_from_estimator` is the only code
that reads an estimate; a future ``torchward.estimator.estimate_source(source, path,
gpu)`` entry point replaces the adapter when the estimator offers one.

Wire shapes (camelCase, as everything on the wire):

- notification ``torchward/gpuFit`` and the ``torchward/estimate`` reply:
  ``{uri, status, gpu, peak, interval: [low, high], percent, verdict, reason}``, with
  ``status`` one of ``ok`` / ``none`` (not a training script: nothing to estimate;
  ``reason`` says why — no PyTorch, or no run — and ``hint`` the next step) /
  ``no-job`` (a training script whose job cannot be sized: ``reason`` says why and
  ``hint`` what to do) / ``unavailable`` / ``disabled`` / ``error`` (an unknown GPU
  name); byte counts are integers, ``percent``
  of the GPU's usable memory (summed over an instance's GPUs is *not* done: memory is
  per device). ``torchward/estimate`` adds ``model``, ``params``, ``confidence``,
  ``terms`` (bytes per term at the peak phase) and ``lines`` (where the model, batch
  size, sequence length and training step were read, 1-based).

Past 400 lines: the estimate service, its pacing and the GPU-fit answer it publishes
share one per-document state; the split (service / presentation) waits for issue 29.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import attrs

log = logging.getLogger(__name__)

UNAVAILABLE_REASON = "the VRAM estimator is not available in this version of torchward"
NOT_A_JOB_REASON = "no training run found to estimate"
# status "none", said in the editor (a neutral status item; see editors/vscode/README.md):
# why there is no estimate, and the next step, for a file without PyTorch and for one with
NO_TORCH_REASON = "this file does not use PyTorch"
NO_TORCH_HINT = (
    "nothing to do here: torchward checks PyTorch training code and estimates its GPU "
    "memory; open a training script to see it"
)
NO_RUN_REASON = (
    "no training run found in this file: no training loop, optimizer, batch size or "
    "sequence length that torchward can read"
)
NO_RUN_HINT = (
    "open the script that trains the model (the one that calls `optimizer.step()`): its "
    "GPU fit shows there"
)
_USES_TORCH = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(?:torch|lightning|pytorch_lightning|transformers|accelerate"
    r"|deepspeed|timm|torchvision)\b",
    re.MULTILINE,
)


@attrs.frozen
class NoJob:
    """A training script whose job cannot be sized: what was found, and where."""

    found: tuple[str, ...]
    config: Any = attrs.field(eq=False, repr=False)


ANCHORS = ("model", "batch_size", "seq_len", "mode")


@attrs.frozen
class GpuEstimate:
    status: str  # "ok" | "none" | "no-job" | "unavailable" | "disabled" | "error"
    gpu: str | None = None
    peak_bytes: int | None = None
    low_bytes: int | None = None
    high_bytes: int | None = None
    usable_bytes: int | None = None
    verdict: str | None = None
    reason: str = ""
    hint: str = ""  # the next step when there is no estimate (status "no-job")
    model: str | None = None
    params: int | None = None
    confidence: str | None = None
    terms: tuple[tuple[str, int], ...] = ()
    lines: tuple[tuple[str, int], ...] = ()  # RunConfig field → 1-based line in this document
    detail: Any = attrs.field(default=None, eq=False, repr=False)  # the estimator's own object
    gpu_count: int = 1  # GPUs of the chosen hardware (an instance's, or "8xh100")
    instance: str | None = None  # the chosen instance type (p5.48xlarge), when one was chosen
    gpus_used: int = 1  # how many of them the script uses (its world size)
    uncertain: bool = False  # "oom", but TW010 is silent on it (a low-confidence estimate)

    @property
    def percent(self) -> float | None:
        if self.peak_bytes is None or not self.usable_bytes:
            return None
        return round(100.0 * self.peak_bytes / self.usable_bytes, 1)

    def line_of(self, field: str) -> int | None:
        return dict(self.lines).get(field)

    @property
    def hardware(self) -> str:
        """The GPU as the user chose it (:func:`.units.placement`)."""
        from .units import placement

        return placement(self.gpu, self.gpu_count, self.instance, self.gpus_used)

    def display(self) -> dict[str, Any]:
        """The formatted strings every view shows as they are (:mod:`.units`); ``summary``
        is the code lens's title, which a statusline (editors/nvim) shows as it is."""
        from .memory import peak_label, verdict_text
        from .units import percent, size

        interval = None
        if self.low_bytes is not None and self.high_bytes is not None:
            interval = [size(self.low_bytes), size(self.high_bytes)]
        return {
            "hardware": self.hardware if self.gpu else None,
            "peak": size(self.peak_bytes),
            "percent": percent(self.percent),
            "interval": interval,
            "verdict": verdict_text(self),
            "summary": peak_label(self),
        }

    def to_wire(self, uri: str) -> dict[str, Any]:
        interval = None
        if self.low_bytes is not None and self.high_bytes is not None:
            interval = [self.low_bytes, self.high_bytes]
        return {
            "uri": uri,
            "status": self.status,
            "gpu": self.gpu,
            "peak": self.peak_bytes,
            "interval": interval,
            "percent": self.percent,
            "verdict": self.verdict,
            "reason": self.reason,
            "hint": self.hint,
            "measured": self.confidence == "measured",  # by `torchward profile`, not estimated
            "lowConfidence": self.uncertain,  # "oom" that TW010 does not report: "may not fit"
            "display": self.display() if self.status == "ok" else None,
        }

    def to_wire_detailed(self, uri: str) -> dict[str, Any]:
        return {
            **self.to_wire(uri),
            "model": self.model,
            "params": self.params,
            "confidence": self.confidence,
            "terms": dict(self.terms),
            "lines": dict(self.lines),
        }


def no_run(source: str, gpu: str | None) -> GpuEstimate:
    """Status ``none`` with the reason and the next step that fit this file."""
    if _USES_TORCH.search(source):
        return GpuEstimate("none", gpu, reason=NO_RUN_REASON, hint=NO_RUN_HINT)
    return GpuEstimate("none", gpu, reason=NO_TORCH_REASON, hint=NO_TORCH_HINT)


NOT_A_SCRIPT_REASON = (
    "this module defines code but runs none of it (no entry point and no training loop at "
    "the top level): it is not a training script"
)


def runs_something(source: str, tree: Any = None) -> bool:
    """Whether running the module does anything: an ``if __name__ == "__main__":`` entry
    point, or a loop, ``with`` block or call at the top level. A module of definitions
    (nanoGPT's ``model.py``, whose only loop copies weights inside ``from_pretrained``)
    is never called a training script."""
    import ast

    if tree is None:
        from torchward.analysis.syntax.parsing import parse_module  # under the parse lock

        try:
            tree = parse_module(source)
        except (SyntaxError, ValueError):
            return True  # no judgement on what does not parse
    for node in tree.body:
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, (ast.Call, ast.Await)):
            return True
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    return False


NO_MODEL_REASON = (
    "this script trains something (it has {found}), but torchward cannot tell which "
    "model: it names none torchward knows, and its own nn.Module could not be sized from "
    "its layers"
)
NO_MODEL_HINT = (
    'name the model in pyproject.toml: `model = "gpt2"` (a Hugging Face id or an '
    "architecture) or `params = 124_000_000` under `[tool.torchward.estimate]`, or describe "
    "your architecture under `[tool.torchward.models]`"
)


def _lines(config: Any, path: str) -> tuple[tuple[str, int], ...]:
    """Where the anchoring fields were read, when that was this document (``path:line``)."""
    found = []
    for name in ANCHORS:
        field = getattr(config, name, None)
        source = getattr(field, "source", "") or ""
        where, _, line = source.rpartition(":")
        if where == path and line.isdigit():
            found.append((name, int(line)))
    return tuple(found)


def _from_estimator(result: Any, gpu: str | None, path: str = "") -> GpuEstimate:
    """The one reader of the estimator's answer (an ``Estimate``, or None: nothing to estimate)."""
    if result is None:
        return GpuEstimate("none", gpu, reason=NOT_A_JOB_REASON)
    if isinstance(result, NoJob):
        return GpuEstimate(
            "no-job",
            gpu,
            reason=NO_MODEL_REASON.format(found=", ".join(result.found) or "a training step"),
            hint=NO_MODEL_HINT,
            lines=_lines(result.config, path),
        )
    resolved = getattr(result, "resolved", None)
    config = getattr(resolved, "config", None)
    device = getattr(result, "gpu", None)
    terms = getattr(result, "terms", None) or {}
    shape = getattr(resolved, "shape", None)
    return GpuEstimate(
        "ok",
        getattr(device, "name", None) or gpu,
        peak_bytes=getattr(result, "peak", None),
        low_bytes=getattr(result, "low", None),
        high_bytes=getattr(result, "high", None),
        usable_bytes=getattr(result, "usable", None),
        verdict=getattr(result, "verdict", None),
        model=getattr(resolved, "model_label", None),
        params=int(shape.params) if getattr(shape, "params", None) is not None else None,
        confidence=getattr(result, "confidence", None),
        terms=tuple((name, int(value)) for name, value in terms.items()),
        lines=_lines(config, path) if config is not None else (),
        detail=result,
    )


def _placed(found: GpuEstimate, gpu: str | None) -> GpuEstimate:
    """``found`` with the hardware as chosen (an instance stays an instance: its GPU
    count, its name, how many GPUs the script uses — TW010's :func:`projected_oom.place`)
    and whether TW010 stands behind an "oom" verdict (the rule's own test,
    ``projected_oom.is_reported``)."""
    from torchward.analysis.rules.projected_oom import is_reported, place

    count, instance, used, uncertain = 1, None, 1, False
    config = getattr(getattr(found.detail, "resolved", None), "config", None)
    if gpu and config is not None:
        placed = place(config, lookup_gpu(gpu))
        count, instance, used = placed.gpu_count, placed.instance, placed.gpus_used
    elif gpu:
        choice = lookup_gpu(gpu)
        count = choice.count
        instance = choice.instance.name if choice.instance is not None else None
    if found.verdict in ("oom", "does-not-fit") and found.usable_bytes and found.detail:
        try:
            uncertain = not is_reported(found.detail, found.usable_bytes)
        except (AttributeError, KeyError, TypeError):  # another estimator's answer
            uncertain = False
    return attrs.evolve(
        found, gpu_count=count, instance=instance, gpus_used=used, uncertain=uncertain
    )


def across_the_machine(found: GpuEstimate) -> dict[str, Any] | None:
    """The remedy a chosen instance offers when the script uses fewer of its GPUs than it
    has and does not fit: FSDP across all of them (TW010's
    :func:`projected_oom.across_the_machine`, the estimate the rule's message quotes), in
    the estimator report's remedy shape; None when it does not apply."""
    from torchward.analysis.rules.projected_oom import Placement
    from torchward.analysis.rules.projected_oom import across_the_machine as sharded_estimate

    if found.peak_bytes is None or getattr(found.detail, "resolved", None) is None:
        return None
    placed = Placement(
        gpu_count=found.gpu_count, instance=found.instance, gpus_used=found.gpus_used
    )
    try:
        sharded = sharded_estimate(found.detail, placed)
    except Exception:  # no remedy rather than a broken hover
        log.debug("sizing FSDP across the instance failed", exc_info=True)
        return None
    if sharded is None:
        return None
    where = f"the {found.gpu_count} GPUs" + (f" of {found.instance}" if found.instance else "")
    return {
        "title": f"FSDP across {where} (the script uses {found.gpus_used})",
        "saving_bytes": max(found.peak_bytes - sharded.peak, 0),
        "verdict": sharded.verdict,
        "cost": "code: launch with torchrun and wrap the model in FSDP (or DDP where the "
        "model fits one GPU); speed: communication between the GPUs",
    }


class UnknownGpu(ValueError):
    """A target GPU name the catalog does not know (the message names close matches)."""


def lookup_gpu(name: str) -> Any:
    """The catalog's ``HardwareChoice`` for a GPU or instance name; raises :class:`UnknownGpu`."""
    from torchward.estimator.hardware import lookup_hardware

    try:
        return lookup_hardware(name)
    except (LookupError, ValueError) as error:
        raise UnknownGpu(str(error)) from None


FIELD_WORDS = {  # RunConfig fields, as a user would name what was found
    "mode": "a training loop",
    "optimizer": "an optimizer",
    "batch_size": "a batch size",
    "seq_len": "a sequence length",
    "dtype": "a precision",
}


def estimate_source(
    source: str, path: str, gpu: str | None, project: Any = None, *, tree: Any = None
) -> Any:
    """``torchward estimate`` on editor text: an ``Estimate``; None when there is no run;
    :class:`NoJob` when there is a run but no model to size.

    ``project`` is the ``[tool.torchward]`` estimator settings (overrides and user
    architectures), laid over the script's values as the CLI does. ``tree``: ``source``
    already parsed (the lint's tree), only read."""
    from torchward.analysis.job.runconfig import read_source
    from torchward.estimator.estimate import estimate

    choice = lookup_gpu(gpu) if gpu else None
    config, _ = read_source(source, path, tree=tree)
    models = ()
    if project is not None:
        config, models = config.merged(project.run_config()), project.models
    if not any(True for _ in config.fields()):
        return None
    if choice is not None:  # an instance's GPU count is the world size (TW010's placement)
        from torchward.analysis.rules.projected_oom import place

        config = place(config, choice).config
    try:
        return estimate(config, choice.gpu if choice else None, models)
    except LookupError:  # no model named anywhere: say so, with what was found
        found = tuple(FIELD_WORDS[name] for name, _ in config.fields() if name in FIELD_WORDS)
        return NoJob(found, config)


def _find_entry_point() -> Callable[..., Any] | None:
    try:
        from torchward import estimator
    except Exception:  # a broken estimator must not take the linter down with it
        log.exception("cannot import torchward.estimator")
        return None
    return getattr(estimator, "estimate_source", None) or estimate_source


class EstimateService:
    """Answers GPU-fit questions; ``unavailable`` while there is no estimator."""

    def __init__(
        self, entry_point: Callable[..., Any] | None = None, *, discover: bool = True
    ) -> None:
        self._entry_point = entry_point
        self._discover = discover and entry_point is None

    @property
    def is_available(self) -> bool:
        if self._discover:
            self._entry_point = _find_entry_point()
            self._discover = False
        return self._entry_point is not None

    def estimate(
        self,
        source: str,
        path: str,
        gpu: str | None,
        *,
        enabled: bool = True,
        project: Any = None,
        tree: Any = None,
    ) -> GpuEstimate:
        """The GPU fit of ``source``; ``tree``: its parse, only read, handed to the
        built-in estimator (another entry point parses for itself)."""
        if not enabled:
            return GpuEstimate(
                "disabled", gpu, reason="the estimator is switched off (setting 'estimator')"
            )
        if not self.is_available:
            return GpuEstimate("unavailable", gpu, reason=UNAVAILABLE_REASON)
        try:
            if tree is not None and self._entry_point is estimate_source:
                result = estimate_source(source, path, gpu, project, tree=tree)
            elif project:
                result = self._entry_point(source, path, gpu, project)
            else:
                result = self._entry_point(source, path, gpu)
            found = _from_estimator(result, gpu, path)
            if found.status == "no-job" and not runs_something(source, tree):
                found = GpuEstimate("none", gpu, reason=NOT_A_SCRIPT_REASON, hint=NO_RUN_HINT)
            if found.status == "none" and found.reason != NOT_A_SCRIPT_REASON:
                found = no_run(source, gpu)
            elif found.status == "ok":
                found = _placed(found, gpu)
        except UnknownGpu as error:
            return GpuEstimate("error", gpu, reason=str(error))
        except Exception as error:  # degrade to "unavailable", never crash the server
            log.exception("estimator failed on %s", path)
            return GpuEstimate("unavailable", gpu, reason=f"the estimator failed: {error!r}")
        # a `torchward profile` / "Measure with your model" of this model and job: show it
        from .profiling import measured_overlay

        return measured_overlay(found, source, path, gpu, project)
