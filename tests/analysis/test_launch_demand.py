"""Launch facts on demand (:mod:`torchward.analysis.job.launch_demand`) against the forward launch.

Each sample is a small script; the question is the value of the expression ``probe(...)``
is called with, and the condition of the statement holding it. The demand engine must
answer what the forward launch (:func:`~torchward.analysis.facts.filefacts.build_launch_facts`)
records for the same node — the same folding, bindings and joins, driven backwards — and
the value the sample states.
"""

from __future__ import annotations

import ast
import textwrap

import pytest
from torchward.analysis.facts.analyzer import FileAnalyzer
from torchward.analysis.facts.conditions import PathCondition
from torchward.analysis.facts.constants import UNDECIDED
from torchward.analysis.facts.filefacts import build_launch_facts
from torchward.analysis.facts.launch_driver import LaunchInputs
from torchward.analysis.job.launch_demand import DemandLaunch

DEFAULT, UNSURE, MULTI_GPU = PathCondition.DEFAULT, PathCondition.UNSURE, PathCondition.MULTI_GPU

#: samples whose call the forward launch does not follow (a call on a path a plain launch
#: does not take: ``LaunchDriver.skips``); on demand the question still has its call site
NOT_FOLLOWED_FORWARD = {"a function only a distributed launch calls"}

SAMPLES = {
    "the branch a plain launch takes, alone": (
        """
        batch = 8
        if False:
            batch = 16
        probe(batch)
        """,
        8,
        DEFAULT,
    ),
    "a branch nobody decides: neither value is the job's": (
        """
        import random
        device = "cpu"
        if random.random() > 0.5:
            device = "cuda"
        probe(device)
        """,
        UNDECIDED,
        DEFAULT,
    ),
    "later assignments do not reach back": (
        """
        lr = 1e-3
        probe(lr)
        lr = 1e-4
        """,
        1e-3,
        DEFAULT,
    ),
    "a parameter holds what its call passes": (
        """
        def train(batch_size):
            probe(batch_size)

        if __name__ == "__main__":
            train(32)
        """,
        32,
        DEFAULT,
    ),
    "a parser's default through parse_args": (
        """
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, default=3e-4)
        args = parser.parse_args()
        probe(args.lr)
        """,
        3e-4,
        DEFAULT,
    ),
    "a helper's return in the call's context": (
        """
        def micro_batch(total, steps):
            return total // steps

        probe(micro_batch(64, 4))
        """,
        16,
        DEFAULT,
    ),
    "a dict changed in place before the use": (
        """
        config = {"batch_size": 4}
        config.update({"batch_size": 12})
        config["lr"] = 0.1
        probe(config["batch_size"] * 2)
        """,
        24,
        DEFAULT,
    ),
    "augmented assignment": (
        """
        steps = 10
        steps += 5
        probe(steps)
        """,
        15,
        DEFAULT,
    ),
    "a loop runs once, joined with its entry": (
        """
        total = 1
        for _ in range(3):
            total = 2
        probe(total)
        """,
        UNDECIDED,
        DEFAULT,
    ),
    "a function only a distributed launch calls": (
        """
        import os
        world_size = int(os.environ.get("WORLD_SIZE", 1))

        def setup(rank):
            probe(rank)

        if world_size > 1:
            setup(3)
        """,
        3,
        MULTI_GPU,
    ),
    "an early return a plain launch reaches leaves the rest of its function unsure": (
        """
        def train(checkpoint_dir=None, resume_from=None, batch_size=8):
            if checkpoint_dir is None and resume_from is None:
                print("give --checkpoint_dir or --resume_from")
                return
            probe(batch_size)

        if __name__ == "__main__":
            train()
        """,
        8,
        UNSURE,
    ),
    "a return on a branch the defaults skip changes nothing": (
        """
        def train(dry_run=False, batch_size=8):
            if dry_run:
                return
            probe(batch_size)

        if __name__ == "__main__":
            train()
        """,
        8,
        DEFAULT,
    ),
    "an 'or' a known operand makes true takes its branch, whatever the other holds": (
        """
        import argparse, os
        parser = argparse.ArgumentParser()
        parser.add_argument("--weights", default="yolov5s-cls.pt")
        args = parser.parse_args()
        if os.path.isfile(args.weights) or args.weights.endswith(".pt"):
            source = "checkpoint"
        else:
            source = "hub"
        probe(source)
        """,
        "checkpoint",
        DEFAULT,
    ),
    "a loop that may change a value under a gate nobody decides leaves it undecided": (
        """
        import psutil
        running = False
        for process in psutil.process_iter(["name"]):
            if process.info["name"] == "ollama":
                running = True
                break
        probe(running)
        """,
        UNDECIDED,
        DEFAULT,
    ),
    "a loop that leaves a value alone keeps it": (
        """
        import psutil
        running = False
        for process in psutil.process_iter(["name"]):
            if process.info["name"] == "ollama":
                print("found")
        probe(running)
        """,
        False,
        DEFAULT,
    ),
    "an 'and' a known operand makes false skips its branch": (
        """
        import argparse, random
        parser = argparse.ArgumentParser()
        parser.add_argument("--fp16", action="store_true")
        args = parser.parse_args()
        use_amp = False
        if random.random() > 0.5 and args.fp16:
            use_amp = True
        probe(use_amp)
        """,
        False,
        DEFAULT,
    ),
}


def _question(source: str) -> tuple[ast.Module, ast.expr, ast.stmt]:
    tree = ast.parse(source)
    for statement in ast.walk(tree):
        if (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and getattr(statement.value.func, "id", None) == "probe"
        ):
            return tree, statement.value.args[0], statement
    raise AssertionError("no probe(...) in the sample")


@pytest.mark.parametrize("name", list(SAMPLES))
def test_demand_answers_what_the_sample_states_and_the_forward_launch_records(name):
    source, value, condition = SAMPLES[name]
    source = textwrap.dedent(source)
    tree, node, statement = _question(source)
    demand = DemandLaunch(FileAnalyzer(tree, source, "sample.py", launch=LaunchInputs()))
    fact = demand.constant(node)
    assert fact is not None
    assert fact.value == value or (value is UNDECIDED and fact.value is UNDECIDED)
    assert demand.condition(statement) is condition
    launch = build_launch_facts(tree, source, "sample.py").analyzer.launch
    assert launch is not None
    forward = launch.constant(node)
    assert forward is not None
    assert launch.condition(statement) is demand.condition(statement)
    if name in NOT_FOLLOWED_FORWARD:
        return
    assert (forward.value, forward.condition) == (fact.value, fact.condition) or (
        forward.value is UNDECIDED and fact.value is UNDECIDED
    )


def test_a_raise_the_plain_launch_reaches_leaves_the_rest_unsure():
    source = textwrap.dedent(
        """
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--model")
        args = parser.parse_args()
        if args.model is None:
            raise ValueError("give --model")
        probe(args.model)
        """
    )
    tree, _, statement = _question(source)
    demand = DemandLaunch(FileAnalyzer(tree, source, "sample.py", launch=LaunchInputs()))
    assert demand.condition(statement) is UNSURE


def test_recursion_answers_without_looping():
    source = textwrap.dedent(
        """
        def depth(n):
            return depth(n - 1) if n else 0

        probe(depth(3))
        """
    )
    tree, node, _ = _question(source)
    demand = DemandLaunch(FileAnalyzer(tree, source, "sample.py", launch=LaunchInputs()))
    fact = demand.constant(node)
    assert fact is None or fact.value is UNDECIDED or fact.value == 0


def test_answers_do_not_depend_on_which_question_came_first():
    source = textwrap.dedent(
        """
        def evaluate(model):
            model.eval()

        def train(epochs):
            for epoch in range(epochs):
                evaluate(None)
            probe(epochs)

        if __name__ == "__main__":
            train(5)
        """
    )
    tree, node, statement = _question(source)
    inner = next(n for n in ast.walk(tree) if isinstance(n, ast.Expr) and n.lineno == 3)

    def ask(order: str):
        demand = DemandLaunch(FileAnalyzer(tree, source, "sample.py", launch=LaunchInputs()))
        if order == "inner first":
            demand.condition(inner)
        return demand.constant(node), demand.condition(statement), demand.condition(inner)

    first, second = ask("inner first"), ask("probe first")
    assert first[0] is not None and first[0].value == 5
    assert (first[0].value, first[1], first[2]) == (second[0].value, second[1], second[2])


def test_a_branch_the_defaults_skip_is_off_even_under_an_undecided_gate():
    """A diffusion script's validation: ``if accelerator.is_main_process:`` (nobody decides
    it), then ``if args.validation_prompt is not None:`` with the flag's default ``None``.
    The inner branch is off — what the defaults decide stays decided under an unsure gate —
    and the function only it calls is off with it. (The forward launch leaves both unsure:
    it folds a test under its statement's condition.)"""
    source = textwrap.dedent(
        """
        import argparse, random
        parser = argparse.ArgumentParser()
        parser.add_argument("--validation_prompt", default=None)
        args = parser.parse_args()

        def log_validation(prompt):
            probe(prompt)

        if random.random() > 0.5:
            if args.validation_prompt is not None:
                log_validation(args.validation_prompt)
        """
    )
    tree, _, statement = _question(source)
    demand = DemandLaunch(FileAnalyzer(tree, source, "sample.py", launch=LaunchInputs()))
    assert demand.condition(statement) is PathCondition.OFF


def test_a_periodic_gate_in_a_loop_opens_during_a_launch():
    """``if step % eval_every == 0:`` on a counter the loop changes: no single value
    decides it, yet both arms run during a plain launch (rasbt's periodic evaluation)."""
    source = textwrap.dedent(
        """
        step = 0
        for batch in range(100):
            step += 1
            if step % 50 == 0:
                probe(step)
        """
    )
    tree, _, statement = _question(source)
    demand = DemandLaunch(FileAnalyzer(tree, source, "sample.py", launch=LaunchInputs()))
    assert demand.condition(statement) is PathCondition.DEFAULT
    # another test on the counter decides nothing: unsure
    other = source.replace("step % 50 == 0", "step > 50")
    tree, _, statement = _question(other)
    demand = DemandLaunch(FileAnalyzer(tree, other, "sample.py", launch=LaunchInputs()))
    assert demand.condition(statement) is PathCondition.UNSURE


def test_a_large_source_finds_call_sites_through_its_index_as_a_small_one_does():
    """Past some 200 KB the call sites of a name come from one indexed pass over the text,
    not a search per name (a 50,000-line script spent a second in the searches): the
    parameters' values must not change with the route."""
    body = textwrap.dedent(
        """
        def train(batch_size, lr):
            probe(batch_size)

        def evaluate(model):
            model.eval()

        if __name__ == "__main__":
            train (32, lr=1e-3)
            evaluate(None)
        """
    )
    for padding in ("", "# a long comment line, as a generated file has many of them\n" * 4000):
        source = padding + body
        tree, node, statement = _question(source)
        demand = DemandLaunch(FileAnalyzer(tree, source, "sample.py", launch=LaunchInputs()))
        assert len(source) > 200_000 or not padding
        fact = demand.constant(node)
        assert fact is not None and fact.value == 32, padding[:10]
        assert demand.condition(statement) is DEFAULT


@pytest.mark.parametrize(
    ("source", "value"),
    [
        pytest.param(
            """
            import argparse
            parser = argparse.ArgumentParser()
            parser.add_argument("--batch-size", type=int, default=32)
            args = parser.parse_args()
            args.batch_size = 8
            probe(args.batch_size * 2)
            """,
            16,
            id="a flag the script overwrites after parsing, inside an expression",
        ),
        pytest.param(
            """
            import torch
            class Decoder(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.embedding_dim = 768
                    probe([self.embedding_dim, 4])
            """,
            (768, 4),
            id="an attribute the constructor set, inside a list",
        ),
    ],
)
def test_an_attribute_inside_an_expression_reads_its_latest_binding(source, value):
    """The folding asks the run for attributes, so a demand run answers an attribute that
    an assignment rebound (``args.batch_size = 8``) even as an operand: before, an operand
    folded past the run and read the parser's default (64 here) or nothing."""
    source = textwrap.dedent(source)
    tree, node, _ = _question(source)
    demand = DemandLaunch(FileAnalyzer(tree, source, "sample.py", launch=LaunchInputs()))
    fact = demand.constant(node)
    assert fact is not None
    assert fact.value == value
