"""The workspace index: module summaries by content, editor overlays and the import graph.

One index per process (:data:`WORKSPACE`). A summary is keyed by the module's path and
the hash of its text, so an edit makes a new summary and every analysis that reads the
module afterwards sees it; nothing has to be invalidated by hand. Reads from disk go
through :mod:`torchward.estimator.dependencies`: the CLI cache then stores, with each
result, the hash of every project module the analysis read (and the absence of every
file an import could have named), and reuses the result only while all still hold.

The language server puts the text of open documents here as *overlays* (the editor's
unsaved text wins over the disk), and asks :meth:`WorkspaceIndex.dependants` which open
files read a module whose summary just changed, to re-lint them.

Never imports user code: a module is read and parsed, nothing else.
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from collections import OrderedDict

from torchward.estimator import dependencies

from ..syntax.parsing import parse_module
from .resolve import MAX_MODULE_BYTES
from .summary import ModuleSummary, Syntax

MAX_SUMMARIES = 2048  # module summaries kept in memory (least recently used dropped)
# syntax trees kept alive, of the summaries used last: at most this many, of at most this
# many characters of text in all (a tree takes ~30 bytes per character of its text). Past
# the bound a summary keeps its names and text, and parses the text again when a tree is
# asked for. Measured on PyTorch's tree (bench/bench_torch_tree.py, one process): no
# bound 1,030 MB peak; 2M characters 449 MB and 176 trees parsed again, CPU as without
# the bound; 1M 408 MB but 462 parsed again (+20% CPU); 4M 507 MB, 34 parsed again.
MAX_SYNTAX = 256
MAX_SYNTAX_TEXT = 2_000_000


class SyntaxBound:
    """The syntax trees of the summaries used last, held strongly (a summary holds its
    own only weakly): the index's memory grows with the bound, not with the project."""

    def __init__(self, most: int = MAX_SYNTAX, most_text: int = MAX_SYNTAX_TEXT) -> None:
        self.most = most
        self.most_text = most_text
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str], Syntax] = OrderedDict()
        self._text = 0

    def keep(self, key: tuple[str, str], syntax: Syntax) -> None:
        with self._lock:
            kept = self._kept.get(key)
            if kept is syntax:
                self._kept.move_to_end(key)
                return
            if kept is not None:
                self._text -= len(kept.source)
            self._kept[key] = syntax
            self._kept.move_to_end(key)
            self._text += len(syntax.source)
            while len(self._kept) > 1 and (
                len(self._kept) > self.most or self._text > self.most_text
            ):
                _, dropped = self._kept.popitem(last=False)
                self._text -= len(dropped.source)

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def text(self) -> int:
        """Characters of text whose trees are kept."""
        return self._text


class WorkspaceIndex:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._summaries: OrderedDict[tuple[str, str], ModuleSummary | None] = OrderedDict()
        self._overlays: dict[str, str] = {}
        self._reads: dict[str, frozenset[str]] = {}  # importer -> project modules it read
        self.syntax = SyntaxBound()

    # --- texts --------------------------------------------------------------------------
    def set_overlay(self, path: str, text: str) -> None:
        """The editor's text of an open document, read instead of the file on disk."""
        with self._lock:
            self._overlays[os.path.abspath(path)] = text

    def clear_overlay(self, path: str) -> None:
        with self._lock:
            self._overlays.pop(os.path.abspath(path), None)

    def summary(self, path: str) -> ModuleSummary | None:
        """The summary of the module at ``path``; None when it cannot be read or parsed."""
        path = os.path.abspath(path)
        with self._lock:
            overlay = self._overlays.get(path)
        if overlay is not None:
            return self._summarise(path, overlay.encode("utf-8", "surrogatepass"))
        try:
            if dependencies.file_size(path) > MAX_MODULE_BYTES:
                return None
            digest = dependencies.unchanged_digest(path)
            if digest is not None:
                with self._lock:
                    if (path, digest) in self._summaries:  # unchanged since it was read
                        self._summaries.move_to_end((path, digest))
                        return self._summaries[(path, digest)]
            data = dependencies.read_bytes(path)
        except OSError:
            return None
        return self._summarise(path, data)

    def _summarise(self, path: str, data: bytes) -> ModuleSummary | None:
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        key = (path, digest)
        with self._lock:
            if key in self._summaries:
                self._summaries.move_to_end(key)
                return self._summaries[key]
        summary = _parse(path, digest, data, self.syntax)
        with self._lock:
            self._summaries[key] = summary
            while len(self._summaries) > MAX_SUMMARIES:
                self._summaries.popitem(last=False)
        return summary

    # --- the import graph ---------------------------------------------------------------
    def record_reads(self, importer: str, modules: frozenset[str]) -> None:
        """The project modules the last analysis of ``importer`` read (replacing the last)."""
        with self._lock:
            self._reads[os.path.abspath(importer)] = modules

    def reads(self, importer: str) -> frozenset[str]:
        with self._lock:
            return self._reads.get(os.path.abspath(importer), frozenset())

    def dependants(self, module: str) -> set[str]:
        """Every analysed file whose last analysis read ``module``, directly or through
        other modules (the importers of its importers)."""
        module = os.path.abspath(module)
        with self._lock:
            reads = dict(self._reads)
        found: set[str] = set()
        frontier = [module]
        while frontier:
            current = frontier.pop()
            for importer, modules in reads.items():
                if current in modules and importer not in found and importer != module:
                    found.add(importer)
                    frontier.append(importer)
        return found

    def forget(self, importer: str) -> None:
        with self._lock:
            self._reads.pop(os.path.abspath(importer), None)


def _parse(path: str, digest: str, data: bytes, keeper: SyntaxBound) -> ModuleSummary | None:
    try:
        source = data.decode("utf-8-sig")
        if "\x00" in source[:8192]:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = parse_module(source, path)
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
        return None
    return ModuleSummary(path, digest, source, tree, keeper)


WORKSPACE = WorkspaceIndex()
