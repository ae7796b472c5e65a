"""TW027 peft-state-dict-patched."""

from __future__ import annotations

import ast

from ..effects.table import current as library_effects
from ..finding import Evidence, Severity
from ..rule import Invalid, Rule
from ..syntax.names import dotted, qualified_name


def _is_peft_state_dict(name: str | None) -> bool:
    """``peft.get_peft_model_state_dict`` under any of its import paths."""
    return (
        name is not None
        and name.startswith("peft.")
        and name.endswith(".get_peft_model_state_dict")
    )


class PeftStateDictPatched(Rule):
    """
    ## What it does
    Flags `model.state_dict` replaced by a function that returns
    `get_peft_model_state_dict(...)` — the patch old LoRA fine-tuning scripts used so
    that checkpoints hold only the adapter — on a model the file then saves with
    `model.save_pretrained(...)` or hands to a Hugging Face `Trainer` (whose checkpoints
    call `save_pretrained`).

    ## Why is this bad?
    Since PEFT 0.3, `save_pretrained` itself calls `get_peft_model_state_dict(model)`,
    which reads `model.state_dict()` and keeps the keys of the adapter by its name
    (`lora_A.default.weight`). With the patch, `model.state_dict()` already returns the
    adapter's weights with the adapter name stripped (`lora_A.weight`), so the second
    filter keeps nothing: after a full training run `adapter_model.bin` holds an empty
    dictionary (a few hundred bytes) and the trained adapter is lost.

    ## Example
    ```python
    old_state_dict = model.state_dict
    model.state_dict = (                                    # TW027
        lambda self, *_, **__: get_peft_model_state_dict(self, old_state_dict())
    ).__get__(model, type(model))
    trainer.train()
    model.save_pretrained(output_dir)
    ```
    Use instead: delete the patch; `save_pretrained` saves only the adapter already.

    ## Fix safety
    No automatic fix: the patch spans statements (the saved `old_state_dict` too), and
    on PEFT older than 0.3 it was what made checkpoints small.

    ## Known limitations
    The PEFT version the project installs is not read: the finding is a warning, right
    for any PEFT released since April 2023. Only an assignment to the `state_dict`
    attribute whose value calls `get_peft_model_state_dict` (resolved through the
    file's imports), directly or through a function of the file bound with
    `types.MethodType(fn, model)`, is seen, and only when the same model is saved with
    `save_pretrained` (also through `accelerator.unwrap_model(model)`) or passed as
    `model=` to a `Trainer` in the file; a model saved
    with `torch.save(model.state_dict(), ...)` is fine and never flagged.
    """

    code = "TW027"
    name = "peft-state-dict-patched"
    default_severity = Severity.WARNING
    summary = "model.state_dict is patched to return the PEFT adapter, so save_pretrained writes an empty adapter."

    VALID = (
        # the modern script: no patch
        "from peft import get_peft_model\ndef main(base, config, out):\n    model = get_peft_model(base, config)\n    model.save_pretrained(out)\n",
        # the patch, saved by torch.save: the filtered dict is what it wants
        "import torch\nfrom peft import get_peft_model_state_dict\ndef main(model, path):\n    old = model.state_dict\n    model.state_dict = lambda *a, **k: get_peft_model_state_dict(model, old())\n    torch.save(model.state_dict(), path)\n",
        # get_peft_model_state_dict called, not patched in
        "import torch\nfrom peft import get_peft_model_state_dict\ndef main(model, path):\n    torch.save(get_peft_model_state_dict(model), path)\n    model.save_pretrained(path)\n",
        # a different model saved
        "from peft import get_peft_model_state_dict\ndef main(model, merged, out):\n    old = model.state_dict\n    model.state_dict = lambda *a, **k: get_peft_model_state_dict(model, old())\n    merged.save_pretrained(out)\n",
        # a project function of the same name
        "def get_peft_model_state_dict(model, sd):\n    return sd\n\ndef main(model, out):\n    old = model.state_dict\n    model.state_dict = lambda *a, **k: get_peft_model_state_dict(model, old())\n    model.save_pretrained(out)\n",
        # state_dict replaced by something else
        "def main(model, out, keep):\n    old = model.state_dict\n    model.state_dict = lambda *a, **k: {n: t for n, t in old().items() if keep(n)}\n    model.save_pretrained(out)\n",
    )
    INVALID = (
        Invalid(
            "from peft import get_peft_model, get_peft_model_state_dict\ndef main(base, config, out):\n    model = get_peft_model(base, config)\n    old_state_dict = model.state_dict\n    model.state_dict = (\n        lambda self, *_, **__: get_peft_model_state_dict(self, old_state_dict())\n    ).__get__(model, type(model))\n    model.save_pretrained(out)\n",
            Severity.WARNING,
            line=5,
        ),
        # handed to a Trainer, whose checkpoints call save_pretrained
        Invalid(
            "import transformers\nfrom peft import get_peft_model_state_dict\ndef main(model, args, data):\n    old = model.state_dict\n    model.state_dict = (lambda self, *_, **__: get_peft_model_state_dict(self, old())).__get__(model, type(model))\n    trainer = transformers.Trainer(model=model, args=args, train_dataset=data)\n    trainer.train()\n",
            line=5,
        ),
        # imported from peft.utils
        Invalid(
            "from peft.utils import get_peft_model_state_dict\ndef main(model, out):\n    old = model.state_dict\n    model.state_dict = lambda *a, **k: get_peft_model_state_dict(model, old())\n    model.save_pretrained(out)\n",
            line=4,
        ),
        # the patch on an attribute of a trainer object
        Invalid(
            "import peft\nclass Tuner:\n    def __init__(self, model):\n        self.model = model\n    def patch(self):\n        old = self.model.state_dict\n        self.model.state_dict = lambda *a, **k: peft.get_peft_model_state_dict(self.model, old())\n    def save(self, out):\n        self.model.save_pretrained(out)\n",
            line=7,
        ),
    )

    def check(self, facts):
        source = facts.analyzer.source
        if "get_peft_model_state_dict" not in source or "state_dict" not in source:
            return
        imports = facts.index.imports
        trainers = library_effects()  # whose checkpoints call the model's save_pretrained
        patches: list[tuple[str, ast.Assign]] = []
        # functions whose body builds the adapter's state dict (``def adapter_only(self):``
        # bound with ``types.MethodType(adapter_only, model)``)
        patching = {
            node.name
            for node in ast.walk(facts.analyzer.tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and _calls_peft(node, imports)
        }
        unwrapping = trainers.model_unwrapping_methods()
        saves: dict[str, tuple[ast.AST, str]] = {}  # model path -> where and how it is saved
        for node in ast.walk(facts.analyzer.tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if not isinstance(target, ast.Attribute) or target.attr != "state_dict":
                        continue
                    path = dotted(target)
                    if path and _calls_peft(node.value, imports, patching):
                        patches.append((path[: -len(".state_dict")], node))
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr == "save_pretrained":
                    owner = dotted(_unwrapped(func.value, unwrapping))
                    if owner:
                        saves.setdefault(owner, (node, "the model is saved here"))
                elif trainers.is_trainer(qualified_name(func, imports)):
                    for keyword in node.keywords:
                        owner = dotted(keyword.value) if keyword.arg == "model" else None
                        if owner:
                            sentence = "this Trainer's checkpoints call `save_pretrained`"
                            saves.setdefault(owner, (node, sentence))
        for owner, patch in patches:
            if owner not in saves:
                continue
            save, sentence = saves[owner]
            yield self.finding(
                facts.lines.span(patch.targets[0]),
                f"`{owner}.state_dict` is replaced by one that returns the PEFT adapter's weights; "
                "since PEFT 0.3 `save_pretrained` filters `state_dict()` for the adapter itself, so "
                "the filter runs twice and the saved adapter is empty after the whole run. Delete "
                "the patch: `save_pretrained` already saves only the adapter.",
                evidence=[Evidence(facts.lines.span(save), sentence)],
            )


def _calls_peft(value: ast.AST, imports, patching: set[str] | frozenset[str] = frozenset()) -> bool:
    """``value`` calls the PEFT adapter's state dict, or names a function of the file
    (``patching``) that does."""
    return any(
        (isinstance(node, ast.Call) and _is_peft_state_dict(qualified_name(node.func, imports)))
        or (isinstance(node, ast.Name) and node.id in patching)
        for node in ast.walk(value)
    )


def _unwrapped(owner: ast.expr, unwrapping: frozenset[str]) -> ast.expr:
    """The model a save is called on: ``accelerator.unwrap_model(model)`` (a method the
    library-effects table says returns the model it is handed) saves ``model``."""
    if (
        isinstance(owner, ast.Call)
        and isinstance(owner.func, ast.Attribute)
        and owner.func.attr in unwrapping
        and owner.args
    ):
        return owner.args[0]
    return owner
