"""Measure, on a real CUDA GPU, the two jobs issue 26 names as targets, with each script's
own code: PyTorch's MNIST example (``tests/estimator/scripts/mnist_convnet.py``: its
``Net``, ``train()`` and ``test()`` on random 1×28×28 batches, Adadelta) and the single-file
GPT (``tests/estimator/scripts/gpt_single_file.py``: the whole script run with its loop
cut to two optimizer steps of three micro-steps — the peak of a step does not depend on
how many there are once gradients persist across micro-steps).

Writes ``fixtures/issue26_gpu_peaks.json`` (or the path given): per job
``torch.cuda.max_memory_allocated`` / ``max_memory_reserved`` and the GPU's name;
``tests/estimator/test_target_peaks.py`` compares ``torchward estimate`` against it.

    python tests/calibration/measure_issue26_gpu.py [OUT.json]
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import torch

SCRIPTS = Path(__file__).resolve().parents[1] / "estimator" / "scripts"


def _peak(run) -> dict:
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    run()
    torch.cuda.synchronize()
    return {
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
    }


def mnist() -> dict:
    spec = importlib.util.spec_from_file_location("mnist_convnet", SCRIPTS / "mnist_convnet.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # definitions only: main() is under the __name__ guard
    device = torch.device("cuda")

    class Args:
        log_interval = 10**9

    def batches(n: int, size: int):
        return [(torch.randn(size, 1, 28, 28), torch.randint(0, 10, (size,))) for _ in range(n)]

    def run():
        model = module.Net().to(device)
        optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
        for epoch in range(2):
            module.train(Args, model, device, batches(3, 64), optimizer, epoch)
            module.test(model, device, batches(2, 1000))

    return _peak(run)


def gpt() -> dict:
    source = (SCRIPTS / "gpt_single_file.py").read_text()
    for old, new in (
        ("max_iters = 600000", "max_iters = 2"),
        ("gradient_accumulation_steps = 40", "gradient_accumulation_steps = 3"),
    ):
        assert old in source
        source = source.replace(old, new)
    code = compile(source, "gpt_single_file.py", "exec")
    # run as __main__: the dataclass decorator looks its module up in sys.modules
    return _peak(lambda: exec(code, {"__name__": "__main__"}))


def main() -> None:
    out = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).parent / "fixtures" / ("issue26_gpu_peaks.json")
    )
    result = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "runs": {"mnist_convnet.py": mnist(), "gpt_single_file.py": gpt()},
    }
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
