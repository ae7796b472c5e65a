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
``__main__`` block the module may be driven by a framework or imported: nothing is unused.

The answer depends only on the words of the source (a run of letters, digits and ``_``
that starts with a letter or ``_``): a number's digits are never a word, so rewriting
them changes nothing here (:mod:`.runconfig_memo` relies on it).
"""

from __future__ import annotations

import ast
import re

__all__ = ["first_line", "is_main_guard", "unused_functions", "words"]

_WORD = re.compile(r"(?<!\w)[A-Za-z_]\w*")


def words(text: str) -> frozenset[str]:
    """The identifiers ``text`` writes (a digit-led run such as ``1e5`` or ``0x1F`` is none)."""
    return frozenset(_WORD.findall(text))


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
    lines = source.split("\n")
    named = [
        (statement, words("\n".join(lines[first_line(statement) - 1 : statement.end_lineno])))
        for statement in body
    ]
    unused = dict(candidates)
    changed = True
    while changed:
        changed = False
        for statement, written in named:
            own = getattr(statement, "name", None)
            if own in unused and unused[own] is statement:
                continue
            for name in written & unused.keys():
                if name != own:
                    del unused[name]
                    changed = True
    return unused
