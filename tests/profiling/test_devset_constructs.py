"""Constructs of real training scripts that ``torchward profile`` refused on the development set.

Each test is a small script written here in the shape the real one takes (the corpus code
is never copied): the profile must build the model the script builds, or refuse naming
the construct and the value it could not know.
"""

from __future__ import annotations

import textwrap

import pytest

from torchward.profile import plan

from .test_plan import recipe_of

# the model built inside a function the script calls once from its ``__main__`` block,
# with a config dict assigned there
CONFIG_PASSED_TO_MAIN = """
from torch import nn

class Toy(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg["vocab"], cfg["dim"])

def main(model_cfg, settings):
    model = Toy(model_cfg)
    for _ in range(settings["epochs"]):
        pass
    return model

if __name__ == "__main__":
    MODEL_CFG = {{"vocab": 100, "dim": 16}}
    SETTINGS = {{"epochs": 2}}
    {call}
"""


def test_a_config_passed_to_the_function_that_builds_the_model_is_that_calls_argument(tmp_path):
    source = textwrap.dedent(CONFIG_PASSED_TO_MAIN.format(call="model = main(MODEL_CFG, SETTINGS)"))
    recipe = recipe_of(source, tmp_path / "train.py")
    assert recipe.label == "Toy"
    namespace: dict = {}
    for statement in recipe.prelude:
        exec(statement, namespace)  # the definitions and the config's assignment only
    assert "SETTINGS = {'epochs': 2}" not in recipe.prelude  # not needed by the construction
    assert eval(recipe.expression.replace("Toy", "dict"), namespace) == {
        "vocab": 100,
        "dim": 16,
    }


@pytest.mark.parametrize(
    "call",
    [
        "main(load_config('cfg.json'), {})",  # an argument that calls: never evaluated
        "main(MODEL_CFG, SETTINGS); main(MODEL_CFG, SETTINGS)",  # called twice: which one?
    ],
)
def test_an_argument_that_is_not_plain_or_not_single_stays_unknown_and_is_refused(tmp_path, call):
    source = textwrap.dedent(CONFIG_PASSED_TO_MAIN.format(call=call))
    with pytest.raises(plan.PlanError) as refused:
        recipe_of(source, tmp_path / "train.py")
    assert "`Toy(model_cfg)`" in refused.value.problem
    assert "`model_cfg`" in refused.value.problem


def test_a_parameter_the_function_assigns_again_keeps_its_own_value(tmp_path):
    source = textwrap.dedent(
        CONFIG_PASSED_TO_MAIN.format(call="main({'vocab': 1, 'dim': 1}, SETTINGS)")
    ).replace(
        "    model = Toy(model_cfg)",
        "    model_cfg = {'vocab': 7, 'dim': 3}\n    model = Toy(model_cfg)",
    )
    recipe = recipe_of(source, tmp_path / "train.py")
    namespace: dict = {}
    for statement in recipe.prelude:
        exec(statement, namespace)
    assert eval(recipe.expression.replace("Toy", "dict"), namespace) == {"vocab": 7, "dim": 3}


# a base config completed in place by the size the script chooses, before the model
CONFIG_COMPLETED_IN_PLACE = """
from torch import nn

class Toy(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg["vocab"], cfg["dim"])

def main():
    BASE = {{"vocab": 100}}
    sizes = {{"small": {{"dim": 16}}, "large": {{"dim": 64}}}}
    CHOICE = "large"
    {mutation}
    model = Toy(BASE)
    BASE["dim"] = 1  # after the construction: not part of it
    return model
"""


@pytest.mark.parametrize(
    "mutation", ["BASE.update(sizes[CHOICE])", 'BASE["dim"] = sizes[CHOICE]["dim"]']
)
def test_a_config_completed_in_place_before_the_construction_is_built_completed(tmp_path, mutation):
    source = textwrap.dedent(CONFIG_COMPLETED_IN_PLACE.format(mutation=mutation))
    recipe = recipe_of(source, tmp_path / "train.py")
    namespace: dict = {}
    for statement in recipe.prelude:
        exec(statement, namespace)
    assert eval(recipe.expression.replace("Toy", "dict"), namespace) == {
        "vocab": 100,
        "dim": 64,
    }


def test_a_config_completed_from_loaded_data_is_refused_naming_it(tmp_path):
    mutation = 'BASE.update(json.load(open("sizes.json")))'
    source = "import json\n" + textwrap.dedent(CONFIG_COMPLETED_IN_PLACE.format(mutation=mutation))
    with pytest.raises(plan.PlanError) as refused:
        recipe_of(source, tmp_path / "train.py")
    assert "`Toy(BASE)`" in refused.value.problem and "`BASE`" in refused.value.problem


# the configuration chosen by flags: a debug model unless ``--debug`` is off (its default)
CONFIG_CHOSEN_BY_FLAGS = """
import argparse
from torch import nn

class Toy(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg["vocab"], cfg["dim"])

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("--size", default="{size}")
    args = parser.parse_args()
    if args.debug:
        CFG = {{"vocab": 10, "dim": 2}}
    elif args.size == "large":
        CFG = {{"vocab": 100, "dim": 64}}
    else:
        CFG = {{"vocab": 100, "dim": 16}}
    model = Toy(CFG)
"""


@pytest.mark.parametrize(("size", "dim"), [("large", 64), ("small", 16)])
def test_a_config_assigned_under_flags_is_the_branch_their_defaults_take(tmp_path, size, dim):
    source = textwrap.dedent(CONFIG_CHOSEN_BY_FLAGS.format(size=size))
    recipe = recipe_of(source, tmp_path / "train.py")
    namespace: dict = {}
    for statement in recipe.prelude:
        exec(statement, namespace)
    assert eval(recipe.expression.replace("Toy", "dict"), namespace) == {"vocab": 100, "dim": dim}
    assert not any("parse_args" in statement for statement in recipe.prelude)


def test_a_config_under_a_branch_the_reader_cannot_decide_is_refused(tmp_path):
    source = textwrap.dedent(CONFIG_CHOSEN_BY_FLAGS.format(size="large")).replace(
        "if args.debug:", "if random.random() < 0.5:"
    )
    with pytest.raises(plan.PlanError) as refused:
        recipe_of("import random\n" + source, tmp_path / "train.py")
    assert "`Toy(CFG)`" in refused.value.problem and "`CFG`" in refused.value.problem


def test_an_architecture_without_sdpa_attention_is_built_with_the_eager_one():
    """BLOOM has no SDPA attention in transformers: ``from_pretrained`` without an
    ``attn_implementation`` gives the eager one, and so does the profile (it refused)."""
    pytest.importorskip("transformers", reason="builds a transformers architecture")
    from torchward.profile.build import build_model
    from torchward.profile.request import ModelRecipe

    tiny = {"vocab_size": 64, "hidden_size": 24, "n_layer": 1}
    bloom = build_model(ModelRecipe(kind="config", model_type="bloom", config=tiny))
    assert bloom.config._attn_implementation == "eager"
    gpt2 = build_model(
        ModelRecipe(
            kind="config", model_type="gpt2", config={"n_embd": 16, "n_layer": 1, "n_head": 2}
        )
    )
    assert gpt2.config._attn_implementation == "sdpa"  # preferred where it exists


def test_an_argument_read_from_the_parsed_flags_is_written_in_as_the_flags_default(tmp_path):
    source = textwrap.dedent(
        """
        import argparse
        from torch import nn

        class Net(nn.Module):
            def __init__(self, depth):
                super().__init__()
                self.layers = nn.Sequential(*[nn.Linear(8, 8) for _ in range(depth)])

        def main(depth):
            net = Net(depth)
            return net

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--depth", type=int, default=6)
            args = parser.parse_args()
            main(args.depth)
        """
    )
    recipe = recipe_of(source, tmp_path / "train.py")
    assert recipe.expression == "Net(6)"
    assert not any("parse_args" in statement for statement in recipe.prelude)
