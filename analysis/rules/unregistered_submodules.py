"""TW022 unregistered-submodules."""

from __future__ import annotations

from ..facts.submodules import plain_module_containers
from ..finding import Applicability, Evidence, Severity
from ..rule import Fixed, Invalid, Rule


class UnregisteredSubmodules(Rule):
    """
    ## What it does
    Flags an `nn.Module` that keeps submodules it constructs in a plain Python `list`
    or `dict` attribute (`self.layers = [nn.Linear(d, d) for _ in range(n)]`) instead of
    an `nn.ModuleList` / `nn.ModuleDict`.

    ## Why is this bad?
    `nn.Module` registers a submodule only when it is assigned to an attribute directly
    or inside a `ModuleList` / `ModuleDict`. Modules in a plain list are invisible to
    `parameters()` (so the optimizer never updates them), to `.to(device)` / `.cuda()`
    (a device-mismatch error, or silently CPU-bound layers), to `.train()` / `.eval()`
    and to `state_dict()` (a saved checkpoint lacks them; a reloaded model has random
    layers). The model runs and its loss may even go down through the registered parts.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = [nn.Linear(64, 64) for _ in range(4)]     # TW022
    ```
    Use instead:
    ```python
            self.blocks = nn.ModuleList([nn.Linear(64, 64) for _ in range(4)])
    ```

    ## Fix safety
    The fix wraps the container: `nn.ModuleList(...)` around a list display or
    comprehension (`nn.ModuleList()` for an empty list that modules are appended to),
    `nn.ModuleDict(...)` around a dict display whose keys are all string literals
    without a dot. Obligations checked on the source: `torch.nn` is imported under a
    name the fix can use, and every use of the attribute in the class is one that
    `ModuleList` / `ModuleDict` support the same way (iterating, indexing, `len`,
    `enumerate`/`zip`, `append`/`extend`/`insert`, `items`/`keys`/`values`/`get`/`update`).
    Otherwise there is no fix. The fix is always **unsafe**: registering the modules adds
    their parameters to `parameters()` (the optimizer now trains them, which is the point)
    and their keys to `state_dict()`, so checkpoints saved before the fix no longer load
    with `strict=True`.

    ## Known limitations
    Only modules constructed in the class (by a qualified torch / torchvision / timm /
    transformers constructor or a module class of the same file) count: a list of modules
    passed in (`self.teacher = [teacher]`, a common way to keep a module out of the
    parent's parameters) is not flagged. Classes that register modules by hand
    (`add_module`, `setattr`) or hand the list to another call (`nn.Sequential(*layers)`)
    are not flagged.
    """

    code = "TW022"
    name = "unregistered-submodules"
    default_severity = Severity.ERROR
    summary = "An nn.Module keeps submodules in a plain list or dict: they are not registered."

    _HEAD = "import torch.nn as nn\n"
    VALID = (
        _HEAD
        + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])\n",
        _HEAD
        + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.heads = nn.ModuleDict({'a': nn.Linear(4, 2)})\n",
        # a module passed in, kept out of the parameters on purpose
        _HEAD
        + "class Student(nn.Module):\n    def __init__(self, teacher):\n        super().__init__()\n        self.teacher = [teacher]\n        self.fc = nn.Linear(4, 4)\n",
        # not a module
        _HEAD + "class Bag:\n    def __init__(self):\n        self.layers = [nn.Linear(4, 4)]\n",
        # registered by hand
        _HEAD
        + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = [nn.Linear(4, 4) for _ in range(2)]\n        for i, layer in enumerate(self.layers):\n            self.add_module(f'layer{i}', layer)\n",
        # wrapped later
        _HEAD
        + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        layers = []\n        layers.append(nn.Linear(4, 4))\n        self.net = nn.Sequential(*layers)\n",
        # a list of numbers
        _HEAD
        + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.sizes = [4, 8]\n        self.fc = nn.Linear(4, 8)\n",
    )
    INVALID = (
        Invalid(
            _HEAD
            + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.blocks = [nn.Linear(4, 4) for _ in range(3)]\n\n    def forward(self, x):\n        for block in self.blocks:\n            x = block(x)\n        return x\n",
            Severity.ERROR,
            line=5,
            fixed=Fixed(
                _HEAD
                + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])\n\n    def forward(self, x):\n        for block in self.blocks:\n            x = block(x)\n        return x\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch\nclass Heads(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.heads = {'cls': torch.nn.Linear(8, 2), 'box': torch.nn.Linear(8, 4)}\n\n    def forward(self, x):\n        return {k: h(x) for k, h in self.heads.items()}\n",
            line=5,
            fixed=Fixed(
                "import torch\nclass Heads(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.heads = torch.nn.ModuleDict({'cls': torch.nn.Linear(8, 2), 'box': torch.nn.Linear(8, 4)})\n\n    def forward(self, x):\n        return {k: h(x) for k, h in self.heads.items()}\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "from torch import nn\nclass Block(nn.Module):\n    def forward(self, x):\n        return x\n\nclass Net(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n        self.blocks = []\n        for _ in range(n):\n            self.blocks.append(Block())\n\n    def forward(self, x):\n        for i in range(len(self.blocks)):\n            x = self.blocks[i](x)\n        return x\n",
            line=9,
            fixed=Fixed(
                "from torch import nn\nclass Block(nn.Module):\n    def forward(self, x):\n        return x\n\nclass Net(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n        self.blocks = nn.ModuleList()\n        for _ in range(n):\n            self.blocks.append(Block())\n\n    def forward(self, x):\n        for i in range(len(self.blocks)):\n            x = self.blocks[i](x)\n        return x\n",
                Applicability.UNSAFE,
            ),
        ),
        # a use ModuleList does not support (sort): flagged, no fix
        Invalid(
            _HEAD
            + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.blocks = [nn.Linear(4, 4), nn.Linear(4, 4)]\n        self.blocks.sort(key=id)\n",
            line=5,
            fixed=None,
        ),
        # dict keys that ModuleDict rejects: flagged, no fix
        Invalid(
            _HEAD
            + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.heads = {'a.b': nn.Linear(4, 4)}\n",
            line=5,
            fixed=None,
        ),
    )

    def check(self, facts):
        for plain in plain_module_containers(facts.index, facts.analyzer.source):
            kind = "ModuleDict" if plain.container == "dict" else "ModuleList"
            message = (
                f"`self.{plain.attribute}` keeps submodules in a plain {plain.container}: they are not "
                "registered, so `parameters()` (the optimizer), `.to(device)`, `.eval()` and `state_dict()` "
                f"do not see them. Use `nn.{kind}`."
            )
            yield self.finding(
                facts.lines.span(plain.value),
                message,
                evidence=[
                    Evidence(facts.lines.span(plain.module), "a submodule constructed into it")
                ],
            )
