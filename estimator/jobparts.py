"""What a training job holds besides one fully trained model: frozen parameters and other
models on the device (issue 12, "job structure as phases").

The script reader (``torchward.analysis.job.runconfig``) states two typed facts:

- :class:`Freezing`: the sub-modules of the estimated model it freezes
  (``model.requires_grad_(False)``, ``for p in model.bert.parameters(): p.requires_grad =
  False``) and those it makes trainable again afterwards (a head, the last blocks);
- :class:`DeviceModel`: every other model it loads (a VAE and a text encoder beside a
  diffusion UNet, a teacher beside a student, a DPO reference model).

How PyTorch allocates for them, which :mod:`.costmodel` follows:

- a parameter with ``requires_grad=False`` gets no gradient and no optimizer state
  (``torch.optim`` skips parameters whose ``.grad`` is ``None``);
- autograd saves nothing for an op none of whose inputs requires grad: the layers *before*
  the first trainable one save no activations and run as an inference forward does (only
  the current layer's intermediates are live); the layers after it save as usual, because
  the gradient flows back through them to the trainable ones;
- autocast caches its 16-bit weight copies only for leaf tensors that require grad
  (``cached_cast`` in ``aten/src/ATen/autocast_mode.cpp``): a frozen weight's copy is made
  and freed at each use, not kept for the whole forward;
- every model moved to the device holds its weights for the whole step; a frozen one run
  under ``torch.no_grad()`` adds its own inference forward (one layer's intermediates), and
  a decoder's logits it returns (a teacher's) stay referenced until the loss is computed;
- a new layer in place of the LM head (:class:`NewHead`, a classifier) makes the logits its
  outputs', not the vocabulary's (:mod:`.trainedtail` for what that uncovers).

Sub-module names are interpreted from a short vocabulary (:data:`_HEADS`, :data:`_BACKBONES`,
...); a name outside it is not guessed: :func:`.trainable.trainable_parts` answers ``None``
and the estimate keeps every parameter trainable (an upper bound, said in a note).
"""

from __future__ import annotations

import attrs

from .architecture import Architecture, lookup_model
from .names import UnknownNameError
from .shape import ModelShape, shape_of

__all__ = [
    "DeviceModel",
    "Freezing",
    "NewHead",
    "Structure",
    "device_model_shapes",
    "device_models_setting",
    "freezing_setting",
    "structure_facts",
]


@attrs.frozen
class NewHead:
    """A new layer the script assigns in place of the model's output head
    (``model.out_head = nn.Linear(emb_dim, num_classes)``): the logits are its outputs'."""

    module: str
    """The head's name relative to the model (``lm_head``, ``out_head``)."""
    outputs: int | None
    """Its ``out_features`` read from the script (``num_classes = 2``); ``None``: not read."""


@attrs.frozen
class Freezing:
    """Sub-modules of the estimated model that the script freezes, relative to the model
    (``""`` is the model itself, ``"bert"``, ``"trf_blocks[-1]"``), in the order it does so."""

    frozen: tuple[str, ...]
    trainable: tuple[str, ...] = ()
    """Set trainable again after the freezing (``model.fc.requires_grad_(True)``); ``=fc``:
    replaced by a new layer (``model.fc = nn.Linear(2048, 10)``), trainable by default."""
    new_head: NewHead | None = None
    """The output width of the layer replacing the head, when the script gives one."""

    def __str__(self) -> str:
        text = "frozen: " + ", ".join(p or "the whole model" for p in self.frozen)
        again = [p[1:] + " (a new layer)" if p.startswith("=") else p for p in self.trainable]
        if self.new_head is not None and self.new_head.outputs is not None:
            again = [
                f"{a[:-1]}, {self.new_head.outputs} outputs)"
                if a.startswith(self.new_head.module + " (")
                else a
                for a in again
            ]
        return text + ("; trainable again: " + ", ".join(again) if again else "")


@attrs.frozen
class DeviceModel:
    """Another model the job keeps on the device."""

    name: str
    """What ``from_pretrained`` was given (a catalog name, an HF id), else the class name."""
    variable: str
    trained: bool = False
    """Its parameters go to an optimizer (a GAN's second network): not only a forward."""
    source: str = ""


@attrs.frozen
class Structure:
    """What :func:`structure_facts` makes of a script's loads and ``requires_grad`` changes."""

    freezing: Freezing | None
    others: tuple[DeviceModel, ...]
    unowned: tuple[str, ...]
    """``path:line (expression)`` of changes no loaded model owns (not interpreted)."""
    model: str | None = None
    """The model to estimate when it is not the one first read: the loaded model the
    optimizer trains (a student loaded after its teacher)."""


_HEADS = {
    "fc",
    "classifier",
    "head",
    "heads",
    "lm_head",
    "out_head",
    "score",
    "pooler",
    "cls",
    "qa_outputs",
}
_NORMS = {"final_norm", "ln_f", "norm", "final_layernorm", "final_layer_norm", "ln_final"}
_EMBEDDINGS = {"embeddings", "embed_tokens", "wte", "wpe", "tok_emb", "pos_emb", "word_embeddings"}
_BACKBONES = {
    "bert",
    "roberta",
    "distilbert",
    "deberta",
    "xlm_roberta",
    "base_model",
    "model",
    "transformer",
    "backbone",
    "features",
    "gpt_neox",
    "vit",
    "body",
}
_BLOCKS = {"layers", "h", "blocks", "trf_blocks", "layer", "block"}


def _last(part: str) -> str:
    return part.rsplit(".", 1)[-1]


def device_model_shapes(
    models: tuple[DeviceModel, ...],
) -> tuple[list[tuple[DeviceModel, Architecture, ModelShape]], list[DeviceModel]]:
    """(sized, unsized): the other models the catalog knows, and those it does not."""
    sized, unsized = [], []
    for model in models:
        try:
            arch = lookup_model(model.name)
        except (UnknownNameError, ValueError):
            unsized.append(model)
            continue
        sized.append((model, arch, shape_of(arch)))
    return sized, unsized


def freezing_setting(value: object) -> Freezing:
    """``frozen = ["bert"]`` or ``frozen = {frozen = [""], trainable = ["fc"]}`` in
    ``[tool.torchward.estimate]`` (``""``: the whole model); a new head's width as
    ``{frozen = [""], trainable = ["=lm_head"], head-outputs = 2}``."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return Freezing(tuple(value))
    if isinstance(value, dict) and set(value) <= {"frozen", "trainable", "head-outputs"}:
        frozen, trainable = value.get("frozen", []), value.get("trainable", [])
        outputs = value.get("head-outputs")
        if all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in (frozen, trainable)
        ) and (
            outputs is None
            or (isinstance(outputs, int) and not isinstance(outputs, bool) and outputs > 0)
        ):
            new = [t[1:] for t in trainable if t.startswith("=") and _last(t[1:]) in _HEADS]
            head = NewHead(new[0], outputs) if new else None
            return Freezing(tuple(frozen), tuple(trainable), head)
    raise ValueError(
        'expected a list of sub-module names like ["bert"] or a table '
        '{frozen = [""], trainable = ["fc"]} (a new head: trainable = ["=lm_head"], '
        "head-outputs = 2)"
    )


def device_models_setting(value: object) -> tuple[DeviceModel, ...]:
    """``device-models = ["gpt2-large"]``: other models the job keeps on the device (frozen,
    run under no_grad) — catalog names or HF ids."""
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(DeviceModel(v, v, source="settings") for v in value)
    raise ValueError('expected a list of model names like ["gpt2-large"]')


def _split(expr: str, roots: set[str]) -> tuple[str, str] | None:
    """``model.bert`` → (``model``, ``bert``) for a root in ``roots`` (``self.model`` too)."""
    for root in sorted(roots, key=len, reverse=True):
        if expr == root:
            return root, ""
        if expr.startswith(root) and expr[len(root)] in ".[":
            return root, expr[len(root) :].lstrip(".")
    return None


def structure_facts(
    model_var: str,
    loads: list[tuple[str, str | None, str]],
    freezes: list[tuple[int, str, bool]],
    optimized: set[str],
    path: str,
    replaced: set[str] | frozenset[str] | dict[str, int | None] = frozenset(),
    model_name: str | None = None,
) -> Structure:
    """The typed facts from what a script reader saw, in source order.

    ``model_var``: the variable holding the estimated model (``""``: ``model``); ``loads``:
    ``(variable, name given or None, class)`` of every ``from_pretrained`` on the default
    path; ``freezes``: ``(line, module expression, requires_grad)`` of every
    ``requires_grad_(...)`` / ``p.requires_grad = ...`` whose module is known; ``optimized``:
    variables whose parameters an optimizer is given; ``replaced``: module expressions
    assigned a new layer (``model.fc = nn.Linear(...)``), trainable as ``=fc`` — a mapping
    also gives each one's ``out_features`` when read (a new head's width); ``model_name``:
    the checkpoint the estimate sizes — another load of it (a class method converting its
    weights, as llm.c's ``GPT.from_pretrained`` does) is the same model, not another one."""
    main = model_var.split(",")[0].strip() or "model"
    trained = [v for v, name, _ in loads if name and v.split(",")[0].strip() in optimized]
    model = None
    if main not in optimized and len(trained) == 1:
        # the optimizer trains another loaded model (a student beside its teacher): that is
        # the model the estimate sizes
        main = trained[0].split(",")[0].strip()
        model = next(name for v, name, _ in loads if v == trained[0])
    others: dict[str, DeviceModel] = {}
    for variable, name, cls in loads:
        variable = variable.split(",")[0].strip()
        if not variable or variable == main or variable in others or "Peft" in cls:
            continue  # a PEFT wrapper loads adapters onto a model already counted
        if name is not None and name == (model or model_name):
            continue
        others[variable] = DeviceModel(
            name or cls, variable, trained=variable in optimized, source=path
        )
    frozen: list[str] = []
    trainable: list[str] = []
    unowned: list[str] = []
    new_head = None
    for line, expr, requires_grad in sorted(freezes):
        split = _split(expr, {main})
        if split is not None:
            new = "=" if expr in replaced else ""
            if new and _last(split[1]) in _HEADS:
                outputs = replaced.get(expr) if isinstance(replaced, dict) else None
                new_head = NewHead(split[1], outputs)
            (trainable if requires_grad else frozen).append(new + split[1])
            if split[1] == "":  # the whole model: undoes what came before
                trainable.clear()
                if requires_grad:
                    frozen.clear()
            elif not requires_grad and split[1] in trainable:
                trainable.remove(split[1])
        elif expr in replaced:
            continue  # a layer assigned to another object: not a change of requires_grad
        elif _split(expr, set(others)) is None:
            unowned.append(f"{path}:{line} ({expr})")
        elif not requires_grad:
            owner = _split(expr, set(others))
            assert owner is not None
            others[owner[0]] = attrs.evolve(others[owner[0]], trained=False)
    if new_head is not None and "=" + new_head.module not in trainable:
        new_head = None  # frozen again afterwards
    freezing = Freezing(tuple(frozen), tuple(trainable), new_head) if frozen else None
    return Structure(freezing, tuple(others.values()), tuple(unowned), model)
