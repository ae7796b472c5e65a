"""The edit that silences one rule on one line: ``# torchward: ignore[TWxxx]``.

Merges with a ``# torchward: ignore[...]`` comment already on the line (the code is
added to its list) and otherwise appends the comment after two spaces, as formatters
place trailing comments. A line that already ignores everything needs no edit, and a
line ending in a backslash continuation cannot take a comment, so both get none.
The suppression itself is read by :mod:`torchward.analysis.syntax.suppressions`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engine loads after the initialize reply (server start-up time)
    from torchward.analysis import Edit

_EXISTING = re.compile(r"#\s*torchward:\s*ignore(?!-file)(?:\[(?P<codes>[^\]]*)\])?", re.I)


def suppression_edit(line_text: str, line: int, code: str) -> Edit | None:
    """The edit of 1-based ``line`` (whose text is ``line_text``) that suppresses ``code``."""
    from torchward.analysis import Edit, Span

    match = None
    if "#" in line_text:
        match = _EXISTING.search(line_text[line_text.index("#") :])
        offset = line_text.index("#")
    if match is not None:
        if match.group("codes") is None or not match.group("codes").strip():
            return None  # a bare ignore already covers every code
        codes = [c for c in re.split(r"[\s,]+", match.group("codes").strip()) if c]
        if code.upper() in (c.upper() for c in codes):
            return None
        start = offset + match.start("codes")
        end = offset + match.end("codes")
        return Edit(Span(line, start, line, end), ", ".join(codes + [code]))
    stripped = line_text.rstrip()
    if stripped.endswith("\\"):
        return None
    return Edit(Span(line, len(stripped), line, len(line_text)), f"  # torchward: ignore[{code}]")
