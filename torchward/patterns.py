"""Gitignore-style path patterns: one matcher for `.gitignore`, `exclude` and `per-file-ignores`.

Users already know gitignore syntax, so the configuration speaks it too: a pattern
without a slash matches a name at any depth (``*_pb2.py``, ``build``), a pattern with a
slash is anchored to the directory it was written for (``tests/fixtures/``), a trailing
slash matches directories only, ``**`` spans directories and ``!`` re-includes. The
translation to regular expressions is written here once instead of taking a new
dependency (``pathspec``), which the runtime-dependency budget does not allow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs


def _translate_glob(glob: str) -> str:
    """Regex source for one gitignore glob (no anchoring, no trailing slash)."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = glob.find("]", i + 2 if glob[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end == -1:
                out.append(re.escape(char))
                i += 1
                continue
            body = glob[i + 1 : end]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


@attrs.frozen
class Pattern:
    """One compiled line of a gitignore-style list."""

    source: str
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool

    def matches(self, relative: str, is_dir: bool) -> bool:
        if self.directory_only and not is_dir:
            return False
        return self.regex.fullmatch(relative) is not None


def compile_pattern(line: str) -> Pattern | None:
    """Compile one gitignore line; ``None`` for blanks and comments."""
    text = line.rstrip("\n\r")
    if not text.endswith("\\ "):
        text = text.rstrip(" ")
    if not text or text.startswith("#"):
        return None
    negated = text.startswith("!")
    if negated or text.startswith(("\\!", "\\#")):
        text = text[1:]
    directory_only = text.endswith("/")
    text = text.rstrip("/")
    if not text:
        return None
    anchored = "/" in text
    text = text.lstrip("/")
    body = _translate_glob(text)
    if not anchored:
        body = "(?:.*/)?" + body
    return Pattern(line, re.compile(body, re.S), negated, directory_only)


@attrs.frozen
class PatternList:
    """An ordered list of patterns relative to ``base`` (a POSIX path); last match wins."""

    base: str
    patterns: tuple[Pattern, ...]

    @classmethod
    def parse(cls, base: str, lines: Iterable[str]) -> PatternList:
        compiled = (compile_pattern(line) for line in lines)
        return cls(base.rstrip("/"), tuple(p for p in compiled if p is not None))

    def relative(self, path: str) -> str | None:
        """``path`` relative to ``base``, or None when it lies outside."""
        if not self.base:
            return path
        if path.startswith(self.base + "/"):
            return path[len(self.base) + 1 :]
        return None

    def decision(self, path: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by ``!``) or None (no pattern matched)."""
        relative = self.relative(path)
        if relative is None:
            return None
        verdict = None
        for pattern in self.patterns:
            if pattern.matches(relative, is_dir):
                verdict = not pattern.negated
        return verdict

    def is_match(self, path: str, is_dir: bool = False) -> bool:
        return bool(self.decision(path, is_dir))

    def covers(self, path: str) -> bool:
        """True when the file ``path`` or a directory above it is matched (gitignore semantics).

        A directory that is ignored hides everything below it, so ``tests/`` in
        ``per-file-ignores`` covers ``tests/unit/test_loop.py``.
        """
        parts = path.split("/")
        for depth in range(1, len(parts)):
            if self.decision("/".join(parts[:depth]), True):
                return True
        return self.is_match(path, False)
