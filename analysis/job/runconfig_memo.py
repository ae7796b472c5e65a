"""The script reader's memo: a read is reused until something the job depends on changes.

TW010 reads the run configuration on every analysis, and in the editor an analysis runs on
every keystroke: on a 1,000-line script the read was two thirds of edit→diagnostics
(issue 26, item 8). Most keystrokes change nothing the job depends on.

What a read depends on, its provenance, is split in two:

- the code a plain launch may run — every top-level statement but the functions the
  launched script never names (:func:`~.launch_unused.unused_functions`), and the text
  between statements — verbatim;
- of an unused function, only its name and its lines: it is written ``def name(): pass``
  on its first line and blank lines for the rest, in the key and in the text the reader
  reads, and the reader is given the tree with its body, parameters and defaults left out.
  So nothing the reader computes can depend on them — the read is a function of the key
  by construction, not by an argument about each reader — and the unused set itself does
  not change: what an unused function names never keeps anything in use
  (:func:`~.launch_unused.unused_functions`). Typing inside such a function (a digit, a
  new statement) is a hit; a decorator, a rename, a line added, a use of it elsewhere is a
  miss.

The key is that text, the path and the launch's arguments; a hit is reused only while the
files the read looked at are as they were
(:mod:`torchward.estimator.dependencies`: a sibling module, a config file, a directory's
names), and those reads are recorded again for whoever asks, as
:class:`~torchward.estimator.dependencies.remembered` does.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterable

from torchward.estimator import dependencies
from torchward.estimator.runconfig import RunConfig

from .launch_unused import first_line, unused_functions

__all__ = ["remembered_read"]

Read = tuple[RunConfig, list[str]]
Reader = Callable[[str, str, tuple[str, ...], ast.Module], Read]

MAX_ENTRIES = 32  # documents read lately (an entry holds one source text)
_memo: dict[tuple[str, str, tuple[str, ...]], tuple[Read, tuple[dependencies.Dependency, ...]]]
_memo = {}


def remembered_read(
    source: str, path: str, argv: tuple[str, ...], tree: ast.Module, read: Reader
) -> Read:
    """``read(source, path, argv, tree)`` — with the unused functions' bodies left out of
    the text and the tree — or the result of an earlier read of the same key whose inputs
    still hold."""
    unused = unused_functions(tree, source)
    if unused:
        source = _blanked(source, unused.values())
    key = (source, path, argv)
    hit = _memo.get(key)
    if hit is not None and dependencies.still_hold(hit[1]):
        (config, notes), reads = hit
        with dependencies.recording() as again:  # the inputs count for the caller again
            again.extend(reads)
        return config, list(notes)
    with dependencies.recording() as recorded:
        config, notes = read(source, path, argv, _pruned(tree, unused) if unused else tree)
    if len(_memo) >= MAX_ENTRIES:
        _memo.clear()
    _memo[key] = ((config, list(notes)), recorded.dependencies())
    return config, notes


def forget() -> None:
    """Drop every remembered read (tests)."""
    _memo.clear()


def _blanked(source: str, functions: Iterable[ast.FunctionDef]) -> str:
    """``source`` with each of ``functions`` written as ``def name(): pass`` on its first
    line and blank lines for the rest: what a launch cannot run is out of the key (typing
    in it changes nothing) and the lines after it stay where they are."""
    lines = source.split("\n")
    for function in functions:
        start, end = first_line(function) - 1, function.end_lineno or function.lineno
        lines[start] = f"def {function.name}(): pass"
        lines[start + 1 : end] = [""] * (end - start - 1)
    return "\n".join(lines)


def _pruned(tree: ast.Module, unused: dict[str, ast.FunctionDef]) -> ast.Module:
    """A shallow copy of ``tree`` whose unused functions are ``def name(): pass`` at the
    same lines (the lint's tree is shared: it is never changed)."""
    stubs = {id(function) for function in unused.values()}
    body = [_stub(s) if id(s) in stubs else s for s in tree.body]  # type: ignore[arg-type]
    return ast.Module(body=body, type_ignores=tree.type_ignores)


def _stub(function: ast.FunctionDef) -> ast.FunctionDef:
    stub = copy.copy(function)  # a new node: the lint's is shared
    stub.args = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    stub.returns = None
    stub.decorator_list = []
    body = ast.Pass()
    body.lineno = body.end_lineno = function.lineno
    body.col_offset = body.end_col_offset = function.col_offset
    stub.body = [body]
    ast.copy_location(stub, function)
    return stub
