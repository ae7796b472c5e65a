"""The live-storage counter: peak bytes of tensor storage, overall, per phase and per term.

A ``TorchDispatchMode`` that sees the outputs of every aten op: a storage seen for the
first time is an allocation of its ``nbytes`` (rounded up to the CUDA caching
allocator's 512-byte blocks on ``cuda``), ``weakref.finalize`` on the storage object is
its free. Only storages on the measured device count. That is what
``torch.cuda.max_memory_allocated`` reports, less what kernels allocate internally
(cuBLAS / cuDNN workspaces) — those never appear as aten outputs.

It works the same on real tensors and on ``FakeTensor``s (run under ``FakeTensorMode``),
which is how the profile is checked against real execution to the byte.

Terms: storages the step runner *tags* (parameters → ``weights``, gradients when
autograd accumulates them → ``gradients``, optimizer state → ``optimizer_state``, a KV
cache → ``kv_cache``) are counted under that term; anything else is ``activations``
(during the forward and backward) or ``temporaries`` (during the optimizer step). The
composition is recorded whenever the running total sets a new peak, so the breakdown
is the one *at* the peak, not a sum of maxima.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = ["BLOCK", "TERMS", "LiveStorageCounter", "rounded"]

BLOCK = 512  # CUDA caching allocator: every block is a multiple of 512 bytes
TERMS = ("weights", "gradients", "optimizer_state", "activations", "kv_cache", "temporaries")
_UNTAGGED_IN = {"optimizer step": "temporaries"}


def rounded(n: int, block: int = BLOCK) -> int:
    return ((n + block - 1) // block) * block if n else 0


class LiveStorageCounter(TorchDispatchMode):
    """Live bytes of tensor storage on ``device_type``; the peak, per phase and per term."""

    def __init__(self, device_type: str, block: int = BLOCK):
        super().__init__()
        self.device_type = device_type
        self.block = block
        self.live: dict[int, int] = {}
        self.tags: dict[int, str] = {}
        self.by_term: dict[str, int] = {}
        self.current = 0
        self.peak = 0
        self.peak_terms: dict[str, int] = {}
        self.peak_phase = "setup"
        self.phase = "setup"
        self.phase_peaks: dict[str, int] = {}

    # -- bookkeeping ---------------------------------------------------------------------------
    def _term_of_untagged(self) -> str:
        return _UNTAGGED_IN.get(self.phase, "activations")

    def _free(self, key: int) -> None:
        n = self.live.pop(key, 0)
        self.current -= n
        term = self.tags.pop(key, None)
        if term is not None:
            self.by_term[term] = self.by_term.get(term, 0) - n

    def _record_peak(self) -> None:
        self.peak = self.current
        self.peak_phase = self.phase
        tagged = sum(self.by_term.values())
        terms = {t: v for t, v in self.by_term.items() if v}
        untagged = self._term_of_untagged()
        terms[untagged] = terms.get(untagged, 0) + self.current - tagged
        self.peak_terms = terms

    def track(self, t: Any) -> None:
        if not isinstance(t, torch.Tensor) or t.device.type != self.device_type:
            return
        storage = t.untyped_storage()
        key = storage._cdata
        if key in self.live:
            return
        n = rounded(storage.nbytes(), self.block)
        self.live[key] = n
        self.current += n
        weakref.finalize(storage, self._free, key)
        if self.current > self.peak:
            self._record_peak()
        if self.current > self.phase_peaks.get(self.phase, 0):
            self.phase_peaks[self.phase] = self.current

    def track_all(self, *objs: Any) -> None:
        for obj in objs:
            for t in tree_leaves(obj):
                self.track(t)

    def tag(self, tensor: Any, term: str) -> None:
        """Count ``tensor``'s storage under ``term`` from now on (tracking it if new)."""
        if not isinstance(tensor, torch.Tensor) or tensor.device.type != self.device_type:
            return
        self.track(tensor)
        key = tensor.untyped_storage()._cdata
        old = self.tags.get(key)
        if old == term or key not in self.live:
            return
        n = self.live[key]
        if old is not None:
            self.by_term[old] -= n
        self.tags[key] = term
        self.by_term[term] = self.by_term.get(term, 0) + n

    def set_phase(self, name: str) -> None:
        self.phase = name
        self.phase_peaks[name] = max(self.phase_peaks.get(name, 0), self.current)

    def reset_peak(self) -> None:
        gc.collect()
        self.peak = -1
        self._record_peak()
        self.phase_peaks = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            self.track(t)
        return out
