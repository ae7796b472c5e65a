"""``estimate --explain``: each term of the peak phase as its formula with its inputs (issue 27).

The formulas are written where the bytes are computed (estimator/costmodel.py); these
tests multiply the written-out products back and hold them to the terms' bytes.
"""

from __future__ import annotations

import io
import json
import math
import re
from contextlib import redirect_stdout

import pytest

from torchward.cli import main


def _run(*argv: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["estimate", *argv]) == 0
    return out.getvalue()


def _product(formula: str) -> float:
    """The value of ``a × name b × c bytes``: every factor's number multiplied."""
    factors = formula.split(" × ")
    numbers = [re.search(r"[\d,]+(?:\.\d+)?", f) for f in factors]
    assert all(numbers), formula
    return math.prod(float(m.group().replace(",", "")) for m in numbers if m)


def test_the_kv_cache_term_reads_as_the_issue_writes_it():
    text = _run(
        "--model", "llama-3-8b", "--mode", "generate", "--batch-size", "4",
        "--seq-len", "4096", "--max-new-tokens", "512", "--dtype", "bf16", "--explain",
    )  # fmt: skip
    assert (
        "kv cache = 2 × layers 32 × kv_heads 8 × head_dim 128 × seq 4096 × batch 4 × 2 bytes"
        in text
    )
    assert "weights = params 8,030,261,248 × 2 bytes" in text


def test_without_explain_no_formula_is_printed():
    text = _run("--model", "llama-3-8b", "--mode", "inference", "--dtype", "bf16")
    assert " = params " not in text


@pytest.mark.parametrize(
    "argv",
    [
        ("--model", "llama-3-8b", "--mode", "inference", "--batch-size", "2", "--seq-len", "2048"),
        ("--model", "qwen2-7b", "--mode", "generate", "--batch-size", "3", "--seq-len", "1000",
         "--num-beams", "2"),
        ("--model", "deepseek-v2-lite", "--mode", "generate", "--batch-size", "1",
         "--seq-len", "4000"),
        ("--model", "mistral-7b-v0.3", "--mode", "train", "--batch-size", "1", "--seq-len", "512"),
    ],
    ids=["forward", "beams", "mla", "train"],
)  # fmt: skip
def test_written_products_equal_the_terms(argv):
    data = json.loads(_run(*argv, "--dtype", "bf16", "--format", "json"))
    formulas = data["formulas"]
    assert formulas["weights"]
    assert _product(formulas["weights"]) == data["terms"]["weights"]
    for term in ("kv_cache", "gradients", "optimizer_state"):
        if term in formulas and "+" not in formulas[term].replace("(kv_lora_rank", ""):
            assert _product(formulas[term]) == pytest.approx(data["terms"][term], rel=1e-9), term
    if data["mode"] == "generate":
        assert formulas["kv_cache"]
    assert set(formulas) == {t for t, v in data["terms"].items() if v and t in formulas}


def test_every_phase_explains_its_gradients_as_they_are_then():
    from torchward.estimator.estimate import estimate
    from torchward.estimator.runconfig import Field, RunConfig

    for accumulation in (1, 4):
        config = RunConfig(
            model=Field("gpt2", "--model"),
            mode=Field("train", "--mode"),
            batch_size=Field(4, "--batch-size"),
            seq_len=Field(256, "--seq-len"),
            dtype=Field("amp-bf16", "--dtype"),
            accumulation=Field(accumulation, "--accumulation"),
        )
        for phase in estimate(config).phases:
            grads = phase.parts["gradients"]
            if not grads:
                assert "gradients" not in phase.formulas, phase.name
                continue
            text = phase.formulas["gradients"]
            total = sum(_product(t) for t in text.split(" + "))
            assert total == pytest.approx(grads, rel=1e-9), (phase.name, text)
