"""TW021 sampler-set-epoch-missing."""

from __future__ import annotations

from ..facts.events import Event, EventKind
from ..facts.structure import events, loop_header, runs_backward
from ..finding import Applicability, Confidence, Evidence, Severity, Span
from ..rule import Fixed, Invalid, Rule
from ..workspace.boundary import constructed_inside, foreign_events, foreign_sources
from .epoch_reseed import epoch_reseed


class SamplerSetEpochMissing(Rule):
    """
    ## What it does
    Flags a `DataLoader` whose sampler is a shuffling `DistributedSampler`, iterated for
    training inside an epoch loop that never calls `sampler.set_epoch(epoch)`.

    ## Why is this bad?
    A `DistributedSampler` shuffles with a generator seeded by `seed + epoch`, and the
    epoch only changes when `set_epoch` is called. Without it every epoch replays exactly
    the same order on every rank: the model sees the same batches in the same sequence,
    which hurts generalisation in a way no log shows.

    ## Example
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:          # TW021: the same order every epoch
            ...
    ```
    Use instead:
    ```python
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            ...
    ```

    ## Fix safety
    The fix inserts `loader.sampler.set_epoch(epoch)` as the first statement of the epoch
    loop. Proof obligations, checked on the source: the epoch loop is
    `for NAME in range(...)` (so `NAME` is a distinct integer each epoch: any other
    iterable could hand `set_epoch` a non-integer); the loader is iterated as a plain name
    or attribute (possibly inside `enumerate`/`tqdm`), bound nowhere in the epoch loop (so
    the name at the top of the loop is the loader iterated below); and the analysis saw
    the loader built with `sampler=` a `DistributedSampler`, which `DataLoader.sampler`
    returns. Then the fix changes only the shuffling order of later epochs, which is the
    bug: safe — when the `DistributedSampler` is the loader's sampler on every path
    (passed straight as `sampler=`, or bound to a name assigned nowhere else). With
    `RandomSampler(...) if local_rank == -1 else DistributedSampler(...)` a
    single-process run has no `set_epoch` and the fix would raise there: unsafe.
    Otherwise there is no fix.

    ## Known limitations
    Quiet when the file calls `set_epoch` anywhere (on the sampler, the loader, the
    dataset or through a helper), when the sampler is built with `shuffle=False`, when
    the loader is iterated once (no epoch loop around it), and for loaders prepared by
    Accelerate or built by frameworks. A batch loop in a helper the epoch loop calls
    (`self.train_epoch(epoch)`) is reported at that call, without a fix. A loader built in
    another project module (`make_loader()` in `data.py`) is found through cross-file
    analysis; then any `set_epoch` in a followed module's text keeps it quiet, and the fix
    is unsafe (the sampler's other paths are in a file the fixer does not read).
    """

    code = "TW021"
    name = "sampler-set-epoch-missing"
    default_severity = Severity.WARNING
    summary = (
        "A shuffling DistributedSampler is never given the epoch: every epoch replays one order."
    )

    _HEAD = "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
    VALID = (
        _HEAD
        + "def train(model, ds, opt, epochs):\n    sampler = DistributedSampler(ds)\n    loader = DataLoader(ds, sampler=sampler)\n    for epoch in range(epochs):\n        sampler.set_epoch(epoch)\n        for x in loader:\n            model(x).sum().backward()\n            opt.step()\n",
        _HEAD
        + "def train(model, ds, opt, epochs):\n    loader = DataLoader(ds, sampler=DistributedSampler(ds))\n    for epoch in range(epochs):\n        loader.sampler.set_epoch(epoch)\n        for x in loader:\n            model(x).sum().backward()\n            opt.step()\n",
        # no shuffling: the order is meant to be fixed
        _HEAD
        + "def train(model, ds, opt, epochs):\n    loader = DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False))\n    for epoch in range(epochs):\n        for x in loader:\n            model(x).sum().backward()\n            opt.step()\n",
        # one pass only
        _HEAD
        + "def train(model, ds, opt):\n    loader = DataLoader(ds, sampler=DistributedSampler(ds))\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
        # an evaluation loader
        _HEAD
        + "def evaluate(model, ds, epochs):\n    loader = DataLoader(ds, sampler=DistributedSampler(ds))\n    for epoch in range(epochs):\n        with torch.no_grad():\n            for x in loader:\n                model(x)\n",
        # set_epoch through a helper
        _HEAD
        + "def new_epoch(loader, epoch):\n    loader.sampler.set_epoch(epoch)\n\ndef train(model, ds, opt, epochs):\n    loader = DataLoader(ds, sampler=DistributedSampler(ds))\n    for epoch in range(epochs):\n        new_epoch(loader, epoch)\n        for x in loader:\n            model(x).sum().backward()\n            opt.step()\n",
        # not a distributed sampler
        "import torch\nfrom torch.utils.data import DataLoader, RandomSampler\ndef train(model, ds, opt, epochs):\n    loader = DataLoader(ds, sampler=RandomSampler(ds))\n    for epoch in range(epochs):\n        for x in loader:\n            model(x).sum().backward()\n            opt.step()\n",
    )
    INVALID = (
        Invalid(
            _HEAD
            + "def train(model, ds, opt, epochs):\n    sampler = DistributedSampler(ds)\n    loader = DataLoader(ds, batch_size=8, sampler=sampler)\n    for epoch in range(epochs):\n        for x in loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n",
            Severity.WARNING,
            line=7,
            fixed=Fixed(
                _HEAD
                + "def train(model, ds, opt, epochs):\n    sampler = DistributedSampler(ds)\n    loader = DataLoader(ds, batch_size=8, sampler=sampler)\n    for epoch in range(epochs):\n        loader.sampler.set_epoch(epoch)\n        for x in loader:\n            opt.zero_grad()\n            model(x).sum().backward()\n            opt.step()\n",
                Applicability.SAFE,
            ),
        ),
        Invalid(
            "import torch.utils.data as tud\nfrom tqdm import tqdm\ndef train(model, ds, opt):\n    loader = tud.DataLoader(ds, sampler=tud.distributed.DistributedSampler(ds, shuffle=True))\n    for ep in range(10):\n        for i, x in enumerate(tqdm(loader)):\n            model(x).sum().backward()\n            opt.step()\n",
            line=6,
            fixed=Fixed(
                "import torch.utils.data as tud\nfrom tqdm import tqdm\ndef train(model, ds, opt):\n    loader = tud.DataLoader(ds, sampler=tud.distributed.DistributedSampler(ds, shuffle=True))\n    for ep in range(10):\n        loader.sampler.set_epoch(ep)\n        for i, x in enumerate(tqdm(loader)):\n            model(x).sum().backward()\n            opt.step()\n",
                Applicability.SAFE,
            ),
        ),
        # a while loop over epochs: flagged, but no integer to pass
        Invalid(
            _HEAD
            + "def train(model, ds, opt):\n    loader = DataLoader(ds, sampler=DistributedSampler(ds))\n    step = 0\n    while step < 1000:\n        for x in loader:\n            model(x).sum().backward()\n            opt.step()\n            step += 1\n",
            line=7,
            fixed=None,
        ),
        # module-level script
        Invalid(
            _HEAD
            + "model = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nds = list(range(10))\nloader = DataLoader(ds, sampler=DistributedSampler(ds))\nfor epoch in range(3):\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
            line=8,
            fixed=Fixed(
                _HEAD
                + "model = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nds = list(range(10))\nloader = DataLoader(ds, sampler=DistributedSampler(ds))\nfor epoch in range(3):\n    loader.sampler.set_epoch(epoch)\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
                Applicability.SAFE,
            ),
        ),
    )

    def check(self, facts):
        if "set_epoch" in facts.analyzer.source:
            return  # set somewhere, perhaps where the analysis cannot follow
        # construction events by (module, span): None for this file's own; a loader built
        # in another module (``make_loader()`` in data.py) is found through the call that
        # brought it here (cross-file analysis), unless a followed module calls set_epoch
        built: list[tuple[str | None, Event]] = [
            (None, event) for _, event in events(facts, EventKind.SAMPLER_BUILT)
        ]
        made: list[tuple[str | None, Event]] = [
            (None, event) for _, event in events(facts, EventKind.LOADER_BUILT)
        ]
        if not any("set_epoch" in source for source in foreign_sources(facts)):
            built += foreign_events(facts, EventKind.SAMPLER_BUILT)
            made += foreign_events(facts, EventKind.LOADER_BUILT)
        shuffling = {
            (path, event.span): event
            for path, event in built
            if event.call is not None and event.call.shuffles
        }
        if not shuffling:
            return
        loaders = {
            (path, event.span): event
            for path, event in made
            if event.call is not None
            and any((path, origin) in shuffling for origin in event.call.sampler_origins)
        }
        reported = set()
        iterations = [
            *events(facts, EventKind.ITERATE),
            *events(facts, EventKind.ITERATE_IN_CALL),
        ]
        for trace, iterate in iterations:
            loader = iterate.value
            # the loader may be built on several paths: any with a shuffling sampler counts
            origins = loader.origins() if loader is not None else ()
            site = next((key for o in origins for key in _places(facts, o) if key in loaders), None)
            if (
                loader is None
                or site is None
                or loader.confidence is not Confidence.HIGH
                or loader.prepared
                or len(iterate.loops) < (1 if iterate.kind is EventKind.ITERATE_IN_CALL else 2)
                or site in reported
            ):
                continue
            if not runs_backward(trace, iterate.loops[-1]):
                continue
            reported.add(site)
            call = loaders[site].call
            assert call is not None  # filtered above
            module = site[0]
            sampler = shuffling[
                next((module, o) for o in call.sampler_origins if (module, o) in shuffling)
            ]
            # a batch loop in a helper (``self.train_epoch()``) repeats in the caller's loop
            epoch_loop = iterate.loops[-1 if iterate.kind is EventKind.ITERATE_IN_CALL else -2]
            # built in another module: where it is, and the call of this file that brought it
            brought: list[Evidence] = (
                [next(o for o in origins if site in _places(facts, o))] if module else []
            )
            evidence = [
                Evidence(sampler.span, "the DistributedSampler is built here", module),
                Evidence(loop_header(trace, epoch_loop), "the epoch loop"),
                *iterate.via,
                *brought,
            ]
            yield self.finding(
                iterate.span,
                "this DataLoader's DistributedSampler shuffles with `seed + epoch`, but `set_epoch` is never "
                "called: every epoch replays the same order on every rank. Call "
                "`sampler.set_epoch(epoch)` at the start of each epoch.",
                evidence=evidence,
                payload=epoch_reseed(facts.analyzer.tree, facts.lines, iterate.span, evidence),
            )


def _places(facts, origin: Evidence) -> list[tuple[str | None, Span]]:
    """Where the construction ``origin`` names may be, as keys of construction events:
    this file's own span, then the places inside other modules a call brought it from."""
    inside = [(item.path, item.span) for item in constructed_inside(facts, origin) if item.path]
    return [(None, origin.span), *inside]
