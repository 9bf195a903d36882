"""Scenario DDP004: DDP(model) is built and thrown away; the loop trains the bare module.

No gradient is ever averaged, so each rank trains its own model. Run with torchrun, 2 processes.
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from scenario_support import start_rank, train


def main():
    rank, device, device_ids = start_rank()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    DDP(model, device_ids=device_ids)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, optimizer, device, rank=rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
