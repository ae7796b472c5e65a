"""TW012 ddp-without-distributed-sampler."""

from __future__ import annotations

from ..facts.events import EventKind
from ..facts.structure import events, loop_header, runs_backward
from ..finding import Applicability, Confidence, Evidence, Severity
from ..rule import Fixed, Invalid, Rule


class DdpWithoutDistributedSampler(Rule):
    """
    ## What it does
    Flags a `DataLoader` built without a sampler that trains a model wrapped in
    `DistributedDataParallel` (or FSDP, or a DeepSpeed engine from
    `deepspeed.initialize`), in any import spelling.

    ## Why is this bad?
    Every rank then iterates the whole dataset in the same order: N GPUs compute the
    same batches, an "epoch" is N epochs of compute for one epoch of data, and the
    gradient all-reduce averages identical gradients. The job runs, scales "perfectly",
    and learns no faster than one GPU.

    ## Example
    ```python
    model = DDP(model, device_ids=[rank])
    loader = DataLoader(dataset, batch_size=32, shuffle=True)     # TW012
    ```
    Use instead:
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    # and sampler.set_epoch(epoch) at the start of each epoch
    ```

    ## Fix safety
    Adding a `DistributedSampler` changes which samples each rank sees (the point) and
    requires dropping `shuffle=True`; it is unsafe and shown for review.

    ## Known limitations
    Quiet for loaders with any sampler or batch sampler that may shard by rank (custom
    samplers, a sampler that is distributed on some path, a `BatchSampler` over a
    `DistributedSampler`); torch's own `RandomSampler` or `SequentialSampler` does not
    shard and is reported. Quiet for iterable datasets (which shard themselves), for loaders passed through
    `accelerator.prepare` (which shards them), for the loader `deepspeed.initialize`
    builds from `training_data=` (DeepSpeed shards it), and for loaders only used for
    evaluation.
    """

    code = "TW012"
    name = "ddp-without-distributed-sampler"
    default_severity = Severity.WARNING
    summary = "A DDP-wrapped model trains from a DataLoader without a DistributedSampler."

    VALID = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nfrom torch.utils.data import DataLoader, DistributedSampler\ndef main(model, ds, opt):\n    model = DDP(model)\n    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
        # no DDP at all
        "from torch.utils.data import DataLoader\ndef main(model, ds, opt):\n    loader = DataLoader(ds, batch_size=8, shuffle=True)\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
        # a custom sampler
        "import torch\nfrom torch.utils.data import DataLoader\ndef main(model, ds, opt, my_sampler):\n    model = torch.nn.parallel.DistributedDataParallel(model)\n    loader = DataLoader(ds, sampler=my_sampler)\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
        # an iterable dataset that shards by rank
        "import torch\nfrom torch.utils.data import DataLoader, IterableDataset\nclass Shards(IterableDataset):\n    def __iter__(self):\n        yield 1\ndef main(model, opt):\n    model = torch.nn.parallel.DistributedDataParallel(model)\n    loader = DataLoader(Shards(), batch_size=4)\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
        # accelerate shards prepared loaders
        "import torch\nfrom accelerate import Accelerator\nfrom torch.utils.data import DataLoader\ndef main(model, ds, opt):\n    acc = Accelerator()\n    model = torch.nn.parallel.DistributedDataParallel(model)\n    loader = acc.prepare(DataLoader(ds, batch_size=4))\n    for x in loader:\n        acc.backward(model(x).sum())\n        opt.step()\n",
        # evaluation-only loader
        "import torch\nfrom torch.utils.data import DataLoader\ndef main(model, ds):\n    model = torch.nn.parallel.DistributedDataParallel(model)\n    loader = DataLoader(ds, batch_size=4)\n    with torch.no_grad():\n        for x in loader:\n            model(x)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nfrom torch.utils.data import DataLoader\ndef main(model, ds, opt):\n    model = DDP(model)\n    loader = DataLoader(ds, batch_size=8, shuffle=True)\n    for x in loader:\n        opt.zero_grad()\n        model(x).sum().backward()\n        opt.step()\n",
            Severity.WARNING,
            line=6,
            fixed=Fixed(
                "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nfrom torch.utils.data import DataLoader, DistributedSampler\ndef main(model, ds, opt):\n    model = DDP(model)\n    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))\n    for x in loader:\n        opt.zero_grad()\n        model(x).sum().backward()\n        opt.step()\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch.nn.parallel as par\nimport torch.utils.data as tud\ndef main(model, ds, opt):\n    model = par.DistributedDataParallel(model)\n    loader = tud.DataLoader(ds, sampler=None)\n    for epoch in range(2):\n        for x in loader:\n            model(x).sum().backward()\n            opt.step()\n",
            line=5,
            fixed=Fixed(
                "import torch.nn.parallel as par\nimport torch.utils.data as tud\nfrom torch.utils.data import DistributedSampler\ndef main(model, ds, opt):\n    model = par.DistributedDataParallel(model)\n    loader = tud.DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False))\n    for epoch in range(2):\n        for x in loader:\n            model(x).sum().backward()\n            opt.step()\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\ndef train(model, loader, opt):\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n\ndef main(model, ds, opt):\n    model = torch.nn.parallel.DistributedDataParallel(model)\n    train(model, DataLoader(ds, batch_size=2), opt)\n",
            line=10,
            fixed=Fixed(
                "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\ndef train(model, loader, opt):\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n\ndef main(model, ds, opt):\n    model = torch.nn.parallel.DistributedDataParallel(model)\n    train(model, DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds, shuffle=False)), opt)\n",
                Applicability.UNSAFE,
            ),
        ),
        Invalid(
            "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nfrom torch.utils.data import DataLoader\ndef main(model, ds, opt):\n    model = FSDP(model)\n    for x in DataLoader(ds):\n        model(x).sum().backward()\n        opt.step()\n",
            line=5,
            fixed=Fixed(
                "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nfrom torch.utils.data import DataLoader, DistributedSampler\ndef main(model, ds, opt):\n    model = FSDP(model)\n    for x in DataLoader(ds, sampler=DistributedSampler(ds, shuffle=False)):\n        model(x).sum().backward()\n        opt.step()\n",
                Applicability.UNSAFE,
            ),
        ),
    )

    def check(self, facts):
        wraps = [event for _, event in events(facts, EventKind.DDP_WRAP)]
        if not wraps:
            return
        reported = set()
        for trace, iteration in events(facts, EventKind.ITERATE):
            loader = iteration.value
            if loader is None or loader.origin is None or loader.confidence is not Confidence.HIGH:
                continue
            sampling = loader.loader_facts
            if loader.prepared or (
                sampling is not None
                and (sampling.sampler or sampling.iterable_dataset or sampling.framework)
            ):
                continue
            loop = iteration.loops[-1]
            if not runs_backward(trace, loop):
                continue
            # every path builds a loader without one: each construction site is a finding
            for origin in loader.origins():
                if origin.span in reported:
                    continue
                reported.add(origin.span)
                message = (
                    "this DataLoader trains a data-parallel model (DDP, FSDP or a DeepSpeed engine) but has "
                    "no DistributedSampler: every rank iterates the whole dataset in the same order, so N "
                    "GPUs compute the same batches. "
                    "Pass `sampler=DistributedSampler(dataset)` (and call `sampler.set_epoch(epoch)` each epoch)."
                )
                yield self.finding(
                    origin.span,
                    message,
                    evidence=[
                        Evidence(
                            wraps[0].span, "the model is wrapped for distributed training here"
                        ),
                        Evidence(
                            loop_header(trace, loop), "the training loop that iterates the loader"
                        ),
                    ],
                )
