"""Import ``torchward`` from a checkout instead of the installed package.

A bench that compares two versions runs each in its own process; that process must import
the checkout's ``analysis`` / ``estimator`` / ``server`` folders (which the distribution
maps to ``torchward.analysis`` ...), not whatever the virtual environment has installed.
Used by ``reader_ab.py``, ``real_keystrokes.py`` and ``launch_slicing.py``.
"""

from __future__ import annotations

import importlib.util
import sys

#: what a ``python -c`` program runs first to use this module (``{bench}``: this folder)
PRELUDE = "import sys; sys.path.insert(0, {bench!r}); from checkout_import import import_checkout\n"


def import_checkout(root: str) -> None:
    """Make ``torchward`` and its three subpackages come from ``root``."""
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in repr(f)]
    sys.path.insert(0, root)
    import torchward

    made = []
    for name in ("estimator", "analysis", "server"):
        spec = importlib.util.spec_from_file_location(
            f"torchward.{name}",
            f"{root}/{name}/__init__.py",
            submodule_search_locations=[f"{root}/{name}"],
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"torchward.{name}"] = module
        setattr(torchward, name, module)
        made.append((spec, module))
    for spec, module in made:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
