"""What each API family's call says about the job (the methods :class:`CallReader` calls).

``TrainingArguments`` / ``SFTConfig`` and their library defaults, ``HfArgumentParser``,
``torch.autocast``, model casts, data loaders the script defines, ``generate`` /
``GenerationConfig``, ``Accelerator``, ``from_pretrained`` (model, weights dtype,
quantisation, attention), Lightning's ``Trainer``, optimizers and DeepSpeed configs.
"""

from __future__ import annotations

import ast
import os
from typing import Any

from torchward.estimator import dependencies

from ..facts.launch_library import library_fields
from ..syntax.names import dotted, qualified_name
from .runconfig_fields import (
    DTYPES,
    HF_ARGUMENTS,
    HF_OPTIM,
    LIGHTNING_PRECISION,
    MODEL_NAME,
    RANK,
    ReaderState,
    min_confidence,
    optimizer_of,
    positive_int,
)

__all__ = ["FamilyReaders"]

_BATCH_PARAMS = ("batch_size", "B", "bsz", "micro_batch_size", "device_batch_size")

_SEQ_PARAMS = (
    "T",
    "seq_len",
    "max_length",
    "block_size",
    "context_length",
    "sequence_length",
    "max_seq_len",
)


class FamilyReaders:
    """One method per API family: what its arguments say about the job."""

    def __init__(self, state: ReaderState) -> None:
        self.state = state  # the field table this read fills, shared with the other readers

    def argument_parser(self, call: ast.Call) -> None:
        """``HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))`` (or TRL's
        ``TrlParser``, given the tuple or a name bound to it): the flags are the dataclasses'
        fields (read as defaults by the value reader) over the library's own defaults."""
        given = call.args[0]
        if isinstance(given, ast.Name):  # ``TrlParser(dataclass_types)``: the tuple it names
            given = self.state.values.assigned(given) or given
        classes = given.elts if isinstance(given, (ast.Tuple, ast.List)) else [given]
        for node in classes:
            name = qualified_name(node, self.state.imports) or dotted(node) or ""
            local = self.state.values.classes.get(name)
            if local is not None:
                bases = [
                    qualified_name(b, self.state.imports) or dotted(b) or "" for b in local.bases
                ]
                name = next((b for b in bases if b.endswith(HF_ARGUMENTS)), name)
            tail = name.rsplit(".", 1)[-1]
            if tail in HF_ARGUMENTS:
                self.state.signals.setdefault("train", call.lineno)
                self.library_defaults(tail, call.lineno)

    def library_defaults(self, kind: str, line: int) -> None:
        """What ``TrainingArguments`` / TRL's ``SFTConfig`` (TRL >= 0.20) hold when the script
        leaves a field alone (:mod:`.launch_library`, the table the engine's launch reads
        too); applied after everything the script itself says."""
        fields = library_fields(kind) or {}
        source = f"{self.state.path}:{line} ({kind} default)"
        self.state.deferred.extend(
            (field, value, source)
            for field, value in (
                ("batch_size", fields.get("per_device_train_batch_size")),
                ("accumulation", fields.get("gradient_accumulation_steps")),
                ("optimizer", HF_OPTIM.get(str(fields.get("optim")))),
            )
            if value is not None
        )
        if fields.get("bf16") is True:
            self.state.deferred.append(
                ("dtype", "amp-bf16", source + ": bf16 when the GPU supports it")
            )
        if fields.get("gradient_checkpointing") is True:
            self.state.deferred.append(("checkpointing", True, source))
        if "max_length" in fields:
            self.state.deferred.append(("seq_len", fields["max_length"], source))

    def autocast(self, call: ast.Call) -> None:
        """``torch.autocast("cuda", dtype=ptdtype)`` / ``autocast("cuda", torch.bfloat16)``:
        the dtype the default launch selects (float32 = no mixed precision); ``enabled=False``
        or an unknown dtype says nothing."""
        enabled = self.state.keyword(call, "enabled")
        if enabled is not None and not enabled[0]:
            return
        if call.args and not (
            isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
        ):
            flag = self.state.values.get(call.args[0])  # torch.cuda.amp.autocast(enabled)
            if flag is not None and flag[0] is False:
                return
        # ``dtype=``, or the second positional argument: ``autocast("cuda", torch.bfloat16)``
        # (torch.autocast's ``device_type, dtype``; torch.cuda.amp's ``enabled, dtype``)
        written = next(
            (k.value for k in call.keywords if k.arg == "dtype"),
            call.args[1] if len(call.args) > 1 else None,
        )
        found = self.state.values.get(written) if written is not None else None
        if written is not None and found is None:
            return
        text = str(found[0]) if found else "float16"  # CUDA autocast's default
        dtype = (
            "amp-bf16"
            if "bfloat16" in text
            else "fp32"
            if text.endswith(("float32", "float"))
            else "amp-fp16"
        )
        self.state.set("dtype", dtype, call.lineno, found[1] if found else "high")

    def cast(self, call: ast.Call) -> None:
        """``model.to(torch.bfloat16)`` / ``.to(device, dtype=torch.float16)``: 16-bit weights."""
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        while isinstance(receiver, (ast.Call, ast.Attribute)):
            receiver = receiver.func if isinstance(receiver, ast.Call) else receiver.value
        if not (isinstance(receiver, ast.Name) and MODEL_NAME.search(receiver.id)):
            return  # a tensor cast, not the model's weights
        found = self.state.keyword(call, "dtype")
        candidates = [found] if found else [self.state.values.get(a) for a in call.args]
        for value in candidates:
            text = str(value[0]) if value else ""
            if text in ("torch.bfloat16", "torch.float16", "torch.half"):
                weights = "bf16" if "bfloat" in text else "fp16"
                if self.state.cap != "low":
                    self.state.signals.setdefault("weights-" + weights, call.lineno)

    def loader(self, call: ast.Call, tail: str) -> None:
        """A data loader the script (or its library) defines: ``DataLoaderLite(B=B, T=T)``,
        ``create_dataloader_v1(txt, batch_size=..., max_length=...)``; positional arguments
        are matched to the parameters of a loader defined in the file."""
        bound: dict[str, ast.expr] = {k.arg: k.value for k in call.keywords if k.arg}
        params = self.state.values.signature(tail)
        for param, arg in zip(params, call.args):
            if not isinstance(arg, ast.Starred):
                bound.setdefault(param, arg)
        for field, names in (("batch_size", _BATCH_PARAMS), ("seq_len", _SEQ_PARAMS)):
            for key in names:
                if key in bound:
                    found = self.state.values.get(bound[key])
                    if found is not None and positive_int(found[0]):
                        self.state.set(field, found[0], call.lineno, "medium")
                        break

    def generation(self, call: ast.Call) -> None:
        """``generate(...)`` / ``GenerationConfig(...)``: lengths, beams, ``use_cache``."""
        self.state.take(call, "max_new_tokens", "max_new_tokens", convert=positive_int)
        self.state.take(call, "num_beams", "num_beams", convert=positive_int)
        self.state.take(call, "num_return_sequences", "num_return_sequences", convert=positive_int)
        self.state.take(call, "max_context", "max_length", convert=positive_int)
        self.state.take(
            call, "use_cache", "use_cache", convert=lambda v: v if isinstance(v, bool) else None
        )

    def cache_switch(self, call: ast.Call) -> None:
        """``use_cache=`` where the model is loaded or run: whether its forward keeps a KV
        cache (transformers' default: on)."""
        self.state.take(
            call, "use_cache", "use_cache", convert=lambda v: v if isinstance(v, bool) else None
        )

    def hand_padding(self, values) -> None:
        """``[pad_id] * (max_length - len(ids)) + ids``: examples padded by hand to a fixed
        length on the training path (a preprocessing function, not a tokenizer call) — the
        sequence length, when no call said it and the length folds."""
        if "seq_len" in self.state.fields:
            return
        for node in values.paths.of_type(ast.BinOp):
            if not isinstance(node.op, ast.Mult):
                continue
            listed, count = node.left, node.right
            if isinstance(count, ast.List):
                listed, count = count, listed
            if not (
                isinstance(listed, ast.List)
                and len(listed.elts) == 1
                and isinstance(count, ast.BinOp)
                and isinstance(count.op, ast.Sub)
                and isinstance(count.right, ast.Call)
                and isinstance(count.right.func, ast.Name)
                and count.right.func.id == "len"
            ):
                continue
            state = values.paths.state(node)
            if not state.runs or state == "validation":
                continue
            found = values.get(count.left)
            if found is not None and positive_int(found[0]):
                self.state.set("seq_len", found[0], node.lineno, "medium")
                return

    def cache_config(self, values) -> None:
        """``model.config.use_cache = False`` on the default path (fine-tuning scripts turn
        the cache off for gradient checkpointing): the model's forward keeps none (a
        generation job's cache is its generation config's)."""
        if values.generates():
            return
        for node in values.paths.of_type(ast.Assign):
            target = node.targets[0] if len(node.targets) == 1 else None
            if (
                isinstance(target, ast.Attribute)
                and target.attr == "use_cache"
                and isinstance(target.value, ast.Attribute)
                and target.value.attr == "config"
                and values.paths.state(node).runs
            ):
                found = values.get(node.value)
                if found is not None and isinstance(found[0], bool):
                    self.state.set("use_cache", found[0], node.lineno, found[1])

    def accelerator(self, call: ast.Call) -> None:
        """``Accelerator(mixed_precision="bf16", gradient_accumulation_steps=4)``."""
        self.state.take(
            call,
            "dtype",
            "mixed_precision",
            convert=lambda v: {"bf16": "amp-bf16", "fp16": "amp-fp16", "no": "fp32"}.get(str(v)),
        )
        self.state.take(call, "accumulation", "gradient_accumulation_steps", convert=positive_int)

    def environment(self, call: ast.Call, name: str) -> None:
        """``os.environ["WORLD_SIZE"]`` / ``os.getenv("WORLD_SIZE")``: launched distributed.

        The count is set at launch, not in the script: a medium-confidence signal that
        the estimate names (sharding divides by a world size nobody stated). A getter with
        a default (``os.getenv("WORLD_SIZE", 1)``) runs without a launcher too: a plain
        launch gets the default, one process (:mod:`.runconfig_launch`, low)."""
        if not name.endswith(("os.getenv", "os.environ.get", "environ.get", "getenv")):
            return
        key = call.args[0] if call.args else None
        defaulted = len(call.args) > 1 or any(k.arg == "default" for k in call.keywords)
        if isinstance(key, ast.Constant) and key.value == "WORLD_SIZE":
            signal = "world-size-default" if defaulted else "world-size-env"
            self.state.signals.setdefault(signal, call.lineno)

    def from_pretrained(self, call: ast.Call, name: str) -> None:
        if any(
            word in name
            for word in ("Tokenizer", "Processor", "FeatureExtractor", "Config.", "Scheduler")
        ):
            return
        self.state.loaded.append((call.lineno, name.rsplit(".", 2)[-2] if "." in name else name))
        given = self.state.values.get(call.args[0]) if call.args else None
        if self.state.cap == "high":  # only what surely runs can be another model on the device
            name_given = given[0] if given and isinstance(given[0], str) else None
            self.state.loads.append((self.state.target, name_given, self.state.loaded[-1][1]))
            self.state.load_lines.setdefault(name_given or "", call.lineno)
        arg = (
            self.state.values.get(call.args[0])
            if call.args
            else self.state.keyword(call, "pretrained_model_name_or_path")
        )
        if arg and isinstance(arg[0], str):
            self.state.set("model", self.local_checkpoint(arg[0]), call.lineno, arg[1])
        elif arg is None:
            named = call.args[0] if call.args else None
            named = named or next(
                (k.value for k in call.keywords if k.arg == "pretrained_model_name_or_path"), None
            )
            if isinstance(named, (ast.Name, ast.Attribute)):  # a flag or a variable
                self.state.unread_models.append((call.lineno, ast.unparse(named)))
        found = self.state.keyword(call, "torch_dtype", "dtype")
        text = ast.unparse(call)
        for key, dtype in DTYPES.items():
            if f"torch.{key}" in text or (found and found[0] == key):
                self.state.signals.setdefault("weights-" + dtype, call.lineno)
                break
        if "load_in_4bit" in text:
            self.state.set("quantize", "4bit", call.lineno)
        elif "load_in_8bit" in text:
            self.state.set("quantize", "8bit", call.lineno)
        attention = self.state.keyword(call, "attn_implementation")
        if attention:
            value = {"flash_attention_2": "flash", "flash_attention_3": "flash"}.get(
                attention[0], attention[0]
            )
            if value in ("eager", "sdpa", "flash"):
                self.state.set("attention", value, call.lineno, attention[1])

    def local_checkpoint(self, name: str) -> str:
        """``"./checkpoints/run1"`` → its absolute path when that folder has a ``config.json``
        (relative to the script's folder, then the working directory); else ``name``.
        transformers itself prefers a local folder over a hub id of the same name."""
        expanded = os.path.expanduser(name)
        script_dir = os.path.dirname(os.path.abspath(self.state.values.path))
        for base in (script_dir, dependencies.getcwd()):
            folder = os.path.normpath(os.path.join(base, expanded))
            if dependencies.is_file(os.path.join(folder, "config.json")):
                return folder
        return name

    def training_arguments(self, call: ast.Call) -> None:
        self.state.signals.setdefault("train", call.lineno)
        self.state.take(call, "batch_size", "per_device_train_batch_size", convert=positive_int)
        self.state.take(call, "eval_batch_size", "per_device_eval_batch_size", convert=positive_int)
        self.state.take(call, "accumulation", "gradient_accumulation_steps", convert=positive_int)
        self.state.take(call, "checkpointing", "gradient_checkpointing", convert=bool)
        self.state.take(call, "seq_len", "max_seq_length", "max_length", convert=positive_int)
        self.state.take(call, "optimizer", "optim", convert=lambda v: HF_OPTIM.get(str(v)))
        for flag, dtype in (("bf16", "amp-bf16"), ("fp16", "amp-fp16")):
            found = self.state.keyword(call, flag)
            if found and found[0] is True:
                self.state.set("dtype", dtype, call.lineno, found[1])
        found = self.state.keyword(call, "deepspeed")
        if found:
            self.deepspeed(found[0], call.lineno, found[1])
        found = self.state.keyword(call, "fsdp")
        if found and found[0]:
            self.state.set(
                "sharding",
                "fsdp-grad-op" if "shard_grad_op" in str(found[0]) else "fsdp",
                call.lineno,
            )
        if (
            "optimizer" not in self.state.fields
        ):  # the Trainer's default (transformers >= 4.x): AdamW
            self.state.set("optimizer", "adamw", call.lineno, "medium")

    def lightning(self, call: ast.Call) -> None:
        self.state.take(
            call, "dtype", "precision", convert=lambda v: LIGHTNING_PRECISION.get(str(v))
        )
        self.state.take(call, "accumulation", "accumulate_grad_batches", convert=positive_int)
        devices = self.state.keyword(call, "devices")
        nodes = self.state.keyword(call, "num_nodes")
        if devices and positive_int(devices[0]):
            count = devices[0] * (nodes[0] if nodes and positive_int(nodes[0]) else 1)
            self.state.set(
                "gpus",
                count,
                call.lineno,
                devices[1] if not nodes else min((devices[1], nodes[1]), key=lambda c: RANK[c]),
            )
        found = self.state.keyword(call, "strategy")
        if found and isinstance(found[0], str):
            strategy = found[0]
            for stage in ("1", "2", "3"):
                if strategy.startswith("deepspeed_stage_" + stage):
                    self.state.set("sharding", "zero-" + stage, call.lineno, found[1])
            if strategy == "fsdp":
                self.state.set("sharding", "fsdp", call.lineno, found[1])
            if strategy == "ddp":
                self.state.set("sharding", "ddp", call.lineno, found[1])

    def optimizer(self, call: ast.Call, tail: str) -> None:
        if call.args:
            self.state.optimized |= {
                n.id for n in ast.walk(call.args[0]) if isinstance(n, ast.Name)
            }
        name, confidence = optimizer_of(call, tail, self.state.values.get)
        self.state.set("optimizer", name, call.lineno, confidence)

    def deepspeed(self, value: Any, line: int, confidence: str) -> None:
        """A DeepSpeed config (a dict, or the JSON file it names): sharding, offload, batch,
        accumulation, precision. ``confidence``: the config's own (a dict followed through
        a name, or filled from flags' defaults, is medium; a file the script names is read
        as data, medium); every field read from it is capped there."""
        source = f"{self.state.path}:{line}"
        if isinstance(value, str):
            loaded = self.state.values.read_file(value)
            if loaded is None:
                return
            value, source, confidence = loaded[0], loaded[1], min_confidence(confidence, "medium")
        if not isinstance(value, dict):
            return
        cap, self.state.cap = self.state.cap, min_confidence(self.state.cap, confidence)
        try:
            self._deepspeed_fields(value, line, source)
        finally:
            self.state.cap = cap

    def _deepspeed_fields(self, value: dict, line: int, source: str) -> None:
        zero = value.get("zero_optimization") or {}
        stage = zero.get("stage")
        if stage in (1, 2, 3):
            self.state.set("sharding", f"zero-{stage}", line, "high", source)
        if (zero.get("offload_optimizer") or {}).get("device") in ("cpu", "nvme"):
            offload = (
                "optimizer+params"
                if (zero.get("offload_param") or {}).get("device") in ("cpu", "nvme")
                else "optimizer"
            )
            self.state.set("offload", offload, line, "high", source)
        for key, field in (
            ("train_micro_batch_size_per_gpu", "batch_size"),
            ("gradient_accumulation_steps", "accumulation"),
        ):
            if isinstance(value.get(key), int):
                self.state.set(field, value[key], line, "high", source)
        micro, steps = (
            value.get("train_micro_batch_size_per_gpu"),
            value.get("gradient_accumulation_steps", 1),
        )
        total = value.get("train_batch_size")
        if (
            all(isinstance(v, int) and v > 0 for v in (micro, steps, total))
            and total % (micro * steps) == 0
        ):
            # DeepSpeed's invariant: train_batch_size = micro × accumulation × world size
            self.state.set(
                "gpus", total // (micro * steps), line, "high", source + " (train_batch_size)"
            )
        elif (
            micro is None
            and all(isinstance(v, int) and v > 0 for v in (steps, total))
            and total % steps == 0
        ):
            # no micro-batch given: DeepSpeed derives it from the world size, one GPU on a
            # plain launch (a launcher's world size divides it: medium)
            self.state.set(
                "batch_size",
                total // steps,
                line,
                "medium",
                source + " (train_batch_size on one GPU)",
            )
        optimizer = (value.get("optimizer") or {}).get("type")
        if isinstance(optimizer, str) and optimizer.lower() in ("adam", "adamw"):
            self.state.set("optimizer", optimizer.lower(), line, "high", source)
        if (value.get("bf16") or {}).get("enabled") is True:
            self.state.set("dtype", "bf16", line, "high", source)
        elif (value.get("fp16") or {}).get("enabled") is True:
            self.state.set("dtype", "fp16", line, "high", source)
