"""The estimate against stored oracle measurements (issue 27), recomputed on every run.

``data/oracle_memory_measured.json`` holds peaks that ``bench/oracle_memory.py --save``
measured with the calibration harness (fake CUDA tensors, a live-storage counter) for a
fast subset of the families chosen before tuning (``bench/oracle_memory_families.json``).
Measuring needs torch and minutes; estimating needs only the family's default config, so the
estimate is recomputed here from the installed transformers' defaults and must stay within
the issue's targets: a mean absolute error of at most 3% over the subset, no row under by
more than 5% (nor over by more than 5%, so one row cannot spend the mean). The rows still
outside would be listed in ``KNOWN_GAPS`` as strict xfails, so a fix that closes one must
take it off the list (docs/estimator-accuracy.md, "oracle families").
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
ROWS = json.loads((Path(__file__).parent / "data" / "oracle_memory_measured.json").read_text())[
    "measurements"
]
# (model_type, mode) rows still outside the targets (none since the per-op training terms,
# estimator/activations.py: norm casts, the training KV cache, the post-norm forward peak)
KNOWN_GAPS: set[tuple[str, str]] = set()


def _oracle():
    spec = importlib.util.spec_from_file_location("oracle_memory", ROOT / "bench/oracle_memory.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _error(oracle, row: dict, folder: Path) -> float:
    fields = oracle.family_config(row["model_type"], row["kind"])
    path = folder / f"{row['model_type']}-{row['job'][0]}"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(fields, default=str))
    ours = oracle.estimated(str(path), row["kind"], tuple(row["job"]))
    return (ours - row["measured"]) / row["measured"]


def _param(row: dict):
    key = (row["model_type"], row["job"][0])
    marks = [pytest.mark.xfail(strict=True, reason="known gap")] if key in KNOWN_GAPS else []
    return pytest.param(row, id=f"{key[0]}-{key[1]}", marks=marks)


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_estimate_within_target_of_the_oracle(row: dict, tmp_path: Path) -> None:
    error = _error(_oracle(), row, tmp_path)
    assert error >= -0.05, f"under-estimate {error:+.1%}"
    assert error <= 0.05, f"over-estimate {error:+.1%}"


def test_mean_absolute_error_of_the_subset(tmp_path: Path) -> None:
    oracle = _oracle()
    rows = [r for r in ROWS if (r["model_type"], r["job"][0]) not in KNOWN_GAPS]
    errors = [_error(oracle, row, tmp_path) for row in rows]
    mae = sum(abs(e) for e in errors) / len(errors)
    assert mae <= 0.03, f"MAE {mae:.1%} over {len(errors)}"


def test_the_subset_covers_several_kinds() -> None:
    kinds = {row["kind"] for row in ROWS}
    assert {"decoder", "encoder", "seq2seq", "vit"} <= kinds
