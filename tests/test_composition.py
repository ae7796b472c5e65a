"""Composition, not mixins (issue 29): no class of the shipped packages is put together
from several partial classes that each reach for attributes only the whole one has.

A mixin's ``self.env`` is invisible to the type checker (it lives on another part), so
mixins were where most of mypy's baseline came from. A class that needs another's
behaviour holds it as a collaborator and hands it the state it works on, typed.

Found by reading the source: a class named ``*Mixin``, or a class with more than one base
other than the mix-ins Python itself means to be combined (``str`` with an ``Enum``, two
exception classes).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("analysis", "estimator", "server", "torchward")


_COMBINABLE = ("str", "int", "object")


def _combinable(base: ast.expr) -> bool:
    """A base Python means to be combined with another: a value type under an Enum, an
    enum class, an exception class, a typing construct."""
    text = ast.unparse(base)
    leaf = text.rsplit(".", 1)[-1].split("[", 1)[0]
    return (
        text in _COMBINABLE
        or leaf.endswith(("Enum", "Error", "Exception", "Warning"))
        or leaf in ("Protocol", "Generic")
    )


@functools.cache
def _mixed_classes(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.ClassDef):
                    continue
                parts = [b for b in node.bases if not _combinable(b)]
                if node.name.endswith("Mixin") or len(parts) > 1:
                    found.add((path.relative_to(root).as_posix(), node.name))
    return found


def test_no_class_is_made_of_mixins() -> None:
    mixed = _mixed_classes()
    assert not mixed, f"mixins (compose collaborators instead): {sorted(mixed)}"


def test_the_scan_sees_a_mixin(tmp_path: Path) -> None:
    """The scan is not vacuous: a class named as a mixin, and one made of two partial
    bases, are found; an enum on ``str`` and an exception on two errors are not."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "run.py").write_text(
        "import enum\n"
        "class CallsMixin:\n    pass\n"
        "class Run(Expressions, CallsMixin):\n    pass\n"
        "class Kind(str, enum.Enum):\n    A = 'a'\n"
        "class Missing(LookupError, ValueError):\n    pass\n"
    )
    assert _mixed_classes(tmp_path, ("pkg",)) == {
        ("pkg/run.py", "CallsMixin"),
        ("pkg/run.py", "Run"),
    }
