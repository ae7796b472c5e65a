"""The estimate of ``generate()`` — greedy, beam search, sampling — against measured peaks.

``data/oracle_generate_measured.json`` holds what ``bench/oracle_generate.py --save``
measured: transformers' own ``model.generate`` run for real on CPU tensors under the
calibration harness's live-storage counter (the fake device cannot run it: its stopping
checks read values), two decoders and one encoder-decoder from their default configs at 1/8
width. The estimate (``generate`` mode with ``num_beams`` / ``num_return_sequences``, terms
written from transformers' ``_beam_search`` / ``_sample`` source) is recomputed here from the
same fields.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path

import pytest

pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]
ROWS = json.loads(
    (Path(__file__).parent / "data" / "oracle_generate_measured.json").read_text("utf-8")
)["measurements"]
# BART's beam search is over (+6.7%): the quiet side, left as measured
KNOWN_GAPS = {("bart", "beam 4")}


@cache
def _bench():
    spec = importlib.util.spec_from_file_location(
        "oracle_generate", ROOT / "bench" / "oracle_generate.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def errors(tmp_path_factory) -> dict[tuple[str, str], float]:
    bench = _bench()
    extras = {label: extra for label, _kwargs, extra in bench.STRATEGIES}
    out = {}
    for row in ROWS:
        folder = tmp_path_factory.mktemp(row["model_type"])
        fields = bench.family_fields(row["model_type"])
        (folder / "config.json").write_text(json.dumps(fields, default=str))
        ours = bench.estimated(str(folder), extras[row["strategy"]])
        out[row["model_type"], row["strategy"]] = (ours - row["measured"]) / row["measured"]
    return out


def _param(row: dict):
    key = (row["model_type"], row["strategy"])
    marks = [pytest.mark.xfail(strict=True, reason="known gap")] if key in KNOWN_GAPS else []
    return pytest.param(key, id="-".join(key), marks=marks)


@pytest.mark.parametrize("key", [_param(r) for r in ROWS])
def test_generate_estimate_within_five_percent(key, errors) -> None:
    assert -0.05 <= errors[key] <= 0.05, f"{errors[key]:+.1%}"


def test_every_strategy_is_measured_for_a_decoder_and_an_encoder_decoder() -> None:
    kinds = {(row["kind"], row["strategy"]) for row in ROWS}
    for label, _kwargs, _extra in _bench().STRATEGIES:
        assert ("decoder", label) in kinds and ("seq2seq", label) in kinds


def test_beams_and_returned_sequences_raise_the_measured_peak() -> None:
    peak = {(r["model_type"], r["strategy"]): r["measured"] for r in ROWS}
    for model_type in {r["model_type"] for r in ROWS}:
        assert peak[model_type, "beam 4"] > peak[model_type, "greedy"]
        assert peak[model_type, "sample x4"] > peak[model_type, "greedy"]
