"""Fixed twin of zero_bucket_view_cast.py: the model is cast before ZeRO builds its buckets.

Run with torchrun, 2 processes.
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
    model.double()
    optimizer = ZeroRedundancyOptimizer(
        model.parameters(), optimizer_class=torch.optim.Adam, lr=0.05, parameters_as_bucket_view=True
    )
    ddp_model = DDP(model, device_ids=device_ids)
    train(ddp_model, optimizer, device, rank=rank, dtype=torch.float64)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
