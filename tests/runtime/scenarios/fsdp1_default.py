"""Scenario DDP001: the optimizer is built before FSDP1 (default use_orig_params=False) flattens the parameters.

FSDP replaces the module's parameters with a FlatParameter; Adam keeps stepping the old ones.
Run with torchrun, 2 processes; `--device cuda` for NCCL.
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

from scenario_support import start_rank, train


def main():
    rank, device, _ = start_rank()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    model = FSDP(model, device_id=device)
    train(model, optimizer, device, rank=rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
