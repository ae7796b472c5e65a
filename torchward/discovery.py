"""Which files a ``torchward check`` looks at.

A recursive walk with :func:`os.scandir` (one system call per directory, the file type
comes with the entry) that prunes whole directories as early as possible: version
control folders, virtual environments (any directory holding ``pyvenv.cfg``, whatever
its name), build and cache folders, the ``exclude`` patterns of the configuration and
everything a ``.gitignore`` names. ``.gitignore`` files are honoured in the walked
directories and in their ancestors up to the repository root, plus
``.git/info/exclude``; the matching is :mod:`torchward.patterns` (no ``git`` process,
so the walk costs the same inside and outside a repository).

Files named explicitly on the command line are always checked, like ruff does: the
user asked for them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import attrs

from .errors import UsageError
from .patterns import PatternList

ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn", ".bzr", ".jj"})
DEFAULT_EXCLUDE = (
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".eggs",
    "*.egg-info",
    "build",
    "dist",
    "_build",
    "buck-out",
    "__pycache__",
    "__pypackages__",
    "node_modules",
    "site-packages",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".torchward_cache",
    ".ipynb_checkpoints",
)
PYTHON_SUFFIXES = (".py", ".ipynb")  # notebooks: see torchward.notebook


@attrs.frozen(order=True)
class SourceFile:
    """A file to check: ``path`` as shown to the user, ``absolute`` as the cache keys it."""

    path: str
    absolute: str


def _read_ignore_file(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


def _repository_root(directory: str) -> str | None:
    current = directory
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _ancestor_ignores(directory: str) -> list[PatternList]:
    """The ``.gitignore`` lists that apply to ``directory`` from above it, outermost first."""
    root = _repository_root(directory)
    if root is None:
        return []
    lists = []
    info_exclude = os.path.join(root, ".git", "info", "exclude")
    if os.path.isfile(info_exclude):
        lists.append(PatternList.parse(root, _read_ignore_file(info_exclude)))
    chain = []
    current = directory
    while current != root:
        current = os.path.dirname(current)
        chain.append(current)
    for ancestor in reversed(chain):
        lines = _read_ignore_file(os.path.join(ancestor, ".gitignore"))
        if lines:
            lists.append(PatternList.parse(ancestor, lines))
    return lists


def _is_ignored(path: str, is_dir: bool, ignores: Sequence[PatternList]) -> bool:
    verdict = None
    for patterns in ignores:
        decision = patterns.decision(path, is_dir)
        if decision is not None:
            verdict = decision
    return bool(verdict)


@attrs.define
class Walker:
    """Walks directories under the exclusion rules of one configuration."""

    exclude: PatternList  # patterns relative to ``root`` (base "")
    root: str  # absolute directory the ``exclude`` patterns are written for
    found: dict[str, SourceFile] = attrs.field(factory=dict)

    def _root_relative(self, absolute: str) -> str:
        if absolute.startswith(self.root + os.sep):
            return absolute[len(self.root) + 1 :].replace(os.sep, "/")
        return absolute.lstrip(os.sep).replace(os.sep, "/")

    def _is_excluded(self, absolute: str, is_dir: bool) -> bool:
        return bool(self.exclude.decision(self._root_relative(absolute), is_dir))

    def add_file(self, shown: str, absolute: str) -> None:
        self.found.setdefault(absolute, SourceFile(shown, absolute))

    def walk(self, shown: str, absolute: str) -> None:
        stack: list[tuple[str, str, list[PatternList]]] = [
            (shown, absolute, _ancestor_ignores(absolute))
        ]
        while stack:
            shown_dir, abs_dir, ignores = stack.pop()
            lines = _read_ignore_file(os.path.join(abs_dir, ".gitignore"))
            if lines:
                ignores = ignores + [PatternList.parse(abs_dir, lines)]
            try:
                entries = list(os.scandir(abs_dir))
            except OSError:
                continue  # unreadable directory: nothing to check there
            for entry in entries:
                name = entry.name
                abs_path = os.path.join(abs_dir, name)
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    is_file = not is_dir and entry.is_file()
                except OSError:
                    continue
                if is_dir:
                    if name in ALWAYS_SKIPPED or self._is_excluded(abs_path, True):
                        continue
                    if ignores and _is_ignored(abs_path, True, ignores):
                        continue
                    if os.path.exists(os.path.join(abs_path, "pyvenv.cfg")):
                        continue  # a virtual environment, whatever it is called
                    stack.append((os.path.join(shown_dir, name), abs_path, ignores))
                elif is_file and name.endswith(PYTHON_SUFFIXES):
                    if self._is_excluded(abs_path, False):
                        continue
                    if ignores and _is_ignored(abs_path, False, ignores):
                        continue
                    self.add_file(os.path.normpath(os.path.join(shown_dir, name)), abs_path)


def discover(paths: Iterable[str], exclude: PatternList, root: str) -> list[SourceFile]:
    """The files to check under ``paths``, sorted by shown path; raises for missing paths."""
    walker = Walker(exclude, os.path.abspath(root))
    for given in paths:
        absolute = os.path.abspath(given)
        if os.path.isdir(absolute):
            walker.walk(given, absolute)
        elif os.path.exists(absolute):
            walker.add_file(os.path.normpath(given), absolute)
        else:
            raise UsageError(f"{given}: no such file or directory")
    return sorted(walker.found.values(), key=lambda source_file: source_file.path)
