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
import gc
import math
import weakref
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

BLOCK = 512  # CUDA caching allocator: every block is a multiple of 512 bytes


def rounded(n: int, block: int = BLOCK) -> int:
    return ((n + block - 1) // block) * block if n else 0


class LiveStorageCounter(TorchDispatchMode):
    """Live bytes of tensor storage on ``device_type``; the peak, overall and per phase."""

    def __init__(self, device_type: str, block: int = BLOCK):
        super().__init__()
        self.device_type = device_type
        self.block = block
        self.live: dict[int, int] = {}
        self.current = 0
        self.peak = 0
        self.phase = "setup"
        self.phase_peaks: dict[str, int] = {}

    # -- bookkeeping ---------------------------------------------------------------------------
    def _free(self, key: int) -> None:
        n = self.live.pop(key, 0)
        self.current -= n

    def track(self, t) -> None:
        if not isinstance(t, torch.Tensor) or t.device.type != self.device_type:
            return
        storage = t.untyped_storage()
        key = storage._cdata
        if key in self.live:
            return
        n = rounded(storage.nbytes(), self.block)
        self.live[key] = n
        self.current += n
        weakref.finalize(storage, self._free, key)
        if self.current > self.peak:
            self.peak = self.current
        if self.current > self.phase_peaks.get(self.phase, 0):
            self.phase_peaks[self.phase] = self.current

    def track_all(self, *objs) -> None:
        for obj in objs:
            for t in tree_leaves(obj):
                self.track(t)

    def set_phase(self, name: str) -> None:
        self.phase = name
        self.phase_peaks[name] = max(self.phase_peaks.get(name, 0), self.current)

    def reset_peak(self) -> None:
        gc.collect()
        self.peak = self.current
        self.phase_peaks = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            self.track(t)
        return out


# -- emulation of what a fake device cannot ask the hardware ------------------------------------
@contextlib.contextmanager
def cuda_autocast(dtype: torch.dtype):
    """``torch.autocast("cuda", dtype)`` without its ``torch.cuda.is_available()`` check."""
    prev_enabled = torch.is_autocast_enabled("cuda")
    prev_dtype = torch.get_autocast_dtype("cuda")
    prev_cache = torch.is_autocast_cache_enabled()
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", dtype)
    torch.set_autocast_cache_enabled(True)
    torch.autocast_increment_nesting()
    try:
        yield
    finally:
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        torch.set_autocast_enabled("cuda", prev_enabled)
        torch.set_autocast_dtype("cuda", prev_dtype)
        torch.set_autocast_cache_enabled(prev_cache)


_ORIGINAL_SDPA = F.scaled_dot_product_attention
KERNELS_USED: dict[str, int] = {}

# The compute capability whose SDPA kernel rules :func:`sdpa_by_rule` follows: 80 (A100; also
# H100) or 75 (Tesla T4). PyTorch builds FlashAttention for sm80+ only; the memory-efficient
# (CUTLASS) kernel ships sm50 / sm70 / sm75 / sm80 variants — the wheel's
# include/ATen/native/transformers/cuda/mem_eff_attention/kernels/cutlassF.h declares
# ``fmha_cutlassF_f16_aligned_64x64_rf_sm75`` and cutlassB.h the fp16 dropout backward
# ``fmha_cutlassB_f16_aligned_64x64_k64_dropout_sm70`` that an sm75 card runs — so on a T4
# fp16 SDPA, with or without dropout or a mask, takes the memory-efficient kernel.
SDPA_SM = {"value": 80}


def set_sdpa_sm(sm: int, backend: str | None = None) -> None:
    """Follow compute capability ``sm``'s kernel rules; ``backend="math"`` forces the math path
    (as ``torch.nn.attention.sdpa_kernel(SDPBackend.MATH)`` or disabled fused kernels do)."""
    SDPA_SM["value"] = int(sm)
    SDPA_SM["backend"] = backend


def _autocast_inputs(*ts):
    if torch.is_autocast_enabled("cuda"):
        dtype = torch.get_autocast_dtype("cuda")
        return tuple(t.to(dtype) if t is not None and t.is_floating_point() else t for t in ts)
    return ts


def sdpa_by_rule(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """SDPA with the kernel an sm80 / sm90 GPU picks, or an sm75 one (no flash): module docstring."""
    if query.device.type != "cuda":
        return _ORIGINAL_SDPA(
            query,
            key,
            value,
            attn_mask=attn_mask,
            dropout_p=dropout_p,
            is_causal=is_causal,
            scale=scale,
            enable_gqa=enable_gqa,
        )
    # SDPA is on autocast's lower-precision list: every floating input is cast, the mask too
    query, key, value, attn_mask = _autocast_inputs(query, key, value, attn_mask)
    head_dim = query.size(-1)
    if SDPA_SM.get("backend") == "math":
        # the math path: with allow_fp16_bf16_reduction_math_sdp() off (the default) it computes
        # in fp32 — q, k, v upcast, b·h·s² fp32 scores, softmax, dropout mask and dropped copy
        KERNELS_USED["math"] = KERNELS_USED.get("math", 0) + 1
        with torch.autocast("cuda", enabled=False):
            return torch.ops.aten._scaled_dot_product_attention_math(
                query,
                key,
                value,
                attn_mask,
                dropout_p,
                is_causal,
                None,
                scale=scale,
                enable_gqa=enable_gqa,
            )[0]
    if (
        SDPA_SM["value"] >= 80
        and query.dtype in (torch.float16, torch.bfloat16)
        and attn_mask is None
        and head_dim <= 256
    ):
        KERNELS_USED["flash"] = KERNELS_USED.get("flash", 0) + 1
        with torch.autocast("cuda", enabled=False):
            out = torch.ops.aten._scaled_dot_product_flash_attention(
                query, key, value, dropout_p, is_causal, False, scale=scale
            )[0]
        return out
    KERNELS_USED["efficient"] = KERNELS_USED.get("efficient", 0) + 1
    if key.size(-3) != query.size(-3):
        rep = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_mask = torch.where(attn_mask, 0.0, float("-inf")).to(query.dtype)
        cols = attn_mask.size(-1)
        pad = (-cols) % 16
        if pad:
            attn_mask = F.pad(attn_mask, (0, pad))[..., :cols]
        attn_mask = attn_mask.expand(query.size(0), query.size(1), query.size(2), cols)
    needs_lse = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
    with torch.autocast("cuda", enabled=False):
        return torch.ops.aten._scaled_dot_product_efficient_attention(
            query, key, value, attn_mask, needs_lse, dropout_p, is_causal, scale=scale
        )[0]


def patch_transformers() -> None:
    """Answer transformers' tracing checks as a real, unpadded, unpacked run would."""
    import transformers.initialization as init
    import transformers.masking_utils as mu
    import transformers.utils.import_utils as iu

    iu.is_fake_tensor = lambda tensor: False
    mu.find_packed_sequence_indices = lambda position_ids: None
    mu.fast_all = lambda tensor: True  # no padding in these batches
    # torch's trunc_normal_ asks for tensor values; an in-place normal_ allocates the same
    init.TORCH_INIT_FUNCTIONS["trunc_normal_"] = (
        lambda tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None: tensor.normal_(
            mean, std, generator=generator
        )
    )
    F.scaled_dot_product_attention = sdpa_by_rule
    torch.nn.functional.scaled_dot_product_attention = sdpa_by_rule


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
    "rounded",
    "KERNELS_USED",
    "math",
]
