"""TW015 pin-memory-without-workers."""

from __future__ import annotations

from ..events import EventKind
from ..finding import Applicability, Evidence, Severity
from ..rule import Fixed, Invalid, Rule
from ..structure import events


class PinMemoryWithoutWorkers(Rule):
    """
    ## What it does
    Notes a `DataLoader(..., pin_memory=True)` that loads in the main process
    (`num_workers` absent or `0`).

    ## Why is this bad?
    Pinned memory pays off when batches are pinned in the background while the GPU
    computes, so that `.to(device, non_blocking=True)` can overlap the copy. With no
    workers, every batch is loaded and then copied once more into page-locked memory in
    the training process itself, between steps: the pinning adds a copy to the critical
    path instead of hiding one. Either give the loader workers or drop the flag.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)     # TW015
    ```
    Use instead:
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=True, num_workers=4)
    ```

    ## Fix safety
    Two fixes, both unsafe. Dropping `pin_memory=True` changes only where batches live in
    host memory, but `non_blocking=True` copies from unpinned memory become synchronous,
    which may matter to code that times or overlaps them. Adding `num_workers=4` moves
    loading into worker processes: the dataset must be picklable, per-worker random
    state and `if __name__ == "__main__":` guards (on spawn platforms) become the
    author's concern, and the right count depends on the machine.

    ## Known limitations
    Only literal arguments count: a `num_workers` taken from a variable or `**kwargs`
    is assumed to be non-zero. One note per file: further loaders with the same setting
    are listed as its evidence (and fixed one at a time). Notes are for tuning; they
    never gate a build unless configured to.
    """

    code = "TW015"
    name = "pin-memory-without-workers"
    default_severity = Severity.NOTE
    summary = "pin_memory=True with num_workers=0: the pinning copy lands on the training step."

    _HEAD = "from torch.utils.data import DataLoader\n"
    VALID = (
        _HEAD
        + "def make(ds):\n    return DataLoader(ds, batch_size=8, pin_memory=True, num_workers=4)\n",
        _HEAD + "def make(ds):\n    return DataLoader(ds, batch_size=8)\n",
        _HEAD
        + "def make(ds, workers):\n    return DataLoader(ds, pin_memory=True, num_workers=workers)\n",
        _HEAD + "def make(ds, **kw):\n    return DataLoader(ds, pin_memory=True, **kw)\n",
        _HEAD + "def make(ds):\n    return DataLoader(ds, pin_memory=False, num_workers=0)\n",
        _HEAD + "def make(ds, pin):\n    return DataLoader(ds, pin_memory=pin)\n",
    )
    INVALID = (
        Invalid(
            _HEAD + "def make(ds):\n    return DataLoader(ds, batch_size=8, pin_memory=True)\n",
            Severity.NOTE,
            line=3,
            fixed=Fixed(
                _HEAD + "def make(ds):\n    return DataLoader(ds, batch_size=8)\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            _HEAD
            + "def make(ds):\n    return DataLoader(ds, num_workers=0, pin_memory=True, shuffle=True)\n",
            line=3,
            fixed=Fixed(
                _HEAD + "def make(ds):\n    return DataLoader(ds, num_workers=0, shuffle=True)\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch.utils.data as tud\nloader = tud.DataLoader(\n    list(range(8)),\n    batch_size=2,\n    pin_memory=True,\n)\n",
            line=2,
            fixed=Fixed(
                "import torch.utils.data as tud\nloader = tud.DataLoader(\n    list(range(8)),\n    batch_size=2,\n)\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            _HEAD
            + "def make(ds):\n    return DataLoader(ds, 8, True, None, None, 0, None, True)\n",
            line=3,
            fixed=None,
        ),
    )

    def check(self, facts):
        flagged = sorted(
            {
                built.span
                for _, built in events(facts, EventKind.LOADER_BUILT)
                if built.call is not None
                and not built.call.opaque_arguments
                and built.call.pin_memory is True
                and not (built.call.workers_given and built.call.workers != 0)
            }
        )
        if not flagged:
            return
        # one note per file: the first loader, the others as its evidence
        others = [Evidence(span, "another loader pinned without workers") for span in flagged[1:]]
        more = f" ({len(others)} more loader(s) in this file do the same.)" if others else ""
        yield self.finding(
            flagged[0],
            "`pin_memory=True` with no loader workers: each batch is copied into pinned memory in the "
            "training process, between steps, which adds a copy instead of hiding one. Give the loader "
            "workers (`num_workers=4`) or drop `pin_memory`." + more,
            evidence=others,
        )
