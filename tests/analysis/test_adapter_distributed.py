"""Distributed adapter (analysis/effects/distributed.py): DDP, FSDP and FSDP2 under torchrun.

Snippets follow PyTorch's DDP and FSDP2 tutorials: ``init_process_group``, the device
from ``LOCAL_RANK``, the model wrapped by ``DistributedDataParallel`` /
``FullyShardedDataParallel`` or sharded in place by ``fully_shard`` (each block, then the
root), and a loader with or without a ``DistributedSampler`` — restated in our words.
A line a rule must report ends with ``# expect: TWxxx``.
"""

from __future__ import annotations

from test_trust_classes import assert_exact, assert_quiet

FSDP2 = """
    import os
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.utils.data import DataLoader, DistributedSampler

    def main(model, dataset, epochs):
        dist.init_process_group("nccl")
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        for layer in model.layers:
            fully_shard(layer)
        fully_shard(model)
        optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, batch_size=8, sampler=sampler)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            for inputs, labels in loader:
                loss = torch.nn.functional.cross_entropy(model(inputs), labels)
                loss.backward()
                optim.step()
                optim.zero_grad()
"""

FSDP2_WITHOUT_SAMPLER = FSDP2.replace(
    "        loader = DataLoader(dataset, batch_size=8, sampler=sampler)\n",
    "        loader = DataLoader(dataset, batch_size=8, shuffle=True)  # expect: TW012\n",
)

FSDP2_COMPOSABLE_SPELLING = FSDP2_WITHOUT_SAMPLER.replace(
    "from torch.distributed.fsdp import fully_shard",
    "from torch.distributed._composable.fsdp import fully_shard",
)

FSDP1_TORCHRUN = """
    import os
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.utils.data import DataLoader

    def train(model, dataset):
        dist.init_process_group(backend="nccl")
        rank = int(os.environ["LOCAL_RANK"])
        model = FSDP(model.to(rank))
        optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
        loader = DataLoader(dataset, batch_size=64)  # expect: TW012
        for data, target in loader:
            optimizer.zero_grad()
            output = model(data.to(rank))
            loss = torch.nn.functional.nll_loss(output, target.to(rank))
            loss.backward()
            optimizer.step()
"""

DDP_TORCHRUN = """
    import os
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler

    def demo_basic(model, dataset):
        dist.init_process_group("nccl")
        device_id = int(os.environ["LOCAL_RANK"])
        ddp_model = DDP(model.to(device_id), device_ids=[device_id])
        loss_fn = torch.nn.MSELoss()
        optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.001)
        sampler = DistributedSampler(dataset, shuffle=True)
        loader = DataLoader(dataset, batch_size=32, sampler=sampler)
        for epoch in range(10):
            sampler.set_epoch(epoch)
            for inputs, labels in loader:
                optimizer.zero_grad()
                loss_fn(ddp_model(inputs), labels.to(device_id)).backward()
                optimizer.step()
        dist.destroy_process_group()
"""

# reported at the loop that iterates the loader, every epoch in the same order
DDP_WITHOUT_SET_EPOCH = DDP_TORCHRUN.replace("            sampler.set_epoch(epoch)\n", "").replace(
    "            for inputs, labels in loader:\n",
    "            for inputs, labels in loader:  # expect: TW021\n",
)


def test_fsdp2_sharding_in_place_with_a_distributed_sampler_is_clean():
    for code in ("TW003", "TW012", "TW021"):
        assert_quiet(FSDP2, code)


def test_fsdp2_sharding_in_place_needs_a_distributed_sampler():
    assert_exact(FSDP2_WITHOUT_SAMPLER, "TW012")
    assert_exact(FSDP2_COMPOSABLE_SPELLING, "TW012")


def test_fsdp1_wrap_under_torchrun_needs_a_distributed_sampler():
    assert_exact(FSDP1_TORCHRUN, "TW012")


def test_ddp_under_torchrun_as_the_tutorial_writes_it_is_clean():
    for code in ("TW001", "TW003", "TW012", "TW021"):
        assert_quiet(DDP_TORCHRUN, code)


def test_ddp_without_set_epoch_is_reported():
    assert_exact(DDP_WITHOUT_SET_EPOCH, "TW021")
