"""The estimate against stored oracle measurements (issue 27), recomputed on every run.

``data/oracle_memory_measured.json`` holds the peaks that ``bench/oracle_memory.py --save``
measured with the calibration harness (fake CUDA tensors, a live-storage counter; for the four
families the fake device cannot run, real CPU tensors at 1/8 width, ``"device": "real cpu"``) for the
families chosen before tuning (``bench/oracle_memory_families.json``): every job of every
family the harness can run, in training, inference (with the call's ``use_cache`` and with
``use_cache=False``) and generation. Measuring needs torch and minutes; estimating needs only
the family's default config, so the estimate is recomputed here from the installed
transformers' defaults and must stay within the issue's targets: a mean absolute error of at
most 3%, no row under by more than 5% (nor over by more than 5%, so one row cannot spend the
mean). Rows still outside are listed in ``KNOWN_GAPS`` as strict xfails, so a fix that closes
one must take it off the list (docs/estimator-accuracy.md, "oracle families").
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path

import pytest

pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
ROWS = json.loads((Path(__file__).parent / "data" / "oracle_memory_measured.json").read_text())[
    "measurements"
]
# (model_type, job label) rows outside +-5%. Closed: mT5's generation (-6.3% before T5's
# shared position bias and its per-layer mask were charged at the prefill), JetMoE's four rows
# (-8% .. -18% before its mixture of attention heads was counted, estimator/routedattention.py)
# and ConvNeXt's training (+13.1%: a double-counted block tensor and an fp32 image batch in a
# pure bf16 job). DBRX's generation is over: its experts run one at a time (DbrxExperts), so
# the prefill's peak holds the busiest expert's tokens, which the routing decides; the
# estimate keeps the bound of every routed copy at once. Measured on real CPU tensors at 1/8
# width (bench/oracle_memory.py, REAL_CPU).
KNOWN_GAPS: set[tuple[str, str]] = {
    ("dbrx", "generate"),
}


@cache
def _oracle():
    spec = importlib.util.spec_from_file_location("oracle_memory", ROOT / "bench/oracle_memory.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def _fields(model_type: str, kind: str) -> str:
    return json.dumps(_oracle().family_config(model_type, kind), default=str)


def _key(row: dict) -> tuple[str, str]:
    return row["model_type"], _oracle().label(tuple(row["job"]), row.get("checkpointing", False))


@pytest.fixture(scope="module")
def estimates(tmp_path_factory) -> dict[tuple[str, str], float]:
    """Every row's estimate (bytes), made once for the module."""
    out = {}
    for row in ROWS:
        folder = tmp_path_factory.mktemp(row["model_type"])
        (folder / "config.json").write_text(_fields(row["model_type"], row["kind"]))
        job, checkpointing = tuple(row["job"]), row.get("checkpointing", False)
        out[_key(row)] = _oracle().estimated(str(folder), row["kind"], job, checkpointing)
    return out


@pytest.fixture(scope="module")
def errors(estimates) -> dict[tuple[str, str], float]:
    measured = {_key(r): r["measured"] for r in ROWS}
    return {k: (ours - measured[k]) / measured[k] for k, ours in estimates.items()}


def _param(row: dict):
    key = _key(row)
    marks = [pytest.mark.xfail(strict=True, reason="known gap")] if key in KNOWN_GAPS else []
    return pytest.param(key, id=f"{key[0]}-{key[1]}", marks=marks)


@pytest.mark.parametrize("key", [_param(r) for r in ROWS])
def test_estimate_within_target_of_the_oracle(key, errors) -> None:
    error = errors[key]
    assert error >= -0.05, f"under-estimate {error:+.1%}"
    assert error <= 0.05, f"over-estimate {error:+.1%}"


def test_mean_absolute_error_over_every_row(errors) -> None:
    mae = sum(abs(e) for e in errors.values()) / len(errors)
    assert mae <= 0.03, f"MAE {mae:.1%} over {len(errors)}"


def test_every_family_written_down_is_measured() -> None:
    """No family of bench/oracle_memory_families.json is left out (the four the fake device
    cannot run are measured on real CPU tensors instead)."""
    families = {f["model_type"] for f in _oracle().FAMILIES}
    assert families == {row["model_type"] for row in ROWS}
    real = {row["model_type"] for row in ROWS if row["device"] == "real cpu"}
    assert real == set(_oracle().REAL_CPU)


def test_checkpointing_is_measured_for_three_decoders_and_an_encoder() -> None:
    kinds = [row["kind"] for row in ROWS if row.get("checkpointing")]
    assert kinds.count("decoder") >= 3 and kinds.count("encoder") >= 1


def test_the_rows_cover_every_kind_and_mode() -> None:
    kinds = {row["kind"] for row in ROWS}
    assert {"decoder", "encoder", "seq2seq", "vit", "hf-cnn", "dual-tower"} <= kinds
    labels = {_oracle().label(tuple(row["job"])) for row in ROWS}
    assert {"train", "inference", "inference (use_cache=False)", "generate"} <= labels


def test_a_forward_without_the_cache_is_measured_and_estimated_lower(estimates) -> None:
    """``use_cache=False`` end to end: the measured forward drops the returned KV cache, and
    the estimate (``--use-cache false``) drops the same bytes (within 5% of the drop)."""
    measured = {_key(r): r["measured"] for r in ROWS}
    families = [k[0] for k in measured if k[1] == "inference (use_cache=False)"]
    assert len(families) >= 8
    for family in families:
        on, off = (family, "inference"), (family, "inference (use_cache=False)")
        drop = measured[on] - measured[off]
        assert drop > 0, family
        assert estimates[on] - estimates[off] == pytest.approx(drop, rel=0.05), family
