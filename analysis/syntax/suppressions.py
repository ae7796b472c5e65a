"""Inline and file-level suppression comments.

Accepted spellings (codes are case-insensitive, comma or space separated):

- ``# torchward: ignore[TW001]`` and ``# torchward: ignore`` (every code) on the flagged line;
- ``# noqa: TW001`` and a bare ``# noqa``, as flake8 and ruff users write them;
- torch-preflight's ``# noqa: TG001`` as an alias of ``TW001``, so existing suppressions
  keep working after a switch;
- ``# torchward: ignore-file[TW008]`` / ``# torchward: ignore-file`` anywhere in the file.

A suppression applies to the line a finding starts on.
"""

from __future__ import annotations

import io
import re
import tokenize

import attrs

ALL = "*"
_INLINE = re.compile(
    r"#\s*(?:torchward:\s*ignore(?!-file)(?:\[(?P<tw>[^\]]*)\])?|noqa(?::\s*(?P<noqa>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*))?)",
    re.I,
)
_FILE = re.compile(r"#\s*torchward:\s*ignore-file(?:\[(?P<codes>[^\]]*)\])?", re.I)


def _codes(text: str | None) -> frozenset[str]:
    if not text or not text.strip():
        return frozenset({ALL})
    codes = {c.upper() for c in re.split(r"[\s,]+", text.strip()) if c}
    return frozenset("TW" + c[2:] if c.startswith("TG") else c for c in codes)


@attrs.define
class Suppressions:
    by_line: dict[int, frozenset[str]] = attrs.field(factory=dict)
    file_codes: frozenset[str] = frozenset()

    def is_suppressed(self, code: str, line: int) -> bool:
        if ALL in self.file_codes or code in self.file_codes:
            return True
        codes = self.by_line.get(line, frozenset())
        return ALL in codes or code in codes


def _comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of every real comment; falls back to a line scan on tokenizer errors."""
    try:
        return [
            (tok.start[0], tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return [
            (n, line[line.index("#") :])
            for n, line in enumerate(source.splitlines(), 1)
            if "#" in line
        ]


def parse_suppressions(source: str) -> Suppressions:
    result = Suppressions()
    if "noqa" not in source.lower() and "torchward:" not in source.lower():
        return result  # the common case costs one scan, not a tokenisation
    file_codes: set[str] = set()
    for line, comment in _comments(source):
        for match in _FILE.finditer(comment):
            file_codes |= _codes(match.group("codes"))
        for match in _INLINE.finditer(comment):
            text = match.group("tw") if match.group("tw") is not None else match.group("noqa")
            result.by_line[line] = result.by_line.get(line, frozenset()) | _codes(text)
    result.file_codes = frozenset(file_codes)
    return result
