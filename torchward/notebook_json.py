"""Rewriting one cell's ``"source"`` in a notebook's JSON text, and nothing else.

``json.loads`` then ``json.dumps`` would re-serialise the whole notebook: key order,
indentation, escaping and every output would be rewritten, and a one-line fix would
show up as a thousand-line diff. Instead :func:`source_spans` scans the text once for
where each cell's ``"source"`` value starts and ends, and :func:`replace_sources` swaps
only those bytes, writing the new value in the style of the old one: a list of lines
(nbformat's form: one string per line, each but the last ending in ``\\n``) with the same
indentation, or a single string; non-ASCII as it was (escaped or not).
"""

from __future__ import annotations

import json
import re

_WS = re.compile(r"[ \t\r\n]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NUMBER_ETC = re.compile(r"[^,\]}\s]+")


def _end(pattern: re.Pattern[str], text: str, at: int) -> int:
    """Where ``pattern``, matched at ``at``, ends (the text is JSON a parser accepted, so
    the token is there; a text that is not JSON is a ValueError, as ``json`` says it)."""
    match = pattern.match(text, at)
    if match is None:
        raise ValueError(f"not JSON at offset {at}")
    return match.end()


class _Scanner:
    """A JSON reader that remembers where ``cells[i].source`` values lie."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: dict[int, tuple[int, int]] = {}

    def skip(self, at: int) -> int:
        return _end(_WS, self.text, at)

    def value(self, at: int, path: tuple) -> int:
        at = self.skip(at)
        char = self.text[at]
        if char == "{":
            return self.object(at, path)
        if char == "[":
            return self.array(at, path)
        if char == '"':
            return _end(_STRING, self.text, at)
        return _end(_NUMBER_ETC, self.text, at)

    def object(self, at: int, path: tuple) -> int:
        at = self.skip(at + 1)
        if self.text[at] == "}":
            return at + 1
        while True:
            key_end = _end(_STRING, self.text, at)
            key = json.loads(self.text[at:key_end])
            at = self.skip(key_end)
            start = self.skip(at + 1)  # past the colon
            end = self.value(start, path + (key,))
            if len(path) == 2 and path[0] == "cells" and key == "source":
                self.spans[path[1]] = (start, end)
            at = self.skip(end)
            if self.text[at] == "}":
                return at + 1
            at = self.skip(at + 1)  # past the comma

    def array(self, at: int, path: tuple) -> int:
        at = self.skip(at + 1)
        if self.text[at] == "]":
            return at + 1
        index = 0
        while True:
            at = self.skip(self.value(at, path + (index,)))
            if self.text[at] == "]":
                return at + 1
            at = self.skip(at + 1)
            index += 1


def source_spans(text: str) -> dict[int, tuple[int, int]]:
    """Cell index (0-based) → (start, end) of that cell's ``"source"`` value."""
    scanner = _Scanner(text)
    scanner.value(0, ())
    return scanner.spans


def render_source(old_value: str, source: str) -> str:
    """``source`` as a JSON value in the style of ``old_value`` (its raw JSON text)."""
    decoded = json.loads(old_value)
    decoded = decoded if isinstance(decoded, str) else "".join(decoded)
    ensure_ascii = old_value.isascii() and not decoded.isascii()
    if not old_value.lstrip().startswith("["):
        return json.dumps(source, ensure_ascii=ensure_ascii)
    lines = source.splitlines(keepends=True)
    inner = old_value[1:-1]
    first = inner[: len(inner) - len(inner.lstrip())]  # the whitespace before the first line
    closing = inner[len(inner.rstrip()) :] if inner.strip() else ""  # and after the last
    if not lines:
        return "[]"
    separator = "," + (first if "\n" in first else " ")
    body = separator.join(json.dumps(line, ensure_ascii=ensure_ascii) for line in lines)
    return "[" + (first if "\n" in first else "") + body + closing + "]"


def replace_sources(text: str, sources: dict[int, str]) -> str:
    """``text`` with the sources of the cells numbered in ``sources`` (1-based) replaced."""
    spans = source_spans(text)
    out, position = [], 0
    for index, (start, end) in sorted(spans.items()):
        number = index + 1
        if number in sources:
            out.append(text[position:start])
            out.append(render_source(text[start:end], sources[number]))
            position = end
    out.append(text[position:])
    return "".join(out)
