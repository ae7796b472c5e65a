"""The one place where code-point columns meet the client's position units.

Findings count columns in Unicode code points (a ``str`` index, see
:mod:`torchward.analysis.finding`). LSP positions count in the *position encoding*
negotiated at ``initialize``: UTF-16 code units unless the client offers ``utf-8`` or
``utf-32`` in ``general.positionEncodings`` (Neovim offers ``utf-8`` first). Every
conversion in the server goes through :class:`ColumnCodec`, in both directions: out
(diagnostic ranges, fix edits) and in (incremental changes, hover and code-action
positions).

Nearly all lines of Python are ASCII, where every encoding agrees with the code-point
column; that case costs one ``str.isascii`` call.

Lines follow LSP's definition: ``\\n``, ``\\r\\n`` and ``\\r`` end a line, nothing else
(``str.splitlines`` also breaks at form feeds and ``\\u2028``, which editors do not).
"""

from __future__ import annotations

import re

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"

LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The document's lines as LSP counts them, without their terminators (never empty)."""
    return LINE_BREAK.split(text)


class ColumnCodec:
    """Converts a column within one line between code points and client units."""

    def __init__(self, encoding: str = UTF16) -> None:
        self.encoding = str(getattr(encoding, "value", encoding) or UTF16).lower()
        if self.encoding not in (UTF8, UTF16, UTF32):
            self.encoding = UTF16

    def __repr__(self) -> str:
        return f"ColumnCodec({self.encoding!r})"

    def units(self, text: str) -> int:
        """The length of ``text`` in client units."""
        if text.isascii() or self.encoding == UTF32:
            return len(text)
        if self.encoding == UTF8:
            return len(text.encode("utf-8"))
        return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)

    def to_client(self, line: str, column: int) -> int:
        """Code-point ``column`` of ``line`` → client units (clamped to the line)."""
        column = min(max(column, 0), len(line))
        return self.units(line[:column])

    def from_client(self, line: str, units: int) -> int:
        """Client ``units`` into ``line`` → code-point column (clamped to the line).

        A position inside a multi-unit character (half a surrogate pair, the middle of a
        UTF-8 sequence) is rounded forward to the end of that character.
        """
        units = max(units, 0)
        if line.isascii() or self.encoding == UTF32:
            return min(units, len(line))
        consumed = 0
        for index, char in enumerate(line):
            if consumed >= units:
                return index
            consumed += self.units(char)
        return len(line)
