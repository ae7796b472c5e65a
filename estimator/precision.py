"""Bytes per parameter and per activation element for each precision and optimizer.

Where the numbers come from (see also ``shared/MEMORY-MODEL.md``):

- ``torch.optim`` allocates state in the *parameter's* dtype: pure-bf16 parameters get
  bf16 Adam moments (2 × 2 bytes); AMP keeps fp32 parameters, so fp32 moments (2 × 4).
- AMP (autocast) computes matmuls in 16 bits: activations saved by matmuls are 2 bytes,
  but the residual stream stays fp32 (it is the sum of fp32 parameters' outputs), and
  autocast caches a 16-bit copy of every matmul weight for the whole forward; those
  copies are saved for backward, so they live until the layer's backward has run.
- bitsandbytes 4-bit NF4 with double quantisation stores 4 bits plus 0.127 bits of
  constants per weight (QLoRA paper, Dettmers et al. 2023, §2): 0.516 bytes; LLM.int8()
  stores 1 byte plus one fp32 scale per row (negligible): 1 byte.
- bitsandbytes 8-bit optimizers keep each moment in 1 byte (block-wise quantisation,
  block 2048, one fp32 absmax per block: +0.2%).
- Adafactor (no momentum, HF default) keeps row and column statistics of each matrix:
  (m + n) fp32 values for an m × n weight, i.e. 8 / hidden bytes per parameter of a square
  matrix; charged as that.
- The ``foreach`` Adam/AdamW implementation (the default on CUDA) allocates one
  parameter-sized temporary during ``step()`` (``_foreach_sqrt`` of the second moment);
  ``fused=True`` and the 8-bit / paged kernels do not.
- The other ``torch.optim`` classes, read from their ``_multi_tensor_*`` step (torch 2.x,
  float ``lr``): Adadelta keeps ``square_avg`` and ``acc_delta`` and allocates ``std`` and
  ``deltas`` during the step (2 states, 2 temporaries); Adagrad keeps ``sum`` and allocates
  ``std`` and the scaled gradient (1 state, 2 temporaries); RMSprop keeps ``square_avg``,
  plus ``momentum_buffer`` with ``momentum > 0`` and ``grad_avg`` with ``centered=True``,
  and allocates ``avg`` (1 temporary); SGD's momentum buffer is its only state.
"""

from __future__ import annotations

import attrs

__all__ = ["Numerics", "OptimizerCost", "numerics", "optimizer_cost"]


@attrs.frozen
class Numerics:
    weight: float  # bytes per parameter as stored
    grad: float
    activation: int  # bytes of an element a matmul saves
    residual: int  # bytes of the residual stream / norm inputs
    state_dtype: int  # dtype size torch.optim gives the optimizer state
    autocast_copies: int  # bytes per matmul weight of autocast's cached cast copy
    rms_normalized: int  # bytes of HF RMSNorm's saved normalised tensor (fp32 under AMP/fp32)


_NUMERICS = {
    "fp32": Numerics(4, 4, 4, 4, 4, 0, 4),
    "amp-bf16": Numerics(4, 4, 2, 4, 4, 2, 4),
    "amp-fp16": Numerics(4, 4, 2, 4, 4, 2, 4),
    "bf16": Numerics(2, 2, 2, 2, 2, 0, 2),
    "fp16": Numerics(2, 2, 2, 2, 2, 0, 2),
}

QUANTIZED_WEIGHT_BYTES = {"4bit": 0.516, "8bit": 1.0}


def numerics(dtype: str) -> Numerics:
    return _NUMERICS[dtype]


@attrs.frozen
class OptimizerCost:
    states: float  # optimizer-state bytes per trainable parameter
    temporary: float  # bytes per trainable parameter allocated during step()
    note: str


def optimizer_cost(name: str, state_dtype: int, hidden: int | None) -> OptimizerCost:
    """State and step temporaries per trainable parameter for optimizer ``name``."""
    if name in ("adamw", "adam"):
        return OptimizerCost(2 * state_dtype, state_dtype, "two moments; foreach temporary")
    if name == "adamw-fused":
        return OptimizerCost(2 * state_dtype, 0, "two moments; fused kernel, no temporary")
    if name in ("adamw-8bit", "paged-adamw-8bit"):
        return OptimizerCost(2.004, 0, "two 1-byte moments (bitsandbytes)")
    if name == "paged-adamw":
        return OptimizerCost(8, 0, "two fp32 moments in paged (unified) memory")
    if name == "sgd":
        return OptimizerCost(0, 0, "no state")
    if name == "sgd-momentum":
        return OptimizerCost(state_dtype, 0, "one momentum buffer")
    if name == "adadelta":
        return OptimizerCost(
            2 * state_dtype, 2 * state_dtype, "square_avg and acc_delta; two foreach temporaries"
        )
    if name == "adagrad":
        return OptimizerCost(
            state_dtype, 2 * state_dtype, "one sum of squares; two foreach temporaries"
        )
    if name.startswith("rmsprop"):
        states = 1 + ("momentum" in name) + ("centered" in name)
        what = " + ".join(
            ["square_avg"]
            + (["momentum_buffer"] if "momentum" in name else [])
            + (["grad_avg"] if "centered" in name else [])
        )
        return OptimizerCost(states * state_dtype, state_dtype, f"{what}; one foreach temporary")
    if name == "lion":
        return OptimizerCost(state_dtype, state_dtype, "one momentum buffer; foreach temporary")
    if name == "adafactor":
        return OptimizerCost(8 / (hidden or 1024), 0, "factored second moment; per-tensor loop")
    raise ValueError(f"unknown optimizer {name!r}")
