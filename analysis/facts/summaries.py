"""Function summaries that outlive one analysis: the incremental cache of the editor.

The language server re-analyses a document on every keystroke, and a keystroke changes
one function. A :class:`SummaryCache` passed to :func:`~torchward.analysis.analyze_source`
keeps each function analysis — its summary, its trace and what it did to the file-level
state — keyed by everything it read:

- the function's own text and position (a shifted function is a different entry, so
  every span in the entry stays right);
- its arguments, its ``self``, its grad mode, the module globals and, for nested
  functions, the enclosing scope, as abstract values;
- the summaries of the functions it called: an entry records its calls in order, and a
  hit re-issues them (they hit the cache too unless they changed) and is accepted only
  if each returns the summary it returned before.

A hit replays the entry's effects (containers it backpropagated, functions it called,
closures it defined, the calling contexts it used), so the file-level result is the one
a fresh analysis computes; ``tests/analysis/test_incremental.py`` checks exactly that over
random edits. The cache also remembers each document's last syntax tree, so that an edit re-parses
only the top-level statements it touched (:mod:`torchward.analysis.syntax.reparse`). The CLI
analyses each file once and passes no cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import attrs

MAX_ENTRIES = 4_000  # the functions of the few documents being edited; older ones are evicted
MAX_TREES = 4  # the documents being typed in (a tree of 1,000 lines is ~2 MB)


@attrs.define
class Entry:
    summary: Any  # analyzer.Summary
    trace: Any  # events.Trace
    effects: list[
        tuple
    ]  # ("invoke", call, summary) | ("called", q) | ("backwarded", locs) | ("closure", q, env) | ("context", q)


class SummaryCache:
    """A bounded, thread-safe LRU map from function-analysis keys to :class:`Entry`."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._trees: OrderedDict[str, tuple[str, Any]] = (
            OrderedDict()
        )  # path -> (source, ast.Module)

    def last_tree(self, path: str) -> tuple[str, Any] | None:
        """The last source parsed for ``path`` and its tree (for :func:`reparse`)."""
        with self._lock:
            return self._trees.get(path)

    def take_tree(self, path: str) -> tuple[str, Any] | None:
        """The last source parsed for ``path`` and its tree, handed to one caller:
        :func:`reparse` shifts the tree's later statements in place, so no other analysis
        may read it meanwhile. The caller remembers the new tree, or gives this one back."""
        with self._lock:
            return self._trees.pop(path, None)

    def give_back_tree(self, path: str, source: str, tree: Any) -> None:
        """Return a tree :meth:`take_tree` handed out and only read (the estimator reads
        the lint's tree instead of parsing again): kept unless an analysis remembered a
        newer one meanwhile."""
        with self._lock:
            if path not in self._trees:
                self._trees[path] = (source, tree)

    def remember_tree(self, path: str, source: str, tree: Any) -> None:
        with self._lock:
            self._trees[path] = (source, tree)
            self._trees.move_to_end(path)
            while len(self._trees) > MAX_TREES:
                self._trees.popitem(last=False)

    def get(self, key: Hashable) -> Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: Hashable, entry: Entry) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
