"""The fields of library argument dataclasses as a plain launch fills them.

``HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()``
and ``TrainingArguments(output_dir=...)`` give the script an object whose fields the
library declares. A branch on one of them (``if training_args.bf16:``, ``if
training_args.gradient_checkpointing:``) runs only when the field's default makes it run;
without the defaults the engine left such a gate undecided and the reader took what it
guards as the job (issue 26: bf16 and gradient checkpointing read as on). Only the fields
that decide the job's memory are listed; any other field stays undecided.

One table, read by the engine's launch (:mod:`.launch_calls`: the namespace such an object
folds to) and by the reader's library defaults (:mod:`.runconfig_families`: what the job
uses when the script sets nothing). Transformers' defaults; TRL's configs (TRL >= 0.20)
train in bf16 with gradient checkpointing by default, on the sm80+ GPU a plain launch is
estimated for, and ``SFTConfig`` / ``DPOConfig`` / ``KTOConfig`` / ``RewardConfig`` cut
sequences at ``max_length=1024``.
"""

from __future__ import annotations

from collections.abc import Hashable

__all__ = ["LIBRARY_DATACLASSES", "library_fields"]

_TRANSFORMERS: dict[str, Hashable] = {
    "per_device_train_batch_size": 8,
    "per_device_eval_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "bf16": False,
    "fp16": False,
    "gradient_checkpointing": False,
    "optim": "adamw_torch",
    "deepspeed": None,
    "fsdp": "",
    "torch_compile": False,
}
_TRL = {**_TRANSFORMERS, "bf16": True, "gradient_checkpointing": True}
_TRL_WITH_LENGTH = {**_TRL, "max_length": 1024}

#: class name -> field -> its default on a plain launch
LIBRARY_DATACLASSES: dict[str, dict[str, Hashable]] = {
    "TrainingArguments": _TRANSFORMERS,
    "Seq2SeqTrainingArguments": _TRANSFORMERS,
    "SFTConfig": _TRL_WITH_LENGTH,
    "DPOConfig": _TRL_WITH_LENGTH,
    "KTOConfig": _TRL_WITH_LENGTH,
    "RewardConfig": _TRL_WITH_LENGTH,
    "GRPOConfig": _TRL,
    "RLOOConfig": _TRL,
}


def library_fields(name: str) -> dict[str, Hashable] | None:
    """The listed fields of the library dataclass ``name`` (dotted or not), or None."""
    return LIBRARY_DATACLASSES.get(name.rsplit(".", 1)[-1])
