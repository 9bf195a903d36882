"""Scenario DDP005: ZeroRedundancyOptimizer(parameters_as_bucket_view=True) is built before a cast.

The cast gives the parameters new storage outside ZeRO's buckets; the buckets ZeRO broadcasts
after each step no longer reach them and the ranks train apart. Run with torchrun, 2 processes.
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

from scenario_support import start_rank, train


def main():
    rank, device, device_ids = start_rank()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    optimizer = ZeroRedundancyOptimizer(
        model.parameters(), optimizer_class=torch.optim.Adam, lr=0.05, parameters_as_bucket_view=True
    )
    model.double()
    ddp_model = DDP(model, device_ids=device_ids)
    train(ddp_model, optimizer, device, rank=rank, dtype=torch.float64)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
