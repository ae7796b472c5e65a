"""Which file of the project an ``import`` names — read from the file system, never imported.

Python finds a module on ``sys.path``; a linter cannot ask the interpreter, so it tries
the places a project's own code is importable from, in the order Python would usually
see them:

1. relative imports (``from .models import Net``): the importing file's package;
2. the importing file's own folder (a script run as ``python train.py`` has it first on
   ``sys.path``: ``from models import Net`` finds ``models.py`` beside it);
3. the folder above the file's topmost regular package (``pkg/train.py`` importing
   ``pkg.models``);
4. the project root (the nearest folder above with ``pyproject.toml``, ``setup.py``,
   ``setup.cfg`` or ``.git``), its ``src/`` folder (the src layout) and the package
   folders its ``pyproject.toml`` declares (``package-dir = {"" = "pkg"}``,
   ``packages.find.where``, poetry's ``from``, hatch's wheel ``packages``): a script of
   the repository imports the package as installed in editable mode.

A name of the standard library or of a well-known third-party package is never looked
up on disk: ``import torch`` is never the project's. Every existence test goes through
:mod:`torchward.estimator.dependencies`, so a cached result knows which absent files
would change it (``models.py`` created next to the script).
"""

from __future__ import annotations

import os
import sys

import tomllib
from torchward.estimator import dependencies

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
MAX_MODULE_BYTES = 1_000_000  # a generated or vendored giant is not read as a summary
# Packages users install, never their own modules (the first part of a dotted name).
_THIRD_PARTY = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "torchtext",
        "numpy",
        "scipy",
        "pandas",
        "matplotlib",
        "sklearn",
        "transformers",
        "datasets",
        "accelerate",
        "deepspeed",
        "lightning",
        "pytorch_lightning",
        "timm",
        "peft",
        "trl",
        "tqdm",
        "wandb",
        "tensorboard",
        "yaml",
        "PIL",
        "cv2",
        "einops",
        "safetensors",
        "tokenizers",
        "huggingface_hub",
        "requests",
        "fire",
        "hydra",
        "omegaconf",
        "tiktoken",
        "sentencepiece",
        "bitsandbytes",
        "apex",
        "jax",
        "tensorflow",
        "mxnet",
        "open_clip",
    }
)


def is_external(module: str) -> bool:
    """A module of the standard library or of a well-known installed package."""
    head = module.split(".", 1)[0]
    return head in sys.stdlib_module_names or head in _THIRD_PARTY or head == "__future__"


@dependencies.remembered
def _package_root(folder: str) -> str:
    """The folder above the topmost regular package containing ``folder`` (itself if none)."""
    while dependencies.is_file(os.path.join(folder, "__init__.py")):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return folder


@dependencies.remembered
def _project_root(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` holding a project marker."""
    current = folder
    for _ in range(12):  # a bounded walk: a deep tree without markers is not a project
        if any(dependencies.exists(os.path.join(current, m)) for m in PROJECT_MARKERS):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _table(data: object, *keys: str) -> dict:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def declared_package_folders(pyproject: dict) -> list[str]:
    """The folders (relative to the project) a ``pyproject.toml`` installs packages from:
    an editable install puts them on ``sys.path``, so ``import pkg`` in any of the
    repository's scripts finds ``<folder>/pkg`` however the folder is named."""
    folders: list[str] = []
    setuptools = _table(pyproject, "tool", "setuptools")
    folders += _strings(_table(setuptools, "package-dir").get(""))
    folders += _strings(_table(setuptools, "packages", "find").get("where"))
    for package in _table(pyproject, "tool", "poetry").get("packages") or []:
        if isinstance(package, dict):
            folders += _strings(package.get("from"))
    wheel = _table(pyproject, "tool", "hatch", "build", "targets", "wheel")
    folders += [os.path.dirname(p) for p in _strings(wheel.get("packages"))]
    return [f.strip("/") for f in folders if f.strip("/") not in ("", ".")]


@dependencies.remembered
def _declared_roots(project: str) -> tuple[str, ...]:
    path = os.path.join(project, "pyproject.toml")
    if not dependencies.is_file(path):
        return ()
    try:
        data = tomllib.loads(dependencies.read_text(path))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ()  # a broken pyproject declares nothing readable
    return tuple(os.path.join(project, f) for f in declared_package_folders(data))


def search_roots(importer: str) -> tuple[str, ...]:
    """The folders an absolute import in the file at ``importer`` is looked up in."""
    folder = os.path.dirname(os.path.abspath(importer))
    roots = [folder, _package_root(folder)]
    project = _project_root(folder)
    if project is not None:
        roots += [project, os.path.join(project, "src"), *_declared_roots(project)]
    return tuple(dict.fromkeys(roots))


def _module_file(root: str, module: str) -> str | None:
    base = os.path.join(root, *module.split("."))
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if dependencies.is_file(candidate):
            return candidate
    return None


@dependencies.remembered
def _resolve(importer_folder: str, roots: tuple[str, ...], module: str, level: int) -> str | None:
    if level:
        base = importer_folder
        for _ in range(level - 1):
            base = os.path.dirname(base)
        if not module:
            init = os.path.join(base, "__init__.py")
            return init if dependencies.is_file(init) else None
        return _module_file(base, module)
    if not module or is_external(module):
        return None
    for root in roots:
        found = _module_file(root, module)
        if found is not None:
            return found
    return None


_resolve.MAX_ENTRIES = 8192
_package_root.MAX_ENTRIES = 2048
_project_root.MAX_ENTRIES = 2048
_declared_roots.MAX_ENTRIES = 2048


def resolve_module(
    importer: str, module: str, level: int = 0, roots: tuple[str, ...] | None = None
) -> str | None:
    """The absolute path of the project file ``module`` names in ``importer``, or None
    (``roots``: :func:`search_roots` of ``importer``, when the caller has them)."""
    if importer.startswith("<") or (not level and is_external(module)):
        return None
    folder = os.path.dirname(os.path.abspath(importer))
    if level:
        roots = ()
    elif roots is None:
        roots = search_roots(importer)
    found = _resolve(folder, roots, module, level)
    if found is None or os.path.abspath(found) == os.path.abspath(importer):
        return None  # ``import models`` inside ``models.py`` of another folder: not itself
    return found


def package_of(path: str) -> bool:
    """Whether ``path`` is a package's ``__init__.py`` (its submodules are beside it)."""
    return os.path.basename(path) == "__init__.py"
