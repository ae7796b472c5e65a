"""The script reader's memo: a read is reused until something the job depends on changes.

TW010 reads the run configuration on every analysis, and in the editor an analysis runs on
every keystroke: on a 1,000-line script the read was two thirds of edit→diagnostics
(issue 26, item 8). Most keystrokes change nothing the job depends on.

What a read depends on, its provenance, is split in two:

- the code a plain launch may run — every top-level statement but the functions the
  launched script never names (:func:`~.launch_unused.unused_functions`), and the text
  between statements — verbatim;
- of an unused function, only what decides that it is unused and where the code after it
  sits: its words and its lines. Its numbers are rewritten as ``0`` (``accumulation_steps
  =4`` and ``=41`` give the same key) and the reader is given the tree with its body, its
  parameters and their defaults left out, so nothing the reader computes can depend on
  them — a function of the key by construction, not by an argument about each reader.

The key is that text (the source with those numbers zeroed), the path and the launch's
arguments; a hit is reused only while the files the read looked at are as they were
(:mod:`torchward.estimator.dependencies`: a sibling module, a config file, a directory's
names), and those reads are recorded again for whoever asks, as
:class:`~torchward.estimator.dependencies.remembered` does.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Iterable

from torchward.estimator import dependencies
from torchward.estimator.runconfig import RunConfig

from .launch_unused import first_line, unused_functions

__all__ = ["remembered_read"]

Read = tuple[RunConfig, list[str]]
Reader = Callable[[str, str, tuple[str, ...], ast.Module], Read]

MAX_ENTRIES = 32  # documents read lately (an entry holds one source text)
_NUMBER = re.compile(r"(?<!\w)\d\w*")  # a digit-led run: never a word (launch_unused.words)
_memo: dict[tuple[str, str, tuple[str, ...]], tuple[Read, tuple[dependencies.Dependency, ...]]]
_memo = {}


def remembered_read(
    source: str, path: str, argv: tuple[str, ...], tree: ast.Module, read: Reader
) -> Read:
    """``read(source, path, argv, tree)`` — with the unused functions' numbers zeroed and
    their bodies left out of the tree — or the result of an earlier read of the same key
    whose inputs still hold."""
    unused = unused_functions(tree, source)
    if unused:
        source = _zeroed(source, unused.values())
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


def _zeroed(source: str, functions: Iterable[ast.FunctionDef]) -> str:
    """``source`` with every digit-led run inside ``functions`` written as ``0`` (typing
    a digit changes no key); the lines stay where they are."""
    lines = source.split("\n")
    pieces, done = [], 0
    for function in sorted(functions, key=lambda f: f.lineno):
        start, end = first_line(function) - 1, function.end_lineno or function.lineno
        pieces.append("\n".join(lines[done:start]))
        pieces.append(_NUMBER.sub("0", "\n".join(lines[start:end])))
        done = end
    pieces.append("\n".join(lines[done:]))
    return "\n".join(pieces)


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
