"""Fixed twin of fsdp1_default.py: the optimizer is built on the FlatParameter FSDP registers.

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
    model = FSDP(model, device_id=device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    train(model, optimizer, device, rank=rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
