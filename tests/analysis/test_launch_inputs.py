"""Launch mode beyond the plain flow of values: containers changed in place, arguments the
dataflow does not evaluate, files the launch executes or loads (handed in as
:class:`~torchward.analysis.facts.launch_driver.LaunchInputs`), and where a statement no call of
the launch reached stands. Each drives the real engine in launch mode over a small script.
"""

from __future__ import annotations

import ast
import textwrap

from torchward.analysis.facts.conditions import PathCondition
from torchward.analysis.facts.constants import UNDECIDED, as_constant
from torchward.analysis.facts.filefacts import build_launch_facts
from torchward.analysis.facts.launch_driver import LaunchInputs
from torchward.analysis.facts.launch_paths import launch_entry_points


def _launch(source: str, inputs: LaunchInputs | None = None):
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    facts = build_launch_facts(tree, source, "/nonexistent/launch_script.py", inputs)
    return tree, facts.analyzer.launch


def _bound(tree, launch, name: str):
    """The fact of the value the last ``name = ...`` statement binds."""
    found = None
    for statement in ast.walk(tree):
        if (
            isinstance(statement, ast.Assign)
            and isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == name
        ):
            found = launch.constant(statement.value)
    assert found is not None, f"no fact bound to {name}"
    return found


def _statement(tree, line: int):
    return next(n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno == line)


def test_a_dict_updated_in_place_holds_the_update():
    """``BASE.update(SIZES[choice])`` before the model is built from ``BASE``: the model
    reads the updated dict, not the one written at the top (a stale constant is a wrong
    value with the confidence of a right one)."""
    tree, launch = _launch(
        """\
        BASE = {"emb_dim": 768, "n_layers": 12}
        SIZES = {"large": {"emb_dim": 1280, "n_layers": 36}}
        BASE.update(SIZES["large"], drop_rate=0.1)
        built = BASE
        """
    )
    assert dict(_bound(tree, launch, "built").value) == {
        "emb_dim": 1280,
        "n_layers": 36,
        "drop_rate": 0.1,
    }


def test_an_item_assigned_and_an_append_are_applied():
    tree, launch = _launch(
        """\
        config = {"lr": 1e-3}
        config["lr"] = 3e-4
        layers = [64]
        layers.append(128)
        seen_config = config
        seen_layers = layers
        """
    )
    assert _bound(tree, launch, "seen_config").value == (("lr", 3e-4),)
    assert _bound(tree, launch, "seen_layers").value == (64, 128)


def test_a_change_the_fold_cannot_follow_leaves_the_container_undecided():
    """``popitem()``, an update with something unknown, an item under an unknown key: the
    container is undecided from there on, never its value from before."""
    tree, launch = _launch(
        """\
        import os
        a = {"x": 1, "y": 2}
        a.popitem()
        seen_a = a
        b = {"x": 1}
        b.update(load_overrides())
        seen_b = b
        c = {"x": 1}
        c[os.urandom(1)] = 2
        seen_c = c
        """
    )
    for name in ("seen_a", "seen_b", "seen_c"):
        assert _bound(tree, launch, name).value is UNDECIDED, name


def test_a_container_changed_inside_a_skipped_branch_keeps_its_value_on_the_launch():
    """The change is on a path a plain launch does not take: the default path still holds
    the dict as written."""
    tree, launch = _launch(
        """\
        DEBUG = False
        cfg = {"batch": 32}
        if DEBUG:
            cfg["batch"] = 2
        seen = cfg
        """
    )
    fact = _bound(tree, launch, "seen")
    assert fact.value == (("batch", 32),) and fact.condition is PathCondition.DEFAULT


def test_arguments_the_dataflow_does_not_evaluate_still_get_their_facts():
    """A module's ``.to`` returns the module without evaluating its arguments; the reader
    still asks what the local ``dtype`` holds there (a value only the run of ``main``
    knows: folding the expression where it is written, after the fact, cannot)."""
    tree, launch = _launch(
        """\
        import torch
        def main():
            dtype = torch.bfloat16
            model = torch.nn.Linear(4, 4)
            model.to("cuda").to(dtype)
        main()
        """
    )
    call = _statement(tree, 5).value
    assert launch.constant(call.args[0]).value == "torch.bfloat16"


def test_statements_an_executed_file_runs_are_run_at_the_exec():
    """``exec(open("configurator.py").read())``: the statements the caller read from the
    file (placed at the ``exec``) override the globals set before it; one set after wins
    again."""
    source = textwrap.dedent(
        """\
        batch_size = 12
        block_size = 1024
        exec(open("configurator.py").read())
        block_size = 256
        seen_batch = batch_size
        seen_block = block_size
        """
    )
    tree = ast.parse(source)
    at = tree.body[2]
    override = ast.parse("batch_size = 32\nblock_size = 2048\n").body
    for statement in override:
        ast.copy_location(statement, at)
    facts = build_launch_facts(tree, source, "train.py", LaunchInputs(included={id(at): override}))
    launch = facts.analyzer.launch
    assert _bound(tree, launch, "seen_batch").value == 32
    assert _bound(tree, launch, "seen_block").value == 256


def test_a_config_file_the_script_loads_is_the_data_the_caller_hands_in():
    """``json.load(open(PATH))``: the engine opens nothing; it asks the caller for the file
    named there, and a file it cannot have is undecided."""
    asked: list[str] = []

    def load(filename: str):
        asked.append(filename)
        return as_constant({"batch_size": 24}) if filename == "train.json" else UNDECIDED

    tree, launch = _launch(
        """\
        import json
        NAME = "train.json"
        cfg = json.load(open(NAME))
        batch = cfg["batch_size"]
        other = json.load(open("missing.json"))
        """,
        LaunchInputs(load=load),
    )
    assert _bound(tree, launch, "batch").value == 24
    assert _bound(tree, launch, "other").value is UNDECIDED
    assert asked == ["train.json", "missing.json"]


def test_data_read_from_a_file_is_spelt_as_a_constant():
    assert as_constant({"a": [1, {"b": None}], "c": "x"}) == (
        ("a", (1, (("b", None),))),
        ("c", "x"),
    )
    assert as_constant({1.5, 2}) is UNDECIDED  # not plain data


def test_a_statement_no_call_reached_stands_where_it_is_written():
    """A method nothing calls may never run (unsure); a gate inside a function the launch
    never reached is unsure, whatever its test (even ``if True``: no launch decided it); a
    grad-disabling ``with`` is validation.
    Asking a value inside first (which analyses the function on demand) changes none of
    it: the answer does not depend on the order of questions."""
    source = """\
        import torch
        LR = 3e-4
        class Hooks:
            def on_step(self, model):
                scale = LR * 2
                if model.training:
                    scale = LR
            def export(self, model):
                with torch.no_grad():
                    model.eval()
                if True:
                    done = 1
        """
    for ask_value_first in (False, True):
        tree, launch = _launch(source)
        if ask_value_first:
            assert launch.constant(_statement(tree, 5).value).value == 6e-4
        assert launch.condition(_statement(tree, 5)) is PathCondition.UNSURE
        assert launch.condition(_statement(tree, 7)) is PathCondition.UNSURE
        assert launch.condition(_statement(tree, 10)) is PathCondition.VALIDATION
        assert launch.condition(_statement(tree, 11)) is PathCondition.UNSURE
        assert launch.condition(_statement(tree, 12)) is PathCondition.UNSURE


def test_entry_points_are_the_top_level_functions_the_code_neither_calls_nor_passes():
    """``fire.Fire(main)`` passes ``main`` (not an entry of its own: the call runs it); a
    variable ``trainer`` is no use of ``train``; ``@call_parse def entry`` is one."""
    from torchward.analysis.facts.semantic import ModuleIndex

    source = textwrap.dedent(
        """\
        import fire
        def main(lr=1e-3):  # fire runs it
            pass
        def train(): pass
        def helper(): pass
        trainer = None
        @call_parse
        def entry(batch: int = 4):
            helper()
        fire.Fire(main)
        """
    )
    index = ModuleIndex(ast.parse(source), source)
    assert [info.node.name for info in launch_entry_points(index, source)] == ["train", "entry"]


def test_a_call_on_a_path_the_launch_does_not_take_is_not_followed():
    """``if args.export: write_model(model)`` is off by default: the launch does not run
    the export helper (nor ``write_tensors``, which only it calls); asked about, their
    statements stand on the off path, and a helper also called on the default path is
    analysed there as usual."""
    tree, launch = _launch(
        """\
        EXPORT = False
        ddp = False
        def write_tensors(model):
            size = 4
        def write_model(model):
            write_tensors(model)
        def setup():
            ready = 1
        def shared():
            value = 2
        if EXPORT:
            write_model(None)
            shared()
        if ddp:
            setup()
        shared()
        """
    )
    assert launch.conditions.get(id(_statement(tree, 4))) is None  # not analysed
    assert launch.condition(_statement(tree, 4)) is PathCondition.OFF
    assert launch.condition(_statement(tree, 6)) is PathCondition.OFF
    assert launch.condition(_statement(tree, 8)) is PathCondition.MULTI_GPU
    assert launch.condition(_statement(tree, 10)) is PathCondition.DEFAULT


def test_a_value_in_an_unreached_function_is_folded_where_it_is_written():
    """Nothing calls ``Dataset.__init__`` (a library builds it) nor ``collate``: module
    constants and the closure hold, a parameter left alone holds its default, a name the
    function binds itself is undecided — never a module value it shadows."""
    tree, launch = _launch(
        """\
        SIZE = 224
        WIDTH = 8
        class Dataset:
            def __init__(self, root, size=SIZE * 2, crop=False):
                width = 3
                self.shape = (size, WIDTH, width)
        def main():
            scale = 4
            def collate(batch, factor=2):
                return scale * factor
            return collate
        main()
        """
    )
    shape = _statement(tree, 6).value
    assert launch.constant(shape.elts[0]).value == 448
    assert launch.constant(shape.elts[1]).value == 8
    assert launch.constant(shape.elts[2]).value is UNDECIDED
    assert launch.constant(_statement(tree, 10).value).value == 8


def test_a_list_of_pairs_is_not_a_dict():
    """A dict constant has its own type: indexing a list of pairs by position gives the
    pair, and an empty list is no empty dict."""
    tree, launch = _launch(
        """\
        pairs = [("lr", 1), ("wd", 2)]
        first = pairs[0]
        empty = []
        empty.append(3)
        table = {}
        table["k"] = 1
        grown = empty
        filled = table
        """
    )
    assert _bound(tree, launch, "first").value == ("lr", 1)
    assert _bound(tree, launch, "grown").value == (3,)
    assert dict(_bound(tree, launch, "filled").value) == {"k": 1}


def test_a_command_line_runner_calls_its_function_with_the_defaults():
    """``fire.Fire(train)``: a plain launch runs ``train()`` with every parameter at its
    default, so what it passes on is known (a model's width built in a helper)."""
    source = (
        "import fire\n"
        "def build(width):\n"
        "    size = width * 4\n"
        "    return size\n"
        "def train(width: int = 128):\n"
        "    build(width=width)\n"
        "if __name__ == '__main__':\n"
        "    fire.Fire(train)\n"
    )
    tree = ast.parse(source)
    facts = build_launch_facts(tree, source, "train.py").analyzer.launch
    product = tree.body[1].body[0].value  # width * 4
    assert facts.constant(product).value == 512


def test_past_a_raise_on_the_default_path_the_launch_is_unsure():
    """``else: raise ValueError("give --model")`` with the flag unset: a plain launch
    stops there, so what follows holds only for a launch with flags."""
    source = textwrap.dedent(
        """\
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--model")
        parser.add_argument("--debug", action="store_true")
        args = parser.parse_args()
        if args.debug:
            raise SystemExit("no debug runs")
        before = 1
        if args.model:
            name = args.model
        else:
            raise ValueError("give --model")
        after = 2
        try:
            import missing_module
        except ImportError:
            pass
        """
    )
    tree = ast.parse(source)
    facts = build_launch_facts(tree, source, "train.py").analyzer.launch
    before, after = tree.body[6], tree.body[8]
    assert facts.condition(before) is PathCondition.DEFAULT  # the debug raise is not taken
    assert facts.condition(after) is PathCondition.UNSURE


def test_a_raise_a_handler_may_catch_does_not_end_the_path():
    source = textwrap.dedent(
        """\
        try:
            raise RuntimeError("probe")
        except RuntimeError:
            pass
        after = 2
        """
    )
    tree = ast.parse(source)
    facts = build_launch_facts(tree, source, "train.py").analyzer.launch
    assert facts.condition(tree.body[1]) is PathCondition.DEFAULT


def test_string_methods_on_a_known_string_fold():
    source = "NAME = 'Run-LARGE'\nwide = NAME.lower().endswith('large')\nodd = NAME.zfill(3)\n"
    tree = ast.parse(source)
    facts = build_launch_facts(tree, source, "train.py").analyzer.launch
    assert facts.constant(tree.body[1].value).value is True
    assert facts.constant(tree.body[2].value).value is UNDECIDED  # not in the pure list
