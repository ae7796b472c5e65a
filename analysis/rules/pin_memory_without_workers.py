"""TW015 pin-memory-without-workers."""

from __future__ import annotations

from typing import ClassVar

import attrs

from ..facts.events import EventKind
from ..facts.structure import events
from ..facts.values import Kind, Value
from ..finding import Applicability, Evidence, Finding, Payload, Severity, Span
from ..rule import Fixed, Invalid, Rule
from .call_arguments import append_point, call_at, keyword, removal
from .dataloader_tuning import loads_samples


@attrs.frozen
class PinMemoryArguments(Payload):
    """TW015: where ``pin_memory=True`` is and how to drop it; where ``num_workers`` goes.

    Present only when ``pin_memory`` is passed by keyword (a positional one is left alone:
    removing it would shift the arguments after it)."""

    kind: ClassVar[str] = "pin-memory-arguments"
    pin_memory: Span  # the keyword argument ``pin_memory=True`` as written
    drop: Span  # what to delete to drop it with its comma, the layout kept
    workers_value: Span | None  # the value of a ``num_workers=`` keyword, if there is one
    append_at: Span | None  # where a new last argument goes (empty), None: layout unknown
    separator: Span | None  # the separator before the last argument, which a new one copies


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

    ## When it is a note, and when a hint
    The extra copy matters when building a batch already costs the training process
    real time: a `Dataset` class of the project whose `__getitem__` reads, decodes,
    tokenises or transforms each item (images opened from disk; the same test as
    TW004's), work that workers would move off the step. Such a loader gets a **note**.
    A loader over anything else (a tokenised or preprocessed dataset from a library, a
    `TensorDataset`, a class that only indexes tensors already in memory, a list, a
    value the analysis cannot trace) gets a **hint**: there the pinning copy costs about
    what the driver's own staging copy would, and a sample of such notes on real
    projects found none worth acting on (docs/triage/notes-sample.md). `torchward check`
    lists hints only with `--show-hints`.

    ## Known limitations
    Only literal arguments count: a `num_workers` taken from a variable or `**kwargs`
    is assumed to be non-zero. Whether `__getitem__` loads its items is read from the
    names it calls (`open`, `read…`, `decode`, `Image.`, `transform…`, ...), not
    measured. A library dataset that decodes per item (torchvision's `ImageFolder`), or
    a project dataset that reaches the loader through a configuration system the
    analysis does not follow (labml's `@option`), is not recognised and gets a hint.
    One note (and one hint) per file: further loaders of the same kind are listed as its
    evidence (and fixed one at a time). Notes are for tuning; they never gate a build
    unless configured to.
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
    _IMAGES = (
        "from torch.utils.data import DataLoader, Dataset\nfrom PIL import Image\n"
        "class Images(Dataset):\n    def __init__(self, paths):\n        self.paths = paths\n"
        "    def __len__(self):\n        return len(self.paths)\n"
        "    def __getitem__(self, i):\n        return Image.open(self.paths[i])\n"
    )
    INVALID = (
        # a Dataset class of the project builds each item: the pinning copy lands on the step
        Invalid(
            _IMAGES
            + "def make(paths):\n    return DataLoader(Images(paths), batch_size=8, pin_memory=True)\n",
            Severity.NOTE,
            line=11,
            fixed=Fixed(
                _IMAGES + "def make(paths):\n    return DataLoader(Images(paths), batch_size=8)\n",
                Applicability.UNSAFE,
            ),
        ),
        # a dataset the analysis cannot trace to such a class: a hint
        Invalid(
            _HEAD + "def make(ds):\n    return DataLoader(ds, batch_size=8, pin_memory=True)\n",
            Severity.HINT,
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
        # a list: cheap items, a hint
        Invalid(
            "import torch.utils.data as tud\nloader = tud.DataLoader(\n    list(range(8)),\n    batch_size=2,\n    pin_memory=True,\n)\n",
            Severity.HINT,
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
        costly: set[Span] = set()  # over a project Dataset that loads its items: a note
        cheap: set[Span] = set()  # over anything else: a hint
        for _, built in events(facts, EventKind.LOADER_BUILT):
            call = built.call
            if (
                call is None
                or call.opaque_arguments
                or call.pin_memory is not True
                or (call.workers_given and call.workers != 0)
            ):
                continue
            (costly if _loads_its_items(facts, built.value) else cheap).add(built.span)
        cheap -= costly  # one loader seen over both (two paths): the note decides
        if costly:
            yield self._finding(facts, sorted(costly), Severity.NOTE)
        if cheap:
            yield self._finding(facts, sorted(cheap), Severity.HINT)

    def _finding(self, facts, flagged: list[Span], severity: Severity) -> Finding:
        # one per file and severity: the first loader, the others as its evidence
        others = [Evidence(span, "another loader pinned without workers") for span in flagged[1:]]
        more = f" ({len(others)} more loader(s) in this file do the same.)" if others else ""
        why = (
            "each item is read or decoded by the dataset's own code, and each batch then copied "
            "into pinned memory in the training process, between steps, which adds a copy "
            "instead of hiding one"
            if severity is Severity.NOTE
            else "each batch is copied into pinned memory in the training process, between "
            "steps; with items that cost little to build (no Dataset class of this project reads "
            "or decodes them) that copy is small, so this is only a hint"
        )
        return self.finding(
            flagged[0],
            f"`pin_memory=True` with no loader workers: {why}. Give the loader workers "
            "(`num_workers=4`) or drop `pin_memory`." + more,
            evidence=others,
            severity=severity,
            payload=_arguments(facts, flagged[0]),
        )


def _arguments(facts, span: Span) -> PinMemoryArguments | None:
    """The payload of the finding at the ``DataLoader(...)`` call ``span``."""
    lines = facts.lines
    call = call_at(facts.analyzer.tree, lines, span)
    pin = keyword(call, "pin_memory") if call is not None else None
    if call is None or pin is None:
        return None
    drop = removal(lines, call, pin)
    if drop is None:
        return None
    workers = keyword(call, "num_workers")
    appended = append_point(lines, call)
    return PinMemoryArguments(
        pin_memory=lines.span(pin),
        drop=drop,
        workers_value=lines.span(workers.value) if workers is not None else None,
        append_at=appended[0] if appended is not None else None,
        separator=appended[1] if appended is not None else None,
    )


def _loads_its_items(facts, dataset: Value | None) -> bool:
    """Whether the loader's dataset is an instance of a ``Dataset`` class of the project
    whose ``__getitem__`` reads or decodes each item on access (TW004's test)."""
    if dataset is None or dataset.kind is not Kind.DATASET or dataset.class_name is None:
        return False
    index = _defining_index(facts, dataset.class_name)
    return index is not None and loads_samples(index, dataset.class_name)


def _defining_index(facts, class_name: str):
    """The static index of the module that defines ``class_name``: this file's, or that of
    the project module it was imported from (the cross-file session records the owner of
    each imported class it followed); None when neither is known."""
    if class_name in facts.index.classes:
        return facts.index
    project = getattr(facts.analyzer, "project", None)
    owner = project.session.owners.get(class_name) if project is not None else None
    return owner.index if owner is not None else None
