"""How an estimate reads in the editor: labels for hints and lenses, the breakdown hover.

Pure text from a :class:`~.estimates.GpuEstimate`; no protocol types, so the wording is
tested without a server. Sizes and percentages come from :mod:`.units` (the status bar
shows the same strings): GiB from 1 GiB, MiB below. The bars are scaled to the largest
term, like ``torchward estimate``'s. An "oom" verdict that TW010 does not report (a
low-confidence estimate) reads "may not fit (low confidence)", as in the status bar.
"""

from __future__ import annotations

from typing import Any

from .estimates import GpuEstimate
from .units import percent, size

BAR_WIDTH = 20
TERM_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer_state": "optimizer state",
    "master_weights": "master weights",
    "activations": "activations",
    "kv_cache": "KV cache",
    "temporaries": "temporaries",
    "cuda_context": "CUDA context",
    "fragmentation": "fragmentation",
}
VERDICTS = {"fits": "fits", "tight": "tight", "oom": "does not fit", "does-not-fit": "does not fit"}
UNCERTAIN_VERDICT = "may not fit (low confidence)"


def verdict_text(estimate: GpuEstimate) -> str | None:
    """The verdict in words; None without a GPU to judge against."""
    if estimate.uncertain:
        return UNCERTAIN_VERDICT
    return VERDICTS.get(estimate.verdict, estimate.verdict) if estimate.verdict else None


def count(value: int) -> str:
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if value >= scale:
            return f"{value / scale:.3g}{suffix}"
    return str(value)


def model_label(estimate: GpuEstimate) -> str | None:
    """Beside the model construction: ``124M params · weights 0.5 GiB``."""
    if estimate.status != "ok" or estimate.params is None:
        return None
    weights = dict(estimate.terms).get("weights")
    return f"{count(estimate.params)} params · weights {size(weights)}"


def batch_label(estimate: GpuEstimate) -> str | None:
    """Beside the batch size: what the activations of one micro-batch cost."""
    if estimate.status != "ok":
        return None
    activations = dict(estimate.terms).get("activations")
    return None if not activations else f"activations {size(activations)}"


NO_JOB_LABEL = "torchward: no job found — Why?"
SELECT_GPU_ENTRY = "**torchward: Select GPU…** (command palette)"


def peak_label(estimate: GpuEstimate) -> str | None:
    """Above the training step: ``Peak ≈ 18.1 GiB on NVIDIA A100 80GB SXM4 · fits``."""
    if estimate.status == "error":
        return f"torchward: {estimate.reason}"
    if estimate.status == "no-job":
        return NO_JOB_LABEL
    if estimate.status != "ok":
        return None
    measured = estimate.confidence == "measured"
    text = f"{'Measured peak' if measured else 'Peak ≈'} {size(estimate.peak_bytes)}"
    if estimate.gpu:
        text += f" on {estimate.hardware}"
    verdict = verdict_text(estimate)
    if verdict:
        text += f" · {verdict}"
        if estimate.percent is not None:
            text += f" ({percent(estimate.percent)})"
    else:
        text += " · choose a GPU"
    return text


def _bar(value: int, largest: int) -> str:
    return "█" * max(1, round(BAR_WIDTH * value / largest)) if value > 0 and largest > 0 else ""


def breakdown_markdown(estimate: GpuEstimate, report: dict[str, Any] | None = None) -> str | None:
    """The memory-breakdown hover: terms with bars, the verdict, the top remedies."""
    if estimate.status != "ok":
        return None
    terms = [(name, value) for name, value in estimate.terms if value > 0]
    largest = max((value for _, value in terms), default=0)
    lines = [
        f"**torchward memory {'measured' if estimate.confidence == 'measured' else 'estimate'}**"
        f" — {estimate.model or 'model'}"
        + (f" ({count(estimate.params)} parameters)" if estimate.params else ""),
        "",
    ]
    lines += ["| term | size | |", "|---|---:|---|"]
    lines += [
        f"| {TERM_LABELS.get(name, name)} | {size(value)} | `{_bar(value, largest)}` |"
        for name, value in terms
    ]
    lines.append("")
    interval = f"{size(estimate.low_bytes)} – {size(estimate.high_bytes)}"
    summary = f"**Peak ≈ {size(estimate.peak_bytes)}** (interval {interval}, confidence {estimate.confidence})"
    if estimate.gpu and estimate.verdict:
        summary += (
            f" on {estimate.hardware}: **{verdict_text(estimate)}**"
            f" — {percent(estimate.percent)} of {size(estimate.usable_bytes)} usable"
            + (" per GPU" if estimate.gpu_count > 1 else "")
        )
    else:
        summary += (
            f"; for a verdict choose a GPU: {SELECT_GPU_ENTRY}, the `torchward.targetGpu`"
            " setting or `target-gpu` in pyproject.toml"
        )
    lines.append(summary)
    remedies = (report or {}).get("remedies") or []
    if remedies:
        lines += ["", "Top remedies:"]
        for remedy in remedies[:3]:
            lines.append(
                f"- {remedy['title']}: saves {size(remedy['saving_bytes'])} → "
                f"{VERDICTS.get(remedy.get('verdict'), remedy.get('verdict'))} ({remedy['cost']})"
            )
    missing = (report or {}).get("missing") or []
    if missing:
        lines += ["", "Assumed (not in the script): " + ", ".join(f"`{name}`" for name in missing)]
    for unknown in (report or {}).get("unknown") or []:  # where each would come from
        where = (
            f"; the script would say it with {unknown['read_from']}" if unknown["read_from"] else ""
        )
        lines.append(
            f"- `{unknown['field']}` assumed {unknown['assumed']!r}{where}; give {unknown['give']}"
        )
    return "\n".join(lines)


def no_job_markdown(estimate: GpuEstimate) -> str:
    """Why a training script has no estimate, and the next step (status ``no-job``)."""
    return f"**{NO_JOB_LABEL.removesuffix(' — Why?')}**\n\n{estimate.reason}.\n\n**Next step:** {estimate.hint}."
