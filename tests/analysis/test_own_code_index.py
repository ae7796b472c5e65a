"""A run's index of its own code — where ``backward`` is called, on what, and the line
ranges of its loops — is built on every keystroke for the module's body (a script's
``__main__`` block). It is one walk that reads fields directly and walks into the
expressions of only the statements spanning a line that holds ``backward``; what it finds,
and in which order (the first reaching call is the evidence cited), is what a plain walk
of every child node finds."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from torchward.analysis.facts.owncode import own_code_index

ROOT = Path(__file__).resolve().parents[2]
NESTED = """\
import torch

def helper(loss):
    loss.backward()            # a nested function's own: not the module's

if __name__ == "__main__":
    scaler = torch.cuda.amp.GradScaler()
    for epoch in range(3):
        for batch in loader:
            loss = model(batch)
            if accumulate:
                scaler.scale(loss).backward()
            else:
                (
                    loss
                ).backward()
            while retry:
                accelerator.backward(loss)
        try:
            other = model(batch).sum()
            other.backward()
        except RuntimeError:
            aux.backward()
    engine.backward(loss)      # DeepSpeed's engine: the loss is the argument
    grad.backward(torch.ones(3))  # a tensor with its output gradient: proves nothing
"""
SOURCES = [
    *sorted((ROOT / "examples").glob("*.py")),
    *sorted((Path(__file__).parent / "fixtures").glob("*.py")),
]


def _reference(body: list[ast.stmt]):
    """The index as a plain walk computes it: ``ast.iter_child_nodes`` in stack order,
    nested functions and classes left out."""
    stack, order = list(body), []
    while stack:
        node = stack.pop()
        order.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    loops = [
        (n.lineno, n.end_lineno) for n in order if isinstance(n, (ast.For, ast.AsyncFor, ast.While))
    ]
    calls = [
        n
        for n in order
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("backward", "manual_backward")
    ]
    return calls, loops


def _bodies(tree: ast.Module):
    yield tree.body
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.body


@pytest.mark.parametrize(
    "source",
    [NESTED, *(p.read_text() for p in SOURCES)],
    ids=["nested", *(p.stem for p in SOURCES)],
)
def test_the_pruned_walk_finds_what_a_walk_of_every_node_finds(source):
    tree = ast.parse(source)
    lines = [n for n, text in enumerate(source.splitlines(), start=1) if "backward" in text]
    for body in _bodies(tree):
        targets, loops = own_code_index(body, lines)
        everywhere = own_code_index(body)  # no line filter
        assert (targets, loops) == everywhere
        calls, reference_loops = _reference(body)
        assert loops == reference_loops
        found = [call for found_calls in targets.values() for call in found_calls]
        # every call recorded is a backward the reference walk met, in its order
        assert sorted(found, key=calls.index) == [c for c in calls if c in found]
        for name, found_calls in targets.items():
            assert list(found_calls) == [c for c in calls if c in found_calls], name


def test_the_nested_sample_names_what_each_backward_proves():
    tree = ast.parse(NESTED)
    lines = [n for n, text in enumerate(NESTED.splitlines(), start=1) if "backward" in text]
    targets, loops = own_code_index(tree.body, lines)
    assert set(targets) == {"loss", "other", "aux"}
    # the order the stack walk meets them (last statement first); line 14 holds no
    # ``backward`` itself, its statement does
    assert [c.lineno for c in targets["loss"]] == [24, 18, 14, 12]
    assert len(loops) == 3
    # no line holds ``backward``: no call is looked for, loops still are
    assert own_code_index(tree.body, [])[0] == {}
    assert own_code_index(tree.body, [])[1] == loops
