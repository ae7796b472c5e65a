"""The estimator's allocator-level estimate against the calibration fixtures (no torch needed).

``tests/calibration/fixtures/fake_cuda_peaks.json`` holds peaks of live tensor storage
measured with fake tensors on a fake CUDA device (``tests/calibration/measure.py``; the
counter agrees with real CPU execution to the byte, ``tests/calibration/test_counter.py``).
Fake tensors see no kernel-internal workspace, so the estimate is compared after taking
off the cuBLAS workspace term the estimator adds for the GPU (one 8 MiB workspace per
stream and thread; training's backward thread holds a second).

Targets (issue 4): mean absolute error < 3%, no configuration off by more than 10%, no
under-estimate worse than 5%.

``python tests/estimator/test_calibration_accuracy.py`` prints the table of
docs/estimator-accuracy.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from torchward.estimator.costmodel import WORKSPACE_BYTES
from torchward.estimator.estimate import estimate
from torchward.estimator.runconfig import RunConfig

FIXTURE = Path(__file__).resolve().parents[1] / "calibration" / "fixtures" / "fake_cuda_peaks.json"
GIB = 2**30
# Held out (issue 12): catalog families measured only after the cost model's constants
# were set from the fit families; never tuned on. Their errors are reported apart.
HELD_OUT_FAMILIES = frozenset(
    {
        "starcoder2",
        "gemma-2",
        "gemma-3",
        "bloom",
        "flan-t5",
        "falcon",
        "olmo",
        "olmoe",
        "phi-3",
        "qwen2-moe",
        "qwen3-moe",
        "mixtral",
        "xlm-roberta",
        "deberta-v3",
        "gpt-neox",
    }
)


def _all_runs() -> list[dict]:
    return [r for r in json.loads(FIXTURE.read_text("utf-8"))["runs"] if "error" not in r]


def _family(name: str) -> str:
    from torchward.estimator.architecture import lookup_model

    return lookup_model(name).family


def _runs(held_out: bool = False) -> list[dict]:
    """The fit runs (default) or the held-out ones."""
    return [r for r in _all_runs() if (_family(r["model"]) in HELD_OUT_FAMILIES) == held_out]


def _estimate_bytes(run: dict) -> tuple[int, str]:
    values = dict(
        model=run["model"],
        mode=run["mode"],
        batch_size=run["batch_size"],
        dtype=run["dtype"],
        attention="sdpa",
    )
    if run["model"].startswith(("resnet", "vit-")):
        values["image_size"] = run["seq"]
    else:
        values["seq_len"] = run["seq"]
    if run["mode"] == "train":
        values["optimizer"] = "adamw"
    if run["mode"] == "generate":
        values.update(max_new_tokens=run["new_tokens"], num_beams=1)
    e = estimate(RunConfig().with_values("calibration", **values), None)
    workspace = WORKSPACE_BYTES["pre-hopper"] * (2 if run["mode"] == "train" else 1)
    return e.allocated - workspace, e.peak_phase.name


def comparison(held_out: bool = False) -> list[dict]:
    rows = []
    for run in _runs(held_out):
        est, phase = _estimate_bytes(run)
        measured = run["measured_allocated_bytes"]
        rows.append(
            dict(
                name=run["name"],
                model=run["model"],
                mode=run["mode"],
                dtype=run["dtype"],
                batch=run["batch_size"],
                seq=run["seq"],
                measured=measured,
                estimated=est,
                error=est / measured - 1,
                measured_phase=run["peak_phase"],
                estimated_phase=phase,
            )
        )
    return rows


def summary(rows: list[dict]) -> dict:
    errors = [r["error"] for r in rows]
    return dict(
        count=len(rows),
        architectures=len({r["model"] for r in rows}),
        model_types=len({_model_type(r["model"]) for r in rows}),
        mae=sum(abs(e) for e in errors) / len(errors),
        max_abs=max(abs(e) for e in errors),
        worst_under=min(errors),
        worst_over=max(errors),
    )


def _model_type(name: str) -> str:
    from torchward.estimator.architecture import lookup_model

    return lookup_model(name).model_type


def test_fixtures_cover_the_issue_s_calibration_grid():
    runs = _runs()
    assert len(runs) >= 40
    assert len({_model_type(r["model"]) for r in runs}) >= 12
    assert {r["mode"] for r in runs} == {"train", "inference", "generate"}
    assert {"fp32", "amp-fp16", "amp-bf16", "bf16"} <= {r["dtype"] for r in runs}
    assert min(r["batch_size"] for r in runs) == 1 and max(r["batch_size"] for r in runs) == 32
    seqs = [r["seq"] for r in runs if not r["model"].startswith(("resnet", "vit-"))]
    assert min(seqs) == 128 and max(seqs) >= 7936


def test_allocated_estimate_meets_the_accuracy_targets_on_every_calibration_config():
    rows = comparison()
    s = summary(rows)
    table = "\n".join(
        f"{r['name']:42s} {r['measured'] / GIB:9.3f} {r['estimated'] / GIB:9.3f} {r['error']:+7.1%}"
        for r in rows
    )
    assert s["mae"] < 0.03, f"mean absolute error {s['mae']:.1%}\n{table}"
    assert s["max_abs"] <= 0.10, f"max error {s['max_abs']:.1%}\n{table}"
    assert s["worst_under"] >= -0.05, f"worst under-estimate {s['worst_under']:.1%}\n{table}"


def test_held_out_families_meet_the_generalisation_targets():
    """Issue 12: held-out MAE <= 5%, no under-estimate beyond -8%, at least 8 families."""
    rows = comparison(held_out=True)
    families = {_family(r["model"]) for r in rows}
    assert len(families) >= 8, sorted(families)
    assert not families & {_family(r["model"]) for r in comparison()}  # truly held out
    s = summary(rows)
    table = "\n".join(f"{r['name']:42s} {r['error']:+7.1%}" for r in rows)
    assert s["mae"] <= 0.05, f"held-out mean absolute error {s['mae']:.1%}\n{table}"
    assert s["worst_under"] >= -0.08, (
        f"held-out worst under-estimate {s['worst_under']:.1%}\n{table}"
    )


def markdown(rows: list[dict]) -> str:
    lines = [
        "| config | model | mode | dtype | batch | seq / image | measured GiB | estimated GiB "
        "| error | measured peak phase | estimated peak phase |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['model']} | {r['mode']} | {r['dtype']} | {r['batch']} "
            f"| {r['seq']} | {r['measured'] / GIB:.3f} | {r['estimated'] / GIB:.3f} "
            f"| {r['error']:+.1%} | {r['measured_phase']} | {r['estimated_phase']} |"
        )
    s = summary(rows)
    lines.append("")
    lines.append(
        f"{s['count']} configurations, {s['architectures']} checkpoints, "
        f"{s['model_types']} architectures (model types). Mean absolute error "
        f"{s['mae']:.2%}; largest error {s['max_abs']:.2%}; worst under-estimate "
        f"{s['worst_under']:+.2%}; worst over-estimate {s['worst_over']:+.2%}."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    print("## Fit families\n")
    print(markdown(comparison()))
    print("\n## Held-out families\n")
    print(markdown(comparison(held_out=True)))
