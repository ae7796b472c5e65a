"""Text edits: from two versions of a file to minimal edits, and edits back onto text.

A fix is computed as a whole new module (see :mod:`.tree`) and shipped as the smallest
edits that turn the old text into it: one edit per changed region, trimmed to the
characters that differ. Small edits are what an editor shows in a quick-fix preview,
and what lets two fixes of one file apply together when they touch different places.

Lines are split the way Python's tokenizer (and so ``ast`` and LibCST) splits them: on
``\\r\\n``, ``\\r`` and ``\\n`` only. ``str.splitlines`` also splits on form feeds and
Unicode line separators, which would shift every later line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from ..finding import Edit, Span

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their endings (the tokenizer's notion of a line)."""
    return _LINE.findall(text)


class Offsets:
    """Converts between (line, column) positions and string offsets of one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        for line in split_lines(text):
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, column: int) -> int:
        if line > len(self.starts) - 1:
            return len(self.text)
        start = self.starts[line - 1]
        return min(start + column, self.starts[line] if line < len(self.starts) else len(self.text))

    def position(self, offset: int) -> tuple[int, int]:
        import bisect

        index = bisect.bisect_right(self.starts, offset) - 1
        index = min(index, len(self.starts) - 1)
        return index + 1, offset - self.starts[index]


class SourceLines:
    """One text's lines with their endings, split once per text object: the fixes of one
    file's findings ask for the same object once per finding (see :meth:`of`)."""

    _latest: SourceLines | None = None

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = split_lines(text)

    @classmethod
    def of(cls, text: str) -> SourceLines:
        latest = cls._latest
        if latest is not None and latest.text is text:
            return latest
        cls._latest = found = cls(text)
        return found

    def line(self, number: int) -> str:
        """Line ``number`` (1-based) without its ending; '' past the end."""
        if not 0 < number <= len(self.lines):
            return ""
        return self.lines[number - 1].rstrip("\r\n")

    def text_of(self, span: Span) -> str:
        """The text of ``span`` ('' when it is not inside the text)."""
        if not 0 < span.line <= span.end_line <= len(self.lines):
            return ""
        if span.line == span.end_line:
            return self.lines[span.line - 1][span.column : span.end_column]
        middle = self.lines[span.line : span.end_line - 1]
        first, last = self.lines[span.line - 1], self.lines[span.end_line - 1]
        return "".join((first[span.column :], *middle, last[: span.end_column]))

    def ending(self, number: int) -> str:
        """The line break that ends line ``number``: its own, or for a last line without
        one, the text's first (``\n`` when it has none)."""
        own = self.lines[number - 1][len(self.line(number)) :] if number <= len(self.lines) else ""
        if own:
            return own
        first = next(
            (ln[len(ln.rstrip("\r\n")) :] for ln in self.lines if ln.endswith(("\n", "\r"))), ""
        )
        return first or "\n"


def edits_between(old: str, new: str) -> tuple[Edit, ...]:
    """Minimal non-overlapping edits turning ``old`` into ``new``, in order."""
    if old == new:
        return ()
    old_lines, new_lines = split_lines(old), split_lines(new)
    offsets = Offsets(old)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = offsets.starts[i1], offsets.starts[i2]
        before, after = old[start:end], "".join(new_lines[j1:j2])
        prefix = _common_prefix(before, after)
        suffix = _common_prefix(before[prefix:][::-1], after[prefix:][::-1])
        line, column = offsets.position(start + prefix)
        end_line, end_column = offsets.position(end - suffix)
        edits.append(
            Edit(Span(line, column, end_line, end_column), after[prefix : len(after) - suffix])
        )
    return tuple(edits)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with ``edits`` applied; they must not overlap (checked)."""
    offsets = Offsets(text)
    ranges = sorted(
        (
            (
                offsets.offset(e.span.line, e.span.column),
                offsets.offset(e.span.end_line, e.span.end_column),
                e.text,
            )
            for e in edits
        ),
        key=lambda item: (item[0], item[1]),
    )
    out, position = [], 0
    for start, end, replacement in ranges:
        if start < position:
            raise ValueError("overlapping edits")
        out.append(text[position:start])
        out.append(replacement)
        position = end
    out.append(text[position:])
    return "".join(out)


def overlaps(a: Sequence[Edit], b: Sequence[Edit]) -> bool:
    """Whether any edit of ``a`` touches any edit of ``b`` (two insertions at one point do)."""
    for x in a:
        for y in b:
            xs, xe = (x.span.line, x.span.column), (x.span.end_line, x.span.end_column)
            ys, ye = (y.span.line, y.span.column), (y.span.end_line, y.span.end_column)
            if xs == ys or (xs < ye and ys < xe):
                return True
    return False
