"""TW024 validation-in-train-mode."""

from __future__ import annotations

import ast

from ..facts.events import EventKind
from ..facts.structure import loop_header, runs_backward
from ..facts.submodules import builds_mode_dependent_layer, is_mode_sensitive
from ..facts.values import Kind, Mode
from ..finding import Applicability, Confidence, Evidence, Severity, Span
from ..rule import Fixed, Invalid, Rule
from ..syntax.names import qualified_name
from ..workspace.models import project_classes
from .mode_switch import eval_mode_switch


class ValidationInTrainMode(Rule):
    """
    ## What it does
    Flags an evaluation pass — a loop over a data loader that runs a model under
    `torch.no_grad()` / `inference_mode()` and never calls `backward()` — while the model
    is in training mode: switched there by `model.train()` (at the start of the epoch,
    say) or never switched out of the training mode every `nn.Module` starts in.

    ## Why is this bad?
    In training mode dropout keeps dropping activations and batch normalisation
    normalises with the statistics of each validation batch *and updates its running
    statistics with them*. Validation metrics come out noisy and pessimistic, depend on
    the batch size, and the validation data leaks into the model's buffers. `no_grad()`
    only turns off gradient recording; it does not change the mode.

    ## Example
    ```python
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            ...
        with torch.no_grad():
            for x, y in val_loader:           # TW024: dropout and batch norm in train mode
                correct += (model(x).argmax(1) == y).sum()
    ```
    Use instead:
    ```python
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum()
        model.train()
    ```

    ## Fix safety
    The fix inserts `model.eval()` just before the evaluation loop and `model.train()`
    just after it, so the model leaves the pass in the mode it entered it (training mode,
    which is what the finding established). Proof obligations, checked on the source: the
    model is called as a plain name or attribute that the loop does not rebind; the loop
    contains no `return`, `yield` or `raise` that would leave it before the restoring
    `model.train()`; and the loop is a statement of its own. The evaluation's outputs then
    change as they should (dropout off, running statistics used and no longer updated by
    validation batches), and training resumes in the mode it had: safe. When the file
    sets any other module's mode (`model.backbone.eval()` to freeze batch norm, `m.eval()`
    over `model.modules()`), `model.train()` after the pass would undo it: unsafe.
    Otherwise there is no fix.

    ## Known limitations
    A model that was never switched counts only when it is an instance of an `nn.Module`
    class of the same file and the file never calls `.eval()` (pretrained models from
    `from_pretrained` start in eval mode). Evaluation passes in Lightning hooks and
    framework loops (which switch modes themselves) are not considered. A mode switched by
    a helper from another module is not seen, so such a model is not flagged.
    Deliberate or harmless cases it stays quiet on: a model whose class has no dropout,
    no batch or instance norm, no recurrent or transformer layer and never reads
    `self.training` (the mode changes nothing), whether the class is defined in the file
    or in another module of the project (`from models import Net`, read there); a class
    of another module that builds layers from a third module or a library is taken to
    be mode-sensitive.
    """

    code = "TW024"
    name = "validation-in-train-mode"
    default_severity = Severity.WARNING
    summary = "An evaluation pass runs the model in training mode (dropout, batch-norm updates)."

    _NET = "import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n        self.drop = nn.Dropout(0.5)\n\n    def forward(self, x):\n        return self.fc(self.drop(x))\n\n"
    VALID = (
        _NET
        + "def main(train_loader, val_loader, opt):\n    model = Net()\n    for epoch in range(3):\n        model.train()\n        for x in train_loader:\n            model(x).sum().backward()\n            opt.step()\n        model.eval()\n        with torch.no_grad():\n            for x in val_loader:\n                model(x)\n",
        # a helper switches to eval
        _NET
        + "def evaluate(model, loader):\n    model.eval()\n    with torch.no_grad():\n        for x in loader:\n            model(x)\n\ndef main(train_loader, val_loader, opt):\n    model = Net()\n    for epoch in range(3):\n        model.train()\n        for x in train_loader:\n            model(x).sum().backward()\n            opt.step()\n        evaluate(model, val_loader)\n",
        # gradients on: a training loop, not an evaluation
        _NET
        + "def main(loader, opt):\n    model = Net()\n    model.train()\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
        # a pretrained model starts in eval mode
        "import torch\nfrom transformers import AutoModel\ndef main(loader):\n    model = AutoModel.from_pretrained('bert-base-uncased')\n    with torch.no_grad():\n        for batch in loader:\n            model(**batch)\n",
        # no dropout, no batch norm: the mode changes nothing
        "import torch\nimport torch.nn as nn\nclass Lin(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\ndef main(loader):\n    model = Lin()\n    with torch.no_grad():\n        for x in loader:\n            model(x)\n",
        # a model passed in, mode unknown
        "import torch\ndef evaluate(model, loader):\n    with torch.no_grad():\n        for x in loader:\n            model(x)\n",
        # the file calls eval() somewhere the analysis cannot connect
        _NET
        + "def main(loader, switch):\n    model = Net()\n    switch(model)\n    with torch.no_grad():\n        for x in loader:\n            model(x)\n\ndef switch(m):\n    m.eval()\n",
        # Monte-Carlo dropout: eval() then train() on purpose is explicit; here in no loop
        _NET
        + "def main(x):\n    model = Net()\n    model.train()\n    with torch.no_grad():\n        return model(x)\n",
    )
    INVALID = (
        Invalid(
            _NET
            + "def main(train_loader, val_loader, opt):\n    model = Net()\n    for epoch in range(3):\n        model.train()\n        for x in train_loader:\n            model(x).sum().backward()\n            opt.step()\n        with torch.no_grad():\n            for x in val_loader:\n                model(x)\n",
            Severity.WARNING,
            line=20,
            fixed=Fixed(
                _NET
                + "def main(train_loader, val_loader, opt):\n    model = Net()\n    for epoch in range(3):\n        model.train()\n        for x in train_loader:\n            model(x).sum().backward()\n            opt.step()\n        with torch.no_grad():\n            model.eval()\n            for x in val_loader:\n                model(x)\n            model.train()\n",
                Applicability.SAFE,
            ),
        ),
        # never switched at all
        Invalid(
            _NET
            + "model = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x in range(10):\n    model(torch.randn(2, 4)).sum().backward()\n    opt.step()\nwith torch.inference_mode():\n    for x in val_loader:\n        model(x)\n",
            line=18,
            fixed=Fixed(
                _NET
                + "model = Net()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x in range(10):\n    model(torch.randn(2, 4)).sum().backward()\n    opt.step()\nwith torch.inference_mode():\n    model.eval()\n    for x in val_loader:\n        model(x)\n    model.train()\n",
                Applicability.SAFE,
            ),
        ),
        # an evaluation helper called after training, in train mode
        Invalid(
            _NET
            + "def evaluate(model, loader):\n    total = 0\n    with torch.no_grad():\n        for x in loader:\n            total += model(x).sum().item()\n    return total\n\ndef main(train_loader, val_loader, opt):\n    model = Net()\n    model.train()\n    for x in train_loader:\n        model(x).sum().backward()\n        opt.step()\n    print(evaluate(model, val_loader))\n",
            line=15,
            fixed=Fixed(
                _NET
                + "def evaluate(model, loader):\n    total = 0\n    with torch.no_grad():\n        model.eval()\n        for x in loader:\n            total += model(x).sum().item()\n        model.train()\n    return total\n\ndef main(train_loader, val_loader, opt):\n    model = Net()\n    model.train()\n    for x in train_loader:\n        model(x).sum().backward()\n        opt.step()\n    print(evaluate(model, val_loader))\n",
                Applicability.SAFE,
            ),
        ),
        # the loop returns from inside: flagged, but model.train() could be skipped: no fix
        Invalid(
            _NET
            + "def best(loader):\n    model = Net()\n    model.train()\n    with torch.no_grad():\n        for x in loader:\n            if model(x).sum() > 0:\n                return x\n",
            line=16,
            fixed=None,
        ),
    )

    def check(self, facts):
        source = facts.analyzer.source
        never_switched_ok = ".eval(" not in source and "train(False)" not in source
        reported = set()
        for trace in facts.traces:
            iterated = {
                e.loops[-1] for e in trace.events if e.kind is EventKind.ITERATE and e.loops
            }
            for forward in trace.events:
                if (
                    forward.kind is not EventKind.FORWARD
                    or forward.grad_enabled
                    or not forward.loops
                ):
                    continue
                loop = forward.loops[-1]
                if runs_backward(trace, loop) or (loop, trace.function) in reported:
                    continue
                model = forward.target
                if (
                    model is None
                    or model.kind is not Kind.MODEL
                    or model.confidence is not Confidence.HIGH
                ):
                    continue
                if model.model_facts is not None and model.model_facts.lightning:
                    continue
                evidence = [Evidence(forward.span, "the model runs here")]
                if model.mode is not None:
                    if model.mode.mode is not Mode.TRAIN:
                        continue
                    evidence.append(Evidence(model.mode.evidence.span, model.mode.evidence.message))
                elif not never_switched_ok or model.origin is None:
                    continue
                elif model.class_name:
                    evidence.append(
                        Evidence(
                            model.origin.span,
                            "built here, in training mode, and never switched to eval",
                        )
                    )
                elif _builds_mode_dependent_layers(facts, model.origin.span):
                    evidence.append(
                        Evidence(
                            model.origin.span,
                            "built here from `torch.nn` layers that behave differently in training "
                            "mode (dropout, batch norm, ...), and never switched to eval",
                        )
                    )
                else:
                    continue
                if loop not in iterated:
                    continue
                if model.class_name and not _mode_sensitive(facts, model.class_name):
                    continue  # no dropout, no batch norm: the mode changes nothing
                reported.add((loop, trace.function))
                header = loop_header(trace, loop)
                if header in reported:
                    continue
                reported.add(header)
                yield self.finding(
                    header,
                    "this evaluation pass runs the model in training mode: dropout stays on and batch norm "
                    "normalises with (and updates its statistics from) the evaluation batches. `no_grad()` "
                    "does not change the mode: call `model.eval()` before the pass and `model.train()` after.",
                    evidence=evidence,
                    payload=eval_mode_switch(
                        facts.analyzer.tree, facts.lines, header, evidence[0].span
                    )
                    if evidence and evidence[0].path is None
                    else None,
                )


def _builds_mode_dependent_layers(facts, origin: Span) -> bool:
    """The model is a ``torch.nn`` construction written at ``origin`` (``nn.Sequential(...)``
    with no class of its own) that builds a mode-dependent layer among its arguments."""
    analyzer = facts.analyzer
    for node in ast.walk(analyzer.tree):
        if (
            isinstance(node, ast.Call)
            and node.lineno == origin.line
            and analyzer.lines.span(node) == origin
        ):
            name = qualified_name(node.func, facts.index.imports)
            return (
                name is not None
                and name.startswith("torch.nn.")
                and builds_mode_dependent_layer(node, facts.index.imports)
            )
    return False


def _mode_sensitive(facts, class_name: str) -> bool:
    """Whether the mode can change what the model class computes: a class of this file,
    or one another module of the project defines (``from models import Net``), read in
    that module. A class of another module that builds anything but ``torch`` layers and
    its own module's classes (a layer from a third module, a library block) counts as
    sensitive: its layers are not seen."""
    if class_name in facts.index.classes:
        return is_mode_sensitive(facts.index, class_name)
    found = project_classes(facts.index.tree, facts.path, {class_name}).get(class_name)
    if found is None:
        return True
    index = found.module.index
    return is_mode_sensitive(index, found.name) or builds_unseen_layers(index, found.name)


def builds_unseen_layers(index, class_name: str, seen: frozenset[str] = frozenset()) -> bool:
    """The class (or a class of its module it builds) calls something imported from
    outside ``torch``: a layer whose mode dependence cannot be read from this module."""
    info = index.classes.get(class_name)
    if info is None or class_name in seen:
        return info is None
    for node in ast.walk(info.node):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id in index.classes:
            if builds_unseen_layers(index, node.func.id, seen | {class_name}):
                return True
            continue
        name = qualified_name(node.func, index.imports)
        if name is not None and not name.startswith("torch."):
            return True
    return False
