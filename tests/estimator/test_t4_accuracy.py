"""The estimator on a Tesla T4 (sm75): against fake-tensor peaks with T4 kernel rules and
against the reference project's real T4 measurements (no torch needed).

- ``tests/calibration/fixtures/t4_rules_peaks.json`` (``measure.py --t4``): the reference
  project's eight training configurations measured with fake tensors and the SDPA rules of
  an sm75 GPU, each transformer with ``sdpa`` (memory-efficient kernel), ``eager`` and
  SDPA's ``math`` path. Compared after taking off the two 8 MiB cuBLAS workspaces, which
  fake tensors cannot see.
- ``tests/calibration/fixtures/t4_measured_peaks.json``: the real ``max_memory_allocated``
  of those runs (copied from ``shared/calibration``; torch 2.11, AMP fp16, AdamW). Their
  harness recorded only ``"flash_attention": false``; of the three attention paths only the
  math path reproduces them (within 2% as fake-tensor peaks + workspaces), so they are
  estimated with ``attention="math"``, workspaces included.

``python tests/estimator/test_t4_accuracy.py`` prints the tables of docs/estimator-accuracy.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torchward.estimator.costmodel import WORKSPACE_BYTES, attention_path
from torchward.estimator.estimate import estimate
from torchward.estimator.hardware import lookup_gpu
from torchward.estimator.resolve import resolve
from torchward.estimator.runconfig import RunConfig

FIXTURES = Path(__file__).resolve().parents[1] / "calibration" / "fixtures"
RULES = FIXTURES / "t4_rules_peaks.json"
REAL = FIXTURES / "t4_measured_peaks.json"
SM80 = FIXTURES / "fake_cuda_peaks.json"
GIB = 2**30


def _t4_estimate(model: str, batch: int, size: int, attention: str):
    values = dict(
        model=model,
        mode="train",
        batch_size=batch,
        dtype="amp-fp16",
        optimizer="adamw",
        attention=attention,
    )
    values["image_size" if model.startswith("resnet") else "seq_len"] = size
    return estimate(RunConfig().with_values("t4", **values), lookup_gpu("t4"))


def _rule_runs() -> list[dict]:
    return json.loads(RULES.read_text("utf-8"))["runs"]


def _variant(run: dict) -> str:
    return "math" if run.get("sdpa_backend") == "math" else run["attention"]


def rules_comparison() -> list[dict]:
    rows = []
    for run in _rule_runs():
        e = _t4_estimate(run["model"], run["batch_size"], run["seq"], _variant(run))
        est = e.allocated - 2 * WORKSPACE_BYTES["pre-hopper"]
        m = run["measured_allocated_bytes"]
        rows.append(
            dict(
                name=run["name"],
                variant=_variant(run),
                measured=m,
                estimated=est,
                error=est / m - 1,
                measured_phase=run["peak_phase"],
                estimated_phase=e.peak_phase.name,
            )
        )
    return rows


def real_comparison(attention: str = "math") -> list[dict]:
    rows = []
    for run in json.loads(REAL.read_text("utf-8"))["runs"]:
        c = run["config"]
        size = c.get("seq_len", c.get("image_size"))
        e = _t4_estimate(run["model"], c["batch_size"], size, attention)
        m = run["measured_allocated_bytes"]
        rows.append(
            dict(
                model=run["model"],
                batch=c["batch_size"],
                size=size,
                measured=m,
                estimated=e.allocated,
                error=e.allocated / m - 1,
                measured_peak=run["measured_peak_bytes"],
                estimated_peak=e.peak,
                peak_error=e.peak / run["measured_peak_bytes"] - 1,
                phase=e.peak_phase.name,
            )
        )
    return rows


def _table(rows, key="name"):
    return "\n".join(
        f"{str(r[key]):42s} {r.get('batch', '')!s:>3} {r['measured'] / GIB:8.3f} "
        f"{r['estimated'] / GIB:8.3f} {r['error']:+7.1%}"
        for r in rows
    )


def test_the_t4_rule_fixtures_cover_the_eight_reference_runs_and_all_three_attention_paths():
    runs = _rule_runs()
    assert len(runs) == 20 and all("error" not in r for r in runs)
    assert {_variant(r) for r in runs} == {"sdpa", "eager", "math"}
    for r in runs:  # on sm75 nothing runs FlashAttention
        assert "flash" not in r["sdpa_kernels"], r["name"]
        if _variant(r) == "sdpa" and r["model"] != "resnet50":
            assert set(r["sdpa_kernels"]) == {"efficient"}, r["name"]
        if _variant(r) == "math":
            assert set(r["sdpa_kernels"]) == {"math"}, r["name"]


def test_sm75_memory_efficient_sdpa_keeps_what_sm80_flash_keeps():
    """The T4's fp16 SDPA (memory-efficient kernel) saves no score tensor either: its peaks
    equal the sm80 (flash) fixtures of the same configurations byte for byte."""
    sm80 = {
        (r["model"], r["batch_size"], r["seq"], r["dtype"]): r["measured_allocated_bytes"]
        for r in json.loads(SM80.read_text("utf-8"))["runs"]
        if r["mode"] == "train"
    }
    matched = 0
    for r in _rule_runs():
        key = (r["model"], r["batch_size"], r["seq"], r["dtype"])
        if _variant(r) == "sdpa" and key in sm80:
            assert r["measured_allocated_bytes"] == sm80[key], r["name"]
            matched += 1
    assert matched >= 4


def test_estimates_meet_the_targets_on_the_t4_rule_fixtures():
    rows = rules_comparison()
    errors = [r["error"] for r in rows]
    assert sum(abs(e) for e in errors) / len(errors) < 0.03, _table(rows)
    assert max(errors) <= 0.10, _table(rows)
    # sdpa (memory-efficient) and the math path: no under-estimate worse than 5%
    fused_or_math = [r["error"] for r in rows if r["variant"] != "eager"]
    assert min(fused_or_math) >= -0.05, _table(rows)
    # eager: transformers 5's BertSelfAttention / DistilBERT keep ~0.8 bytes per score
    # element more than the estimate counts (t4-distilbert-*-b8-s256-eager: -5.1%)
    assert min(errors) >= -0.06, _table(rows)


def test_real_t4_allocated_peaks_are_estimated_within_the_bounds():
    rows = real_comparison("math")
    table = _table(rows, key="model")
    assert all(r["error"] >= -0.05 for r in rows), table  # no under-estimate worse than 5%
    assert all(r["error"] <= 0.10 for r in rows), table
    assert sum(abs(r["error"]) for r in rows) / len(rows) < 0.03, table
    # the card-level peak (+ fragmentation + CUDA context) stays inside the estimate's interval
    for r in rows:
        assert abs(r["peak_error"]) < 0.08, table


def test_real_t4_runs_are_not_explained_by_a_fused_kernel():
    """The evidence for ``math``: with SDPA's fused (memory-efficient) kernel the batch 8 × 256
    transformer runs would be under-estimated by 14-28%."""
    worst = min(r["error"] for r in real_comparison("sdpa"))
    assert worst < -0.10


@pytest.mark.parametrize(
    "gpu,dtype,expected",
    [
        ("t4", "amp-fp16", "fused"),  # memory-efficient kernel: fp16 on sm50+
        ("t4", "amp-bf16", "math"),  # memory-efficient bf16 kernels are sm80-only
        ("t4", "fp32", "fused"),
        ("a100-80gb", "amp-bf16", "fused"),
        (None, "amp-bf16", "fused"),  # no GPU named: sm80+ rules
    ],
)
def test_sdpa_kernel_follows_the_gpu_compute_capability(gpu, dtype, expected):
    r = resolve(
        RunConfig().with_values(
            "t",
            model="gpt2",
            mode="train",
            batch_size=8,
            seq_len=256,
            dtype=dtype,
            attention="sdpa",
        )
    )
    assert attention_path(r, lookup_gpu(gpu) if gpu else None) == expected


def test_bf16_sdpa_on_a_t4_charges_the_math_path_scores():
    common = dict(
        model="gpt2",
        mode="train",
        batch_size=8,
        seq_len=1024,
        dtype="amp-bf16",
        optimizer="adamw",
        attention="sdpa",
    )
    t4 = estimate(RunConfig().with_values("t", **common), lookup_gpu("t4"))
    a100 = estimate(RunConfig().with_values("t", **common), lookup_gpu("a100-80gb"))
    # 12 layers × 8 × 12 heads × 1024² scores × 9 bytes ≈ 9.7 GiB more
    assert t4.allocated - a100.allocated > 9 * GIB


def markdown() -> str:
    lines = [
        "| model | batch | seq / image | measured allocated GiB | estimated | error "
        "| measured peak GiB | estimated | error | estimated peak phase |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in real_comparison("math"):
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['size']} | {r['measured'] / GIB:.3f} "
            f"| {r['estimated'] / GIB:.3f} | {r['error']:+.1%} "
            f"| {r['measured_peak'] / GIB:.3f} | {r['estimated_peak'] / GIB:.3f} "
            f"| {r['peak_error']:+.1%} | {r['phase']} |"
        )
    lines += [
        "",
        "| fixture (T4 rules) | path | measured GiB | estimated GiB | error "
        "| measured peak phase | estimated peak phase |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rules_comparison():
        lines.append(
            f"| {r['name']} | {r['variant']} | {r['measured'] / GIB:.3f} "
            f"| {r['estimated'] / GIB:.3f} | {r['error']:+.1%} | {r['measured_phase']} "
            f"| {r['estimated_phase']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
