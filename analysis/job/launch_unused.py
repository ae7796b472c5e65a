"""The top-level functions a plain launch of a script cannot run.

Python runs a ``def``'s body only when something names the function. A script that
launches its own job (an ``if __name__ == "__main__":`` block) often keeps functions
nothing names: a second ``train_*`` kept for reference, a distributed set-up it no longer
uses, helpers copied from a tutorial. Read as entry points, they made other jobs' values
leak into this one (issue 26: a latency test file read its batch size, bf16 and DDP from
helpers nothing called). So such a function is ``off`` on a plain launch
(:func:`~.launch_paths.uncalled`), and the script reader leaves it out of what it reads
(:mod:`.runconfig_memo`).

A function is unused when it has no decorator (``@call_parse``, ``@app.command()``,
``@hydra.main`` register it with a framework) and every top-level statement whose text
names it — as a whole word, anywhere: a call, a callback, a table, ``__all__``, a string,
a docstring — is itself unused: the greatest such set, so two unused functions that name
each other stay unused. Text between the statements (comments) names nothing. Without a
``__main__`` block the module may be driven by a framework or imported, and with
``globals()``, ``sys.modules[__name__]`` or ``eval(`` a name may be computed at run time:
nothing is unused.

The answer depends only on where the source writes the candidates' names as whole words
(not next to a letter, digit or ``_``): a number (``1e5``, ``0x1F``) never holds one, so
rewriting numbers changes nothing here (:mod:`.runconfig_memo` relies on it).
"""

from __future__ import annotations

import ast
import bisect
import re

__all__ = ["first_line", "is_main_guard", "unused_functions"]


# ``eval(`` and ``globals()`` as builtins, not ``model.eval()``
_DYNAMIC = re.compile(r"(?<![\w.])(?:globals\(\)|eval\()|sys\.modules\[__name__\]")


def is_main_guard(statement: ast.stmt) -> bool:
    """``if __name__ == "__main__":``."""
    test = statement.test if isinstance(statement, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _in_word(text: str, at: int) -> bool:
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_")


def first_line(statement: ast.stmt) -> int:
    """The line ``statement`` starts on, its decorators included."""
    decorators = getattr(statement, "decorator_list", None) or ()
    return min([statement.lineno, *(d.lineno for d in decorators)])


def unused_functions(tree: ast.Module, source: str) -> dict[str, ast.FunctionDef]:
    """The top-level functions of ``tree`` (parsed from ``source``) a plain launch cannot
    run, by name (see the module docstring)."""
    body = tree.body
    if not any(is_main_guard(statement) for statement in body):
        return {}
    if _DYNAMIC.search(source):
        return {}  # a function may be looked up by a name computed at run time
    defined: dict[str, int] = {}
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined[statement.name] = defined.get(statement.name, 0) + 1
    candidates = {
        statement.name: statement
        for statement in body
        if isinstance(statement, ast.FunctionDef)
        and not statement.decorator_list
        and defined[statement.name] == 1
    }
    if not candidates:
        return {}
    # which top-level statements name each candidate: ``str.find`` per name over the
    # source (a regular expression alternating every name, or the words of every
    # statement, cost several times more on a 1,000-line script — per keystroke)
    starts = [0]
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    spans = [(starts[first_line(s) - 1], starts[s.end_lineno or s.lineno]) for s in body]
    naming: dict[str, set[int]] = {}  # name -> indices of the statements that write it
    for name in candidates:
        found = naming[name] = set()
        at = source.find(name)
        while at != -1:
            end = at + len(name)
            if not _in_word(source, at - 1) and not _in_word(source, end):
                index = bisect.bisect_right(spans, (at, len(source))) - 1
                if index >= 0 and spans[index][0] <= at < spans[index][1]:
                    found.add(index)
            at = source.find(name, end)
    position = {id(statement): index for index, statement in enumerate(body)}
    unused = dict(candidates)
    changed = True
    while changed:
        changed = False
        live = {i for i, s in enumerate(body) if unused.get(getattr(s, "name", "")) is not s}
        for name in list(unused):
            if naming[name] & live - {position[id(unused[name])]}:
                del unused[name]
                changed = True
    return unused
