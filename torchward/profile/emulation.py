"""What a fake device cannot ask the hardware, emulated by rule (``shared/MEMORY-MODEL.md``).

- autocast: ``torch.autocast("cuda")`` switches itself off when ``torch.cuda.is_available()``
  is false; :func:`cuda_autocast` turns it on through the same C++ switches;
- ``F.scaled_dot_product_attention`` picks its kernel the way an sm80 / sm90 GPU (A100,
  H100) does: FlashAttention for fp16 / bf16 inputs without an explicit mask and head_dim
  <= 256, the memory-efficient kernel otherwise — always on an sm75 GPU (Tesla T4: no
  flash kernel, :data:`SDPA_SM`); :func:`sdpa_by_rule` calls the fused aten op directly;
- transformers treats fake tensors as traced and then builds attention masks and packed
  sequence indices a real run would not build: the unpadded inputs of a profile are
  answered as "not packed, not traced, no padding" (:func:`patch_transformers`);
  ``trunc_normal_`` initialisation (ViT), which reads values, becomes an in-place
  ``normal_``.

- a CPU wheel registers no CUDA kernel for ``silu_backward`` and ``mish_backward``, so on
  the fake device autograd runs their composite bodies (a sigmoid, an add and four
  products: four full-size temporaries a GPU's fused kernel never allocates; +174 MiB on
  a Qwen2.5-0.5B job whose peak is an MLP's backward): :func:`register_fused_backwards`
  gives them a CUDA kernel, so the dispatch reaches the fake mode as one op, as on a GPU.

Optimizers get ``foreach=True`` explicitly in the step runner (the CUDA default; the device
check in ``torch.optim`` would pick the per-tensor loop on a fake device).
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.nn.functional as F

__all__ = [
    "KERNELS_USED",
    "SDPA_SM",
    "cuda_autocast",
    "install_sdpa_rule",
    "patch_transformers",
    "register_fused_backwards",
    "sdpa_by_rule",
    "set_sdpa_sm",
]


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
SDPA_SM: dict[str, Any] = {"value": 80, "backend": None}


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


_FUSED_ON_A_GPU = ("silu_backward", "mish_backward")
_REGISTERED: list[Any] = []  # the library registering them, kept alive (and only once)


def register_fused_backwards() -> None:
    """Give the activation backwards a GPU runs as one fused kernel a CUDA kernel where the
    wheel has none (a CPU wheel: never on a CUDA build, whose kernels stay). Never called
    on fake tensors — they run the meta kernel — it only stops autograd from decomposing
    them (found with ``torch._C._dispatch_has_kernel_for_dispatch_key`` over every aten op:
    these two are the ones a CPU wheel leaves composite on CUDA)."""
    if _REGISTERED:
        return
    library = torch.library.Library("aten", "IMPL")
    for name in _FUSED_ON_A_GPU:
        if not torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", "CUDA"):
            library.impl(name, lambda grad, x: torch.empty_like(grad), "CUDA")
    _REGISTERED.append(library)


def patch_transformers() -> None:
    """Answer transformers' tracing checks as a real, unpadded, unpacked run would (and
    give the fused activation backwards their kernel: :func:`register_fused_backwards`)."""
    register_fused_backwards()
    import transformers.initialization as init
    import transformers.masking_utils as masking
    import transformers.utils.import_utils as imports

    iu: Any = imports  # patched attributes: their declared types do not matter here
    mu: Any = masking
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


def install_sdpa_rule() -> None:
    """Route ``F.scaled_dot_product_attention`` through :func:`sdpa_by_rule` (cuda only),
    and give the fused activation backwards their kernel."""
    register_fused_backwards()
    F.scaled_dot_product_attention = sdpa_by_rule
    torch.nn.functional.scaled_dot_product_attention = sdpa_by_rule
