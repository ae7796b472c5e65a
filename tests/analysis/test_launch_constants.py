"""Launch mode: constants and path conditions as facts of the dataflow (issue 12, item 1).

The join of :class:`~torchward.analysis.facts.launch.ConstantFact` is proven a lattice join over
generated facts; the rest drives the real engine in launch mode over small scripts and
reads the facts it recorded by node, the way the estimator's script reader will.
"""

from __future__ import annotations

import ast
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st
from torchward.analysis.facts.conditions import PathCondition
from torchward.analysis.facts.constants import UNDECIDED, ConstantFact, Items, join_constants
from torchward.analysis.facts.filefacts import build_facts, build_launch_facts
from torchward.analysis.finding import Evidence, Span

FACTS = st.none() | st.builds(
    ConstantFact,
    st.sampled_from(
        [
            1,
            2,
            1.0,
            True,
            "fp16",
            None,
            UNDECIDED,
            # dicts join key by key (``config["fp16"] = ...`` on one path)
            Items((("stage", 3),)),
            Items((("stage", 3), ("fp16", True))),
            Items((("fp16", True), ("stage", 3))),
            Items((("stage", 2),)),
        ]
    ),
    st.builds(
        Evidence,
        st.builds(Span, st.integers(1, 3), st.just(0), st.just(9), st.just(0)),
        st.sampled_from(["a plain launch", "another line's message"]),
    ),
    st.sampled_from(list(PathCondition)),
)


@settings(max_examples=300, deadline=None)
@given(FACTS, FACTS)
def test_constant_join_is_commutative(a, b):
    assert join_constants(a, b) == join_constants(b, a)


@settings(max_examples=300, deadline=None)
@given(FACTS, FACTS, FACTS)
def test_constant_join_is_associative(a, b, c):
    assert join_constants(join_constants(a, b), c) == join_constants(a, join_constants(b, c))


@settings(max_examples=300, deadline=None)
@given(FACTS, FACTS)
def test_constant_join_keeps_the_first_evidence_whichever_side_it_is_on(a, b):
    """Evidence is not part of a fact's identity (``==`` ignores it), so the properties
    above cannot see it: the line a value is reported at must not depend on the order
    branches merge in either."""
    left, right = join_constants(a, b), join_constants(b, a)
    assert (left is None) == (right is None)
    if left is not None and right is not None:
        assert left.evidence == right.evidence


@settings(max_examples=100, deadline=None)
@given(FACTS)
def test_constant_join_is_idempotent(a):
    assert join_constants(a, a) == a


def test_one_and_one_point_zero_are_different_values():
    """``1 == 1.0`` in Python, but a batch size of 1 and a learning rate of 1.0 are not one
    constant: the join compares types too."""
    where = Evidence(Span(1, 0, 1, 1), "x")
    joined = join_constants(ConstantFact(1, where), ConstantFact(1.0, where))
    assert joined is not None and joined.value is UNDECIDED


def _launch(source: str):
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    facts = build_launch_facts(tree, source, "/nonexistent/launch_script.py")
    return tree, facts.analyzer.launch


def _value_at(tree, launch, text: str, line: int | None = None):
    """The launch fact of the expression written ``text`` (on ``line``, if given)."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.expr)
            and ast.unparse(node) == text
            and (line is None or node.lineno == line)
        ):
            fact = launch.constant(node)
            if fact is not None:
                return fact
    raise AssertionError(f"no launch fact for {text!r}")


def _statement(tree, line: int):
    return next(n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno == line)


SCRIPT = """\
import argparse, os, torch
BATCH = 12
DEBUG = False
world = int(os.environ.get("WORLD_SIZE", 1))
if DEBUG:
    BATCH = 2
def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--micro-batch", type=int, default="4")
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--distributed", action="store_true")
    return parser.parse_args()
def train(model, batch):
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch)
    for x in loader:
        model(x).sum().backward()
def evaluate(model, batch):
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch * 4)
def main():
    args = get_args()
    model = torch.nn.Linear(2, 2)
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    if args.amp:
        scaler = torch.cuda.amp.GradScaler()
    train(model, BATCH * args.micro_batch)
    evaluate(model, BATCH)
    with torch.no_grad():
        sample = BATCH + 1
if __name__ == "__main__":
    main()
"""


def test_module_constants_follow_the_default_path():
    tree, launch = _launch(SCRIPT)
    assert _statement(tree, 6).lineno == 6 and launch.condition(_statement(tree, 6)) is (
        PathCondition.OFF
    )
    fact = _value_at(tree, launch, "BATCH * args.micro_batch")
    assert (fact.value, fact.condition) == (48, PathCondition.DEFAULT)  # 12 x int("4")


def test_environment_variables_are_unset_on_a_plain_launch():
    tree, launch = _launch(SCRIPT)
    assert _value_at(tree, launch, "int(os.environ.get('WORLD_SIZE', 1))").value == 1


def test_parameters_carry_the_callers_constants():
    tree, launch = _launch(SCRIPT)
    fact = _value_at(tree, launch, "batch", line=14)
    assert (fact.value, fact.condition) == (48, PathCondition.DEFAULT)


def test_an_evaluation_function_and_a_no_grad_block_are_validation():
    tree, launch = _launch(SCRIPT)
    fact = _value_at(tree, launch, "batch * 4")
    assert (fact.value, fact.condition) == (48, PathCondition.VALIDATION)
    assert launch.condition(_statement(tree, 29)) is PathCondition.VALIDATION


def test_flags_off_by_default_and_distributed_branches():
    tree, launch = _launch(SCRIPT)
    assert launch.condition(_statement(tree, 23)) is PathCondition.MULTI_GPU
    assert launch.condition(_statement(tree, 25)) is PathCondition.OFF
    assert launch.condition(_statement(tree, 26)) is PathCondition.DEFAULT


def test_a_reassignment_the_fold_cannot_follow_is_not_a_stale_constant():
    tree, launch = _launch(
        """\
        import torch
        steps = 10
        steps = compute_steps()
        total = steps * 2
        for i in range(3):
            count = 1
            count = count + i
        after = count
        """
    )
    assert _value_at(tree, launch, "steps * 2").value is UNDECIDED
    assert _value_at(tree, launch, "count", line=8).value is UNDECIDED


def test_an_undecided_test_makes_both_branches_unsure():
    tree, launch = _launch(
        """\
        import torch
        if torch.rand(1).item() > 0.5:
            lr = 1
        else:
            lr = 2
        use = lr
        """
    )
    assert launch.condition(_statement(tree, 3)) is PathCondition.UNSURE
    assert launch.condition(_statement(tree, 5)) is PathCondition.UNSURE
    assert _value_at(tree, launch, "lr", line=6).value is UNDECIDED


def test_a_lint_run_records_no_launch_facts():
    """The lint never pays for constants: no facts on its values, no recorder."""
    source = textwrap.dedent(SCRIPT)
    facts = build_facts(ast.parse(source), source, "/nonexistent/launch_script.py")
    assert facts.analyzer.launch is None
    module = facts.analyzer.module_run
    assert module is not None and all(v.constant is None for v in module.env.values())


def test_an_attribute_rebound_on_a_skipped_branch_keeps_its_default():
    tree, launch = _launch(
        """\
        import argparse, torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--batch-size", type=int, default=256)
        parser.add_argument("--world-size", type=int, default=-1)
        parser.add_argument("--distributed", action="store_true")
        args = parser.parse_args()
        if args.distributed:
            args.batch_size = int(args.batch_size / args.world_size)
        loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size)
        """
    )
    fact = _value_at(tree, launch, "args.batch_size", line=9)
    assert (fact.value, fact.condition) == (256, PathCondition.DEFAULT)


def test_a_function_the_flow_does_not_reach_is_folded_when_asked_about():
    """Launch mode runs the module, what it calls and its entry points; in a method nothing
    calls (a framework's hook) a fact is folded when asked for, and its statements are
    those of a method nothing in the file calls: unsure to run at all."""
    tree, launch = _launch(
        """\
        import torch
        LR = 3e-4
        class Hooks:
            def on_step(self, model):
                if model.training:
                    scale = LR * 2
        """
    )
    assert launch.conditions.get(id(_statement(tree, 5))) is None  # not analysed up front
    assert launch.condition(_statement(tree, 5)) is PathCondition.UNSURE
    assert _value_at(tree, launch, "LR * 2").value == 6e-4


def test_an_entry_points_parameters_reach_a_spawned_worker_through_locals():
    """An entry point with its flags as parameters packages them with ``dict(locals())``
    and hands them to ``mp.spawn``: the worker, run as rank 0, reads their defaults."""
    tree, launch = _launch(
        """\
        import torch
        import torch.multiprocessing as mp
        def worker(rank, world_size, args):
            if args["optimizer"] == "adamw":
                optimizer = torch.optim.AdamW(params, lr=args["lr"])
            else:
                optimizer = torch.optim.Adam(params)
        def run(world_size=1, optimizer="adamw", lr=1e-4):
            args = dict(locals())
            mp.spawn(worker, args=(world_size, args), nprocs=world_size)
        def main(**kwargs):
            run(**kwargs)
        main(**dict(lr=2e-5))
        """
    )
    assert launch.condition(_statement(tree, 5)) is PathCondition.DEFAULT
    assert launch.condition(_statement(tree, 7)) is PathCondition.OFF
    assert _value_at(tree, launch, "args['lr']").value == 2e-5


def test_a_worker_passed_to_a_launcher_is_not_analysed_first_as_an_entry():
    """``spawn(worker, ...)`` names the worker: it runs with the arguments the spawn
    gives it, not first on its own with unknown ones (whose join would undo them)."""
    tree, launch = _launch(
        """\
        import torch.multiprocessing as mp
        def worker(rank, config):
            steps = config["steps"] * 2
        def main(steps=10):
            mp.spawn(worker, args=(dict(locals()),))
        """
    )
    assert _value_at(tree, launch, "config['steps'] * 2").value == 20


def test_a_value_set_before_a_decided_branch_gives_way_to_the_branch_that_runs():
    tree, launch = _launch(
        """\
        import torch
        device = "cpu"
        if torch.cuda.is_available():
            device = "cuda"
        dtype = torch.bfloat16
        if dtype == torch.float16:
            scaler = torch.cuda.amp.GradScaler()
        model = build().to(device)
        """
    )
    fact = _value_at(tree, launch, "device", line=8)
    assert (fact.value, fact.condition) == ("cuda", PathCondition.DEFAULT)
    assert _value_at(tree, launch, "dtype", line=6).value == "torch.bfloat16"
    assert launch.condition(_statement(tree, 7)) is PathCondition.OFF


def test_a_value_only_an_unsure_branch_changes_is_unsure_after_it():
    """The value set before an undecided ``if`` and the one its body sets are both
    possible after it: undecided, and not believed at the default path's confidence."""
    tree, launch = _launch(
        """\
        import torch, random
        batch = 8
        if random.random() > 0.5:
            batch = 16
        loader = torch.utils.data.DataLoader(data, batch_size=batch)
        """
    )
    fact = _value_at(tree, launch, "batch", line=5)
    assert fact.value is UNDECIDED and fact.condition is PathCondition.UNSURE


def test_a_config_dataclass_instance_holds_its_fields():
    tree, launch = _launch(
        """\
        from dataclasses import dataclass, field
        import torch
        @dataclass
        class GPTConfig:
            block_size: int = 1024
            n_layer: int = 12
            n_embd: int = field(default=768)
            layers: list = field(default_factory=list)
        config = GPTConfig(2048, n_layer=24)
        width = config.n_embd * config.n_layer
        context = config.block_size
        """
    )
    assert _value_at(tree, launch, "config.n_embd * config.n_layer").value == 768 * 24
    assert _value_at(tree, launch, "config.block_size").value == 2048


def test_dataclasses_an_hf_argument_parser_fills_hold_their_defaults():
    tree, launch = _launch(
        """\
        from dataclasses import dataclass, field
        import transformers
        @dataclass
        class ModelArguments:
            model_name_or_path: str = field(default="facebook/opt-125m")
        @dataclass
        class TrainingArguments(transformers.TrainingArguments):
            model_max_length: int = field(default=512)
        def train():
            parser = transformers.HfArgumentParser((ModelArguments, TrainingArguments))
            model_args, training_args = parser.parse_args_into_dataclasses()
            name = model_args.model_name_or_path
            length = training_args.model_max_length
            steps = training_args.max_steps
        train()
        """
    )
    assert _value_at(tree, launch, "model_args.model_name_or_path").value == "facebook/opt-125m"
    assert _value_at(tree, launch, "training_args.model_max_length").value == 512
    # a field the library base class declares is not known
    assert _value_at(tree, launch, "training_args.max_steps").value is UNDECIDED


def test_a_parser_handed_to_a_library_keeps_the_flags_declared_before():
    tree, launch = _launch(
        """\
        import argparse, deepspeed
        parser = argparse.ArgumentParser()
        parser.add_argument("--arch", default="resnet18")
        parser = deepspeed.add_config_arguments(parser)
        args = parser.parse_args()
        name = args.arch
        config = args.deepspeed_config
        """
    )
    assert _value_at(tree, launch, "args.arch").value == "resnet18"
    assert _value_at(tree, launch, "args.deepspeed_config").value is UNDECIDED


def test_a_call_on_a_skipped_path_does_not_undo_the_call_that_runs():
    """``train(...)`` runs by default; the ``--evolve`` branch (off) calls it again with
    other arguments: the default path's constants stand (the second call's facts lose
    every join, which is also why the analyzer does not run the body for it again)."""
    tree, launch = _launch(
        """\
        import argparse, torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--evolve", action="store_true")
        args = parser.parse_args()
        def train(batch):
            loader = torch.utils.data.DataLoader(data, batch_size=batch * 2)
        train(16)
        if args.evolve:
            for generation in range(300):
                train(64)
        """
    )
    fact = _value_at(tree, launch, "batch * 2")
    assert (fact.value, fact.condition) == (32, PathCondition.DEFAULT)
    assert launch.condition(_statement(tree, 10)) is PathCondition.OFF


def test_a_class_the_script_defines_is_built_in_launch_mode_as_in_a_lint():
    """Launch mode must not change what the dataflow knows: a model class the script
    defines is instantiated (the dataflow tells an unresolved name by identity, so an
    expression nothing folds keeps its value object), and a wrapper on the multi-GPU path
    does not hide it from the single-GPU path's method calls."""
    tree, launch = _launch(
        """\
        import os, torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def configure(self, lr):
                steps = lr * 1000
        ddp = int(os.environ.get("RANK", -1)) != -1
        model = Net()
        if ddp:
            model = torch.nn.parallel.DistributedDataParallel(model)
        raw = model.module if ddp else model
        raw.configure(lr=0.01)
        """
    )
    fact = _value_at(tree, launch, "lr * 1000")
    assert (fact.value, fact.condition) == (10.0, PathCondition.DEFAULT)


def test_a_dict_a_branch_adds_a_key_to_keeps_the_keys_both_paths_agree_on():
    """DeepSpeed's offload example: ``config = {..., "zero_optimization": {"stage": 3}}``,
    then ``config["fp16"] = {...}`` under a test the defaults leave open. The keys both
    paths agree on stay; the one a branch adds is undecided (it may be missing)."""
    here = Evidence(Span(1, 0, 1, 9), "a plain launch")
    with_fp16 = ConstantFact(Items((("batch", 1), ("fp16", True))), here, PathCondition.UNSURE)
    without = ConstantFact(Items((("batch", 1),)), here, PathCondition.UNSURE)
    joined = join_constants(with_fp16, without)
    assert joined is not None and dict(joined.value) == {"batch": 1, "fp16": UNDECIDED}
    assert joined.condition is PathCondition.UNSURE


def test_a_tensor_built_from_known_sizes_folds_to_its_shape():
    tree, launch = _launch(
        """\
        import torch
        DEGREE = 3
        W = torch.randn(DEGREE, 1) * 5
        Z = torch.zeros((2, DEGREE + 1))
        D = torch.Tensor([1.0, 2.0])
        rows = W.size(0)
        cols = Z.shape[1]
        data = D.size(0)
        """
    )
    assert _value_at(tree, launch, "W.size(0)").value == 3  # ``* 5`` keeps the shape
    assert _value_at(tree, launch, "Z.shape[1]").value == 4
    # ``torch.Tensor`` of a list holds data, not a shape: its size is not claimed
    assert _value_at(tree, launch, "D.size(0)").value is UNDECIDED


def test_membership_in_the_environment_folds_only_for_launcher_variables():
    tree, launch = _launch(
        """\
        import os
        a = "LOCAL_RANK" in os.environ
        b = "HOME" in os.environ
        """
    )
    assert _value_at(tree, launch, "'LOCAL_RANK' in os.environ").value is False
    assert _value_at(tree, launch, "'HOME' in os.environ").value is UNDECIDED
