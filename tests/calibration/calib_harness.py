"""Peak bytes of live tensor storage of a training step, an inference pass and a generation.

Nothing is allocated: the model and its inputs are ``FakeTensor``s (``FakeTensorMode``) on
a fake ``cuda`` device (``fakecuda.py``), and :class:`LiveStorageCounter` — a
``TorchDispatchMode`` under the fake mode — sees every aten op's outputs: a storage seen
for the first time is an allocation of ``nbytes`` (rounded up to the CUDA caching
allocator's 512-byte blocks), ``weakref.finalize`` on the storage object is its free. Only
storages on the measured device count. That is what ``torch.cuda.max_memory_allocated``
reports, less what kernels allocate internally (cuBLAS/cuDNN workspaces, the flash-attention
backward's ``dq`` accumulator): those never appear as aten outputs.

What a fake device cannot ask the hardware is emulated, by rule (see ``MEMORY-MODEL.md``):

- autocast: ``torch.autocast("cuda")`` switches itself off when ``torch.cuda.is_available()``
  is false; :func:`cuda_autocast` turns it on through the same C++ switches;
- optimizers get ``foreach=True`` explicitly (the CUDA default; the device check in
  ``torch.optim`` would pick the per-tensor loop on a fake device);
- ``F.scaled_dot_product_attention`` picks its kernel the way an sm80 / sm90 GPU (A100,
  H100) does: FlashAttention for fp16 / bf16 inputs without an explicit mask and head_dim
  <= 256 (grouped K/V heads natively), the memory-efficient kernel otherwise — always on an
  sm75 GPU (Tesla T4: no flash kernel, :data:`SDPA_SM`) — (a boolean mask
  is converted to an additive one of the query's dtype, padded to 16 columns; grouped K/V
  heads are expanded first) — :func:`sdpa_by_rule` calls the fused aten op directly;
- transformers treats fake tensors as traced and then builds attention masks and packed
  sequence indices a real run would not build: the unpadded inputs here are answered as
  "not packed, not traced, no padding" (:func:`patch_transformers`); ``trunc_normal_``
  initialisation (ViT), which reads values, becomes an in-place ``normal_``.

The same counter runs on real CPU execution (``device="cpu"``, no fake mode) so that the
fake-tensor path can be checked against a real run to the byte (``test_counter.py``).
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable
from pathlib import Path

import torch

# The counter and the emulation ship in the profile extra (torchward/profile/): one copy,
# shared by `torchward profile`, the guard and this harness (the calibration venv has
# torch, not torchward: the repository root goes on the path).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from torchward.profile.counter import LiveStorageCounter, rounded  # noqa: E402
from torchward.profile.emulation import (  # noqa: E402
    KERNELS_USED,
    SDPA_SM,
    cuda_autocast,
    patch_transformers,
    sdpa_by_rule,
    set_sdpa_sm,
)


def emulate_device_capability() -> None:
    """Answer ``torch.cuda.get_device_capability`` as the emulated GPU would (sm80 unless
    :func:`set_sdpa_sm` says otherwise). transformers' MoE layers ask it to choose their
    experts kernel: on sm80+ the default ``grouped_mm`` path runs ``F.grouped_mm`` over all
    tokens sorted by expert — shapes fixed by tokens × top-k, not by where the router sends
    them, so a fake run measures what a real one allocates; a CPU wheel has no device to ask."""
    torch.cuda.get_device_capability = lambda device=None: divmod(SDPA_SM["value"], 10)


# -- the steps --------------------------------------------------------------------------------
DTYPES = {
    "fp32": None,
    "amp-bf16": torch.bfloat16,
    "amp-fp16": torch.float16,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}


def _precision(dtype: str, device: str):
    if dtype.startswith("amp-"):
        if device == "cuda":
            return cuda_autocast(DTYPES[dtype])
        return torch.autocast(device, dtype=DTYPES[dtype])
    return contextlib.nullcontext()


def train_step(
    counter: LiveStorageCounter,
    model,
    make_batch: Callable,
    loss_of: Callable,
    dtype: str,
    device: str,
    warmup: bool = True,
) -> None:
    """One steady-state step: zero_grad(set_to_none), forward + loss, backward, AdamW step.

    The loop is transformers' own custom-loop tutorial: ``outputs = model(**batch);
    loss = outputs.loss; loss.backward()`` — the outputs (the logits) stay referenced until
    the backward is done (HF ``Trainer`` drops them before its backward: lower by one logits
    tensor).
    """
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)

    def step():
        opt.zero_grad(set_to_none=True)
        counter.set_phase("step start")
        batch = make_batch()
        counter.set_phase("forward")
        with _precision(dtype, device):
            loss, outputs = loss_of(model, batch)
        counter.set_phase("backward")
        loss.backward()  # the outputs (logits) stay referenced, as in `out = model(**b)`
        del loss, outputs, batch
        counter.set_phase("optimizer step")
        opt.step()

    if warmup:
        step()
    opt.zero_grad(set_to_none=True)
    counter.reset_peak()
    step()
    opt.zero_grad(set_to_none=True)


def inference_pass(counter, model, make_batch, forward_of, dtype, device) -> None:
    model.eval()
    with torch.no_grad():
        batch = make_batch()
        counter.reset_peak()
        counter.set_phase("forward")
        with _precision(dtype, device):
            out = forward_of(model, batch)
        del out


def generation(counter, model, prompt_ids, new_tokens: int, dtype, device) -> None:
    """Prefill the prompt (last-position logits, as ``generate`` does), then decode greedily."""
    from transformers import DynamicCache

    model.eval()
    with torch.no_grad():
        counter.reset_peak()
        counter.set_phase("prefill")
        cache = DynamicCache(config=model.config)
        with _precision(dtype, device):
            out = model(
                input_ids=prompt_ids, past_key_values=cache, use_cache=True, logits_to_keep=1
            )
        scores = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
        cache = out.past_key_values
        del out
        token = scores.argmax(-1, keepdim=True)
        counter.set_phase("decode")
        for _ in range(new_tokens):
            del scores
            with _precision(dtype, device):
                out = model(
                    input_ids=token, past_key_values=cache, use_cache=True, logits_to_keep=1
                )
            scores = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
            cache = out.past_key_values
            del out
            token = scores.argmax(-1, keepdim=True)
        del cache, scores, token


def generation_seq2seq(counter, model, prompt_ids, new_tokens: int, dtype, device) -> None:
    """An encoder-decoder's ``generate``: the encoder runs once over the prompt and its output
    stays referenced; the decoder starts from ``decoder_start_token_id`` with an
    ``EncoderDecoderCache`` (its own tokens, and the encoded prompt's K/V filled at the
    first step), last-position logits, greedy decoding."""
    from transformers import DynamicCache, EncoderDecoderCache

    model.eval()
    start = model.config.decoder_start_token_id
    start = model.config.pad_token_id if start is None else start
    with torch.no_grad():
        counter.reset_peak()
        counter.set_phase("prefill")
        token = torch.full((prompt_ids.shape[0], 1), start or 0, device=device)
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        with _precision(dtype, device):
            encoded = model.get_encoder()(input_ids=prompt_ids)
        scores = None
        for step in range(new_tokens + 1):
            if step == 1:
                counter.set_phase("decode")
            del scores
            with _precision(dtype, device):
                out = model(
                    encoder_outputs=encoded,
                    decoder_input_ids=token,
                    past_key_values=cache,
                    use_cache=True,
                )
            scores = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
            cache = out.past_key_values
            del out
            token = scores.argmax(-1, keepdim=True)
        del cache, scores, token, encoded


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


__all__ = [
    "LiveStorageCounter",
    "cuda_autocast",
    "sdpa_by_rule",
    "set_sdpa_sm",
    "patch_transformers",
    "train_step",
    "inference_pass",
    "generation",
    "generation_seq2seq",
    "rounded",
    "KERNELS_USED",
    "math",
]
