"""Open documents: their text as the client sees it, and how each edit moved the lines.

The server keeps its own copy of every open document instead of pygls' workspace
documents, for two reasons: lines must be split as LSP splits them (see
:mod:`.encoding`), and every edit must report which lines it replaced, so that the last
good findings can follow the code while a syntax error stops re-analysis
(:mod:`.results`). Incremental changes are applied in order; a change without a range
replaces the whole text, and the moved lines are then found by comparing the common
prefix and suffix of the old and new lines.

A change whose range lies outside the document (a line past the last one, a character
past the end of its line, a start after the end) proves that the client's text and
ours differ: it is never clamped into place, which would apply the edit at the wrong
spot and compute every later finding and fix against the wrong text. It raises
:class:`PositionOutOfRange`, and :mod:`.textsync` then sets the document aside as
*lost* (see :meth:`DocumentStore.lose`) until the client sends its whole text again.
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


MAX_LOGGED_EDITS = 10_000  # edits remembered for catching an overtaken analysis up


class EditLog:
    """The line shifts of every edit since some version, by the version each produced.

    An analysis of a document analysed only on save (:mod:`.onsave`) that an edit
    overtook is not thrown away: its findings are moved through the shifts of the edits
    since its version (:meth:`shifts_after`) and shown for the current version.
    """

    def __init__(self, version: int) -> None:
        self.floor = version  # the log holds every edit after this version
        self._entries: list[tuple[int, list[LineShift]]] = []

    def record(self, version: int, shifts: list[LineShift]) -> None:
        self._entries.append((version, shifts))
        if len(self._entries) > MAX_LOGGED_EDITS:
            dropped = self._entries[: len(self._entries) // 2]
            del self._entries[: len(dropped)]
            self.floor = dropped[-1][0]

    def restart(self, version: int) -> None:
        """Forget the log: the text was replaced without a new version."""
        self.floor = version
        self._entries.clear()

    def shifts_after(self, version: int) -> list[LineShift] | None:
        """The shifts of the edits after ``version``, in order; None when the log does not
        reach back that far."""
        if version < self.floor:
            return None
        return [shift for logged, shifts in self._entries if logged > version for shift in shifts]


class PositionOutOfRange(ValueError):
    """A change's position that is not inside the document: the texts have drifted apart."""

    def __init__(self, reason: str, position: types.Position) -> None:
        super().__init__(reason)
        self.reason = reason
        self.position = position


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
        self.edits = EditLog(self.version)

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

    def exact_offset_at(self, position: types.Position, codec: ColumnCodec) -> int:
        """Code-point offset of a position that must lie inside the document.

        Raises :class:`PositionOutOfRange` for a line past the last one or a character
        past the end of its line (in the negotiated units). A position inside one
        character (half a surrogate pair) still rounds forward: it names that character.
        """
        lines = self.lines
        line, character = position.line, position.character
        if not 0 <= line < len(lines):
            raise PositionOutOfRange(
                f"line {line} is outside the document ({len(lines)} lines)", position
            )
        length = codec.units(lines[line])
        if not 0 <= character <= length:
            raise PositionOutOfRange(
                f"character {character} is outside line {line} ({length} {codec.encoding} units)",
                position,
            )
        return self._line_starts()[line] + codec.from_client(lines[line], character)

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
        """Apply ``changes`` in order; returns the line shifts they caused, in order.

        Raises :class:`PositionOutOfRange` at the first change whose range is not inside
        the text as the earlier changes left it (the text is then no longer the client's).
        """
        shifts: list[LineShift] = []
        if version is not None:
            self.version = version  # even when a change fails: later versions follow it
        for change in changes:
            change_range = getattr(change, "range", None)
            if change_range is None:
                shifts.extend(_shift_between(self.lines, split_lines(change.text)))
                self._replace(change.text)
                continue
            start = self.exact_offset_at(change_range.start, codec)
            end = self.exact_offset_at(change_range.end, codec)
            if end < start:
                raise PositionOutOfRange("the range ends before it starts", change_range.end)
            first, start_column = self.position_at(start)
            last, end_column = self.position_at(end)
            # counting line breaks in the removed and inserted text would miss a "\r\n"
            # pair that the edit splits or joins; the counts before and after do not
            before = len(self.lines)
            self._replace(self._text[:start] + change.text + self._text[end:])
            delta = len(self.lines) - before
            shifts.append(LineShift(first + 1, last + 1, delta, start_column, end_column))
        self.edits.record(self.version, shifts)
        return shifts

    def replace_text(self, text: str) -> list[LineShift]:
        """Take ``text`` as the whole document (a full-text change, a save with its text)."""
        shifts = _shift_between(self.lines, split_lines(text))
        self._replace(text)
        self.edits.restart(self.version)
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
    """The open documents by URI, and those whose text was lost.

    A *lost* document is one whose text stopped being the client's (an edit outside
    it): it is not in the store any more — no analysis, no diagnostics, no hover or fix
    is computed from a text the editor does not show — but its URI, language and latest
    version are kept so that the client's next whole text (a change without a range, a
    save with its text, or a new ``didOpen``) brings it back (:meth:`recover`).
    """

    def __init__(self) -> None:
        self._documents: dict[str, Document] = {}
        self._lost: dict[str, Document] = {}

    def open(
        self, uri: str, text: str, version: int | None, language_id: str = "python"
    ) -> Document:
        document = Document(uri, text, version, language_id)
        self._documents[uri] = document
        self._lost.pop(uri, None)
        return document

    def get(self, uri: str) -> Document | None:
        return self._documents.get(uri)

    def close(self, uri: str) -> Document | None:
        self._lost.pop(uri, None)
        return self._documents.pop(uri, None)

    def lose(self, uri: str) -> Document | None:
        """Set the document aside until the client sends its whole text again."""
        document = self._documents.pop(uri, None)
        if document is not None:
            self._lost[uri] = document
        return document

    def lost(self, uri: str) -> Document | None:
        return self._lost.get(uri)

    def recover(self, uri: str, text: str, version: int | None = None) -> Document | None:
        """Reopen a lost document with the client's whole ``text``; None when not lost."""
        document = self._lost.pop(uri, None)
        if document is None:
            return None
        version = document.version if version is None else version
        return self.open(uri, text, version, document.language_id)

    def __iter__(self):
        return iter(list(self._documents.values()))

    def __len__(self) -> int:
        return len(self._documents)
