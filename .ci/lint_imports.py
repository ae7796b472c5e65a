"""CI check: the import contracts of ``pyproject.toml`` (``[tool.importlinter]``).

``lint-imports`` builds its graph with grimp, which finds a package's modules by walking
the folder of its top-level package. This project maps ``analysis/``, ``estimator/`` and
``server/`` into ``torchward`` with setuptools' ``package-dir``, so the editable install
has no such folder. This script lays the installed package out as a folder of symbolic
links (from ``package-dir``), puts it first on ``sys.path`` and runs ``lint-imports``.
Exit status: ``lint-imports``'s (0 when every contract is kept).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def stage(into: Path) -> None:
    """Symbolic links that lay the package out as the wheel does."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = setuptools["package-dir"]
    # the outermost mapping of each folder: torchward.analysis covers its sub-packages
    for name, folder in sorted(mapping.items(), key=lambda item: item[0].count(".")):
        target = into.joinpath(*name.split("."))
        if target.exists() or target.is_symlink():
            continue
        if name.count(".") == 0:
            target.mkdir(parents=True)
            for entry in (ROOT / folder).iterdir():
                if entry.name != "__pycache__":
                    (target / entry.name).symlink_to(entry)
        else:
            parent = target.parent
            if (parent / target.name).is_symlink():
                continue
            target.symlink_to(ROOT / folder)


def main() -> int:
    from importlinter.cli import lint_imports

    with tempfile.TemporaryDirectory(prefix="torchward-imports-") as folder:
        stage(Path(folder))
        # lint-imports puts the working directory first on sys.path: the staged folder
        sys.path.insert(0, folder)
        os.chdir(folder)
        return lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)


if __name__ == "__main__":
    sys.exit(main())
