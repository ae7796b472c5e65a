"""The calls that say something about a job's memory, and what each one says.

One method per API family; :meth:`CallReader.call` dispatches on the qualified name (or
the method name for calls on values). A field seen twice keeps the more confident value,
and on a tie the first (scripts configure before they run).

Past 400 lines for now (986): one method per API family on :class:`CallReader`, all
writing the same field table. Like :mod:`.runconfig`, it is due to become facts of the
analysis engine (issue 12); until then the seam is the launch / accumulation /
structure readers (``_launch``, ``_accumulation_loop``, ``_structure_notes`` and the
module-level helpers after the class) into a module of their own.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Any

from torchward.estimator import dependencies
from torchward.estimator.jobparts import structure_facts
from torchward.estimator.runconfig import Field, RunConfig

from .names import ImportTable, dotted, qualified_name

_RANK = {"high": 2, "medium": 1, "low": 0}
_DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
}
_OPTIMIZERS = {
    "AdamW": "adamw",
    "Adam": "adam",
    "SGD": "sgd",
    "Adafactor": "adafactor",
    "Lion": "lion",
    "AdamW8bit": "adamw-8bit",
    "Adam8bit": "adamw-8bit",
    "PagedAdamW8bit": "paged-adamw-8bit",
    "PagedAdamW": "paged-adamw",
    "PagedAdamW32bit": "paged-adamw",
}
_HF_OPTIM = {
    "adamw_torch": "adamw",
    "adamw_torch_fused": "adamw-fused",
    "adamw_hf": "adamw",
    "adafactor": "adafactor",
    "adamw_bnb_8bit": "adamw-8bit",
    "adamw_8bit": "adamw-8bit",
    "paged_adamw_8bit": "paged-adamw-8bit",
    "paged_adamw_32bit": "paged-adamw",
    "sgd": "sgd",
    "lion_32bit": "lion",
}
_LIGHTNING_PRECISION = {
    "bf16-mixed": "amp-bf16",
    "16-mixed": "amp-fp16",
    "16": "amp-fp16",
    "bf16-true": "bf16",
    "16-true": "fp16",
    "32": "fp32",
    "32-true": "fp32",
    "bf16": "amp-bf16",
}
_CROPS = ("RandomResizedCrop", "CenterCrop", "RandomCrop", "Resize")
_LOADER = re.compile(r"(?i)data_?loader|loader$")
_TRAINING_CALL = re.compile(
    r"(?i)^(train|train_one_epoch|train_epoch|train_model\w*|TrainLoop|fit)$"
)
_MODEL_NAME = re.compile(r"(?i)model|net|unet|vae|encoder|transformer")
_EVAL_TARGET = re.compile(r"(?i)(^|_)(val|valid|validation|eval|test)(_|$|loader|set|data)")
_TARGETS = re.compile(r"(?i)label|target")
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
_LAUNCHERS = ("Accelerator", "Trainer", "SFTTrainer", "Seq2SeqTrainer", "DPOTrainer")
_HF_ARGUMENTS = ("TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "DPOConfig")
_VISION_BUILDERS = ("torchvision.models.", "timm.create_model", "timm.models.")


class CallReader:
    def __init__(self, imports: ImportTable, values, path: str) -> None:
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

    # -- recording ---------------------------------------------------------------------
    def set(
        self, name: str, value: Any, line: int, confidence: str = "high", source: str | None = None
    ) -> None:
        if value is None:
            return
        if _RANK[self.cap] < _RANK[confidence]:
            confidence = self.cap
        field = Field(value, source or f"{self.path}:{line}", confidence)
        old = self.fields.get(name)
        if old is None or _RANK[confidence] > _RANK[old.confidence]:
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

    # -- dispatch ----------------------------------------------------------------------
    def call(self, call: ast.Call, name: str) -> None:
        tail = name.rsplit(".", 1)[-1]
        if tail in _LAUNCHERS or name.startswith(("deepspeed", "lightning", "pytorch_lightning")):
            self.launcher = True
        if tail in (
            "init_process_group",
            "spawn",
            "start_processes",
            "DistributedDataParallel",
            "FullyShardedDataParallel",
            "fully_shard",
        ):
            self.distributed = True
        if tail == "from_pretrained":
            self.from_pretrained(call, name)
            if "model" in self.fields and self.fields["model"].source.endswith(f":{call.lineno}"):
                self.set("pretrained", True, call.lineno, self.fields["model"].confidence)
        elif tail == "from_config" and name.startswith(("transformers", "Auto")):
            self.set("pretrained", False, call.lineno)  # architecture only: trained from scratch
        elif name.startswith(_VISION_BUILDERS) and name != "timm.models.":
            arg = self.values.get(call.args[0]) if call.args and "timm" in name else None
            model = arg[0] if arg and isinstance(arg[0], str) else tail
            if model not in ("create_model", "get_model"):
                self.set("model", model, call.lineno, arg[1] if arg else "high")
        elif tail in ("TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "DPOConfig"):
            self.training_arguments(call)
            self.library_defaults(tail, call.lineno)
        elif tail == "HfArgumentParser" and call.args:
            self.argument_parser(call)
        elif tail in ("Trainer", "SFTTrainer", "Seq2SeqTrainer", "DPOTrainer"):
            self.signals.setdefault("train", call.lineno)
            if name.startswith(("lightning", "pytorch_lightning")):
                self.lightning(call)
        elif tail == "DataLoader" and _EVAL_TARGET.search(self.target):
            found = self.keyword(call, "batch_size")  # the evaluation loader: its own batch
            if found is not None and (value := _int(found[0])) is not None:
                cap, self.cap = self.cap, self.path_cap  # this is the evaluation value itself
                self.set("eval_batch_size", value, call.lineno, found[1])
                self.cap = cap
        elif tail == "DataLoader":
            # medium: a script builds evaluation loaders too; TrainingArguments' per-device
            # train batch (high) wins, and among loaders the first (the training one) does
            found = self.keyword(call, "batch_size")
            if found is not None and (value := _int(found[0])) is not None:
                self.set(
                    "batch_size", value, call.lineno, "medium" if found[1] == "high" else found[1]
                )
        elif (
            name.startswith(
                (
                    "torch.optim.",
                    "bitsandbytes.optim.",
                    "transformers.optimization.",
                    "lion_pytorch.",
                )
            )
            and tail in _OPTIMIZERS
        ):
            self.optimizer(call, tail)
        elif tail in ("autocast",) and name.startswith("torch"):
            self.autocast(call)
        elif tail == "GradScaler":
            self.signals.setdefault("grad-scaler", call.lineno)
        elif tail in ("gradient_checkpointing_enable", "checkpoint", "checkpoint_sequential"):
            self.set("checkpointing", True, call.lineno)
        elif tail == "LoraConfig":
            self.take(call, "lora_rank", "r", convert=_int)
            self.take(
                call,
                "lora_targets",
                "target_modules",
                convert=lambda v: v if isinstance(v, str) else tuple(v),
            )
            if "lora_rank" not in self.fields:  # peft's default rank
                self.set("lora_rank", 8, call.lineno, "medium")
        elif tail in ("FullyShardedDataParallel", "FSDP", "fully_shard"):
            strategy = ast.unparse(call)
            self.set(
                "sharding", "fsdp-grad-op" if "SHARD_GRAD_OP" in strategy else "fsdp", call.lineno
            )
        elif tail in ("DistributedDataParallel", "DDP"):
            self.set("sharding", "ddp", call.lineno, "medium")
        elif name.startswith("deepspeed") and tail == "initialize":
            self.signals.setdefault("train", call.lineno)
            found = self.keyword(call, "config", "config_params")
            if found:
                self.deepspeed(found[0], call.lineno)
        elif tail == "generate":
            self.signals.setdefault("generate", call.lineno)
            self.generation(call)
        elif tail == "GenerationConfig" or (
            tail == "from_pretrained" and "GenerationConfig" in name
        ):
            self.generation(call)
        elif tail == "Accelerator" and name.startswith("accelerate"):
            self.accelerator(call)
        elif tail in ("init_process_group", "spawn", "start_processes") and name.startswith(
            "torch"
        ):
            self.take(call, "gpus", "world_size", "nprocs", convert=_int)
        elif tail in ("getenv", "get"):
            self.environment(call, name)
        elif tail == "backward":
            self.signals.setdefault("train", call.lineno)
        elif tail in ("half", "bfloat16") and not call.args and self._casts_model(call):
            self.signals.setdefault(
                "weights-" + ("fp16" if tail == "half" else "bf16"), call.lineno
            )
        elif tail == "requires_grad_" and call.args:
            found = self.values.get(call.args[0])
            if found is not None and found[0] is False and self.cap != "low":
                self.frozen.setdefault(call.lineno, ast.unparse(call.func.value)[:40])  # type: ignore[attr-defined]
            if found is not None and isinstance(found[0], bool) and self.cap != "low":
                module = _loop_module(call.func.value, call, self.values)  # type: ignore[attr-defined]
                self.freezes.append((call.lineno, module, found[0]))
        elif tail in ("no_grad", "inference_mode"):
            self.signals.setdefault("no-grad", call.lineno)
        elif tail == "to":
            self.cast(call)
        elif tail in _CROPS and name.startswith("torchvision"):
            found = self.values.get(call.args[0]) if call.args else self.keyword(call, "size")
            size = found[0] if found else None
            if isinstance(size, (tuple, list)) and size:
                size = size[0]
            if _int(size) and ("image_size" not in self.fields or tail != "Resize"):
                self.set("image_size", size, call.lineno, "medium")
        elif tail.startswith("create_model") or tail in ("get_model", "build_model"):
            found = self.values.get(call.args[0]) if call.args else self.keyword(call, "model_name")
            built = _model_name(found[0]) if found else None
            if built is not None and found is not None:
                self.set("model", built, call.lineno, found[1])
        if tail != "DataLoader" and _LOADER.search(tail):
            self.loader(call, tail)
        if _TRAINING_CALL.search(tail):
            self.signals.setdefault("train-call", call.lineno)
        if (tail in ("AutoTokenizer", "tokenizer") or tail.endswith("tokenizer")) and not (
            self.target and _TARGETS.search(self.target)
        ):
            self.take(call, "seq_len", "max_length", convert=_int)

    def _casts_model(self, call: ast.Call) -> bool:
        """``model.half()`` as a statement or ``model = model.half()`` on the training path —
        not a checkpoint copy (``{"model": deepcopy(m).half()}``) or ``m.half().float()``."""
        if self.cap == "low":
            return False
        parent = self.values.paths.parent(call)
        if not isinstance(parent, (ast.Expr, ast.Assign)):
            return False
        if isinstance(parent, ast.Assign) and not _MODEL_NAME.search(self.target):
            return False
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        while isinstance(receiver, (ast.Call, ast.Attribute)):
            receiver = receiver.func if isinstance(receiver, ast.Call) else receiver.value
        return isinstance(receiver, ast.Name) and bool(_MODEL_NAME.search(receiver.id))

    def argument_parser(self, call: ast.Call) -> None:
        """``HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))``: the
        flags are the dataclasses' fields (read as defaults by the value reader) over the
        library's own defaults."""
        classes = (
            call.args[0].elts if isinstance(call.args[0], (ast.Tuple, ast.List)) else [call.args[0]]
        )
        for node in classes:
            name = qualified_name(node, self.imports) or dotted(node) or ""
            local = self.values.classes.get(name)
            if local is not None:
                bases = [qualified_name(b, self.imports) or dotted(b) or "" for b in local.bases]
                name = next((b for b in bases if b.endswith(_HF_ARGUMENTS)), name)
            tail = name.rsplit(".", 1)[-1]
            if tail in _HF_ARGUMENTS:
                self.signals.setdefault("train", call.lineno)
                self.library_defaults(tail, call.lineno)

    def library_defaults(self, kind: str, line: int) -> None:
        """What ``TrainingArguments`` / TRL's ``SFTConfig`` (TRL >= 0.20) hold when the script
        leaves a field alone; applied after everything the script itself says."""
        source = f"{self.path}:{line} ({kind} default)"
        self.deferred.extend(
            [
                ("batch_size", 8, source),
                ("accumulation", 1, source),
                ("optimizer", "adamw", source),
            ]
        )
        if kind in ("SFTConfig", "DPOConfig"):
            self.deferred.extend(
                [
                    ("seq_len", 1024, source),
                    ("dtype", "amp-bf16", source + ": bf16 when the GPU supports it"),
                    ("checkpointing", True, source),
                ]
            )

    def autocast(self, call: ast.Call) -> None:
        """``torch.autocast("cuda", dtype=ptdtype)``: the dtype the default launch selects
        (float32 = no mixed precision); ``enabled=False`` or an unknown dtype says nothing."""
        enabled = self.keyword(call, "enabled")
        if enabled is not None and not enabled[0]:
            return
        if call.args and not (
            isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
        ):
            flag = self.values.get(call.args[0])  # torch.cuda.amp.autocast(enabled)
            if flag is not None and flag[0] is False:
                return
        has_dtype = any(k.arg == "dtype" for k in call.keywords)
        found = self.keyword(call, "dtype")
        if has_dtype and found is None:
            return
        text = str(found[0]) if found else "float16"  # CUDA autocast's default
        dtype = (
            "amp-bf16"
            if "bfloat16" in text
            else "fp32"
            if text.endswith(("float32", "float"))
            else "amp-fp16"
        )
        self.set("dtype", dtype, call.lineno, found[1] if found else "high")

    def cast(self, call: ast.Call) -> None:
        """``model.to(torch.bfloat16)`` / ``.to(device, dtype=torch.float16)``: 16-bit weights."""
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        while isinstance(receiver, (ast.Call, ast.Attribute)):
            receiver = receiver.func if isinstance(receiver, ast.Call) else receiver.value
        if not (isinstance(receiver, ast.Name) and _MODEL_NAME.search(receiver.id)):
            return  # a tensor cast, not the model's weights
        found = self.keyword(call, "dtype")
        candidates = [found] if found else [self.values.get(a) for a in call.args]
        for value in candidates:
            text = str(value[0]) if value else ""
            if text in ("torch.bfloat16", "torch.float16", "torch.half"):
                weights = "bf16" if "bfloat" in text else "fp16"
                if self.cap != "low":
                    self.signals.setdefault("weights-" + weights, call.lineno)

    def loader(self, call: ast.Call, tail: str) -> None:
        """A data loader the script (or its library) defines: ``DataLoaderLite(B=B, T=T)``,
        ``create_dataloader_v1(txt, batch_size=..., max_length=...)``; positional arguments
        are matched to the parameters of a loader defined in the file."""
        bound: dict[str, ast.expr] = {k.arg: k.value for k in call.keywords if k.arg}
        params = self.values.signature(tail)
        for param, arg in zip(params, call.args):
            if not isinstance(arg, ast.Starred):
                bound.setdefault(param, arg)
        for field, names in (("batch_size", _BATCH_PARAMS), ("seq_len", _SEQ_PARAMS)):
            for key in names:
                if key in bound:
                    found = self.values.get(bound[key])
                    if found is not None and _int(found[0]):
                        self.set(field, found[0], call.lineno, "medium")
                        break

    # -- families ----------------------------------------------------------------------
    def generation(self, call: ast.Call) -> None:
        """``generate(...)`` / ``GenerationConfig(...)``: lengths, beams, ``use_cache``."""
        self.take(call, "max_new_tokens", "max_new_tokens", convert=_int)
        self.take(call, "num_beams", "num_beams", convert=_int)
        self.take(call, "max_context", "max_length", convert=_int)
        self.take(
            call, "use_cache", "use_cache", convert=lambda v: v if isinstance(v, bool) else None
        )

    def accelerator(self, call: ast.Call) -> None:
        """``Accelerator(mixed_precision="bf16", gradient_accumulation_steps=4)``."""
        self.take(
            call,
            "dtype",
            "mixed_precision",
            convert=lambda v: {"bf16": "amp-bf16", "fp16": "amp-fp16", "no": "fp32"}.get(str(v)),
        )
        self.take(call, "accumulation", "gradient_accumulation_steps", convert=_int)

    def environment(self, call: ast.Call, name: str) -> None:
        """``os.environ["WORLD_SIZE"]`` / ``os.getenv("WORLD_SIZE")``: launched distributed.

        The count is set at launch, not in the script: a medium-confidence signal that
        the estimate names (sharding divides by a world size nobody stated)."""
        if not name.endswith(("os.getenv", "os.environ.get", "environ.get", "getenv")):
            return
        key = call.args[0] if call.args else None
        if isinstance(key, ast.Constant) and key.value == "WORLD_SIZE":
            self.signals.setdefault("world-size-env", call.lineno)

    def from_pretrained(self, call: ast.Call, name: str) -> None:
        if any(
            word in name
            for word in ("Tokenizer", "Processor", "FeatureExtractor", "Config.", "Scheduler")
        ):
            return
        self.loaded.append((call.lineno, name.rsplit(".", 2)[-2] if "." in name else name))
        given = self.values.get(call.args[0]) if call.args else None
        if self.cap == "high":  # only what surely runs can be another model on the device
            name_given = given[0] if given and isinstance(given[0], str) else None
            self.loads.append((self.target, name_given, self.loaded[-1][1]))
            self.load_lines.setdefault(name_given or "", call.lineno)
        arg = (
            self.values.get(call.args[0])
            if call.args
            else self.keyword(call, "pretrained_model_name_or_path")
        )
        if arg and isinstance(arg[0], str):
            self.set("model", self.local_checkpoint(arg[0]), call.lineno, arg[1])
        found = self.keyword(call, "torch_dtype", "dtype")
        text = ast.unparse(call)
        for key, dtype in _DTYPES.items():
            if f"torch.{key}" in text or (found and found[0] == key):
                self.signals.setdefault("weights-" + dtype, call.lineno)
                break
        if "load_in_4bit" in text:
            self.set("quantize", "4bit", call.lineno)
        elif "load_in_8bit" in text:
            self.set("quantize", "8bit", call.lineno)
        attention = self.keyword(call, "attn_implementation")
        if attention:
            value = {"flash_attention_2": "flash", "flash_attention_3": "flash"}.get(
                attention[0], attention[0]
            )
            if value in ("eager", "sdpa", "flash"):
                self.set("attention", value, call.lineno, attention[1])

    def local_checkpoint(self, name: str) -> str:
        """``"./checkpoints/run1"`` → its absolute path when that folder has a ``config.json``
        (relative to the script's folder, then the working directory); else ``name``.
        transformers itself prefers a local folder over a hub id of the same name."""
        expanded = os.path.expanduser(name)
        script_dir = os.path.dirname(os.path.abspath(self.values.path))
        for base in (script_dir, dependencies.getcwd()):
            folder = os.path.normpath(os.path.join(base, expanded))
            if dependencies.is_file(os.path.join(folder, "config.json")):
                return folder
        return name

    def training_arguments(self, call: ast.Call) -> None:
        self.signals.setdefault("train", call.lineno)
        self.take(call, "batch_size", "per_device_train_batch_size", convert=_int)
        self.take(call, "eval_batch_size", "per_device_eval_batch_size", convert=_int)
        self.take(call, "accumulation", "gradient_accumulation_steps", convert=_int)
        self.take(call, "checkpointing", "gradient_checkpointing", convert=bool)
        self.take(call, "seq_len", "max_seq_length", "max_length", convert=_int)
        self.take(call, "optimizer", "optim", convert=lambda v: _HF_OPTIM.get(str(v)))
        for flag, dtype in (("bf16", "amp-bf16"), ("fp16", "amp-fp16")):
            found = self.keyword(call, flag)
            if found and found[0] is True:
                self.set("dtype", dtype, call.lineno, found[1])
        found = self.keyword(call, "deepspeed")
        if found:
            self.deepspeed(found[0], call.lineno)
        found = self.keyword(call, "fsdp")
        if found and found[0]:
            self.set(
                "sharding",
                "fsdp-grad-op" if "shard_grad_op" in str(found[0]) else "fsdp",
                call.lineno,
            )
        if "optimizer" not in self.fields:  # the Trainer's default (transformers >= 4.x): AdamW
            self.set("optimizer", "adamw", call.lineno, "medium")

    def lightning(self, call: ast.Call) -> None:
        self.take(call, "dtype", "precision", convert=lambda v: _LIGHTNING_PRECISION.get(str(v)))
        self.take(call, "accumulation", "accumulate_grad_batches", convert=_int)
        devices = self.keyword(call, "devices")
        nodes = self.keyword(call, "num_nodes")
        if devices and _int(devices[0]):
            count = devices[0] * (nodes[0] if nodes and _int(nodes[0]) else 1)
            self.set(
                "gpus",
                count,
                call.lineno,
                devices[1] if not nodes else min((devices[1], nodes[1]), key=lambda c: _RANK[c]),
            )
        found = self.keyword(call, "strategy")
        if found and isinstance(found[0], str):
            strategy = found[0]
            for stage in ("1", "2", "3"):
                if strategy.startswith("deepspeed_stage_" + stage):
                    self.set("sharding", "zero-" + stage, call.lineno, found[1])
            if strategy == "fsdp":
                self.set("sharding", "fsdp", call.lineno, found[1])
            if strategy == "ddp":
                self.set("sharding", "ddp", call.lineno, found[1])

    def optimizer(self, call: ast.Call, tail: str) -> None:
        name = _OPTIMIZERS[tail]
        if call.args:
            self.optimized |= {n.id for n in ast.walk(call.args[0]) if isinstance(n, ast.Name)}
        text = ast.unparse(call)
        fused = self.keyword(call, "fused")
        if name in ("adamw", "adam") and (
            "fused=True" in text
            or (any(k.arg == "fused" for k in call.keywords) and (fused is None or fused[0]))
        ):
            # ``fused=use_fused`` (true on CUDA in the scripts that compute it): fused
            name = "adamw-fused"
        if name == "sgd":
            momentum = self.keyword(call, "momentum")
            if momentum and momentum[0]:
                name = "sgd-momentum"
        self.set("optimizer", name, call.lineno, "high" if "fused" not in text else "medium")

    def deepspeed(self, value: Any, line: int) -> None:
        source = f"{self.path}:{line}"
        if isinstance(value, str):
            loaded = self.values.read_file(value)
            if loaded is None:
                return
            value, source = loaded[0], loaded[1]
        if not isinstance(value, dict):
            return
        zero = value.get("zero_optimization") or {}
        stage = zero.get("stage")
        if stage in (1, 2, 3):
            self.set("sharding", f"zero-{stage}", line, "high", source)
        if (zero.get("offload_optimizer") or {}).get("device") in ("cpu", "nvme"):
            offload = (
                "optimizer+params"
                if (zero.get("offload_param") or {}).get("device") in ("cpu", "nvme")
                else "optimizer"
            )
            self.set("offload", offload, line, "high", source)
        for key, field in (
            ("train_micro_batch_size_per_gpu", "batch_size"),
            ("gradient_accumulation_steps", "accumulation"),
        ):
            if isinstance(value.get(key), int):
                self.set(field, value[key], line, "high", source)
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
            self.set("gpus", total // (micro * steps), line, "high", source + " (train_batch_size)")
        if (value.get("bf16") or {}).get("enabled") is True:
            self.set("dtype", "bf16", line, "high", source)
        elif (value.get("fp16") or {}).get("enabled") is True:
            self.set("dtype", "fp16", line, "high", source)

    # -- conventions -------------------------------------------------------------------
    def conventions(self, values) -> None:
        """Fields no call settled, from the script's declared interface: a flag, a dataclass
        field or an entry point's parameter under a conventional name (``--batch_size``,
        ``context_length``, ``--mixed_precision``), or a module constant of that name
        (nanoGPT's ``batch_size = 12``). Medium at best: a launch can override them."""
        for field, names, convert in _CONVENTIONS:
            if field in self.fields:
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
                ):
                    value, line = values.constants[name]
                    source = values.cited.get(name)
                else:
                    continue
                converted = convert(value)
                if converted is not None:
                    self.set(field, converted, line, "medium", source)
                    break
        self._computed(values, "accumulation", _ACCUMULATION_NAMES)
        self._flags(values)
        for field, value, source in self.deferred:
            if field not in self.fields:
                self.fields[field] = Field(value, source, "medium")
        self._launch(values)
        self._structure_notes(values)

    def _computed(self, values, field: str, names: tuple[str, ...]) -> None:
        """A value the script computes under a conventional name on the default path
        (``grad_accum_steps = total_batch_size // (B * T * world_size)``)."""
        if field in self.fields:
            return
        for name in names:
            for value, stmt in values.assignments.get(name, ()):
                if values.paths.state(stmt) != "default":
                    continue
                found = values.get(value)
                if found is not None and _int(found[0]):
                    self.set(field, found[0], stmt.lineno, "medium")
                    return

    def _flags(self, values) -> None:
        """Optimizer, checkpointing, LoRA and quantisation chosen by a flag's default."""
        defaults = values.defaults
        if "optimizer" not in self.fields:
            for name in ("optimizer", "optim", "opt"):
                if name in defaults and isinstance(defaults[name][0], str):
                    chosen = _flag_optimizer(defaults[name][0], defaults)
                    if chosen:
                        self.set("optimizer", chosen, defaults[name][1], "medium")
                    break
        if "checkpointing" not in self.fields:
            for name in _CHECKPOINT_FLAGS:
                if name in defaults and isinstance(defaults[name][0], bool):
                    self.set("checkpointing", defaults[name][0], defaults[name][1], "medium")
                    break
        if "dtype" in self.fields and self.fields["dtype"].value == "amp-bf16":
            for name in ("precision", "dtype", "mixed_precision"):
                choices = values.choices.get(name, ())
                if (
                    name in defaults
                    and defaults[name][0] == "bf16"
                    and any("autocast" in str(c) or "mixed" in str(c) for c in choices)
                ):  # "bf16" next to "bf16_autocast": the pure-bf16 choice
                    old = self.fields["dtype"]
                    self.fields["dtype"] = Field("bf16", old.source, old.confidence)
        lora, line = None, 0
        for name in _METHOD_FLAGS:
            value = defaults.get(name, (None, 0))
            if isinstance(value[0], str) and "lora" in value[0].lower():
                lora, line = value[0].lower(), value[1]
                break
            if isinstance(value[0], bool) and name.startswith(("use_lora", "use_peft", "lora")):
                lora, line = ("lora" if value[0] else None), value[1]
                break
        if lora and "lora_rank" not in self.fields:
            rank = next(
                (defaults[n] for n in ("lora_rank", "lora_r", "rank") if n in defaults), None
            )
            if rank and _int(rank[0]):
                self.set("lora_rank", rank[0], rank[1], "medium")
            else:
                self.set("lora_rank", 8, line, "low")  # peft's default rank
        if "quantize" not in self.fields:
            if lora and ("qlora" in lora or "4bit" in lora or "bnb" in lora):
                self.set("quantize", "4bit", line, "medium")
            for name, kind in (
                ("load_in_4bit", "4bit"),
                ("use_4bit_quantization", "4bit"),
                ("load_in_8bit", "8bit"),
                ("use_8bit_quantization", "8bit"),
            ):
                if defaults.get(name, (None,))[0] is True:
                    self.set("quantize", kind, defaults[name][1], "medium")

    def _structure_notes(self, values) -> None:
        """Frozen modules and the other models on the device, as typed facts (``frozen``,
        ``device_models``: :func:`torchward.estimator.jobparts.structure_facts`); what no
        model owns is named in a note, not guessed."""
        freezes = list(self.freezes)
        replacements: set[str] = set()  # sub-modules replaced by a new layer
        for node in values.paths.nodes:  # for p in model.parameters(): p.requires_grad = False
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Attribute)
                and node.targets[0].attr == "requires_grad"
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, bool)
                and values.paths.state(node).runs
            ):
                named = _named_exceptions(node, values)
                if named is not None and node.value.value is False:  # all but the names listed
                    freezes.append((node.lineno, named[0], False))
                    freezes += [(node.lineno, f"{named[0]}.{m}", True) for m in named[1]]
                    continue
                module = _loop_module(node.targets[0].value, node, values)
                freezes.append((node.lineno, module, node.value.value))
            elif (  # model.fc = nn.Linear(...): a new layer is trainable, frozen or not before
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Attribute)
                and isinstance(node.value, ast.Call)
                and re.search(r"Linear|Sequential|Conv", ast.unparse(node.value.func))
                and not ast.unparse(node.targets[0]).startswith("self.")
                and values.paths.state(node).runs
            ):
                replaced = ast.unparse(node.targets[0])
                freezes.append((node.lineno, replaced, True))
                replacements.add(replaced)
        model = self.fields["model"].value if "model" in self.fields else None
        found = structure_facts(
            self.model_var, self.loads, freezes, self.optimized, self.path, replacements, model
        )
        if found.model is not None and "model" in self.fields:
            line = self.load_lines[found.model]
            confidence = self.fields["model"].confidence
            self.fields["model"] = Field(found.model, f"{self.path}:{line}", confidence)
            self.notes.append(f"the optimizer trains {found.model}: that is the model estimated")
        if found.freezing is not None:
            line = min(line for line, _, grad in freezes if not grad)
            self.fields["frozen"] = Field(found.freezing, f"{self.path}:{line}", "medium")
        if found.others:
            self.fields["device_models"] = Field(found.others, self.path, "medium")
        if found.unowned:
            self.notes.append(
                f"parameters are frozen at {', '.join(found.unowned[:4])}: not tied to a model the "
                "estimate sizes, so every parameter is counted trainable (an upper bound on "
                "gradients and optimizer state)"
            )

    def _launch(self, values) -> None:
        """World size and accumulation of the default launch (``python SCRIPT``) when the
        script sets neither: one process, one optimizer step per batch — read from what the
        script does not contain, so at most medium, and low when a distributed set-up exists
        that a plain launch skips."""
        training = (
            "train" in self.signals
            or "train-call" in self.signals
            or (self.fields.get("mode") is not None and self.fields["mode"].value == "train")
        )
        if not training:
            return
        launched = _LAUNCH_COMMAND.search(values.source_text)  # "torchrun ... SCRIPT" in a comment
        if "gpus" not in self.fields and "sharding" not in self.fields and not launched:
            skipped = any(state == "multi-gpu" for _, state in self.skipped)
            if "world-size-env" in self.signals:
                pass  # WORLD_SIZE read on the default path: the launch decides, say so
            elif skipped:
                self.set(
                    "gpus",
                    1,
                    0,
                    "low",
                    f"{self.path} (a plain launch; distributed only under torchrun)",
                )
            elif self.launcher and not self.distributed:
                self.set(
                    "gpus",
                    1,
                    0,
                    "low",
                    f"{self.path} (a plain launch: one process; the launcher's config may set more)",
                )
            elif not self.distributed:
                self.set(
                    "gpus", 1, 0, "medium", f"{self.path} (no distributed launch in the script)"
                )
        if "accumulation" not in self.fields:
            self._accumulation_loop(values)
        if (
            "accumulation" not in self.fields
            and not self.accumulates
            and not _ACCUMULATES.search(values.source_text)
        ):
            self.set(
                "accumulation",
                1,
                0,
                "medium",
                f"{self.path} (no gradient accumulation in the script)",
            )

    def _accumulation_loop(self, values) -> None:
        """``for micro in range(N): ... loss.backward()`` with the optimizer step after the
        loop: N micro-batches accumulate (an unresolved N says so, it is not 1)."""
        for node in values.paths.nodes:
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "backward"
                and values.paths.state(node).runs
            ):
                continue
            loop = _enclosing_loop(node, values)
            if not isinstance(loop, ast.For) or _steps(loop):
                continue
            outer = _enclosing_loop(loop, values)
            if outer is None or not _steps(outer):
                continue
            self.accumulates = True
            iterator = loop.iter
            if (
                isinstance(iterator, ast.Call)
                and isinstance(iterator.func, ast.Name)
                and iterator.func.id == "range"
                and len(iterator.args) == 1
            ):
                found = values.get(iterator.args[0])
                if found is not None and _int(found[0]):
                    self.set("accumulation", found[0], loop.lineno, "medium")
            return

    # -- result ------------------------------------------------------------------------
    def config(self) -> RunConfig:
        fields = dict(self.fields)
        at = lambda signal: f"{self.path}:{self.signals[signal]}"  # noqa: E731
        if "mode" not in fields:
            if "generate" in self.signals and "train" not in self.signals:
                fields["mode"] = Field("generate", at("generate"), "medium")
            elif "train" in self.signals:
                fields["mode"] = Field("train", at("train"), "medium")
            elif "train-call" in self.signals:
                fields["mode"] = Field("train", at("train-call") + " (a training loop)", "medium")
            elif "no-grad" in self.signals:
                fields["mode"] = Field("inference", at("no-grad"), "medium")
        weights_signal = next((s for s in self.signals if s.startswith("weights-")), None)
        weights = weights_signal[len("weights-") :] if weights_signal else None
        line = at(weights_signal) if weights_signal else self.path
        mode = fields["mode"].value if "mode" in fields else None
        if weights and weights != "fp32" and ("dtype" not in fields or mode != "train"):
            fields["dtype"] = Field(weights, line + " (model loaded in " + weights + ")", "medium")
        elif (
            weights in ("bf16", "fp16")
            and fields["dtype"].value.startswith("amp")
            and "quantize" not in fields  # 4/8-bit base: the trained adapters stay in fp32
        ):
            fields["dtype"] = Field(
                weights, fields["dtype"].source, "medium"
            )  # autocast over 16-bit weights
        if "dtype" not in fields and "grad-scaler" in self.signals:
            fields["dtype"] = Field("amp-fp16", at("grad-scaler"), "medium")
        if "dtype" not in fields and mode == "train" and not weights:
            fields["dtype"] = Field(
                "fp32", f"{self.path} (no autocast or 16-bit weights found)", "medium"
            )
        if "world-size-env" in self.signals and "gpus" not in fields:
            self.notes.append(
                f"{at('world-size-env')}: the script reads WORLD_SIZE (a distributed "
                "launch); the world size is set at launch — give --gpus N or gpus in "
                "[tool.torchward.estimate] (assumed 1: nothing divided)"
            )
        return RunConfig(**fields)


def _named_exceptions(node: ast.AST, values) -> tuple[str, list[str]] | None:
    """``for name, p in model.named_parameters(): if name not in ["fc.weight", "fc.bias"]:
    p.requires_grad = False`` → (``model``, [``fc``]): everything but the listed modules."""
    test = values.paths.parent(node)
    loop = values.paths.parent(test) if isinstance(test, ast.If) else None
    if not (
        isinstance(test, ast.If)
        and isinstance(loop, ast.For)
        and isinstance(loop.target, ast.Tuple)
        and len(loop.target.elts) == 2
        and isinstance(loop.target.elts[0], ast.Name)
        and isinstance(loop.iter, ast.Call)
        and isinstance(loop.iter.func, ast.Attribute)
        and loop.iter.func.attr == "named_parameters"
        and isinstance(test.test, ast.Compare)
        and isinstance(test.test.left, ast.Name)
        and test.test.left.id == loop.target.elts[0].id
        and len(test.test.ops) == 1
        and isinstance(test.test.ops[0], ast.NotIn)
    ):
        return None
    listed = test.test.comparators[0]
    found = values.get(listed)
    names = found[0] if found is not None else None
    if names is None and isinstance(listed, (ast.List, ast.Tuple)):
        names = [_formatted(element, values) for element in listed.elts]
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        return None
    modules = sorted({n.rsplit(".", 1)[0] for n in names if "." in n})
    return ast.unparse(loop.iter.func.value), modules


def _formatted(node: ast.expr, values) -> str | None:
    """A string, or ``"%s.weight" % name`` with ``name`` followed to a string."""
    found = values.get(node)
    if found is not None and isinstance(found[0], str):
        return found[0]
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, ast.Constant)
        and isinstance(node.left.value, str)
    ):
        argument = values.get(node.right)
        if argument is not None and isinstance(argument[0], str):
            return node.left.value % argument[0]
    return None


def _loop_module(expr: ast.expr, node: ast.AST, values) -> str:
    """The module a ``requires_grad`` change is about: ``p`` in ``for p in
    model.bert.parameters():`` is ``model.bert``, ``layer`` in ``for layer in
    model.layers[:8]:`` is ``model.layers[:8]``; anything else as written."""
    text = ast.unparse(expr)
    parent = values.paths.parent(node)
    while parent is not None and not isinstance(parent, (ast.For, ast.FunctionDef)):
        if isinstance(parent, ast.If):
            return text  # a condition picks the parameters (by name): not followed
        parent = values.paths.parent(parent)
    if (
        isinstance(parent, ast.For)
        and isinstance(parent.target, ast.Name)
        and isinstance(expr, ast.Name)
        and parent.target.id == expr.id
    ):
        source = parent.iter
        if (
            isinstance(source, ast.Call)
            and isinstance(source.func, ast.Attribute)
            and source.func.attr == "parameters"
        ):
            return ast.unparse(source.func.value)
        if not isinstance(source, ast.Call):
            return ast.unparse(source)
    return text


def _model_name(value: Any) -> str | None:
    if not isinstance(value, str) or value.strip().lower() in ("", "scratch", "resume", "none"):
        return None
    if value.endswith((".pt", ".pth", ".bin", ".ckpt", ".safetensors")):
        return os.path.splitext(os.path.basename(value))[0]
    return value


def _precision(value: Any) -> str | None:
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
        lambda v: _int(v),
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
        lambda v: _int(v),
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
        lambda v: _int(v),
    ),
    (
        "image_size",
        ("image_size", "img_size", "imgsz", "resolution", "input_size"),
        lambda v: _int(v),
    ),
    (
        "accumulation",
        (
            "gradient_accumulation_steps",
            "grad_accum_steps",
            "accum_freq",
            "accumulate_grad_batches",
        ),
        lambda v: _int(v),
    ),
    ("dtype", ("mixed_precision", "precision", "dtype"), _precision),
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
        _model_name,
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
_ACCUMULATES = re.compile(r"(?i)accum")
_LAUNCH_COMMAND = re.compile(r"torchrun|nproc_per_node|accelerate launch|deepspeed --|mpirun")
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


def _enclosing_loop(node: ast.AST, values) -> ast.AST | None:
    current = values.paths.parent(node)
    while current is not None and not isinstance(current, (ast.For, ast.While)):
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        current = values.paths.parent(current)
    return current


def _steps(node: ast.AST) -> bool:
    """Whether ``node`` contains an optimizer step (``opt.step()``, ``scaler.step(opt)``)."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step"
        for n in ast.walk(node)
    )


def _flag_optimizer(value: str, defaults: dict) -> str | None:
    text = value.lower()
    if text == "sgd":
        momentum = defaults.get("momentum", (None,))[0]
        if isinstance(momentum, (int, float)) and not isinstance(momentum, bool):
            return "sgd-momentum" if momentum > 0 else "sgd"
        return None  # momentum unknown: the state it keeps is not knowable
    if text in _HF_OPTIM:
        return _HF_OPTIM[text]
    return {"adamw": "adamw", "adam": "adam", "adafactor": "adafactor", "lion": "lion"}.get(text)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _is_dtype(call: ast.Call, name: str) -> bool:
    return any(name in ast.unparse(k.value) for k in call.keywords if k.arg == "dtype")
