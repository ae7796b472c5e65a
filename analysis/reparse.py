"""Re-parsing after an edit: only the top-level statements the edit touched.

``ast.parse`` is C-fast, but at 5,000 lines it still costs ~95 ms, most of an editor's
budget for one keystroke. An edit changes a few lines; the module's other top-level
statements parse to the same trees. :func:`reparse` finds the changed line range by
comparing the old and new line lists, re-parses only the top-level statements that
overlap it (as a module of their own, moved to their real line numbers), and splices
them between the untouched neighbours — shifting the later ones when the edit added or
removed lines.

Whenever anything is doubtful — the chunk does not parse on its own, the edit reaches the
first statement (where ``from __future__`` and encoding lines live), the old tree is
missing — it falls back to a full ``ast.parse``; ``tests/analysis/test_reparse.py``
checks that the spliced tree always equals the full parse.
"""

from __future__ import annotations

import ast
import copy
import warnings

from .positions import LineIndex


def _changed_lines(old: list[str], new: list[str]) -> tuple[int, int, int]:
    """(first changed 0-based line, end of the change in old, end in new), exclusive ends."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    old_end, new_end = len(old), len(new)
    while old_end > start and new_end > start and old[old_end - 1] == new[new_end - 1]:
        old_end -= 1
        new_end -= 1
    return start, old_end, new_end


def _parse(text: str, path: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text, filename=path)


def reparse(old_source: str, old_tree: ast.Module, new_source: str, path: str) -> ast.Module:
    """The tree of ``new_source``, reusing ``old_tree`` (the tree of ``old_source``) where
    the edit did not reach. Raises ``SyntaxError`` exactly when ``ast.parse`` would."""
    old_lines, new_lines = LineIndex(old_source).lines, LineIndex(new_source).lines
    start, old_end, new_end = _changed_lines(old_lines, new_lines)
    body = old_tree.body
    if start == old_end == new_end:
        return old_tree
    # 1-based, inclusive: the old lines the edit replaced (an insertion: the line it follows)
    low, high = start + 1, max(old_end, start + 1)
    touched = [
        i
        for i, node in enumerate(body)
        if _first_line(node) <= high + 1 and _last_line(node) >= low - 1
    ]
    if not touched or touched[0] == 0 or touched[-1] >= len(body) - 1:
        return _parse(
            new_source, path
        )  # near the top (future imports) or the end: not worth the risk
    lo, hi = touched[0], touched[-1]
    before_end = _last_line(
        body[lo - 1]
    )  # the chunk is everything between two untouched statements
    after_start = _first_line(body[hi + 1])
    if not (before_end < low and high < after_start):
        return _parse(new_source, path)
    delta = new_end - old_end
    chunk_text = "\n".join(new_lines[before_end : after_start - 1 + delta])
    try:
        chunk = _parse(chunk_text, path)
    except SyntaxError:
        return _parse(new_source, path)  # report the error with the whole file's positions
    ast.increment_lineno(chunk, before_end)
    after = body[hi + 1 :]
    if delta:
        after = [ast.increment_lineno(copy.deepcopy(node), delta) for node in after]
    return ast.Module(body=[*body[:lo], *chunk.body, *after], type_ignores=[])


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)])


def _last_line(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno
