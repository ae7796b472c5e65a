"""The run-configuration fields one script read fills, and the vocabulary they share.

:class:`ReaderState` holds the field table (a field seen twice keeps the more confident
value; on a tie the first: scripts configure before they run), the confidence ceiling of
the path being read (:mod:`.runconfig_paths`) and the facts several readers use (signals,
loads, freezes). The call readers are collaborators handed it: API families
(:mod:`.runconfig_families`), conventional names (:mod:`.runconfig_conventions`), the
launch (:mod:`.runconfig_launch`) and the job's structure (:mod:`.runconfig_structure`),
combined by :class:`~.runconfig_calls.CallReader`.
"""

from __future__ import annotations

import ast
import os
import re
from typing import TYPE_CHECKING, Any

from torchward.estimator.runconfig import Field

from ..syntax.names import ImportTable

if TYPE_CHECKING:
    from .runconfig_declarations import Values

__all__ = [
    "DATASET_SIDES",
    "DTYPES",
    "HF_ARGUMENTS",
    "HF_OPTIM",
    "LIGHTNING_PRECISION",
    "MODEL_NAME",
    "OPTIMIZERS",
    "RANK",
    "ReaderState",
    "min_confidence",
    "model_name",
    "optimizer_of",
    "positive_int",
    "precision_of",
]

RANK = {"high": 2, "medium": 1, "low": 0}


def min_confidence(a: str, b: str) -> str:
    """The lower of two confidences."""
    return a if RANK[a] <= RANK[b] else b


DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
}

OPTIMIZERS = {
    "AdamW": "adamw",
    "Adam": "adam",
    "SGD": "sgd",
    "Adadelta": "adadelta",
    "Adagrad": "adagrad",
    "RMSprop": "rmsprop",
    "Adafactor": "adafactor",
    "Lion": "lion",
    "AdamW8bit": "adamw-8bit",
    "Adam8bit": "adamw-8bit",
    "PagedAdamW8bit": "paged-adamw-8bit",
    "PagedAdam8bit": "paged-adamw-8bit",
    "PagedAdamW": "paged-adamw",
    "PagedAdam": "paged-adamw",
    "PagedAdamW32bit": "paged-adamw",
    "PagedAdam32bit": "paged-adamw",
    # bitsandbytes' 32-bit Adam: two fp32 moments, stepped by its own fused kernel
    "AdamW32bit": "adamw-fused",
    "Adam32bit": "adamw-fused",
}

HF_OPTIM = {
    "adamw_torch": "adamw",
    "adamw_torch_fused": "adamw-fused",
    "adamw_hf": "adamw",
    "adafactor": "adafactor",
    "adamw_bnb_8bit": "adamw-8bit",
    "adamw_8bit": "adamw-8bit",
    "paged_adamw_8bit": "paged-adamw-8bit",
    "paged_adamw_32bit": "paged-adamw",
    "sgd": "sgd",
    "adagrad": "adagrad",
    "rmsprop": "rmsprop",
    "lion_32bit": "lion",
}

LIGHTNING_PRECISION = {
    "bf16-mixed": "amp-bf16",
    "16-mixed": "amp-fp16",
    "16": "amp-fp16",
    "bf16-true": "bf16",
    "16-true": "fp16",
    "32": "fp32",
    "32-true": "fp32",
    "bf16": "amp-bf16",
}

#: torchvision datasets whose images all have one side (height = width), as stored: the
#: input size unless a transform resizes or crops them (ImageFolder / ImageNet vary: only
#: their transforms say)
DATASET_SIDES = {
    "MNIST": 28,
    "FashionMNIST": 28,
    "KMNIST": 28,
    "EMNIST": 28,
    "QMNIST": 28,
    "CIFAR10": 32,
    "CIFAR100": 32,
    "SVHN": 32,
    "STL10": 96,
}

MODEL_NAME = re.compile(r"(?i)model|net|unet|vae|encoder|transformer")

#: TRL's trainer configs (TRL >= 0.20): ``bf16`` and gradient checkpointing on by default
TRL_CONFIGS = (
    "SFTConfig",
    "DPOConfig",
    "GRPOConfig",
    "KTOConfig",
    "RewardConfig",
    "RLOOConfig",
)
HF_ARGUMENTS = ("TrainingArguments", "Seq2SeqTrainingArguments", *TRL_CONFIGS)
#: the trainers that run a training loop of their own (Transformers', TRL's)
HF_TRAINERS = (
    "Trainer",
    "SFTTrainer",
    "Seq2SeqTrainer",
    "DPOTrainer",
    "GRPOTrainer",
    "KTOTrainer",
    "RewardTrainer",
    "RLOOTrainer",
)


class ReaderState:
    """The field table one read fills, and the facts the call readers share."""

    def __init__(self, imports: ImportTable, values: Values, path: str) -> None:
        self.imports = imports
        self.values = values
        self.path = path
        self.fields: dict[str, Field] = {}
        self.signals: dict[str, int] = {}  # what the script does → first line
        self.notes: list[str] = []
        self.cap = "high"  # the path state's ceiling on the confidence of what is read now
        self.path_cap = "high"  # the same, before an evaluation-named target lowers it
        self.target = ""  # the name the call's result is assigned to (``labels = tok(...)``)
        self.deferred: list[tuple[str, Any, str]] = []  # library defaults, applied last
        self.distributed = False  # a distributed set-up on the default path (size unknown)
        self.launcher = False  # Accelerate / HF Trainer / DeepSpeed / Lightning: launch decides
        self.accumulates = False  # backward() in a loop whose step comes after it
        self.frozen: dict[int, str] = {}  # line → module frozen with requires_grad_(False)
        self.loaded: list[tuple[int, str]] = []  # (line, class) of every from_pretrained
        self.loads: list[tuple[str, str | None, str]] = []  # (target, name given, class)
        self.load_lines: dict[str, int] = {}  # name given → line of its first load
        self.freezes: list[tuple[int, str, bool]] = []  # (line, module, requires_grad)
        self.optimized: set[str] = set()  # names in an optimizer's parameters argument
        self.model_var = ""  # the target the model field was read from
        self.skipped: list[tuple[ast.AST, str]] = []  # reads off the default path
        # (line, expression) of each model load whose name the script leaves to its launch
        self.unread_models: list[tuple[int, str]] = []

    def set(
        self, name: str, value: Any, line: int, confidence: str = "high", source: str | None = None
    ) -> None:
        if value is None:
            return
        if RANK[self.cap] < RANK[confidence]:
            confidence = self.cap
        field = Field(value, source or f"{self.path}:{line}", confidence)
        old = self.fields.get(name)
        if old is None or RANK[confidence] > RANK[old.confidence]:
            self.fields[name] = field
            if name == "model":
                self.model_var = self.target

    def keyword(self, call: ast.Call, *names: str):
        for kw in call.keywords:
            if kw.arg in names:
                return self.values.get(kw.value)
        return None

    def take(self, call: ast.Call, field: str, *names: str, convert=lambda v: v) -> None:
        found = self.keyword(call, *names)
        if found is not None:
            value = convert(found[0])
            if value is not None:
                self.set(field, value, call.lineno, found[1])


# what a ``--weights`` / ``--init_from`` flag says instead of a model: how to initialise it
_NOT_MODEL_NAMES = frozenset(
    {
        "",
        "scratch",
        "resume",
        "none",
        "pretrained",
        "random",
        "imagenet",
        "default",
        "true",
        "false",
    }
)


def optimizer_of(call: ast.Call, tail: str, value_of) -> tuple[str, str]:
    """(optimizer, confidence) of the constructor ``call`` of class ``tail`` (a key of
    :data:`OPTIMIZERS`): the variant whose state the arguments decide — SGD's and RMSprop's
    ``momentum`` (keyword or positional), RMSprop's ``centered``, Adam's ``fused``.
    ``value_of(node)``: the reader's ``(value, confidence)`` of an expression, or None. An
    argument present but not followed lowers the confidence: its state is not known."""
    name, confidence = OPTIMIZERS[tail], "high"
    keywords = {k.arg: k.value for k in call.keywords if k.arg}

    def argument(key: str, position: int | None = None):
        node = keywords.get(key)
        if node is None and position is not None and len(call.args) > position:
            node = call.args[position]
        if node is None:
            return None, True  # absent: the class's default, known
        found = value_of(node)
        return (found[0], True) if found is not None else (None, False)

    if name in ("adamw", "adam") and "fused" in keywords:
        fused, known = argument("fused")
        if fused or not known:  # ``fused=use_fused`` (true on CUDA in scripts that compute it)
            name, confidence = "adamw-fused", "medium"
    elif name == "sgd":
        momentum, known = argument("momentum", 2)
        if momentum or not known:
            name = "sgd-momentum"
        confidence = "high" if known else "low"
    elif name == "rmsprop":
        momentum, known_m = argument("momentum", 5)
        centered, known_c = argument("centered", 6)
        name = "rmsprop" + ("-momentum" if momentum or not known_m else "")
        name += "-centered" if centered else ""
        confidence = "high" if known_m and known_c else "low"
    return name, confidence


def model_name(value: Any) -> str | None:
    if not isinstance(value, str) or value.strip().lower() in _NOT_MODEL_NAMES:
        return None
    if value.endswith((".pt", ".pth", ".bin", ".ckpt", ".safetensors")):
        return os.path.splitext(os.path.basename(value))[0]
    return value


def precision_of(value: Any) -> str | None:
    text = str(value).lower().replace("torch.", "")
    return {
        "bf16": "amp-bf16",
        "amp_bf16": "amp-bf16",
        "bf16-mixed": "amp-bf16",
        "fp16": "amp-fp16",
        "amp": "amp-fp16",
        "16-mixed": "amp-fp16",
        "fp16_autocast": "amp-fp16",
        "bf16_autocast": "amp-bf16",
        "no": "fp32",
        "fp32": "fp32",
        "float32": "fp32",
        "32": "fp32",
        "bfloat16": "amp-bf16",
        "float16": "amp-fp16",
    }.get(text)


def positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
