"""What an analysis read besides the file it analysed, so a cached result knows its inputs.

Linting one file may read others: TW010's script reader follows ``json.load(open(
"cfg.json"))`` and YAML configs, imports argument parsers and model classes from sibling
modules and looks for a local checkpoint's ``config.json``; TW013 reads the nearest
requirement file. A result cached under the file's own text alone would go stale when
any of those change. So every such read goes through the helpers here instead of
``open``/``os.path``, and :func:`recording` collects what they saw: a file's content
hash (or that it was absent), whether a path exists, a file's size, a directory's
names, the working directory, an environment variable. :func:`still_hold` answers
whether a recorded set still describes the machine, which is how the CLI cache
(:mod:`torchward.runner`) decides to reuse a result.

Absence is recorded too: a result computed when ``config.json`` did not exist must be
recomputed once it does.

Checking is cheap where the editor needs it: a file's content hash is taken again only
when its modification time or size changed since it was read here (a file written just
before its read is not trusted: git's "racy" rule), and inside
:func:`one_observation_each` (one analysis) each input is looked at once.

It lives in the estimator, the lowest of the packages, because the estimator's own
config readers (a local ``config.json``, the Hugging Face cache) read through it as
well and the estimator may not import the analysis.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import fnmatch
import functools
import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

import attrs

R = TypeVar("R")


class Source(str, enum.Enum):
    """What about the machine a recorded value describes (the key says where)."""

    CONTENT = "content"  # a file's bytes: their hash, "" when it could not be read
    EXISTS = "exists"  # "file", "dir" or "" for a path
    SIZE = "size"  # a file's size in bytes, "" when absent
    # a hash of a directory's sorted names ("" when unreadable); the key is the folder,
    # then the patterns the names were filtered by, one a line (none: every name)
    LISTING = "listing"
    CWD = "cwd"  # the working directory (relative names resolve against it)
    ENV = "env"  # an environment variable's value, "" when unset


@attrs.frozen(order=True)
class Dependency:
    source: Source
    key: str  # an absolute path, "" for the working directory, a variable name
    value: str

    def to_data(self) -> list[str]:
        return [self.source.value, self.key, self.value]

    @classmethod
    def from_data(cls, data: list[str]) -> Dependency:
        return cls(Source(data[0]), data[1], data[2])


class Reads:
    """The dependencies one analysis recorded, first observation of each kept."""

    def __init__(self) -> None:
        self._seen: dict[tuple[Source, str], str] = {}

    def add(self, source: Source, key: str, value: str) -> None:
        self._seen.setdefault((source, key), value)

    def extend(self, dependencies: Iterable[Dependency]) -> None:
        for dependency in dependencies:
            self.add(dependency.source, dependency.key, dependency.value)

    def dependencies(self) -> tuple[Dependency, ...]:
        return tuple(sorted(Dependency(s, k, v) for (s, k), v in self._seen.items()))


_current: contextvars.ContextVar[Reads | None] = contextvars.ContextVar(
    "torchward_reads", default=None
)


@contextlib.contextmanager
def recording() -> Iterator[Reads]:
    """Collect the reads made inside the block; they also count for an enclosing block."""
    reads = Reads()
    outer = _current.get()
    token = _current.set(reads)
    try:
        yield reads
    finally:
        _current.reset(token)
        if outer is not None:
            outer.extend(reads.dependencies())


_observations: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "torchward_observations", default=None
)


@contextlib.contextmanager
def one_observation_each() -> Iterator[None]:
    """Inside the block, a memoised result's dependencies are each checked against the
    file system once (:func:`still_hold`'s ``seen``): one analysis asks about the same
    sibling folder for every import it resolves, and on every keystroke. The block sees
    the files as they were when it first looked; an enclosing block's memo is kept."""
    if _observations.get() is not None:
        yield
        return
    token = _observations.set({})
    try:
        yield
    finally:
        _observations.reset(token)


def _record(source: Source, key: str, value: str) -> None:
    reads = _current.get()
    if reads is not None:
        reads.add(source, key, value)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


# path -> (mtime in ns, size, digest of the content read then): a file whose modification
# time and size have not changed since it was read is not read and hashed again
_digests: dict[str, tuple[int, int, str]] = {}


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


# a file modified this shortly before it was read is not remembered: a second write in
# the same tick of the file system's clock (a few ms) could leave the same time and size
_RACY_NS = 100_000_000


def _remember_digest(path: str, stat: tuple[int, int] | None, digest: str) -> None:
    """Remember what ``path`` held (``stat``: taken before reading it), unless it was
    modified too recently to tell a later write by its time (git's "racy" files)."""
    if stat is not None and stat[0] < time.time_ns() - _RACY_NS:
        _digests[path] = (*stat, digest)


def unchanged_digest(path: str | os.PathLike[str]) -> str | None:
    """The content digest of ``path`` when the file has kept the modification time and
    size it had when last read here (recorded as a read of its content, like
    :func:`read_bytes`); None when it changed, or was never read: read it then. Saves
    re-reading and re-hashing the dozens of project modules one keystroke's analysis
    imports."""
    key = _absolute(path)
    known = _digests.get(key)
    if known is None or _stat_key(key) != known[:2]:
        return None
    _record(Source.CONTENT, key, known[2])
    return known[2]


def _observe(source: Source, key: str) -> str:
    """The value ``source`` has for ``key`` on the machine now."""
    if source is Source.CONTENT:
        stat = _stat_key(key)
        known = _digests.get(key)
        if known is not None and stat == known[:2]:
            return known[2]
        try:
            with open(key, "rb") as handle:
                digest = _digest(handle.read())
        except OSError:
            return ""
        _remember_digest(key, stat, digest)
        return digest
    if source is Source.EXISTS:
        return "file" if os.path.isfile(key) else "dir" if os.path.isdir(key) else ""
    if source is Source.SIZE:
        try:
            return str(os.path.getsize(key))
        except OSError:
            return ""
    if source is Source.LISTING:
        folder, *patterns = key.split("\n")
        try:
            names = _matching(os.listdir(folder), patterns)
        except OSError:
            return ""
        return _digest("\0".join(sorted(names)).encode("utf-8", "surrogateescape"))
    if source is Source.CWD:
        return os.getcwd()
    return os.environ.get(key, "")


# --- the reads analyses make --------------------------------------------------------


def _absolute(path: str | os.PathLike[str]) -> str:
    """``path`` made absolute; a relative one also depends on the working directory."""
    text = os.fspath(path)
    if not os.path.isabs(text):
        getcwd()
    return os.path.abspath(text)


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of ``path`` (raises ``OSError``), recorded by content hash."""
    key = _absolute(path)
    stat = _stat_key(key)
    try:
        with open(key, "rb") as handle:
            data = handle.read()
    except OSError:
        _record(Source.CONTENT, key, "")
        raise
    digest = _digest(data)
    _remember_digest(key, stat, digest)
    _record(Source.CONTENT, key, digest)
    return data


def read_text(path: str | os.PathLike[str], encoding: str = "utf-8", errors: str = "strict") -> str:
    """``open(path, encoding=...).read()``: decoded, universal newlines; recorded."""
    text = read_bytes(path).decode(encoding, errors)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _existence(path: str | os.PathLike[str]) -> str:
    key = _absolute(path)
    state = _observe(Source.EXISTS, key)
    _record(Source.EXISTS, key, state)
    return state


def exists(path: str | os.PathLike[str]) -> bool:
    return _existence(path) != ""


def is_file(path: str | os.PathLike[str]) -> bool:
    return _existence(path) == "file"


def is_dir(path: str | os.PathLike[str]) -> bool:
    return _existence(path) == "dir"


def file_size(path: str | os.PathLike[str]) -> int:
    """``os.path.getsize`` (raises ``OSError``), recorded."""
    key = _absolute(path)
    size = _observe(Source.SIZE, key)
    _record(Source.SIZE, key, size)
    if not size:
        raise FileNotFoundError(key)
    return int(size)


def list_dir(path: str | os.PathLike[str], patterns: tuple[str, ...] = ()) -> list[str]:
    """``os.listdir`` (raises ``OSError``), only the names matching one of ``patterns``
    (``fnmatch``; none: all), recorded by a hash of those names: a file that matches no
    pattern appearing in the folder does not invalidate a result."""
    folder = _absolute(path)
    key = "\n".join((folder, *patterns))
    try:
        names = _matching(os.listdir(folder), list(patterns))
    except OSError:
        _record(Source.LISTING, key, "")
        raise
    _record(Source.LISTING, key, _observe(Source.LISTING, key))
    return names


def _matching(names: list[str], patterns: list[str]) -> list[str]:
    if not patterns:
        return names
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def getcwd() -> str:
    cwd = os.getcwd()
    _record(Source.CWD, "", cwd)
    return cwd


def getenv(name: str) -> str | None:
    value = os.environ.get(name)
    _record(Source.ENV, name, value or "")
    return value


# --- checking and caching -------------------------------------------------------------


def still_hold(dependencies: Iterable[Dependency], seen: dict | None = None) -> bool:
    """Whether every recorded dependency has the same value now.

    ``seen`` memoises observations across many results of one run (a sibling module
    read by fifty files is hashed once).
    """
    memo: dict[tuple[Source, str], str] = {} if seen is None else seen
    for dependency in dependencies:
        key = (dependency.source, dependency.key)
        if key not in memo:
            memo[key] = _observe(dependency.source, dependency.key)
        if memo[key] != dependency.value:
            return False
    return True


class remembered(Generic[R]):  # lower case: used as a decorator, like functools.cache
    """Memoise a function of file contents by its arguments and by what it read.

    A hit is reused only while its dependencies still hold, and its reads are recorded
    again for the analysis asking, so memoising never hides an input from the cache.
    """

    MAX_ENTRIES = 256

    def __init__(self, function: Callable[..., R]) -> None:
        functools.update_wrapper(self, function)
        self._function = function
        self._memo: dict[tuple, tuple[R, tuple[Dependency, ...]]] = {}

    def __call__(self, *args: object) -> R:
        hit = self._memo.get(args)
        if hit is not None and still_hold(hit[1], _observations.get()):
            result, dependencies = hit
            reads = _current.get()
            if reads is not None:
                reads.extend(dependencies)
            return result
        with recording() as recorded:
            result = self._function(*args)
        if len(self._memo) >= self.MAX_ENTRIES:
            self._memo.clear()
        self._memo[args] = (result, recorded.dependencies())
        return result

    def cache_clear(self) -> None:
        self._memo.clear()
