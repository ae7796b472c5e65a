"""Fields no call settled, read from the names a script declares (medium at best).

A flag, a dataclass field, an entry point's parameter or a module constant under a
conventional name (``--batch_size``, ``context_length``, nanoGPT's ``batch_size = 12``,
a value an executed config file set: cited at its own line); a value the script computes
under a conventional name (``grad_accum_steps = ...``); the optimizer, checkpointing,
LoRA and quantisation chosen by a flag's default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchward.estimator.runconfig import Field

from .runconfig_fields import (
    DATASET_SIDES,
    HF_OPTIM,
    ReaderState,
    model_name,
    positive_int,
    precision_of,
)

if TYPE_CHECKING:
    from .runconfig_declarations import Values

__all__ = ["ConventionReader"]


class ConventionReader:
    """Fields no call settled, from the names a script declares."""

    def __init__(self, state: ReaderState) -> None:
        self.state = state  # the field table this read fills, shared with the other readers

    def read_conventions(self, values: Values) -> None:
        """Fields no call settled, from the script's declared interface: a flag, a dataclass
        field or an entry point's parameter under a conventional name (``--batch_size``,
        ``context_length``, ``--mixed_precision``), or a module constant of that name
        (nanoGPT's ``batch_size = 12``). Medium at best: a launch can override them."""
        for field, names, convert in _CONVENTIONS:
            if field in self.state.fields:
                continue
            for name in names:
                source = None  # the line read; an executed config file's own line
                if name in values.defaults:
                    value, line = values.defaults[name]
                elif (
                    name in values.constants
                    and name in values.assignments
                    and all(
                        values.paths.enclosing_function(stmt) is None
                        for _, stmt in values.assignments[name]
                    )
                    # the last binding in the file is the constant (not ``for NAME in ...``)
                    and values.assignments[name][-1][1].lineno == values.constants[name][1]
                ):
                    value, line = values.constants[name]
                    source = values.cited.get(name)
                else:
                    continue
                converted = convert(value)
                if converted is not None:
                    self.state.set(field, converted, line, "medium", source)
                    break
        self._computed(values, "accumulation", _ACCUMULATION_NAMES)
        self._flags(values)
        for field, value, source in self.state.deferred:
            if field not in self.state.fields:
                self.state.fields[field] = Field(value, source, "medium")
        self._dataset_named(values)

    def _dataset_named(self, values: Values) -> None:
        """The image side of a torchvision dataset a declared setting names
        (``--dataset cifar10``, ``dataset_name = "MNIST"``), when nothing the script builds
        said a size: low, since the name says which images, not that nothing resizes them."""
        if "image_size" in self.state.fields:
            return
        sides = {name.lower(): side for name, side in DATASET_SIDES.items()}
        for name in ("dataset", "dataset_name", "data_set"):
            value, line = values.defaults.get(name, (None, 0))
            if isinstance(value, str) and value.lower() in sides:
                self.state.set("image_size", sides[value.lower()], line, "low")
                return

    def _computed(self, values, field: str, names: tuple[str, ...]) -> None:
        """A value the script computes under a conventional name on the default path
        (``grad_accum_steps = total_batch_size // (B * T * world_size)``)."""
        if field in self.state.fields:
            return
        for name in names:
            for value, stmt in values.assignments.get(name, ()):
                if values.paths.state(stmt) != "default":
                    continue
                found = values.get(value)
                if found is not None and positive_int(found[0]):
                    self.state.set(field, found[0], stmt.lineno, "medium")
                    return

    def _flags(self, values) -> None:
        """Optimizer, checkpointing, LoRA and quantisation chosen by a flag's default."""
        defaults = values.defaults
        if "optimizer" not in self.state.fields:
            for name in ("optimizer", "optim", "opt"):
                if name in defaults and isinstance(defaults[name][0], str):
                    chosen = _flag_optimizer(defaults[name][0], defaults)
                    if chosen:
                        self.state.set("optimizer", chosen, defaults[name][1], "medium")
                    break
        if "checkpointing" not in self.state.fields:
            for name in _CHECKPOINT_FLAGS:
                if name in defaults and isinstance(defaults[name][0], bool):
                    self.state.set("checkpointing", defaults[name][0], defaults[name][1], "medium")
                    break
        if "dtype" in self.state.fields and self.state.fields["dtype"].value == "amp-bf16":
            for name in ("precision", "dtype", "mixed_precision"):
                choices = values.choices.get(name, ())
                if (
                    name in defaults
                    and defaults[name][0] == "bf16"
                    and any("autocast" in str(c) or "mixed" in str(c) for c in choices)
                ):  # "bf16" next to "bf16_autocast": the pure-bf16 choice
                    old = self.state.fields["dtype"]
                    self.state.fields["dtype"] = Field("bf16", old.source, old.confidence)
        lora, line, decided = None, 0, False
        for name in _METHOD_FLAGS:
            value = defaults.get(name, (None, 0))
            if isinstance(value[0], str) and "lora" in value[0].lower():
                lora, line, decided = value[0].lower(), value[1], True
                break
            if isinstance(value[0], bool) and name.startswith(("use_lora", "use_peft", "lora")):
                lora, line, decided = ("lora" if value[0] else None), value[1], True
                break
        if not decided and "lora_rank" not in self.state.fields:
            # no flag turns LoRA on or off, yet the interface declares a LoRA rank (a QLoRA
            # script's ``lora_r: int = 16``): the script fine-tunes with LoRA
            declared = next((defaults[n] for n in ("lora_r", "lora_rank") if n in defaults), None)
            if declared and positive_int(declared[0]):
                lora, line = "lora", declared[1]
        if lora and "lora_rank" not in self.state.fields:
            rank = next(
                (defaults[n] for n in ("lora_rank", "lora_r", "rank") if n in defaults), None
            )
            if rank and positive_int(rank[0]):
                self.state.set("lora_rank", rank[0], rank[1], "medium")
            else:
                self.state.set("lora_rank", 8, line, "low")  # peft's default rank
        if "quantize" not in self.state.fields:
            if lora and ("qlora" in lora or "4bit" in lora or "bnb" in lora):
                self.state.set("quantize", "4bit", line, "medium")
            for name, kind in (
                ("load_in_4bit", "4bit"),
                ("use_4bit_quantization", "4bit"),
                ("load_in_8bit", "8bit"),
                ("use_8bit_quantization", "8bit"),
            ):
                if defaults.get(name, (None,))[0] is True:
                    self.state.set("quantize", kind, defaults[name][1], "medium")
            for name in ("quantization_bits", "quant_bits", "load_bits"):
                bits = defaults.get(name, (None, 0))
                if lora and bits[0] in (4, 8) and not isinstance(bits[0], bool):
                    self.state.set("quantize", f"{bits[0]}bit", bits[1], "medium")  # QLoRA's base
                    break


# field, conventional names (most specific first), conversion
_CONVENTIONS = (
    (
        "batch_size",
        (
            "per_device_train_batch_size",
            "train_batch_size",
            "device_batch_size",
            "micro_batch_size",
            "batch_size",
            "batch",
            "bs",
        ),
        lambda v: positive_int(v),
    ),
    (
        "eval_batch_size",
        (
            "per_device_eval_batch_size",
            "eval_batch_size",
            "test_batch_size",
            "val_batch_size",
            "valid_batch_size",
        ),
        lambda v: positive_int(v),
    ),
    (
        "seq_len",
        (
            "max_seq_length",
            "max_seq_len",
            "seq_len",
            "sequence_length",
            "seq_length",
            "block_size",
            "context_length",
            "model_max_length",
            "max_length",
            "cutoff_len",
        ),
        lambda v: positive_int(v),
    ),
    (
        "image_size",
        ("image_size", "img_size", "imgsz", "resolution", "input_size"),
        lambda v: positive_int(v),
    ),
    (
        "accumulation",
        (
            "gradient_accumulation_steps",
            "grad_accum_steps",
            "accum_freq",
            "accumulate_grad_batches",
        ),
        lambda v: positive_int(v),
    ),
    ("dtype", ("mixed_precision", "precision", "dtype"), precision_of),
    (
        "model",
        (
            "model_name_or_path",
            "pretrained_model_name_or_path",
            "model_name",
            "base_model",
            "model_id",
            "model",
            "weights",
        ),
        model_name,
    ),
)


_ACCUMULATION_NAMES = (
    "grad_accum_steps",
    "gradient_accumulation_steps",
    "accumulation_steps",
    "accum_steps",
    "accumulate",
    "grad_accum",
)


_CHECKPOINT_FLAGS = (
    "gradient_checkpointing",
    "use_gradient_checkpointing",
    "grad_checkpointing",
    "activation_checkpointing",
    "use_checkpoint",
)


_METHOD_FLAGS = (
    "train_type",
    "finetune_type",
    "peft_type",
    "peft_method",
    "method",
    "use_lora",
    "use_peft_lora",
    "use_peft",
    "lora",
)


def _flag_optimizer(value: str, defaults: dict) -> str | None:
    text = value.lower()
    if text == "sgd":
        momentum = defaults.get("momentum", (None,))[0]
        if isinstance(momentum, (int, float)) and not isinstance(momentum, bool):
            return "sgd-momentum" if momentum > 0 else "sgd"
        return None  # momentum unknown: the state it keeps is not knowable
    if text in HF_OPTIM:
        return HF_OPTIM[text]
    if text == "rmsprop":
        momentum = defaults.get("momentum", (None,))[0]
        if isinstance(momentum, (int, float)) and not isinstance(momentum, bool):
            return "rmsprop-momentum" if momentum > 0 else "rmsprop"
        return None
    return {
        "adamw": "adamw",
        "adam": "adam",
        "adafactor": "adafactor",
        "lion": "lion",
        "adadelta": "adadelta",
        "adagrad": "adagrad",
    }.get(text)
