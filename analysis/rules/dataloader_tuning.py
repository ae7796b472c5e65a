"""TW004 dataloader-tuning."""

from __future__ import annotations

import re

from ..facts.events import EventKind
from ..facts.structure import events, runs_backward
from ..facts.values import Kind
from ..finding import Confidence, Evidence, Severity
from ..rule import Invalid, Rule

# What a ``__getitem__`` that reads or decodes its samples calls (file and media I/O,
# tokenisation, transforms): loading such samples is the work workers take off the step.
_LOADING = re.compile(
    r"\b(?:open|imread|read\w*|load\w*|decode|transform\w*|tokeni[sz]\w*|encode\w*|resize|"
    r"processor|Image\.|cv2\.|librosa\.|torchaudio\.|soundfile|PIL)\b"
)
_ON_DEVICE = re.compile(r"\.cuda\(|\.to\(\s*['\"]?(?:device|cuda)")


def loads_samples(index, class_name: str) -> bool:
    """Whether the dataset class's ``__getitem__`` reads or decodes its samples (rather
    than indexing tensors already in memory) and keeps them on the host (a worker cannot
    create CUDA tensors)."""
    method = index.find_method(class_name, "__getitem__")
    if method is None:
        return False
    text = index.text_of(method.node)
    return bool(_LOADING.search(text)) and not _ON_DEVICE.search(text)


class DataloaderTuning(Rule):
    """
    ## What it does
    Notes a `DataLoader` that feeds a training loop on a CUDA device while loading in the
    main process (`num_workers` absent or `0`), over a dataset class of the same file
    (one that reads and decodes its samples in `__getitem__`).

    ## Why is this bad?
    With no workers, every batch is read, decoded and collated by the training process
    between two steps, while the GPU waits. Worker processes prepare the next batches
    while the current one trains; with `pin_memory=True` the copy to the GPU can overlap
    too. On image or audio pipelines this is often the largest speed-up available.

    ## Example
    ```python
    loader = DataLoader(ImageFolderDataset(root), batch_size=64, shuffle=True)   # TW004
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        ...
    ```
    Use instead:
    ```python
    loader = DataLoader(ImageFolderDataset(root), batch_size=64, shuffle=True,
                        num_workers=4, pin_memory=True, persistent_workers=True)
    ```

    ## Fix safety
    No automatic fix: the right number of workers depends on the machine, and workers
    need a picklable dataset and (on spawn platforms) a `__main__` guard.

    ## Known limitations
    Deliberately narrow, because loading in the main process is right for data that is
    already in memory: only loaders over a dataset class defined in the same file whose
    `__getitem__` reads or decodes its samples (opens files, loads, decodes, tokenises,
    transforms) and keeps them on the host, that a training loop iterates, in a file
    that uses CUDA, are noted; `TensorDataset`s,
    library datasets and loaders whose `num_workers` comes from a variable are not.
    `pin_memory=True` without workers is TW015's. One note per file. Never gates a
    build unless configured to.
    """

    code = "TW004"
    name = "dataloader-tuning"
    default_severity = Severity.NOTE
    summary = "A training DataLoader over a file-defined dataset loads in the main process on CUDA."

    _DS = "import torch\nfrom torch.utils.data import DataLoader, Dataset, TensorDataset\nclass Images(Dataset):\n    def __len__(self):\n        return 10\n\n    def __getitem__(self, i):\n        return torch.load(f'{i}.pt')\n\n"
    _LOOP = "    for x in loader:\n        model(x.cuda()).sum().backward()\n        opt.step()\n"
    VALID = (
        _DS
        + "def train(model, opt):\n    loader = DataLoader(Images(), batch_size=4, num_workers=4)\n"
        + _LOOP,
        # in-memory tensors: the main process is right
        _DS
        + "def train(model, opt):\n    loader = DataLoader(TensorDataset(torch.randn(8, 3)), batch_size=4)\n"
        + _LOOP,
        # samples already in memory: indexing them costs nothing
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass Rows(Dataset):\n    def __init__(self, x):\n        self.x = x\n\n    def __getitem__(self, i):\n        return self.x[i]\n\ndef train(model, opt, x):\n    loader = DataLoader(Rows(x), batch_size=4)\n    for b in loader:\n        model(b.cuda()).sum().backward()\n        opt.step()\n",
        # no CUDA in the file
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass Images(Dataset):\n    def __len__(self):\n        return 10\n\n    def __getitem__(self, i):\n        return torch.load(f'{i}.pt')\n\ndef train(model, opt):\n    loader = DataLoader(Images(), batch_size=4)\n    for x in loader:\n        model(x).sum().backward()\n        opt.step()\n",
        # workers from a setting
        _DS
        + "def train(model, opt, workers):\n    loader = DataLoader(Images(), num_workers=workers)\n"
        + _LOOP,
        # an evaluation loader
        _DS
        + "def evaluate(model):\n    loader = DataLoader(Images(), batch_size=4)\n    with torch.no_grad():\n        for x in loader:\n            model(x.cuda())\n",
        # pinned without workers: TW015's finding
        _DS
        + "def train(model, opt):\n    loader = DataLoader(Images(), pin_memory=True)\n"
        + _LOOP,
    )
    INVALID = (
        Invalid(
            _DS
            + "def train(model, opt):\n    loader = DataLoader(Images(), batch_size=4, shuffle=True)\n"
            + _LOOP,
            Severity.NOTE,
            line=11,
        ),
        Invalid(
            _DS
            + "def train(model, opt):\n    loader = DataLoader(Images(), batch_size=4, num_workers=0)\n"
            + _LOOP,
            line=11,
        ),
        Invalid(
            _DS
            + "model = torch.nn.Linear(3, 1).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nloader = DataLoader(dataset=Images(), batch_size=2)\nfor x in loader:\n    model(x.to('cuda')).sum().backward()\n    opt.step()\n",
            line=12,
        ),
        Invalid(
            _DS
            + "def make():\n    return DataLoader(Images(), batch_size=4)\n\ndef train(model, opt):\n    loader = make()\n"
            + _LOOP,
            line=11,
        ),
    )

    def check(self, facts):
        if "cuda" not in facts.analyzer.source:
            return
        candidates = {
            built.span: built
            for _, built in events(facts, EventKind.LOADER_BUILT)
            if built.call is not None
            and not built.call.opaque_arguments
            and built.call.pin_memory is not True
            and (not built.call.workers_given or built.call.workers == 0)
            and built.value is not None
            and built.value.kind is Kind.DATASET
            and built.value.class_name is not None
        }
        if not candidates:
            return
        for trace, iteration in events(facts, EventKind.ITERATE):
            loader = iteration.value
            if (
                loader is None
                or loader.origin is None
                or loader.confidence is not Confidence.HIGH
                or loader.origin.span not in candidates
                or not runs_backward(trace, iteration.loops[-1])
            ):
                continue
            built = candidates[loader.origin.span]
            dataset = built.value.class_name if built.value is not None else None
            if dataset is None or not loads_samples(facts.index, dataset):
                continue
            yield self.finding(
                built.span,
                f"this DataLoader reads `{dataset}` in the training process (no `num_workers`) while the "
                "model trains on CUDA: the GPU waits for every batch to be loaded and collated. Consider "
                "`num_workers=4, pin_memory=True, persistent_workers=True`.",
                evidence=[Evidence(iteration.span, "the training loop that iterates it")],
            )
            return  # one note per file
