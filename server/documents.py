"""Open documents: their text as the client sees it, and how each edit moved the lines.

The server keeps its own copy of every open document instead of pygls' workspace
documents, for two reasons: lines must be split as LSP splits them (see
:mod:`.encoding`), and every edit must report which lines it replaced, so that the last
good findings can follow the code while a syntax error stops re-analysis
(:mod:`.results`). Incremental changes are applied in order; a change without a range
replaces the whole text, and the moved lines are then found by comparing the common
prefix and suffix of the old and new lines.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import attrs
from lsprotocol import types

from .encoding import ColumnCodec, split_lines


@attrs.frozen
class LineShift:
    """An edit replaced old lines ``first..last`` (1-based, inclusive) by ``last - first + 1 + delta`` lines."""

    first: int
    last: int
    delta: int
    start_column: int | None = None  # code-point columns of the replaced range, when known
    end_column: int | None = None

    def removes(self, line: int, column: int, end_line: int, end_column: int) -> bool:
        """True when the replaced range covers the whole of the given (old) span."""
        if self.start_column is None or self.end_column is None:
            return False
        return (self.first, self.start_column) <= (line, column) and (end_line, end_column) <= (
            self.last,
            self.end_column,
        )

    def new_last(self) -> int:
        return self.last + self.delta


def path_of(uri: str) -> str:
    """A file system path for ``uri`` when it has one, else the URI itself."""
    from pygls.uris import to_fs_path

    try:
        return to_fs_path(uri) or uri
    except Exception:  # a malformed URI is still a document we can lint
        return uri


class Document:
    def __init__(
        self, uri: str, text: str, version: int | None, language_id: str = "python"
    ) -> None:
        self.uri = uri
        self.path = path_of(uri)
        self.language_id = language_id
        self.version = version if version is not None else 0
        self._text = text
        self._lines: list[str] | None = None
        self._starts: list[int] | None = None

    @property
    def text(self) -> str:
        return self._text

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = split_lines(self._text)
        return self._lines

    def line_text(self, line: int) -> str:
        """Text of 0-based ``line`` ('' past the end)."""
        lines = self.lines
        return lines[line] if 0 <= line < len(lines) else ""

    def _line_starts(self) -> list[int]:
        if self._starts is None:
            starts = [0]
            text = self._text
            index = 0
            for line in self.lines[:-1]:
                index += len(line)
                index += 2 if text.startswith("\r\n", index) else 1
                starts.append(index)
            self._starts = starts
        return self._starts

    def offset_at(self, position: types.Position, codec: ColumnCodec) -> int:
        """Code-point offset into the text of a client position (clamped to the text)."""
        starts = self._line_starts()
        if position.line < 0:
            return 0
        if position.line >= len(starts):
            return len(self._text)
        column = codec.from_client(self.lines[position.line], position.character)
        return starts[position.line] + column

    def position_at(self, offset: int) -> tuple[int, int]:
        """0-based line and code-point column of a code-point offset into the text."""
        starts = self._line_starts()
        line = bisect.bisect_right(starts, offset) - 1
        return line, min(offset - starts[line], len(self.lines[line]))

    def _replace(self, text: str) -> None:
        self._text = text
        self._lines = None
        self._starts = None

    def apply_changes(
        self,
        changes: Iterable[types.TextDocumentContentChangeEvent],
        version: int | None,
        codec: ColumnCodec,
    ) -> list[LineShift]:
        """Apply ``changes`` in order; returns the line shifts they caused, in order."""
        shifts: list[LineShift] = []
        for change in changes:
            change_range = getattr(change, "range", None)
            if change_range is None:
                shifts.extend(_shift_between(self.lines, split_lines(change.text)))
                self._replace(change.text)
                continue
            start = self.offset_at(change_range.start, codec)
            end = max(self.offset_at(change_range.end, codec), start)
            first, start_column = self.position_at(start)
            last, end_column = self.position_at(end)
            # counting line breaks in the removed and inserted text would miss a "\r\n"
            # pair that the edit splits or joins; the counts before and after do not
            before = len(self.lines)
            self._replace(self._text[:start] + change.text + self._text[end:])
            delta = len(self.lines) - before
            shifts.append(LineShift(first + 1, last + 1, delta, start_column, end_column))
        if version is not None:
            self.version = version
        return shifts


def _shift_between(old: list[str], new: list[str]) -> list[LineShift]:
    """The one changed block between two versions of the lines, from common prefix/suffix."""
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    if prefix == len(old) == len(new):
        return []
    first = prefix + 1
    last = max(len(old) - suffix, first)
    return [LineShift(first, last, len(new) - len(old))]


class DocumentStore:
    """The open documents by URI."""

    def __init__(self) -> None:
        self._documents: dict[str, Document] = {}

    def open(
        self, uri: str, text: str, version: int | None, language_id: str = "python"
    ) -> Document:
        document = Document(uri, text, version, language_id)
        self._documents[uri] = document
        return document

    def get(self, uri: str) -> Document | None:
        return self._documents.get(uri)

    def close(self, uri: str) -> Document | None:
        return self._documents.pop(uri, None)

    def __iter__(self):
        return iter(list(self._documents.values()))

    def __len__(self) -> int:
        return len(self._documents)
