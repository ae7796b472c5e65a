"""The on-disk result cache of ``torchward check``: warm runs do not parse unchanged files.

Layout: ``.torchward_cache/<version>/<key>.json`` next to the configuration (or in the
working directory), with a ``.gitignore`` of ``*`` so the folder ignores itself (as
ruff's does). ``key`` hashes everything besides the file that decides its findings:
the lint settings and a fingerprint of the analysis engine (the torchward version plus
the size and mtime of every engine source file, so editing a rule during development
invalidates results too).

One JSON index per key rather than one file per source file: a warm run over PyTorch's
2,285 files then costs one read and one ``json.loads`` (milliseconds) instead of
thousands of opens. JSON, not pickle, because the cache folder lives in the user's
tree and loading a pickle from a tree we did not write would execute code.

A result also lists what its analysis read besides the file (``reads``: a ``cfg.json``
TW010's reader followed, a sibling module, a requirement file; see
:mod:`torchward.estimator.dependencies`); the runner reuses it only while all of those
are unchanged.

Entries are checked in two steps, like git's index: ``(mtime_ns, size)`` first, which
costs a ``stat``; on a mismatch the content hash, which costs a read. An entry written
within :data:`RACY_SECONDS` of the file's mtime stores mtime 0, so a same-size edit in
the same clock tick is caught by the hash on the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from typing import Any

from . import __version__

CACHE_DIR_NAME = ".torchward_cache"
FORMAT = 2  # 2: results carry the files their analysis read ("reads")
# Filesystem timestamps can be coarse (1-2 s on some filesystems); entries younger than
# this are re-verified by content hash.
RACY_SECONDS = 2


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def engine_fingerprint(package_dirs: list[str]) -> str:
    """The version plus (name, size, mtime) of every engine source file: cheap, a few stats."""
    digest = hashlib.blake2b(__version__.encode(), digest_size=16)
    for top in package_dirs:
        for directory, subdirs, files in os.walk(top):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".json")):
                    stat = os.stat(os.path.join(directory, name))
                    digest.update(f"{directory}/{name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()


def cache_key(settings: Any, fingerprint: str) -> str:
    text = json.dumps([FORMAT, fingerprint, settings], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def default_cache_dir(root: str) -> str:
    return os.environ.get("TORCHWARD_CACHE_DIR") or os.path.join(root, CACHE_DIR_NAME)


class Cache:
    """One index of per-file results for one settings key."""

    def __init__(self, directory: str, key: str) -> None:
        self.directory = directory
        self.file = os.path.join(directory, __version__, f"{key}.json")
        self.entries: dict[str, list] = {}
        self.dirty = False

    @classmethod
    def open(cls, directory: str, key: str) -> Cache:
        cache = cls(directory, key)
        try:
            with open(cache.file, "rb") as handle:
                data = json.loads(handle.read())
            if isinstance(data, dict) and data.get("format") == FORMAT:
                cache.entries = data["files"]
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a missing or damaged cache is an empty one
        return cache

    def lookup_stat(self, absolute: str, stat: os.stat_result) -> dict | None:
        """The cached result when mtime and size still match, else None."""
        entry = self.entries.get(absolute)
        if entry and entry[0] and entry[0] == stat.st_mtime_ns and entry[1] == stat.st_size:
            return entry[3]
        return None

    def lookup_digest(self, absolute: str, stat: os.stat_result, digest: str) -> dict | None:
        """The cached result when the content is unchanged (a touched file); refreshes the stat."""
        entry = self.entries.get(absolute)
        if entry and entry[2] == digest:
            self.entries[absolute] = [_trusted_mtime(stat), stat.st_size, digest, entry[3]]
            self.dirty = True
            return entry[3]
        return None

    def store(self, absolute: str, stat: os.stat_result, digest: str, result: dict) -> None:
        self.entries[absolute] = [_trusted_mtime(stat), stat.st_size, digest, result]
        self.dirty = True

    def save(self) -> None:
        """Write the index atomically; a read-only tree just means no cache."""
        if not self.dirty:
            return
        try:
            self._prepare_directory()
            folder = os.path.dirname(self.file)
            fd, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"format": FORMAT, "files": self.entries}, handle, separators=(",", ":"))
            os.chmod(temporary, 0o644)  # mkstemp's 0600 would lock out a shared CI cache
            os.replace(temporary, self.file)
            self.dirty = False
        except OSError:
            pass

    def _prepare_directory(self) -> None:
        os.makedirs(os.path.dirname(self.file), exist_ok=True)
        ignore = os.path.join(self.directory, ".gitignore")
        if not os.path.exists(ignore):
            with open(ignore, "w", encoding="utf-8") as handle:
                handle.write("# Automatically created by torchward.\n*\n")
        tag = os.path.join(self.directory, "CACHEDIR.TAG")
        if not os.path.exists(tag):
            with open(tag, "w", encoding="utf-8") as handle:
                handle.write(
                    "Signature: 8a477f597d28d172789f06886806bc55\n# torchward check cache\n"
                )


def _trusted_mtime(stat: os.stat_result) -> int:
    """The mtime to store, or 0 when the file changed too recently to trust its timestamp."""
    if time.time_ns() - stat.st_mtime_ns < RACY_SECONDS * 1_000_000_000:
        return 0
    return stat.st_mtime_ns
