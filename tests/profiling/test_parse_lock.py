"""``torchward profile`` planning parses under the process-wide parse lock, like the engine.

The server plans a profile on a worker thread while another thread analyses; two
threads in ``ast.parse`` at once can fail on valid source (python/cpython#106905, see
:mod:`torchward.analysis.syntax.parsing`). Every ``ast.parse`` made while planning is observed
with the lock's state at that moment; and no module of the package calls ``ast.parse``
except through :mod:`torchward.analysis.syntax.parsing`.
"""

from __future__ import annotations

import ast
import pathlib

from torchward.analysis.job.runconfig import read_source
from torchward.analysis.syntax import parsing

import torchward
from torchward.profile import plan

from .models import TINY_GPT, TRAIN_SCRIPT


def test_planning_a_profile_parses_only_under_the_parse_lock(tmp_path, monkeypatch):
    held: list[bool] = []
    original = ast.parse

    def observed(*args, **kwargs):
        held.append(parsing._PARSING.locked())
        return original(*args, **kwargs)

    (tmp_path / "gpt.py").write_text(TINY_GPT)
    source = TRAIN_SCRIPT.format(marker="m")
    path = tmp_path / "train.py"
    path.write_text(source)
    config, _ = read_source(source, str(path))
    monkeypatch.setattr(ast, "parse", observed)
    recipe = plan.script_recipe(str(path), source, config)  # the construction and its prelude
    plan.model_source_digest(recipe, str(tmp_path))  # the script's local imports
    assert recipe.expression == "TinyGPT(d=WIDTH, layers=2)"
    assert held and all(held), held


def test_no_module_parses_outside_the_parse_lock():
    root = pathlib.Path(torchward.__file__).resolve().parent.parent
    packages = [root / name for name in ("analysis", "estimator", "server", "torchward")]
    calls = []
    for package in packages:
        for path in sorted(package.rglob("*.py")):
            if path.name == "parsing.py" and path.parent.name == "syntax":
                continue
            tree = ast.parse(path.read_text("utf-8"), str(path))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "parse"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "ast"
                ):
                    calls.append(f"{path.relative_to(root)}:{node.lineno}")
    assert calls == []
