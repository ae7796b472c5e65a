"""What torchward knows about the APIs of PyTorch and its frameworks, by qualified name.

Every recognition in the analysis starts here: a constructor or factory named by its
canonical qualified name (see :mod:`torchward.analysis.syntax.names`) gives a value its kind.
Nothing here looks at variable names; the one name heuristic of the analysis lives in
:mod:`torchward.analysis.facts.fallback`. What third-party libraries' calls build or do (timm's
scalers and ``create_model``, Accelerate, PEFT, bitsandbytes optimizers) is data: the
library-effects table (:mod:`torchward.analysis.effects.table`), which
:func:`kind_of_constructor` consults first.
"""

from __future__ import annotations

from ..effects.table import current as library_effects
from .values import Kind

# --- losses -------------------------------------------------------------------------
LOSS_CLASSES = {
    "torch.nn.CrossEntropyLoss": "cross_entropy",
    "torch.nn.NLLLoss": "nll",
    "torch.nn.BCELoss": "bce",
    "torch.nn.BCEWithLogitsLoss": "bce_logits",
}
LOSS_FUNCTIONS = {
    "torch.nn.functional.cross_entropy": "cross_entropy",
    "torch.nn.functional.nll_loss": "nll",
    "torch.nn.functional.binary_cross_entropy": "bce",
    "torch.nn.functional.binary_cross_entropy_with_logits": "bce_logits",
}
OTHER_FUNCTIONAL_LOSS_SUFFIXES = ("_loss", "loss")

# --- activations --------------------------------------------------------------------
ACTIVATION_FUNCTIONS = {
    "torch.softmax": "softmax",
    "torch.nn.functional.softmax": "softmax",
    "torch.special.softmax": "softmax",
    "torch.log_softmax": "log_softmax",
    "torch.nn.functional.log_softmax": "log_softmax",
    "torch.special.log_softmax": "log_softmax",
    "torch.sigmoid": "sigmoid",
    "torch.nn.functional.sigmoid": "sigmoid",
    "torch.special.expit": "sigmoid",
}
ACTIVATION_METHODS = {"softmax": "softmax", "log_softmax": "log_softmax", "sigmoid": "sigmoid"}
ACTIVATION_MODULES = {
    "torch.nn.Softmax": "softmax",
    "torch.nn.LogSoftmax": "log_softmax",
    "torch.nn.Sigmoid": "sigmoid",
}
# Layers whose output is a raw, unbounded score: a network ending in one emits logits.
RAW_OUTPUT_MODULES = {"torch.nn.Linear", "torch.nn.Bilinear", "torch.nn.LazyLinear"}
# Tensor methods and functions that keep the activation of their input (views, casts).
ACTIVATION_PRESERVING_METHODS = {
    "squeeze",
    "unsqueeze",
    "view",
    "reshape",
    "flatten",
    "float",
    "double",
    "half",
    "contiguous",
    "to",
    "clamp",
    "clip",
    "permute",
    "transpose",
    "cuda",
    "cpu",
    "type_as",
}

# --- modules and models -------------------------------------------------------------
NON_MODULE_NN_NAMES = {
    "torch.nn.Parameter",
    "torch.nn.ParameterList",
    "torch.nn.ParameterDict",
    "torch.nn.Module",
}
#: FSDP2 shards the module it is given in place (and returns it)
IN_PLACE_SHARDING = {
    "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard.fully_shard",
}
#: wraps after which every process trains the same model on its own data (see effects/distributed.py)
DDP_WRAPPERS = {
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
} | IN_PLACE_SHARDING
MODEL_PASSTHROUGH_FUNCTIONS = {
    "torch.compile",
    "torch.nn.parallel.DataParallel",
    "torch.jit.script",
} | DDP_WRAPPERS
TOKENIZER_MARKERS = ("Tokenizer", "Processor", "FeatureExtractor", "ImageProcessor")
MODEL_MARKERS = ("Model", "For", "Transformer", "Net")
#: every import path of ``LightningModule`` (``pytorch_lightning.`` and ``lightning.pytorch.``
#: fold to ``lightning.`` in names.py): the package root and the modules that define it
LIGHTNING_MODULE_BASES = {
    "lightning.LightningModule",
    "lightning.core.LightningModule",
    "lightning.core.module.LightningModule",
    "lightning.core.lightning.LightningModule",  # pytorch_lightning 1.x
}
MODULE_BASES = {"torch.nn.Module", "transformers.PreTrainedModel"} | LIGHTNING_MODULE_BASES
LIGHTNING_NO_GRAD_HOOKS = {
    "validation_step",
    "test_step",
    "predict_step",
    "on_validation_batch_end",
}

# --- optimisation -------------------------------------------------------------------
OPTIMIZER_PREFIX = "torch.optim."  # other libraries' optimizers: the library-effects table
SCHEDULER_PREFIXES = (
    "torch.optim.lr_scheduler.",
    "transformers.get_",
    "transformers.optimization.get_",
    "timm.scheduler.",
)

# --- data ---------------------------------------------------------------------------
LOADERS = {"torch.utils.data.DataLoader", "torch_geometric.loader.DataLoader"}
DISTRIBUTED_SAMPLERS = {"torch.utils.data.DistributedSampler"}
ITERABLE_DATASET_BASES = {
    "torch.utils.data.IterableDataset",
    "torchdata.datapipes.iter.IterDataPipe",
}
DATASET_BASES = {"torch.utils.data.Dataset"} | ITERABLE_DATASET_BASES

# --- grad mode ----------------------------------------------------------------------
GRAD_DISABLING = {"torch.no_grad", "torch.inference_mode"}
GRAD_ENABLING = {"torch.enable_grad"}
GRAD_SETTING = "torch.set_grad_enabled"


def is_grad_disabling(name: str | None) -> bool:
    """``torch.no_grad`` and friends, and project wrappers named after them
    (ultralytics' ``smart_inference_mode``): a decorator or context manager whose name
    says ``no_grad`` or ``inference_mode`` is one in every codebase we scanned."""
    if not name:
        return False
    leaf = name.rsplit(".", 1)[-1]
    return name in GRAD_DISABLING or "no_grad" in leaf or "inference_mode" in leaf


# --- tensors ------------------------------------------------------------------------
# Methods and attributes of a tensor whose result carries no autograd graph.
DETACHING_METHODS = {
    "item",
    "tolist",
    "detach",
    "detach_",
    "numpy",
    "argmax",
    "argmin",
    "argsort",
    "long",
    "int",
    "bool",
    "byte",
    "short",
    "char",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "isnan",
    "isinf",
    "isfinite",
    "nonzero",
    "size",
    "dim",
    "numel",
    "ndimension",
    "nelement",
    "get_device",
    "stride",
    "data_ptr",
    "element_size",
    "equal",
    "allclose",
    "any",
    "all",
    "__bool__",
    "__len__",
    "sign",
}
DETACHING_ATTRIBUTES = {
    "data",
    "shape",
    "ndim",
    "dtype",
    "device",
    "requires_grad",
    "is_cuda",
    "grad_fn",
    "is_leaf",
}
DETACHING_BUILTINS = {
    "float",
    "int",
    "bool",
    "len",
    "str",
    "repr",
    "print",
    "isinstance",
    "type",
    "format",
    "hash",
    "id",
    "range",
    "math",
}
#: builtins that dispatch to a tensor's own operator (``Tensor.__abs__``,
#: ``Tensor.__round__``) and so return a tensor on the same graph
GRAPH_KEEPING_BUILTINS = {"abs", "round"}
#: functions that run a backward: the argument holding the roots (a tensor or a sequence
#: of them), by keyword and position, and the framework whose semantics apply (its traits
#: in the library-effects table; None: plain torch, gradients accumulate in ``.grad``)
BACKWARD_FUNCTIONS: dict[str, tuple[str, int, str | None]] = {
    "torch.autograd.backward": ("tensors", 0, None),
    # (context_id, roots): the gradients go to the context, a fresh one per iteration
    "torch.distributed.autograd.backward": ("roots", 1, "torch.distributed.autograd"),
}
DETACHING_TORCH_FUNCTIONS = {
    "torch.argmax",
    "torch.argmin",
    "torch.argsort",
    "torch.tensor",
    "torch.as_tensor",
    "torch.zeros",
    "torch.ones",
    "torch.empty",
    "torch.full",
    "torch.randn",
    "torch.rand",
    "torch.randint",
    "torch.arange",
    "torch.eq",
    "torch.ne",
    "torch.isnan",
    "torch.isinf",
    "torch.isfinite",
    "torch.zeros_like",
    "torch.ones_like",
    "torch.empty_like",
    "torch.randn_like",
    "torch.no_grad",
    "torch.numel",
    "torch.equal",
    "torch.allclose",
}
INTEGER_DTYPES = {
    "torch.long",
    "torch.int",
    "torch.int64",
    "torch.int32",
    "torch.bool",
    "torch.int16",
    "torch.int8",
    "torch.uint8",
}
SCALING_METHODS = {"div", "div_", "true_divide", "mul", "mul_", "__truediv__"}
SCALING_FUNCTIONS = {"torch.div", "torch.true_divide", "torch.mul"}
#: in-place methods that scale a tensor: on ``p.grad`` they normalise gradients by hand
GRAD_SCALING_METHODS = {"div_", "mul_"}

STORING_METHODS = {
    "append",
    "extend",
    "insert",
    "add",
    "appendleft",
    "setdefault",
    "update",
    "__setitem__",
}
# Calls on an iterable that yield its elements: ``for batch in tqdm(loader)``.
ITERATION_WRAPPERS = {
    "enumerate",
    "tqdm",
    "tqdm.tqdm",
    "tqdm.auto.tqdm",
    "iter",
    "zip",
    "tqdm.notebook.tqdm",
    "rich.progress.track",
}


#: standard-library containers: values stored in them are kept like in a list or dict
CONTAINER_CONSTRUCTORS = {
    "collections.defaultdict",
    "collections.OrderedDict",
    "collections.deque",
}


def kind_of_constructor(name: str) -> Kind | None:
    """The kind of the value a call to the canonical ``name`` returns, if known."""
    effects = library_effects()
    listed = effects.constructed_kind(name)
    if listed is not None:
        return listed  # a library's scaler, accelerator, model factory or optimizer
    if name in effects.model_wrappers:
        return Kind.MODEL
    last = name.rsplit(".", 1)[-1]
    if name in LOSS_CLASSES or (name.startswith("torch.nn.") and last.endswith("Loss")):
        return Kind.CRITERION
    if name in LOADERS:
        return Kind.LOADER
    if name in DISTRIBUTED_SAMPLERS or (
        name.startswith("torch.utils.data.") and last.endswith("Sampler")
    ):
        return Kind.SAMPLER
    if name in DATASET_BASES or (name.startswith("torch.utils.data.") and last.endswith("Dataset")):
        return Kind.DATASET
    if name in CONTAINER_CONSTRUCTORS:
        return Kind.CONTAINER
    if name.startswith(SCHEDULER_PREFIXES):
        return Kind.SCHEDULER
    if name.startswith(OPTIMIZER_PREFIX) and last[:1].isupper() and last != "Optimizer":
        return Kind.OPTIMIZER
    if name in ("torch.nn.parallel.DataParallel",) or name in DDP_WRAPPERS:
        return Kind.MODEL
    if (
        name.startswith("torch.nn.")
        and last[:1].isupper()
        and name not in NON_MODULE_NN_NAMES
        and "." not in name[len("torch.nn.") :]
    ):
        return Kind.MODEL
    if (
        name.startswith(("torchvision.models.", "timm.models."))
        and last[:1].islower()
        and not last.startswith("get_")
    ):
        return Kind.MODEL
    if name.startswith(("transformers.", "sentence_transformers.", "diffusers.")):
        parts = name.split(".")
        symbol = parts[-2] if parts[-1] in ("from_pretrained", "from_config") else parts[-1]
        if any(marker in symbol for marker in TOKENIZER_MARKERS):
            return Kind.TOKENIZER
        if (
            symbol[:1].isupper()
            and any(marker in symbol for marker in MODEL_MARKERS)
            and "Config" not in symbol
        ):
            return Kind.MODEL
    return None


def loss_type_of_class(name: str) -> str:
    return LOSS_CLASSES.get(name, "other")


def is_functional_loss(name: str) -> bool:
    return name in LOSS_FUNCTIONS or (
        name.startswith("torch.nn.functional.") and name.endswith(OTHER_FUNCTIONAL_LOSS_SUFFIXES)
    )
