"""Which file an import names: relative imports, beside the script, package roots, src/.

Resolution reads the file system only (never imports), and records every existence test
it makes, absences included, so a cached result knows which new file would change it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torchward.analysis.workspace import resolve_module
from torchward.estimator import dependencies


def _tree(root: Path, files: list[str]) -> Path:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _tree(
        tmp_path,
        [
            "pyproject.toml",
            "scripts/train.py",
            "scripts/models.py",  # beside the script: wins for `import models` there
            "src/pkg/__init__.py",
            "src/pkg/models.py",
            "src/pkg/train.py",
            "src/pkg/nets/__init__.py",
            "src/pkg/nets/resnet.py",
            "src/pkg/nets/blocks.py",
            "src/helpers.py",
            "tools/json.py",  # shadows the standard library's name: never looked up
            "tools/run.py",
        ],
    )


@pytest.mark.parametrize(
    ("importer", "module", "level", "expected"),
    [
        ("scripts/train.py", "models", 0, "scripts/models.py"),  # the script's folder first
        ("scripts/train.py", "pkg.models", 0, "src/pkg/models.py"),  # the src layout
        ("scripts/train.py", "pkg.nets", 0, "src/pkg/nets/__init__.py"),  # a package
        ("scripts/train.py", "helpers", 0, "src/helpers.py"),
        ("src/pkg/train.py", "pkg.models", 0, "src/pkg/models.py"),  # above the package
        ("src/pkg/train.py", "models", 1, "src/pkg/models.py"),  # from .models import
        ("src/pkg/nets/resnet.py", "blocks", 1, "src/pkg/nets/blocks.py"),
        ("src/pkg/nets/resnet.py", "models", 2, "src/pkg/models.py"),  # from ..models
        ("src/pkg/nets/resnet.py", "", 1, "src/pkg/nets/__init__.py"),  # from . import x
        ("scripts/train.py", "missing", 0, None),
        ("tools/run.py", "json", 0, None),  # the standard library's
        ("scripts/train.py", "torch.nn", 0, None),  # an installed package's
        ("scripts/models.py", "models", 0, None),  # not itself
    ],
)
def test_imports_resolve_like_python_would_see_the_project(
    project, importer, module, level, expected
):
    found = resolve_module(str(project / importer), module, level)
    assert found == (str(project / expected) if expected else None)


def test_a_document_without_a_path_resolves_nothing():
    assert resolve_module("<untitled>", "models") is None


def test_every_existence_test_is_recorded_absences_included(project):
    with dependencies.recording() as reads:
        assert resolve_module(str(project / "scripts" / "train.py"), "losses") is None
    checked = {d.key for d in reads.dependencies() if d.source is dependencies.Source.EXISTS}
    # creating any of these would change the answer: each is recorded as absent
    assert str(project / "scripts" / "losses.py") in checked
    assert str(project / "src" / "losses.py") in checked
    assert str(project / "src" / "losses" / "__init__.py") in checked


@pytest.mark.parametrize(
    ("declaration", "folder"),
    [
        ('[tool.setuptools]\npackage-dir = {"" = "lib"}\n', "lib"),
        ('[tool.setuptools.packages.find]\nwhere = ["lib"]\n', "lib"),
        ('[tool.poetry]\npackages = [{include = "book", from = "lib"}]\n', "lib"),
        ('[tool.hatch.build.targets.wheel]\npackages = ["lib/book"]\n', "lib"),
    ],
)
def test_a_package_folder_the_pyproject_declares_is_importable_from_any_script(
    tmp_path, declaration, folder
):
    # a book repository: chapters' scripts import the package the repository installs
    # in editable mode from a folder that is neither the root nor src/
    _tree(tmp_path, ["chapter5/train.py", f"{folder}/book/__init__.py", f"{folder}/book/gpt.py"])
    (tmp_path / "pyproject.toml").write_text(declaration)
    found = resolve_module(str(tmp_path / "chapter5" / "train.py"), "book.gpt")
    assert found == str(tmp_path / folder / "book" / "gpt.py")


def test_without_the_declaration_the_package_folder_is_not_searched(tmp_path):
    _tree(tmp_path, ["chapter5/train.py", "lib/book/__init__.py", "lib/book/gpt.py"])
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "book"\n')
    assert resolve_module(str(tmp_path / "chapter5" / "train.py"), "book.gpt") is None


def test_a_broken_pyproject_declares_nothing(tmp_path):
    _tree(tmp_path, ["chapter5/train.py", "lib/book/__init__.py", "lib/book/gpt.py"])
    (tmp_path / "pyproject.toml").write_text("[tool.setuptools\npackage-dir = ")
    assert resolve_module(str(tmp_path / "chapter5" / "train.py"), "book.gpt") is None
