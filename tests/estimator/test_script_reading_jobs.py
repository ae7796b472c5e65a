"""Script reading: a script that runs two training jobs estimates one, with its own fields.

The estimated model's job is the training path that reaches the model; a function that
builds and trains a model of its own, apart from it, is another job whose batches, DDP
wrapper and evaluation loader must not leak in (``examples/bad_train.py``).
"""

from __future__ import annotations

from torchward.analysis.job.runconfig import read_source

_TWO_JOBS = """\
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)


def warm_up(data):
    torch.distributed.init_process_group("nccl")
    train_loader = DataLoader(data, batch_size=32)
    val_loader = DataLoader(data, batch_size=512)
    model = DDP(Small().cuda())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in train_loader:
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    with torch.no_grad():
        for x, y in val_loader:
            model(x)


def tune_lm(data):
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    args = TrainingArguments("out", per_device_train_batch_size=4)
    Trainer(model=model, args=args, train_dataset=data).train()


if __name__ == "__main__":
    warm_up(None)
    tune_lm(None)
"""


def test_another_jobs_loaders_and_wrapper_do_not_leak_into_the_estimated_one():
    config, _ = read_source(_TWO_JOBS, "train.py")
    assert config.model is not None and config.model.value == "gpt2"
    assert config.batch_size is not None and config.batch_size.value == 4
    assert config.eval_batch_size is None  # the small model's evaluation loader
    assert config.sharding is None  # the small model's DDP
    # the Trainer's AdamW, not the small model's SGD
    assert config.optimizer is not None
    assert (config.optimizer.value, config.optimizer.source) == ("adamw", "train.py:30")
    assert config.gpus is not None and config.gpus.value == 1  # no process group of its own


def test_a_model_built_in_one_function_and_trained_in_another_is_one_job():
    # ``build`` makes the model, ``fit`` trains what it is handed: fit builds nothing of
    # its own, so its loader's batch is this job's
    config, _ = read_source(
        "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, 2)\n"
        "def build():\n    return Net()\n"
        "def fit(model, data):\n"
        "    opt = torch.optim.AdamW(model.parameters())\n"
        "    for x, y in DataLoader(data, batch_size=24):\n"
        "        nn.functional.cross_entropy(model(x), y).backward()\n        opt.step()\n"
        "if __name__ == '__main__':\n    fit(build(), None)\n",
        "train.py",
    )
    assert config.model is not None and config.model.value == "Net"
    assert config.batch_size is not None and config.batch_size.value == 24
    assert config.optimizer is not None and config.optimizer.value == "adamw"


def test_a_worker_handed_to_spawn_is_the_entrys_job():
    # the entry never calls ``worker`` by name; it hands it to ``mp.spawn``
    config, _ = read_source(
        "import torch\nimport torch.multiprocessing as mp\n"
        "from transformers import AutoModelForCausalLM\n"
        "def worker(rank, name):\n"
        "    model = AutoModelForCausalLM.from_pretrained(name)\n"
        "    opt = torch.optim.AdamW(model.parameters())\n"
        "    for batch in torch.utils.data.DataLoader(range(9), batch_size=3):\n"
        "        model(batch).loss.backward()\n        opt.step()\n"
        "def main(name='gpt2'):\n    mp.spawn(worker, args=(name,), nprocs=1)\n"
        "if __name__ == '__main__':\n    main()\n",
        "train.py",
    )
    assert config.batch_size is not None and config.batch_size.value == 3
    assert config.optimizer is not None and config.optimizer.value == "adamw"


def test_a_training_function_that_builds_only_a_loss_module_is_the_jobs():
    # ``train`` builds a loss that is an nn.Module, but trains the model it is handed: it
    # is the job's training step, not a job of its own
    config, _ = read_source(
        "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n"
        "from transformers import AutoModelForCausalLM\n"
        "class Smoothed(nn.Module):\n"
        "    def forward(self, x, y):\n        return x.mean()\n"
        "def load():\n    return AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "def train(model, data):\n"
        "    criterion = Smoothed()\n"
        "    opt = torch.optim.AdamW(model.parameters())\n"
        "    for x, y in DataLoader(data, batch_size=12):\n"
        "        criterion(model(x), y).backward()\n        opt.step()\n"
        "if __name__ == '__main__':\n    train(load(), None)\n",
        "train.py",
    )
    assert config.model is not None and config.model.value == "gpt2"
    assert config.batch_size is not None and config.batch_size.value == 12
    assert config.optimizer is not None and config.optimizer.value == "adamw"
