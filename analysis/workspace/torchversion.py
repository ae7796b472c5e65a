"""The torch version a project runs on, read from what it declares, never by importing it.

``torch.load`` changed its default to ``weights_only=True`` in torch 2.6 (and 2.6 closed
CVE-2025-32434, a bypass of ``weights_only=True`` itself), so what a load risks depends on
the torch the project runs on. The project says which: from the analysed file's folder up
to the project root (the folder holding ``.git``), the first folder with a file that names
torch decides, and in it the files are asked in this order, the first naming torch wins:

1. ``pyproject.toml``: ``[project] dependencies`` and ``optional-dependencies``, Poetry's
   ``[tool.poetry.dependencies]`` (and its groups);
2. ``setup.cfg``, then ``setup.py`` (``install_requires``, as written);
3. ``requirements*.txt`` / ``requirements*.in`` (several: the weakest lower bound decides,
   any of them may be the one installed from);
4. ``environment.yml`` / ``environment.yaml`` (conda's ``pytorch=2.6``, or pip's ``torch``).

A plain script whose project names torch nowhere runs on the torch installed next to it:
a virtual environment in the project root (``.venv``, ``venv``, ``env``), else the
environment torchward itself runs in, read from ``torch-*.dist-info/METADATA`` (the files,
not ``importlib``: torch is never imported, and every read is a recorded dependency of the
analysis, so the CLI cache sees an upgrade).

Only the lowest version a requirement admits matters: ``>=2.1,<3`` may install 2.1.
"""

from __future__ import annotations

import os
import re
import site
import sys

import attrs
import tomllib
from torchward.estimator import dependencies

SAFE_DEFAULT = (2, 6)  # torch.load defaults to weights_only=True from torch 2.6 on
_PYPROJECT = ("pyproject.toml",)
_SETUP = ("setup.cfg", "setup.py")
_REQUIREMENTS = ("requirements*.txt", "requirements*.in")
_ENVIRONMENT = ("environment.yml", "environment.yaml")
# the names of a folder the search looks at: requirement files, and .git (the project root)
_LISTED = (*_PYPROJECT, *_SETUP, *_REQUIREMENTS, *_ENVIRONMENT, ".git")
_VENVS = (".venv", "venv", "env")
# ``torch`` (or conda's ``pytorch``) followed by a specifier; not ``torchvision``, ``torch_geometric``
_TORCH = re.compile(
    r"""(?<![\w.-])(?:py)?torch(?![\w.-])\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:[<>=!~^]=?\s*[\w.*+]+\s*,?\s*)*)"""
)
_CLAUSE = re.compile(r"(?P<op>[<>=!~^]=?=?)\s*(?P<version>\d+(?:\.\d+)*)")
_METADATA_VERSION = re.compile(r"^Version:\s*(\S+)", re.MULTILINE)


@attrs.frozen
class TorchVersion:
    """The lowest torch a project may run on, and where that was read.

    ``lowest`` None: the requirement names torch with no lower bound (any version may be
    installed). ``installed``: read from an installed torch's metadata, not declared."""

    lowest: tuple[int, ...] | None
    path: str  # the file that said it (a requirement file, or the dist-info's METADATA)
    line: int  # 1-based line of the requirement in ``path``
    text: str  # the requirement as written (``torch>=2.1,<3``), or the installed version
    installed: bool = False
    # every admitted version is below this one (``<2.6``: 2.6; ``<=2.5.1``: 2.5.2); None:
    # no upper bound
    ceiling: tuple[int, ...] | None = None

    @property
    def has_safe_default(self) -> bool:
        """``torch.load`` defaults to ``weights_only=True`` on every version admitted."""
        return self.lowest is not None and self.lowest >= SAFE_DEFAULT

    @property
    def below_safe_default(self) -> bool:
        """Every version admitted is older than 2.6: ``weights_only`` defaults to False on
        all of them (``torch<2.6``, ``torch>=2.1,<=2.5.1``)."""
        return self.ceiling is not None and _padded(self.ceiling) <= _padded(SAFE_DEFAULT)

    def sentence(self) -> str:
        """Where the version came from, for a finding's evidence."""
        if self.installed:
            return f"the installed torch is {self.text} (no requirement of the project names torch)"
        return f"the project requires `{self.text}` ({os.path.basename(self.path)})"


def parse_version(text: str) -> tuple[int, ...]:
    """``2.6.0+cu124`` -> (2, 6, 0): the numeric release, at most three parts."""
    parts = []
    for part in text.split(".")[:3]:
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def lowest_torch(spec: str) -> tuple[int, ...] | None:
    """The lowest torch version a specifier admits when it has a lower bound (``>=2.6``,
    ``==2.7.1``, ``~=2.6``, ``>2.5``, Poetry's ``^2.6``/``~2.6``, a bare ``2.6`` in Poetry
    or conda's ``=2.6``); None when any version may be installed."""
    lowest = None
    for clause in _CLAUSE.finditer(spec):
        op, version = clause["op"], parse_version(clause["version"])
        if not version:
            continue
        if op in (">=", "==", "~=", "===", "^", "~", "="):
            bound = version
        elif op == ">":
            bound = version[:-1] + (version[-1] + 1,)
        else:
            continue
        lowest = bound if lowest is None else max(lowest, bound)
    if lowest is None and re.fullmatch(r"\s*\d+(?:\.\d+)*\s*", spec):
        lowest = parse_version(spec.strip())  # Poetry: "2.6.0" pins that version
    return lowest


def ceiling_torch(spec: str) -> tuple[int, ...] | None:
    """The version every version a specifier admits is below (exclusive), when it has an
    upper bound: ``<2.6`` gives 2.6, ``<=2.5.1`` gives 2.5.2, ``==2.5.1`` gives 2.5.2
    (Poetry's caret and tilde ranges are read by their lower bound only); None otherwise."""
    ceiling = None
    for clause in _CLAUSE.finditer(spec):
        op, version = clause["op"], parse_version(clause["version"])
        if not version or "*" in spec[clause.end() : clause.end() + 2]:
            continue  # ``==2.5.*``: a prefix, not one version
        if op == "<":
            bound = version
        elif op in ("<=", "==", "==="):
            bound = version[:-1] + (version[-1] + 1,)
        else:
            continue
        ceiling = bound if ceiling is None else min(ceiling, bound, key=_padded)
    return ceiling


def _padded(version: tuple[int, ...]) -> tuple[int, ...]:
    """Three parts, so that 2.6 and 2.6.0 compare equal."""
    return (version + (0, 0, 0))[:3]


@dependencies.remembered
def torch_version(directory: str) -> TorchVersion | None:
    """What the project at or above ``directory`` declares about torch, else the torch
    installed for it; None when neither is known."""
    current = os.path.abspath(directory)
    root = current
    while True:
        try:
            names = sorted(dependencies.list_dir(current, _LISTED))
        except OSError:
            names = []
        declared = _declared(current, names)
        if declared is not None:
            return declared
        root = current
        if ".git" in names or os.path.dirname(current) == current:
            break
        current = os.path.dirname(current)
    return installed_torch(root)


def _declared(folder: str, names: list[str]) -> TorchVersion | None:
    groups = [
        [n for n in names if n in _PYPROJECT],
        [n for n in names if n == "setup.cfg"],
        [n for n in names if n == "setup.py"],
        [n for n in names if n.startswith("requirements") and n.endswith((".txt", ".in"))],
        [n for n in names if n in _ENVIRONMENT],
    ]
    for group in groups:
        found: list[TorchVersion] = []
        for name in group:
            path = os.path.join(folder, name)
            try:
                text = dependencies.read_text(path, errors="replace")[:200_000]
            except OSError:
                continue
            if name == "pyproject.toml":
                found.extend(_pyproject(path, text))
            else:
                found.extend(_lines(path, text, conda=name in _ENVIRONMENT))
        if found:
            # the weakest requirement decides: any of them may be the one installed from
            return min(found, key=lambda v: v.lowest or ())
    return None


def _pyproject(path: str, text: str) -> list[TorchVersion]:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return _lines(path, text)
    specs: list[str] = []
    project = data.get("project", {})
    if isinstance(project, dict):
        specs.extend(r for r in project.get("dependencies", []) if isinstance(r, str))
        for extra in (project.get("optional-dependencies") or {}).values():
            if isinstance(extra, list):
                specs.extend(r for r in extra if isinstance(r, str))
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
    tables = [poetry.get("dependencies", {})] + [
        group.get("dependencies", {})
        for group in (poetry.get("group") or {}).values()
        if isinstance(group, dict)
    ]
    for table in tables:
        if not isinstance(table, dict):
            continue
        for name, spec in table.items():
            if name.lower() != "torch":
                continue
            for entry in spec if isinstance(spec, list) else [spec]:
                if isinstance(entry, dict):
                    entry = entry.get("version", "")
                if isinstance(entry, str):
                    specs.append(f"torch {entry}" if entry.strip() not in ("", "*") else "torch")
    found = []
    for requirement in specs:
        match = _TORCH.match(requirement.strip())
        if match is None or requirement.strip().startswith("pytorch"):
            continue
        spec = requirement.strip()[match.start("spec") :].split(";", 1)[0]
        found.append(
            TorchVersion(
                lowest_torch(spec),
                path,
                _line_of(text, requirement),
                requirement.strip().split(";", 1)[0].strip(),
                ceiling=ceiling_torch(spec),
            )
        )
    return found


def _line_of(text: str, requirement: str) -> int:
    needle = (
        requirement.split(" ", 1)[-1].strip() if requirement.startswith("torch ") else requirement
    )
    for number, line in enumerate(text.splitlines(), 1):
        if re.search(r"(?<![\w.-])torch(?![\w.-])", line) and needle in line:
            return number
    for number, line in enumerate(text.splitlines(), 1):
        if re.search(r"(?<![\w.-])torch(?![\w.-])", line):
            return number
    return 1


def _lines(path: str, text: str, *, conda: bool = False) -> list[TorchVersion]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0]
        match = _TORCH.search(line)
        if match is None:
            continue
        if match.group().startswith("pytorch") and not conda:
            continue  # ``pytorch`` is conda's name; in pip's files it is some other package
        before = line[: match.start()].rstrip()
        if before and before[-1] not in "\"'[-,=:":
            continue  # ``import torch`` in setup.py, prose: not a requirement
        spec = match["spec"]
        found.append(
            TorchVersion(
                lowest_torch(spec),
                path,
                number,
                line[match.start() : match.end()].strip().rstrip(",").strip("\"'") or "torch",
                ceiling=ceiling_torch(spec),
            )
        )
    return found


def installed_torch(project_root: str) -> TorchVersion | None:
    """The torch installed for a plain script: in a virtual environment in the project
    root, else in the environment torchward runs in; from its ``METADATA`` file."""
    for folder in _site_folders(project_root):
        try:
            names = dependencies.list_dir(folder, ("torch-*.dist-info",))
        except OSError:
            continue
        for name in sorted(names):
            metadata = os.path.join(folder, name, "METADATA")
            try:
                text = dependencies.read_text(metadata, errors="replace")[:20_000]
            except OSError:
                continue
            match = _METADATA_VERSION.search(text)
            if match is None:
                continue
            version = match.group(1)
            return TorchVersion(parse_version(version), metadata, 1, version, installed=True)
    return None


def _site_folders(project_root: str) -> list[str]:
    folders: list[str] = []
    for venv in _VENVS:
        lib = os.path.join(project_root, venv, "lib")
        try:
            pythons = sorted(dependencies.list_dir(lib, ("python3*",)))
        except OSError:
            pythons = []
        folders.extend(os.path.join(lib, python, "site-packages") for python in pythons)
        folders.append(os.path.join(project_root, venv, "Lib", "site-packages"))
    try:
        folders.extend(site.getsitepackages())
    except AttributeError:  # some embedded interpreters lack it
        pass
    folders.extend(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return list(dict.fromkeys(folders))
