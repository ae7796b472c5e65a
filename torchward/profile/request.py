"""What one profile measures and what it found: plain, JSON-able records (stdlib only).

The profile runs in a process that imports torch and the user's code — the CLI's own, or
a subprocess of the user's interpreter started by the language server. Both sides speak
these records as JSON, so the worker side needs nothing but the standard library and
torch (no attrs, no torchward engine).

- :class:`ProfileJob`: the step to measure (mode, batch, sizes, precision, optimizer).
- :class:`ModelRecipe`: how to build the model — a factory ``module:function`` with
  arguments, a construction found in a script (the statements it needs, and the
  expression), or a catalog architecture built from its config with transformers.
- :class:`ProfileResult`: the measured peak, its phase, every phase's peak and the terms
  live at the peak.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = [
    "MEASURED_DTYPES",
    "MEASURED_MODES",
    "MEASURED_OPTIMIZERS",
    "ModelRecipe",
    "ProfileJob",
    "ProfileResult",
]

MEASURED_MODES = ("train", "inference", "generate")
MEASURED_DTYPES = ("fp32", "amp-bf16", "amp-fp16", "bf16", "fp16")
# the optimizers torch.optim implements, by the estimator's names (8-bit / paged / lion
# need bitsandbytes or other packages, which a fake device cannot run)
MEASURED_OPTIMIZERS = (
    "adamw",
    "adam",
    "adamw-fused",
    "sgd",
    "sgd-momentum",
    "adafactor",
    "adadelta",
    "adagrad",
    "rmsprop",
)


@dataclass(frozen=True)
class ProfileJob:
    """One step of a job, as the estimator's RunConfig names its fields."""

    mode: str = "train"
    batch_size: int = 1
    seq_len: int = 512
    image_size: int = 224
    dtype: str = "fp32"
    optimizer: str = "adamw"
    max_new_tokens: int = 8
    sm: int = 80  # the GPU generation whose SDPA kernel rules apply (80: A100/H100, 75: T4)

    def __post_init__(self) -> None:
        if self.mode not in MEASURED_MODES:
            raise ValueError(f"mode {self.mode!r}: one of {', '.join(MEASURED_MODES)}")
        if self.dtype not in MEASURED_DTYPES:
            raise ValueError(f"dtype {self.dtype!r}: one of {', '.join(MEASURED_DTYPES)}")
        if self.mode == "train" and self.optimizer not in MEASURED_OPTIMIZERS:
            raise ValueError(
                f"optimizer {self.optimizer!r} cannot be profiled (not in torch.optim); "
                f"one of {', '.join(MEASURED_OPTIMIZERS)}"
            )
        for name in ("batch_size", "seq_len", "image_size", "max_new_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProfileJob:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def key(self) -> str:
        """The job's identity in the profile cache (mode-relevant fields only)."""
        parts = [self.mode, f"b{self.batch_size}", self.dtype, f"sm{self.sm}"]
        if self.mode == "train":
            parts.append(self.optimizer)
        if self.mode == "generate":
            parts.append(f"n{self.max_new_tokens}")
        parts += [f"s{self.seq_len}", f"i{self.image_size}"]
        return "-".join(parts)


@dataclass(frozen=True)
class ModelRecipe:
    """How the worker builds the model (under fake tensors: no real memory, no weights).

    ``kind``:
    - ``factory``: ``target`` is ``module:function`` or ``path/to/file.py:function``,
      called with ``arguments``;
    - ``script``: ``target`` is the script path; ``prelude`` the statements to run
      first (imports, definitions, and the assignments the
      construction needs — never the training loop) as source text, ``expression`` the construction
      with every value the static reader resolved written in as a literal;
    - ``config``: a transformers architecture, ``model_type`` + ``config`` fields (from
      the catalog, the user's settings or the offline HF cache).
    """

    kind: str
    target: str = ""
    label: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    prelude: tuple[str, ...] = ()
    expression: str = ""
    model_type: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    inputs: str = ""  # optional ``module:function`` making one batch

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["prelude"] = list(self.prelude)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelRecipe:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["prelude"] = tuple(str(s) for s in values.get("prelude", ()))
        return cls(**values)


@dataclass(frozen=True)
class ProfileResult:
    """The measured step: peak bytes of live tensor storage on the (fake) device."""

    model: str
    params: int
    job: ProfileJob
    allocated_bytes: int
    peak_phase: str
    phases: tuple[tuple[str, int], ...]
    terms: dict[str, int]
    device: str  # "cuda (fake, shim)", "cuda (fake, native)", "cpu (fake)"
    weight_bytes: int = 0
    sdpa_kernels: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    torch_version: str = ""
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["job"] = self.job.to_dict()
        data["phases"] = [{"name": n, "allocated_bytes": b} for n, b in self.phases]
        data["notes"] = list(self.notes)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProfileResult:
        return cls(
            model=str(data["model"]),
            params=int(data["params"]),
            job=ProfileJob.from_dict(data["job"]),
            allocated_bytes=int(data["allocated_bytes"]),
            peak_phase=str(data["peak_phase"]),
            phases=tuple((str(p["name"]), int(p["allocated_bytes"])) for p in data["phases"]),
            terms={str(k): int(v) for k, v in data["terms"].items()},
            device=str(data["device"]),
            weight_bytes=int(data.get("weight_bytes", 0)),
            sdpa_kernels={str(k): int(v) for k, v in data.get("sdpa_kernels", {}).items()},
            seconds=float(data.get("seconds", 0.0)),
            torch_version=str(data.get("torch_version", "")),
            notes=tuple(str(n) for n in data.get("notes", ())),
        )
