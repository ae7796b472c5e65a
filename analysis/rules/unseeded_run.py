"""TW008 unseeded-run."""

from __future__ import annotations

import ast
import bisect
import collections
import os

import attrs

from ..facts.events import EventKind
from ..facts.structure import events
from ..finding import Evidence, Severity
from ..rule import Invalid, Rule
from ..syntax.names import qualified_name

# seeding calls, by the library they seed ("all": every library at once)
SEEDERS = {
    "torch.manual_seed": "torch",
    "torch.cuda.manual_seed": "torch",
    "torch.cuda.manual_seed_all": "torch",
    "torch.random.manual_seed": "torch",
    "numpy.random.seed": "numpy",
    "random.seed": "random",
    "transformers.set_seed": "all",
    "transformers.trainer_utils.set_seed": "all",
    "accelerate.utils.set_seed": "all",
    "lightning.seed_everything": "all",
    "lightning.pytorch.seed_everything": "all",
    "pytorch_lightning.seed_everything": "all",
}
# global random state read by these calls (module-level functions, not generators)
USERS = {
    "numpy": ("numpy.random.",),
    "random": ("random.",),
}
# torch's sampling functions that draw from its global generator (module-level torch.* only:
# tensor methods and layers draw from it too, but are not told apart from the rest here)
TORCH_GLOBAL_SAMPLERS = {
    "torch.rand",
    "torch.randn",
    "torch.randint",
    "torch.randperm",
    "torch.rand_like",
    "torch.randn_like",
    "torch.randint_like",
    "torch.bernoulli",
    "torch.multinomial",
    "torch.normal",
    "torch.poisson",
}
# how to seed each library, for the message
_SEED_CALLS = {
    "torch": "`torch.manual_seed(...)`",
    "numpy": "`np.random.seed(...)`",
    "random": "`random.seed(...)`",
}
_NUMPY_NOT_GLOBAL = {
    "numpy.random.default_rng",
    "numpy.random.Generator",
    "numpy.random.RandomState",
}
_LIBRARY_NAMES = {"torch": "torch", "numpy": "NumPy", "random": "`random`"}


@attrs.frozen
class Seeding:
    seeded: dict[str, ast.Call]  # library -> where it is seeded
    used: dict[str, ast.Call]  # library -> where its global random state is read
    opaque: bool  # a call the analysis cannot see into names a seed (utils.set_seed)


def _calls_that_may_name_a_seed(tree: ast.Module, imports, source_lines: list[str] | None):
    """The calls of ``tree`` in ``ast.walk``'s breadth-first order, skipping every statement
    whose lines cannot name a seed or a global-random call.

    Walking every node of the file costs more than the rest of an editor keystroke; a call
    this rule counts names ``seed``, ``rand`` (``random``, ``torch.randn``) or one of torch's
    other sampling functions in its written text or through an import
    alias (``canonical`` adds neither), and an identifier never spans lines, so a statement
    none of whose lines holds such a word is skipped — at any depth (a training script's
    whole ``__main__`` block is one top-level statement). Dropping whole subtrees keeps the
    breadth-first order of the rest, so the first call found is the one a full walk finds."""
    if source_lines is None:
        yield from (node for node in ast.walk(tree) if isinstance(node, ast.Call))
        return
    words = {"seed", "rand", "bernoulli", "multinomial", "normal", "poisson"} | {
        local.lower()
        for local, target in imports.names.items()
        if "seed" in target.lower() or "random" in target.lower()
    }
    hits = [
        number
        for number, line in enumerate(source_lines, start=1)
        if any(word in line.lower() for word in words)
    ]

    def may_name(statement: ast.stmt) -> bool:
        decorators = getattr(statement, "decorator_list", ())
        first = min([statement.lineno, *(d.lineno for d in decorators)])
        at = bisect.bisect_left(hits, first)
        return at < len(hits) and hits[at] <= (statement.end_lineno or first)

    queue: collections.deque[ast.AST] = collections.deque([tree])
    while queue:
        node = queue.popleft()
        if isinstance(node, ast.Call):
            yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.stmt) or may_name(child):
                queue.append(child)


def seeding_of(tree: ast.Module, imports, source_lines: list[str] | None = None) -> Seeding:
    seeded: dict[str, ast.Call] = {}
    used: dict[str, ast.Call] = {}
    opaque = False
    for node in _calls_that_may_name_a_seed(tree, imports, source_lines):
        name = qualified_name(node.func, imports)
        if name is None:
            func = node.func
            leaf = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if "seed" in str(leaf).lower():
                opaque = True  # a project helper (utils.set_seed(args.seed))
            continue
        if name in SEEDERS:
            library = SEEDERS[name]
            for lib in ("torch", "numpy", "random") if library == "all" else (library,):
                seeded.setdefault(lib, node)
            continue
        if "seed" in name.rsplit(".", 1)[-1].lower():
            opaque = True
            continue
        if name in _NUMPY_NOT_GLOBAL or name.rsplit(".", 1)[-1][:1].isupper():
            continue  # a generator of its own (random.Random(seed), np.random.Generator)
        for library, prefixes in USERS.items():
            if name.startswith(prefixes):
                used.setdefault(library, node)
        if name in TORCH_GLOBAL_SAMPLERS:
            used.setdefault("torch", node)
    return Seeding(seeded, used, opaque)


class UnseededRun(Rule):
    """
    ## What it does
    Warns when a training file seeds the random state of some of torch, NumPy and
    Python's `random` but reads the global state of another one it never seeds; notes a
    training script (its `if __name__ == "__main__":` block trains) that seeds nothing.

    ## Why is this bad?
    A run is reproducible only when every source of randomness it draws from is seeded:
    seeding torch but shuffling with `random.shuffle` or augmenting with
    `np.random.rand` gives a different data order or augmentation every run, so two runs
    with "the same seed" differ, and a regression cannot be told from noise. The partial
    case is the worse one: the seed call suggests reproducibility that is not there.

    ## Example
    ```python
    torch.manual_seed(0)
    random.shuffle(samples)          # TW008: `random` is never seeded
    ```
    Use instead:
    ```python
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    random.shuffle(samples)
    ```

    ## Fix safety
    No automatic fix: which seed to use, and whether the run should be reproducible at
    all, is the author's decision.

    ## Known limitations
    A call the analysis cannot see into whose name mentions a seed (`utils.set_seed(...)`,
    `seed_everything` of an unknown library) counts as seeding everything, so the rule
    stays quiet. Generators with their own seed (`np.random.default_rng(0)`,
    `torch.Generator`) are not global state and are not counted. Seeds set in another
    module of the project are not seen: the warning needs a seed call in this file, and
    the note needs the file to run training itself, to mention no seed at all and to
    import no module of its own project (whose setup helpers may seed).
    torch counts as used through its module-level sampling functions (`torch.randn`,
    `torch.rand_like`, `torch.randperm`, `torch.multinomial`, ...); layer initialisation
    and dropout draw from its generator too but are not counted.
    Data-loader workers (`worker_init_fn`) and cuDNN determinism are out of scope.
    """

    code = "TW008"
    name = "unseeded-run"
    default_severity = Severity.WARNING
    summary = "Randomness is seeded for only some of torch / NumPy / random (or not at all)."

    _TRAIN = "def train(model, loader, opt):\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n"
    VALID = (
        "import random\nimport numpy as np\nimport torch\nrandom.seed(0)\nnp.random.seed(0)\ntorch.manual_seed(0)\n"
        + _TRAIN
        + "random.shuffle([1, 2])\n",
        # one call seeds everything
        "import random\nfrom transformers import set_seed\nset_seed(0)\n"
        + _TRAIN
        + "random.shuffle([1, 2])\n",
        # a project helper
        "import random\nimport torch\nfrom utils import set_seed\ntorch.manual_seed(0)\nset_seed(0)\n"
        + _TRAIN
        + "random.shuffle([1, 2])\n",
        # a seeded generator of its own is not global state
        "import random\nimport torch\ntorch.manual_seed(0)\n"
        + _TRAIN
        + "rng = random.Random(0)\nrng.shuffle([1, 2])\n",
        # a seeded NumPy generator is not global state
        "import numpy as np\nimport torch\ntorch.manual_seed(0)\nrng = np.random.default_rng(0)\n"
        + _TRAIN
        + "rng.random(3)\n",
        # not a training file
        "import random\nimport torch\ntorch.manual_seed(0)\nprint(random.random())\n",
        # torch seeded, nothing else used
        "import torch\ntorch.manual_seed(0)\n" + _TRAIN,
        # a library module (no training loop runs when it is executed) seeding nothing
        "import torch\n" + _TRAIN,
        # top-level code of a notebook or module, not a script's main block
        "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor step in range(10):\n    model(torch.randn(4, 2)).sum().backward()\n    opt.step()\n",
    )
    INVALID = (
        Invalid(
            "import random\nimport torch\ntorch.manual_seed(0)\n"
            + _TRAIN
            + "random.shuffle([1, 2])\n",
            Severity.WARNING,
            line=8,
        ),
        Invalid(
            "import numpy as np\nimport torch\ntorch.cuda.manual_seed_all(1)\n"
            + _TRAIN
            + "noise = np.random.rand(3)\n",
            line=8,
        ),
        Invalid(
            "import random\nimport numpy\nrandom.seed(0)\n"
            + _TRAIN
            + "x = numpy.random.permutation(10)\n",
            line=8,
        ),
        # a script that trains when run and seeds nothing: a note
        Invalid(
            "import torch\ndef main():\n    model = torch.nn.Linear(2, 2)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for step in range(10):\n        model(torch.randn(4, 2)).sum().backward()\n        opt.step()\n\nif __name__ == '__main__':\n    main()\n",
            Severity.NOTE,
            line=10,
        ),
    )

    def check(self, facts):
        trains = any(True for _ in events(facts, EventKind.STEP))
        if not trains:
            return
        source = facts.analyzer.source
        if "seed" not in source.lower():
            yield from self._seeds_nothing(facts)
            return
        seeding = seeding_of(facts.analyzer.tree, facts.index.imports, facts.index.source_lines)
        if seeding.opaque or not seeding.seeded:
            return
        for library, call in sorted(seeding.used.items()):
            if library in seeding.seeded:
                continue
            seeded_call = next(iter(seeding.seeded.values()))
            seeded_names = ", ".join(_LIBRARY_NAMES[lib] for lib in sorted(seeding.seeded))
            yield self.finding(
                facts.lines.span(call),
                f"{_LIBRARY_NAMES[library]}'s global random state is used here but never seeded, while "
                f"{seeded_names} is: runs with the same seed still differ. Seed it too "
                f"({_SEED_CALLS[library]}).",
                evidence=[
                    Evidence(facts.lines.span(seeded_call), "the run is seeded here, partially")
                ],
            )

    def _seeds_nothing(self, facts):
        """A note when the file is a training script: its ``if __name__ == "__main__":``
        block runs a training step (itself or through the functions it calls)."""
        module = next((t for t in facts.traces if t.function == "<module>"), None)
        if module is None or _imports_project_code(facts):
            return  # the project's own setup helpers may seed (compute_init, setup)
        step = next(
            (
                e
                for e in module.events
                if e.kind is EventKind.STEP
                and any("__name__" in facts.lines.line_text(g.span.line) for g in e.gates)
            ),
            None,
        )
        if step is None:
            return  # not a script: no ``if __name__ == "__main__":`` that trains
        span = module.loops[step.loops[0]].span if step.loops else step.span
        yield self.finding(
            span,
            "this script trains without seeding torch, NumPy or `random`: two runs differ in "
            "initialisation, data order and dropout, so a change cannot be told from noise. Seed them "
            "(`torch.manual_seed`, `np.random.seed`, `random.seed`) if runs should be comparable.",
            severity=Severity.NOTE,
        )


def _imports_project_code(facts) -> bool:
    """Whether the file imports a module of its own project: a ``.py`` file or package
    next to it or in a folder above it (up to four levels, or the repository root)."""
    if not os.path.isfile(facts.path):
        return False
    tops = {name.split(".")[0] for name in facts.index.imports.names.values()}
    directory = os.path.dirname(os.path.abspath(facts.path))
    for _ in range(4):
        if any(
            os.path.isdir(os.path.join(directory, top))
            or os.path.isfile(os.path.join(directory, top + ".py"))
            for top in tops
        ):
            return True
        if (
            os.path.isdir(os.path.join(directory, ".git"))
            or os.path.dirname(directory) == directory
        ):
            return False
        directory = os.path.dirname(directory)
    return False
