"""A chosen instance reads the same in TW010 and in the editor (issue 30): the rule judges
one GPU of the instance with the instance's GPU count as the world size, as the status
bar does, says "1 of 8 used" in the same words, and quotes the peak of the FSDP remedy
the hover offers. Before, the rule estimated a sharded script on one GPU (world size 1:
"does not fit") while the status bar divided by the instance's 8 GPUs ("fits")."""

from __future__ import annotations

import asyncio

import pytest
from harness import REAL_SERVER, fresh_uri, session
from torchward.analysis import LintSettings, analyze_source
from torchward.estimator.units import size
from torchward.server.estimates import EstimateService, across_the_machine

PATH = "/work/project/train.py"

# FSDP without a world size of its own: every GPU of the machine, divided by 8 on p4d
SHARDED = """\
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
model = FSDP(model)
optimizer = torch.optim.AdamW(model.parameters())
batch_size = 1
seq_len = 512
for batch in loader:
    model(**batch).loss.backward()
    optimizer.step()
"""

# one process, one GPU: 1 of the instance's 8 used, and too big for it
ONE_GPU = """\
from transformers import AutoModelForCausalLM, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
args = TrainingArguments("out", per_device_train_batch_size=8, max_seq_length=2048, bf16=True)
"""


def _tw010(source: str, gpu: str) -> list[str]:
    report = analyze_source(source, PATH, LintSettings(target_gpu=gpu))
    return [finding.message for finding in report.findings if finding.code == "TW010"]


@pytest.mark.parametrize(
    ("source", "gpu", "oom"),
    [
        (SHARDED, "p4d.24xlarge", False),  # the one that disagreed: the rule said OOM
        (SHARDED, "A100 40GB", True),
        (ONE_GPU, "p4d.24xlarge", True),
        (ONE_GPU, "A100 40GB", True),
    ],
)
def test_tw010_and_the_status_bar_give_the_same_verdict_on_an_instance(source, gpu, oom):
    fit = EstimateService().estimate(source, PATH, gpu)
    says_oom = fit.verdict in ("oom", "does-not-fit") and not fit.uncertain
    assert says_oom is oom, (fit.verdict, fit.uncertain, fit.hardware)
    assert bool(_tw010(source, gpu)) is oom


def test_tw010_says_which_gpus_are_used_and_quotes_the_remedy_the_hover_offers():
    fit = EstimateService().estimate(ONE_GPU, PATH, "p4d.24xlarge")
    assert fit.hardware == "8× A100 40GB SXM4 (p4d.24xlarge) · 1 of 8 used"
    (message,) = _tw010(ONE_GPU, "p4d.24xlarge")
    assert "(p4d.24xlarge) · 1 of 8 used" in message and "8× " in message
    remedy = across_the_machine(fit)
    assert remedy is not None and remedy["title"].startswith("FSDP across the 8 GPUs")
    sharded_peak = fit.peak_bytes - remedy["saving_bytes"]
    assert (
        f"FSDP across all 8 (launched with torchrun) would bring the peak to {size(sharded_peak)} per GPU"
        in message
    )
    # a single GPU: no instance words, no multi-GPU remedy
    (single,) = _tw010(ONE_GPU, "A100 40GB")
    assert "of 8 used" not in single and "FSDP across" not in single


@pytest.mark.asyncio
async def test_over_lsp_the_diagnostic_and_the_gpu_fit_agree_on_an_instance():
    async with session(
        "vscode-1.96", server=REAL_SERVER, options={"targetGpu": "p4d.24xlarge"}
    ) as editor:
        fits = {}
        for name, source in (("one", ONE_GPU), ("sharded", SHARDED)):
            uri = fresh_uri()
            editor.open(uri, source)
            diagnostics = await editor.diagnostics(uri)
            tw010 = [d.message for d in diagnostics if d.code == "TW010"]
            for _ in range(1000):
                sent = [f for f in editor.client.gpu_fits if _get(f, "uri") == uri]
                if sent and _get(sent[-1], "status") == "ok":
                    fits[name] = (sent[-1], tw010)
                    break
                await asyncio.sleep(0.01)
        fit, tw010 = fits["one"]
        hardware = _get(_get(fit, "display"), "hardware")
        assert hardware.endswith("(p4d.24xlarge) · 1 of 8 used")
        assert _get(fit, "verdict") == "oom" and not _get(fit, "lowConfidence")
        assert len(tw010) == 1 and "(p4d.24xlarge) · 1 of 8 used" in tw010[0]
        fit, tw010 = fits["sharded"]
        assert _get(fit, "verdict") == "fits" and tw010 == []
        assert _get(_get(fit, "display"), "hardware").endswith("· 8 of 8 used")


def _get(value, key):
    """A field of a notification's params (a dict, or pygls' generic object)."""
    return value[key] if isinstance(value, dict) else getattr(value, key)


def test_tw010_prints_the_peak_and_the_gpu_as_the_status_bar_does():
    # one rounding rule and one name for the card: the rule once printed "218.8 GiB" and
    # "NVIDIA A100 40GB SXM4" where the status bar said "219 GiB" and "A100 40GB SXM4"
    fit = EstimateService().estimate(ONE_GPU, PATH, "A100 40GB")
    (message,) = _tw010(ONE_GPU, "A100 40GB")
    assert message.startswith(f"projected peak {size(fit.peak_bytes)} (at least ")
    assert f"exceeds the {fit.hardware}'s {size(fit.usable_bytes)};" in message
    assert "NVIDIA" not in message
