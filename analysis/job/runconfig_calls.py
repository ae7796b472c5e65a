"""The calls that say something about a job's memory, and what each one says.

:meth:`CallReader.call` dispatches each call on a path that runs by its qualified name
(or the method name for calls on values) to an API family's reader
(:mod:`.runconfig_families`); after the calls, conventional names
(:mod:`.runconfig_conventions`), the launch (:mod:`.runconfig_launch`) and the job's
structure (:mod:`.runconfig_structure`) fill what no call settled, and :meth:`config`
derives mode and precision from what the script does.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchward.estimator.runconfig import Field, RunConfig

from ..syntax.names import dotted
from .runconfig_conventions import ConventionReader
from .runconfig_families import FamilyReaders
from .runconfig_fields import (
    DATASET_SIDES,
    HF_ARGUMENTS,
    HF_TRAINERS,
    MODEL_NAME,
    OPTIMIZERS,
    ReaderState,
    model_name,
    positive_int,
)
from .runconfig_hfconfig import config_built_model, is_model_class
from .runconfig_launch import LaunchReader
from .runconfig_structure import StructureReader, loop_module

if TYPE_CHECKING:
    from .runconfig_declarations import Values

__all__ = ["CallReader"]

_CROPS = ("RandomResizedCrop", "CenterCrop", "RandomCrop", "Resize")

_LOADER = re.compile(r"(?i)data_?loader|loader$")

_TRAINING_CALL = re.compile(
    r"(?i)^(train|train_one_epoch|train_epoch|train_model\w*|TrainLoop|fit)$"
)

_EVAL_TARGET = re.compile(r"(?i)(^|_)(val|valid|validation|eval|test)(_|$|loader|set|data)")

_TARGETS = re.compile(r"(?i)label|target")

_LAUNCHERS = ("Accelerator", *HF_TRAINERS)

_VISION_BUILDERS = ("torchvision.models.", "timm.create_model", "timm.models.")


def _names_a_dtype(target: ast.expr) -> bool:
    """``dtype``, ``self._dtype``, ``ptdtype``, ``compute_dtype``: a variable for a dtype."""
    name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
    return "dtype" in name.lower()


class CallReader:
    """Reads each call on a path that runs, then what the script's names and launch say.

    The readers it dispatches to are collaborators, each given the read's
    :class:`~.runconfig_fields.ReaderState` (the field table and the facts they share):
    the API families' (:class:`~.runconfig_families.FamilyReaders`), the conventional
    names' (:class:`~.runconfig_conventions.ConventionReader`), the launch's
    (:class:`~.runconfig_launch.LaunchReader`) and the job's structure's
    (:class:`~.runconfig_structure.StructureReader`)."""

    def __init__(self, state: ReaderState) -> None:
        self.state = state
        self.families = FamilyReaders(state)
        self.named = ConventionReader(state)
        self.launch = LaunchReader(state)
        self.structure = StructureReader(state)

    def _precision_chosen_at_launch(self) -> ast.Assign | None:
        """An assignment on the default path to a dtype variable whose value the reader
        cannot follow (torchtune's ``self._dtype = training.get_dtype(cfg.dtype)``, a
        precision read from a config file given at launch): the job's precision is then
        not "fp32 for want of an autocast", so none is claimed."""
        for node in self.state.values.paths.of_type(ast.Assign):
            if (
                any(_names_a_dtype(t) for t in node.targets)
                and self.state.values.paths.state(node).runs
                and self.state.values.get(node.value) is None
            ):
                return node
        return None

    def call(self, call: ast.Call, name: str) -> None:
        tail = name.rsplit(".", 1)[-1]
        if tail in _LAUNCHERS or name.startswith(("deepspeed", "lightning", "pytorch_lightning")):
            self.state.launcher = True
        if tail in (
            "init_process_group",
            "spawn",
            "start_processes",
            "DistributedDataParallel",
            "FullyShardedDataParallel",
            "fully_shard",
        ):
            self.state.distributed = True
        if name.startswith("transformers") and is_model_class(tail):
            if config_built_model(self.state, call, name):  # ``GPT2LMHeadModel(GPT2Config(...))``
                return
        if self._runs_the_model(call, tail):
            self.families.cache_switch(call)
        if tail == "from_pretrained":
            self.families.from_pretrained(call, name)
            if "model" in self.state.fields and self.state.fields["model"].source.endswith(
                f":{call.lineno}"
            ):
                self.state.set(
                    "pretrained", True, call.lineno, self.state.fields["model"].confidence
                )
        elif tail == "from_config" and name.startswith(("transformers", "Auto")):
            if not config_built_model(self.state, call, name):
                self.state.set("pretrained", False, call.lineno)  # architecture only: from scratch

        elif name.startswith(_VISION_BUILDERS) and name != "timm.models.":
            arg = self.state.values.get(call.args[0]) if call.args and "timm" in name else None
            model = arg[0] if arg and isinstance(arg[0], str) else tail
            if model not in ("create_model", "get_model") and self._kept(call):
                self.state.set("model", model, call.lineno, arg[1] if arg else "high")
        elif tail in HF_ARGUMENTS:
            self.families.training_arguments(call)
            self.families.library_defaults(tail, call.lineno)
        elif tail in ("HfArgumentParser", "TrlParser") and call.args:  # TRL's is a subclass
            self.families.argument_parser(call)
        elif tail in HF_TRAINERS:
            self.state.signals.setdefault("train", call.lineno)
            if name.startswith(("lightning", "pytorch_lightning")):
                self.families.lightning(call)
        elif tail == "DataLoader" and _EVAL_TARGET.search(self.state.target):
            found = self.state.keyword(call, "batch_size")  # the evaluation loader: its own batch
            if found is not None and (value := positive_int(found[0])) is not None:
                cap, self.state.cap = (
                    self.state.cap,
                    self.state.path_cap,
                )  # this is the evaluation value itself
                self.state.set("eval_batch_size", value, call.lineno, found[1])
                self.state.cap = cap
        elif tail == "DataLoader":
            # medium: a script builds evaluation loaders too; TrainingArguments' per-device
            # train batch (high) wins, and among loaders the first (the training one) does
            found = self.state.keyword(call, "batch_size")
            if found is not None and (value := positive_int(found[0])) is not None:
                self.state.set(
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
            and tail in OPTIMIZERS
        ):
            self.families.optimizer(call, tail)
        elif tail in ("autocast",) and name.startswith("torch"):
            self.families.autocast(call)
        elif tail == "GradScaler":
            self.state.signals.setdefault("grad-scaler", call.lineno)
        elif tail in ("gradient_checkpointing_enable", "checkpoint", "checkpoint_sequential"):
            self.state.set("checkpointing", True, call.lineno)
        elif tail == "LoraConfig":
            self.state.take(call, "lora_rank", "r", convert=positive_int)
            self.state.take(
                call,
                "lora_targets",
                "target_modules",
                convert=_targets,
            )
            if "lora_rank" not in self.state.fields:  # peft's default rank
                self.state.set("lora_rank", 8, call.lineno, "medium")
        elif tail in ("FullyShardedDataParallel", "FSDP", "fully_shard"):
            strategy = ast.unparse(call)
            self.state.set(
                "sharding", "fsdp-grad-op" if "SHARD_GRAD_OP" in strategy else "fsdp", call.lineno
            )
        elif tail in ("DistributedDataParallel", "DDP"):
            self.state.set("sharding", "ddp", call.lineno, "medium")
        elif name.startswith("deepspeed") and tail == "initialize":
            self.state.signals.setdefault("train", call.lineno)
            found = self.state.keyword(call, "config", "config_params")
            if found:
                self.families.deepspeed(found[0], call.lineno, found[1])
        elif tail == "generate":
            self.state.signals.setdefault("generate", call.lineno)
            self.families.generation(call)
        elif tail == "GenerationConfig" or (
            tail == "from_pretrained" and "GenerationConfig" in name
        ):
            self.families.generation(call)
        elif tail == "Accelerator" and name.startswith("accelerate"):
            self.families.accelerator(call)
        elif tail in ("init_process_group", "spawn", "start_processes") and name.startswith(
            "torch"
        ):
            self.state.take(call, "gpus", "world_size", "nprocs", convert=positive_int)
        elif tail in ("getenv", "get"):
            self.families.environment(call, name)
        elif tail == "backward":
            self.state.signals.setdefault("train", call.lineno)
        elif tail in ("half", "bfloat16") and not call.args and self._casts_model(call):
            self.state.signals.setdefault(
                "weights-" + ("fp16" if tail == "half" else "bf16"), call.lineno
            )
        elif tail == "requires_grad_" and call.args:
            found = self.state.values.get(call.args[0])
            if found is not None and found[0] is False and self.state.cap != "low":
                self.state.frozen.setdefault(call.lineno, ast.unparse(call.func.value)[:40])  # type: ignore[attr-defined]
            if found is not None and isinstance(found[0], bool) and self.state.cap != "low":
                module = loop_module(call.func.value, call, self.state.values)  # type: ignore[attr-defined]
                self.state.freezes.append((call.lineno, module, found[0]))
        elif tail in ("no_grad", "inference_mode"):
            self.state.signals.setdefault("no-grad", call.lineno)
        elif tail == "to":
            self.families.cast(call)
        elif tail in _CROPS and name.startswith("torchvision"):
            found = (
                self.state.values.get(call.args[0])
                if call.args
                else self.state.keyword(call, "size")
            )
            size = found[0] if found else None
            if isinstance(size, (tuple, list)) and size:
                size = size[0]
            if positive_int(size) and ("image_size" not in self.state.fields or tail != "Resize"):
                self.state.set("image_size", size, call.lineno, "medium")
        elif tail in DATASET_SIDES and name.startswith("torchvision.datasets"):
            # the stored side: applied last, when no transform or flag set the size
            self.state.deferred.append(
                ("image_size", DATASET_SIDES[tail], f"{self.state.path}:{call.lineno}")
            )
        elif tail.startswith("create_model") or tail in ("get_model", "build_model"):
            found = (
                self.state.values.get(call.args[0])
                if call.args
                else self.state.keyword(call, "model_name")
            )
            built = model_name(found[0]) if found else None
            if built is not None and found is not None:
                self.state.set("model", built, call.lineno, found[1])
        if (tail != "DataLoader" and _LOADER.search(tail)) or self._own_dataset(call):
            self.families.loader(call, tail)
        if _TRAINING_CALL.search(tail) or self._drives_training(call):
            self.state.signals.setdefault("train-call", call.lineno)
        if (tail in ("AutoTokenizer", "tokenizer") or tail.endswith("tokenizer")) and not (
            self.state.target and _TARGETS.search(self.state.target)
        ):
            self.state.take(call, "seq_len", "max_length", convert=positive_int)

    def _drives_training(self, call: ast.Call) -> bool:
        """``conf.run()`` on a configuration object whose inherited step trains
        (:mod:`.runconfig_configclass`)."""
        func = call.func
        return (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and any(
                built.trains and built.driven == call.lineno and built.name == func.value.id
                for built in self.state.values.config_objects
            )
        )

    def _runs_the_model(self, call: ast.Call, tail: str) -> bool:
        """``model(ids, use_cache=False)``: a forward of the model read so far (the name it
        was bound to), or the ``from_pretrained`` that loads it — where ``use_cache`` is
        the model's own (``generate`` is read with its other options). A forward's switch
        is not a generation job's: ``generate`` keeps the cache its own options say."""
        if tail == "from_pretrained":
            return True
        return (
            bool(self.state.model_var)
            and isinstance(call.func, ast.Name)
            and call.func.id == self.state.model_var
            and not self.state.values.generates()
        )

    def _kept(self, call: ast.Call) -> bool:
        """Whether what ``call`` returns is kept as a module: assigned or returned, through
        device moves and wrappers (``model = DDP(models.resnet50().cuda())``) — not a helper
        of the models package whose result is a string or a list (``'-'.join([
        safe_model_name(args.model), ...])``: its name is no model's)."""
        node: ast.AST = call
        parent = self.state.values.paths.parent(node)
        while True:
            if isinstance(parent, ast.Attribute) and parent.value is node:
                grand = self.state.values.paths.parent(parent)  # ``.cuda()``, ``.to(device)``
                if not (isinstance(grand, ast.Call) and grand.func is parent):
                    return False
                node, parent = grand, self.state.values.paths.parent(grand)
            elif isinstance(parent, ast.Call) and node in parent.args:
                node, parent = parent, self.state.values.paths.parent(parent)  # a wrapper
            else:
                return isinstance(parent, (ast.Assign, ast.AnnAssign, ast.Return))

    def _own_dataset(self, call: ast.Call) -> bool:
        """``IMDbDataset(csv, max_length=256)``: a ``Dataset`` subclass the script defines,
        built with the length it cuts or pads its examples to (read as a loader's)."""
        if not isinstance(call.func, ast.Name):
            return False
        cls = self.state.values.classes.get(call.func.id)
        return cls is not None and any(
            (dotted(base) or "").rsplit(".", 1)[-1].endswith("Dataset") for base in cls.bases
        )

    def _casts_model(self, call: ast.Call) -> bool:
        """``model.half()`` as a statement or ``model = model.half()`` on the training path —
        not a checkpoint copy (``{"model": deepcopy(m).half()}``) or ``m.half().float()``."""
        if self.state.cap == "low":
            return False
        parent = self.state.values.paths.parent(call)
        if not isinstance(parent, (ast.Expr, ast.Assign)):
            return False
        if isinstance(parent, ast.Assign) and not MODEL_NAME.search(self.state.target):
            return False
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        while isinstance(receiver, (ast.Call, ast.Attribute)):
            receiver = receiver.func if isinstance(receiver, ast.Call) else receiver.value
        return isinstance(receiver, ast.Name) and bool(MODEL_NAME.search(receiver.id))

    def conventions(self, values: Values) -> None:
        """After the calls: conventional names, then the launch, then the structure."""
        self.named.read_conventions(values)
        self.launch.read(values)
        self.structure.note(values)

    def config(self) -> RunConfig:
        fields = dict(self.state.fields)
        at = lambda signal: f"{self.state.path}:{self.state.signals[signal]}"  # noqa: E731
        if "mode" not in fields:
            # a job that trains and then samples from what it trained is a training job
            if (
                "generate" in self.state.signals
                and not {"train", "train-call"} & self.state.signals.keys()
            ):
                fields["mode"] = Field("generate", at("generate"), "medium")
            elif "train" in self.state.signals:
                fields["mode"] = Field("train", at("train"), "medium")
            elif "train-call" in self.state.signals:
                fields["mode"] = Field("train", at("train-call") + " (a training loop)", "medium")
            elif "no-grad" in self.state.signals:
                fields["mode"] = Field("inference", at("no-grad"), "medium")
        weights_signal = next((s for s in self.state.signals if s.startswith("weights-")), None)
        weights = weights_signal[len("weights-") :] if weights_signal else None
        line = at(weights_signal) if weights_signal else self.state.path
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
        if "dtype" not in fields and "grad-scaler" in self.state.signals:
            fields["dtype"] = Field("amp-fp16", at("grad-scaler"), "medium")
        if "dtype" not in fields and mode == "train" and not weights:
            chosen = self._precision_chosen_at_launch()
            if chosen is None:
                fields["dtype"] = Field(
                    "fp32", f"{self.state.path} (no autocast or 16-bit weights found)", "medium"
                )
            else:  # not fp32 by default: the script picks a precision the reader cannot see
                self.state.notes.append(
                    f"{self.state.path}:{chosen.lineno}: the precision is chosen at launch "
                    f"(`{ast.unparse(chosen)[:60]}`): give --dtype"
                )
        if "world-size-env" in self.state.signals and "gpus" not in fields:
            self.state.notes.append(
                f"{at('world-size-env')}: the script reads WORLD_SIZE (a distributed "
                "launch); the world size is set at launch — give --gpus N or gpus in "
                "[tool.torchward.estimate] (assumed 1: nothing divided)"
            )
        return RunConfig(**fields)


def _is_dtype(call: ast.Call, name: str) -> bool:
    return any(name in ast.unparse(k.value) for k in call.keywords if k.arg == "dtype")


def _targets(value: object) -> str | tuple | None:
    """``target_modules=``: a name, a list of names; ``None`` (peft's default) says nothing."""
    if isinstance(value, str):
        return value
    return tuple(value) if isinstance(value, (list, tuple)) else None
