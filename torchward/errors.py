"""The errors that end a command with exit status 2 and a one-line message, not a traceback.

Everything the user can fix by changing how they called torchward or what their
configuration says is a :class:`UsageError`; the CLI prints it and exits 2. Anything
else that escapes a command is an internal error (also exit 2, with the traceback).
"""

from __future__ import annotations


class UsageError(Exception):
    """A bad flag, path or argument."""


class ConfigError(UsageError):
    """A bad ``[tool.torchward]`` table: always names the file and the key."""

    def __init__(self, path: str, key: str | None, message: str) -> None:
        where = f"{path}: [tool.torchward]" + (f" key '{key}'" if key else "")
        super().__init__(f"{where}: {message}")
        self.path = path
        self.key = key
