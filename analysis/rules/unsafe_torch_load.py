"""TW023 unsafe-torch-load."""

from __future__ import annotations

import os
import re

from torchward.estimator import dependencies

from ..events import EventKind
from ..finding import Applicability, Evidence, Severity
from ..rule import Fixed, Invalid, Rule
from ..structure import events

SAFE_DEFAULT = (2, 6)  # torch.load defaults to weights_only=True from 2.6 on
_REQUIREMENT_FILES = (
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "environment.yml",
    "environment.yaml",
)
# the names of a folder the search looks at: requirement files, and .git (the project root)
_LISTED = (*_REQUIREMENT_FILES, "requirements*.txt", "requirements*.in", ".git")
_TORCH = re.compile(
    r"""(?<![\w.-])torch(?![\w.-])\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:[<>=!~]=?\s*[\w.*]+\s*,?\s*)*)"""
)
_CLAUSE = re.compile(r"(?P<op>[<>=!~]=?)\s*(?P<version>\d+(?:\.\d+)*)")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


def lowest_torch(spec: str) -> tuple[int, ...] | None:
    """The lowest torch version a requirement specifier admits, when it has a lower bound
    (``>=2.6``, ``==2.7.1``, ``~=2.6``, ``>2.5``); None when any version may be installed."""
    lowest = None
    for clause in _CLAUSE.finditer(spec):
        op, version = clause["op"], _version(clause["version"])
        if op in (">=", "==", "~=", "==="):
            bound = version
        elif op == ">":
            bound = version[:-1] + (version[-1] + 1,) if version else version
        else:
            continue
        lowest = bound if lowest is None else max(lowest, bound)
    return lowest


@dependencies.remembered
def torch_requirement(directory: str) -> tuple[str, tuple[int, ...] | None] | None:
    """The nearest requirement on torch at or above ``directory``: (file, lowest version);
    None when no requirement file up to the project root names torch.

    Not cached: only files that call ``torch.load`` ask, and the language server must see
    an edited ``pyproject.toml`` at the next analysis."""
    current = os.path.abspath(directory)
    while True:
        try:
            names = sorted(dependencies.list_dir(current, _LISTED))
        except OSError:
            names = []
        candidates = [n for n in names if n in _REQUIREMENT_FILES] + [
            n for n in names if n.startswith("requirements") and n.endswith((".txt", ".in"))
        ]
        found: list[tuple[str, tuple[int, ...] | None]] = []
        for name in candidates:
            path = os.path.join(current, name)
            try:
                text = dependencies.read_text(path, errors="replace")[:200_000]
            except OSError:
                continue
            for line in text.splitlines():
                line = line.split("#", 1)[0]
                match = _TORCH.search(line)
                if match is None:
                    continue
                before = line[: match.start()].rstrip()
                if before and before[-1] not in "\"'[-,=:":
                    continue  # ``import torch`` in setup.py, prose: not a requirement
                found.append((path, lowest_torch(match["spec"])))
        if found:
            # the weakest requirement decides: any file may be the one installed from
            return min(found, key=lambda item: item[1] or ())
        if ".git" in names or os.path.dirname(current) == current:
            return None
        current = os.path.dirname(current)


class UnsafeTorchLoad(Rule):
    """
    ## What it does
    Flags `torch.load(...)` without `weights_only=True` in a project that may run on a
    torch older than 2.6, read from the nearest `pyproject.toml`, `setup.cfg`,
    `setup.py`, `environment.yml` or `requirements*.txt` that names torch.

    ## Why is this bad?
    Before torch 2.6, `torch.load` unpickles by default, and unpickling runs arbitrary
    code: a checkpoint downloaded from a model hub, a shared drive or a pull request can
    execute anything with the user's rights when it is loaded. `weights_only=True`
    restricts loading to tensors, primitive types and allow-listed classes. From 2.6 on
    it is the default, so a project that requires `torch>=2.6` is not flagged.

    ## Example
    ```python
    state = torch.load("checkpoint.pt", map_location="cpu")      # TW023
    ```
    Use instead:
    ```python
    state = torch.load("checkpoint.pt", map_location="cpu", weights_only=True)
    ```

    ## Fix safety
    The fix adds `weights_only=True`. It is unsafe: a checkpoint that pickles custom
    classes (an optimizer wrapper, an argparse `Namespace`, a NumPy scalar in older
    formats) no longer loads until those classes are allow-listed with
    `torch.serialization.add_safe_globals`. No fix is offered when the call passes
    a `pickle_module` (which `weights_only` rejects).

    ## Known limitations
    An explicit `weights_only=False` is a decision and is not flagged; nor is a call that
    unpacks `*args`/`**kwargs`, which may carry `weights_only` (timm-style loaders build
    their keyword arguments first). A requirement is
    read from the nearest directory (up to the repository root) that has a requirement
    file naming torch; with several, the weakest lower bound decides. Files that contain
    no training code at all (pure inference scripts) are not analysed.
    """

    code = "TW023"
    name = "unsafe-torch-load"
    default_severity = Severity.WARNING
    summary = "torch.load without weights_only=True unpickles arbitrary code on torch < 2.6."

    _HEAD = "import torch\n"
    VALID = (
        _HEAD
        + "def restore(model, path):\n    model.load_state_dict(torch.load(path, weights_only=True))\n    model.eval()\n",
        _HEAD
        + "def restore(model, path):\n    model.load_state_dict(torch.load(path, weights_only=False))\n    model.eval()\n",
        # not torch's load
        "import pickle\ndef restore(model, f):\n    model.load_state_dict(pickle.load(f))\n    model.eval()\n",
        _HEAD
        + "def restore(model, path):\n    model.load_state_dict(torch.load(path, map_location='cpu', weights_only=True))\n    model.eval()\n",
        # a local function called load
        "def load(path):\n    return {}\ndef restore(model, path):\n    model.load_state_dict(load(path))\n    model.eval()\n",
        _HEAD
        + "def restore(model, path, safe):\n    model.load_state_dict(torch.load(path, weights_only=safe))\n    model.eval()\n",
        # **kwargs may carry weights_only: the analysis cannot tell, so it stays quiet
        _HEAD
        + "def restore(model, path, **kw):\n    model.load_state_dict(torch.load(path, **kw))\n    model.eval()\n",
    )
    INVALID = (
        Invalid(
            _HEAD
            + "def restore(model, path):\n    model.load_state_dict(torch.load(path))\n    model.eval()\n",
            Severity.WARNING,
            line=3,
            fixed=Fixed(
                _HEAD
                + "def restore(model, path):\n    model.load_state_dict(torch.load(path, weights_only=True))\n    model.eval()\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            _HEAD
            + "def restore(model, path):\n    state = torch.load(path, map_location='cpu')\n    model.load_state_dict(state['model'])\n    model.eval()\n",
            line=3,
            fixed=Fixed(
                _HEAD
                + "def restore(model, path):\n    state = torch.load(path, map_location='cpu', weights_only=True)\n    model.load_state_dict(state['model'])\n    model.eval()\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "from torch import load as tload\ndef restore(model, path):\n    model.load_state_dict(\n        tload(\n            path,\n        )\n    )\n    model.eval()\n",
            line=4,
            fixed=Fixed(
                "from torch import load as tload\ndef restore(model, path):\n    model.load_state_dict(\n        tload(\n            path, weights_only=True,\n        )\n    )\n    model.eval()\n",
                Applicability.UNSAFE,
            ),
        ),
        # a file object opened in a with-block, and a pickle_module: flagged, no fix
        Invalid(
            _HEAD
            + "import pickle\ndef restore(model, path):\n    with open(path, 'rb') as f:\n        state = torch.load(f, pickle_module=pickle)\n    model.load_state_dict(state)\n    model.eval()\n",
            line=5,
            fixed=None,
        ),
    )

    def check(self, facts):
        loads = [
            load
            for _, load in events(facts, EventKind.TORCH_LOAD)
            if load.call is not None
            and not load.call.weights_only_given
            and not load.call.opaque_arguments
        ]
        if not loads:
            return
        requirement = None
        if os.path.isfile(facts.path):
            requirement = torch_requirement(os.path.dirname(os.path.abspath(facts.path)))
        if (
            requirement is not None
            and requirement[1] is not None
            and requirement[1] >= SAFE_DEFAULT
        ):
            return  # torch >= 2.6 is required: the default is weights_only=True
        if requirement is None:
            why = "no requirement file of the project names torch, so it may run on torch < 2.6"
            evidence: list[Evidence] = []
        else:
            why = f"{os.path.basename(requirement[0])} admits torch < 2.6"
            evidence = []
        reported = set()
        for load in loads:
            if load.span in reported:
                continue
            reported.add(load.span)
            yield self.finding(
                load.span,
                "`torch.load` without `weights_only=True` unpickles the file, which can run arbitrary code "
                f"on torch < 2.6 ({why}). Pass `weights_only=True` (or an explicit `weights_only=False` "
                "for a trusted file).",
                evidence=evidence,
            )
