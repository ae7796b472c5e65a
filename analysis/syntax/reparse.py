"""Re-parsing after an edit: only the top-level statements the edit touched.

``ast.parse`` is C-fast, but at 5,000 lines it still costs ~95 ms, most of an editor's
budget for one keystroke. An edit changes a few lines; the module's other top-level
statements parse to the same trees. :func:`reparse` finds the changed line range by
comparing the old and new line lists, re-parses only the top-level statements that
overlap it (as a module of their own, moved to their real line numbers), and splices
them between the untouched neighbours — shifting the later ones when the edit added or
removed lines.

The later statements are shifted *in place*: a copy of half a 5,000-line tree costs
three times a full parse, and the old tree is of no use once the new one exists. So
``reparse`` consumes ``old_tree`` when it returns (the caller keeps only the new tree;
:meth:`~torchward.analysis.facts.summaries.SummaryCache.take_tree` hands a tree to one
analysis at a time), and leaves it untouched when it raises.

While the user types through invalid code the touched statements do not parse. The error
``ast.parse`` reports for the whole file is then found by parsing from the first touched
statement to the end of the file: the statements before it are complete and unchanged, so
the tokenizer and parser start there in the state a full parse reaches there — half a
parse on average instead of a whole one, with the same message and position.

Whenever anything is doubtful — the edit reaches the first statement (where ``from
__future__`` and encoding lines live) or the last, a statement shares a line with its
neighbour, a line ends in a continuation backslash, the old tree is missing — it falls
back to a full ``ast.parse``; ``tests/analysis/test_reparse.py`` checks that the spliced
tree always equals the full parse, and that an error is the full parse's error.
"""

from __future__ import annotations

import ast
import warnings

from .parsing import parse_module
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
        return parse_module(text, path)


def _parse_from(lines: list[str], start: int, end: int, path: str) -> ast.Module:
    """``lines[start:end]`` parsed as a module at their real line numbers: the lines before
    are left blank, so positions and messages ("… on line 12") need no rewriting."""
    return _parse("\n" * start + "\n".join(lines[start:end]), path)


def reparse(old_source: str, old_tree: ast.Module, new_source: str, path: str) -> ast.Module:
    """The tree of ``new_source``, reusing ``old_tree`` (the tree of ``old_source``) where
    the edit did not reach. Raises ``SyntaxError`` exactly when ``ast.parse`` would, with
    its message and position. On return ``old_tree`` is consumed (see the module notes)."""
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
    before_end = _last_line(body[lo - 1])  # the chunk lies between two untouched statements
    after_start = _first_line(body[hi + 1])
    if not (
        before_end < low
        and high < after_start
        and _first_line(body[lo]) > before_end  # `x = 1; y = (` shares a line
        and _last_line(body[hi]) < after_start
        and not old_lines[before_end - 1].rstrip().endswith("\\")
        and _starts_at_column_zero(new_lines, before_end)  # or it continues the block above
    ):
        return _parse(new_source, path)
    delta = new_end - old_end
    try:
        chunk = _parse_from(new_lines, before_end, after_start - 1 + delta, path)
    except SyntaxError:
        # typing through invalid code: the whole file's error, parsed from the chunk on
        rest = _parse_from(new_lines, before_end, len(new_lines), path)
        return ast.Module(body=[*body[:lo], *rest.body], type_ignores=[])
    after = body[hi + 1 :]
    if delta:
        for node in after:
            shift_in_place(node, delta)
    return ast.Module(body=[*body[:lo], *chunk.body, *after], type_ignores=[])


def _starts_at_column_zero(lines: list[str], start: int) -> bool:
    """Whether the first line of code from ``lines[start]`` on is unindented: a new
    top-level statement, where the tokenizer of a full parse has closed every block."""
    for line in lines[start:]:
        code = line.lstrip()
        if code and not code.startswith("#"):
            return code == line
    return True


def shift_in_place(node: ast.AST, delta: int) -> None:
    """Move ``node`` and everything under it ``delta`` lines (``ast.increment_lineno``
    without its per-node ``iter_child_nodes`` generator: a third of the time)."""
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    node_type = ast.AST
    while stack:
        current = pop()
        fields = current.__dict__
        line = fields.get("lineno")
        if line is not None:
            fields["lineno"] = line + delta
            end = fields.get("end_lineno")
            if end is not None:
                fields["end_lineno"] = end + delta
        for value in fields.values():
            if value.__class__ is list:
                extend(item for item in value if isinstance(item, node_type))
            elif isinstance(value, node_type) and value._fields:
                push(value)


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)])


def _last_line(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno
