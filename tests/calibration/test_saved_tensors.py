"""The op-by-op facts the estimator's training terms rest on, re-measured (needs torch).

``estimator/activations.py`` counts what autograd keeps per layer from rules read off
``bench/oracle_breakdown.py``'s lists. These tests run the breakdown on two oracle families
(four layers, short sequences: seconds) and check the rules' counts, so that a transformers
or torch release that changes them fails here rather than drifting the estimate:

- under autocast each projection reading a norm's fp32 output casts it to 16 bits itself;
- a decoder's training forward fills a KV cache whose rotary keys are fp32 under autocast;
- a post-norm encoder keeps two 1-byte dropout masks per layer (the attention
  probabilities' dropout is inside the fused kernel).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is a calibration-only dependency")
pytest.importorskip("transformers", reason="transformers is a calibration-only dependency")
if shutil.which("g++") is None:
    pytest.skip("g++ builds the fake CUDA device", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from oracle_breakdown import breakdown  # noqa: E402
from oracle_memory import DEPTH  # noqa: E402


def _count(rows, module: str, op: str, dtype: str, last: int) -> int:
    """How many live (batch, seq, ``last``) storages ``op`` in ``module`` made, of ``dtype``
    (weights' casts and a classifier's pooled tensors have other shapes)."""
    return sum(
        r[4]
        for r in rows
        if (r[0], r[1], r[2]) == (module, op, dtype) and len(r[3]) == 3 and r[3][-1] == last
    )


def test_a_rotary_decoder_under_autocast() -> None:
    found = breakdown("helium", 1, 128, "amp-bf16")
    rows, hidden, kv_heads = found["rows"], 2560, 20
    assert found["phase"] == "backward"
    # q, k, v and gate, up each cast the norm output: five per layer, one for the LM head
    assert _count(rows, "Linear", "_to_copy", "bfloat16", hidden) == 5 * DEPTH + 1
    # the cache's keys (torch.cat into the DynamicCache) are fp32, its values 16-bit
    fp32_keys = [
        r
        for r in rows
        if r[1] == "cat"
        and r[2] == "float32"
        and r[3][1:] == [kv_heads, 128, 128]  # (1, heads, seq, head_dim)
    ]
    assert sum(r[4] for r in fp32_keys) == DEPTH


def test_a_post_norm_encoder_with_dropout() -> None:
    rows = breakdown("electra", 1, 128, "amp-bf16")["rows"]
    hidden = 256
    masks = _count(rows, "Dropout", "native_dropout", "bool", hidden)
    assert masks == 2 * DEPTH  # after the attention block and after the MLP
    # the layer's input read by q, k, v and the attention block's output by the MLP: four per
    # layer — but the first layer's input is ELECTRA's embeddings projection, a 16-bit matmul
    # output that q, k, v read without a cast (the estimator counts four per layer: over by
    # three copies of the hidden state)
    assert _count(rows, "Linear", "_to_copy", "bfloat16", hidden) == 4 * DEPTH - 3
