"""TW023 unsafe-torch-load: the policy written down in docs/policy/torch-load.md."""

from __future__ import annotations

import os

from ..facts.loads import torch_loads
from ..finding import Applicability, Evidence, Proof, Severity, Span
from ..rule import Fixed, Invalid, Rule
from ..workspace.checkpoints import Provenance, provenance
from ..workspace.torchversion import TorchVersion, torch_version

TRUSTED = (
    "Load only trusted files: ones this project's own runs wrote, or that come from a "
    "source you control, never a download, a shared folder or a file someone sent"
)


class UnsafeTorchLoad(Rule):
    """
    ## What it does
    Applies the [`torch.load` policy](../policy/torch-load.md) to every `torch.load`,
    by the torch version the project declares (`pyproject.toml`, `setup.cfg`,
    `setup.py`, `requirements*.txt`, `environment.yml`, searched up from the file to the
    project root; for a plain script, the installed torch's metadata). The finding's
    evidence names the file and line the version came from.

    - torch >= 2.6 required: `torch.load` already defaults to `weights_only=True`; only
      an explicit `weights_only=False` or a `pickle_module=` is flagged.
    - torch < 2.6 admitted, or the version unknown: a load without `weights_only=True`
      is flagged too.
    - A load of a file the project itself writes with `torch.save` (the same path
      expression in the module, the same literal file name in the project, or the keys
      it reads all among the keys of a saved dict) is a hint, not a warning: the
      arbitrary-code risk is about files from elsewhere, and a sample of such loads on
      real projects found none worth acting on (docs/triage/notes-sample.md).

    ## Why is this bad?
    Unpickling runs any code the file carries: a checkpoint downloaded from a model hub,
    a shared drive or a pull request executes with the user's rights when it is loaded.
    Before torch 2.6 `torch.load` unpickles by default, and even `weights_only=True` can
    be bypassed there (CVE-2025-32434). A *trusted* file is one this project's own runs
    wrote or that comes from a source you control. For anything else, require
    `torch>=2.6` and load with `weights_only=True`, allow-listing the classes a
    checkpoint needs with `torch.serialization.add_safe_globals([...])`.

    ## Example
    ```python
    state = torch.load(args.resume, map_location="cpu")      # TW023
    ```
    Use instead (with `torch>=2.6` in the project's requirements):
    ```python
    state = torch.load(args.resume, map_location="cpu", weights_only=True)
    ```

    ## Fix safety
    The fix adds `weights_only=True`, and is offered only when the analysis proves the
    file holds nothing else: the project writes it at the same path (the same path
    expression in the module, or the same literal file name) and every write the load
    may read saves a `state_dict()`, a tensor, a number or a dict, list or tuple of
    those. A checkpoint holding an argparse `Namespace`, a whole model or a NumPy array
    would stop loading, so a load whose content is not proven gets no fix (when the
    checkpoint is known to hold an argparse `Namespace`, the message names the
    `torch.serialization.add_safe_globals([argparse.Namespace])` call instead). The fix is
    still unsafe: a file written by an older version of the code may hold more. No fix
    for an explicit `weights_only=False` or a `pickle_module=` (which `weights_only`
    rejects).

    ## Known limitations
    Deliberate cases it stays quieter on: a load of the project's own checkpoint (a
    hint, which `torchward check` lists only with `--show-hints`); an explicit `weights_only=True`, or one passed as a variable; a call that
    unpacks `*args`/`**kwargs`, which may carry `weights_only` (timm-style loaders build
    their keyword arguments first). With several requirement files in the deciding
    folder the weakest lower bound decides. A `state_dict()` is taken to hold tensors
    and numbers only; a scheduler whose state holds a callable object is not told
    apart. Every function of the module is read, training code or not (a resume helper, a
    `load_checkpoint(self, path)` method, a `TrainerCallback` hook).
    """

    code = "TW023"
    name = "unsafe-torch-load"
    default_severity = Severity.WARNING
    summary = "torch.load may unpickle arbitrary code: implicitly on torch < 2.6, or with weights_only=False."

    _HEAD = "import torch\n"
    _SAVE = "def save(model, path):\n    torch.save(model.state_dict(), path)\n\n"
    VALID = (
        _HEAD
        + "def restore(model, path):\n    model.load_state_dict(torch.load(path, weights_only=True))\n    model.eval()\n",
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
        # nothing in the project writes the file: a warning, and no fix (its content is unknown)
        Invalid(
            _HEAD
            + "def restore(model, path):\n    model.load_state_dict(torch.load(path))\n    model.eval()\n",
            Severity.WARNING,
            line=3,
            fixed=None,
        ),
        # the module saves a state_dict at the same path: a hint, and weights_only=True is proven
        Invalid(
            _HEAD
            + _SAVE
            + "def restore(model, path):\n    state = torch.load(path, map_location='cpu')\n    model.load_state_dict(state)\n    model.eval()\n",
            Severity.HINT,
            line=6,
            fixed=Fixed(
                _HEAD
                + _SAVE
                + "def restore(model, path):\n    state = torch.load(path, map_location='cpu', weights_only=True)\n    model.load_state_dict(state)\n    model.eval()\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "from torch import load as tload, save\ndef keep(model, epoch):\n    save({'model': model.state_dict(), 'epoch': epoch + 1}, 'last.pt')\n"
            "def restore(model):\n    model.load_state_dict(\n        tload(\n            'runs/last.pt',\n        )['model']\n    )\n    model.eval()\n",
            Severity.HINT,
            line=6,
            fixed=None,  # ``epoch`` is a parameter of keep(): not proven a number
        ),
        # the checkpoint holds the argparse Namespace: weights_only=True would refuse it
        Invalid(
            _HEAD
            + "def save(model, args):\n    torch.save({'model': model.state_dict(), 'args': args}, 'ckpt.pt')\n\n"
            "def restore(model):\n    ckpt = torch.load('ckpt.pt')\n    model.load_state_dict(ckpt['model'])\n    model.eval()\n",
            Severity.HINT,
            line=6,
            fixed=None,
        ),
        # an explicit weights_only=False: flagged on any torch version, no fix
        Invalid(
            _HEAD
            + "def restore(model, path):\n    model.load_state_dict(torch.load(path, weights_only=False))\n    model.eval()\n",
            Severity.WARNING,
            line=3,
            fixed=None,
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
        loads = {}
        for load in torch_loads(facts.index.tree, facts.index.imports, facts.lines):
            call = load.call
            if call.opaque_arguments:
                continue
            explicit = call.weights_only is False or call.pickle_module_given
            if call.weights_only_given and not explicit:
                continue  # weights_only=True, or a variable the caller decides
            loads[load.span] = explicit
        if not loads:
            return
        on_disk = os.path.isfile(facts.path)
        version = torch_version(os.path.dirname(os.path.abspath(facts.path))) if on_disk else None
        root = None  # the folder whose modules may write the loaded files
        if version is not None and not version.installed:
            root = os.path.dirname(version.path)
        elif on_disk:
            root = os.path.dirname(os.path.abspath(facts.path))
        for span, explicit in loads.items():
            if not explicit and version is not None and version.has_safe_default:
                continue  # torch >= 2.6: the default is weights_only=True
            source = provenance(facts.index.tree, facts.index.imports, facts.path, span.line, root)
            evidence = _evidence(version, source, facts.path)
            yield self.finding(
                span,
                _message(explicit, version, source, facts.path),
                evidence=evidence,
                severity=Severity.HINT if source.writes else Severity.WARNING,
                proofs=[Proof.TENSOR_CHECKPOINT] if source.tensors_only and not explicit else [],
            )


def _message(explicit: bool, version: TorchVersion | None, source: Provenance, path: str) -> str:
    if explicit:
        text = (
            "`torch.load` with `weights_only=False` or a `pickle_module` unpickles the file, and "
            f"unpickling runs any code the file carries. {TRUSTED}. For any other file, load with "
            "`weights_only=True` and allow-list the classes the checkpoint holds with "
            "`torch.serialization.add_safe_globals([...])`."
        )
    else:
        if version is None:
            why = "no requirement of the project names torch and no installed torch was found"
        elif version.installed:
            why = f"the installed torch is {version.text}"
        elif version.below_safe_default:
            why = (
                f"`{version.text}` in {os.path.basename(version.path)} keeps torch below 2.6, "
                "where `weights_only` defaults to False"
            )
        elif version.lowest is None and version.ceiling is None:
            why = f"`{version.text}` in {os.path.basename(version.path)} admits any version"
        else:
            why = f"`{version.text}` in {os.path.basename(version.path)} admits torch < 2.6"
        text = (
            f"`torch.load` without `weights_only=True` unpickles the file on torch < 2.6 ({why}), "
            "and unpickling runs any code the file carries; before 2.6 even `weights_only=True` "
            f"can be bypassed (CVE-2025-32434). {TRUSTED}. For any other file, require "
            "`torch>=2.6` and load with `weights_only=True`."
        )
    classes = sorted({c for write in source.writes for c in write.classes})
    if classes and not explicit:
        named = ", ".join(f"`{c}`" for c in classes)
        text += (
            f" The checkpoint holds {named}: to load it with `weights_only=True`, allow-list it "
            f"first with `torch.serialization.add_safe_globals([{', '.join(classes)}])`."
        )
    if source.writes:
        write = source.writes[0]
        where = "this file" if _same_file(write.path, path) else os.path.basename(write.path)
        text += (
            f" The project writes this file itself (`torch.save` in {where}:{write.line}): a "
            "deliberate load of its own checkpoint, reported as a hint."
        )
    return text


def _evidence(version: TorchVersion | None, source: Provenance, path: str) -> list[Evidence]:
    evidence = []
    if version is not None:
        evidence.append(
            Evidence(Span(version.line, 0, version.line, 0), version.sentence(), version.path)
        )
    for write in source.writes[:3]:
        holds = (
            "tensors, containers and numbers only"
            if write.tensors_only
            else "an object whose content is not proven to be tensors only"
        )
        evidence.append(
            Evidence(
                Span(write.line, 0, write.line, 0),
                f"`torch.save({write.saved}, {write.target})` writes it: {holds}",
                None if _same_file(write.path, path) else write.path,
            )
        )
    return evidence


def _same_file(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)
