"""Fixed twin of zero_cpu_then_cuda.py: ZeRO is built on the CUDA parameters and keeps cuda as its device.
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

from scenario_support import start_rank, train


def main():
    rank, device, device_ids = start_rank(default="cuda")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.to(device)
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=0.05)
    ddp_model = DDP(model, device_ids=device_ids)
    train(ddp_model, optimizer, device, rank=rank)
    optimizer.consolidate_state_dict(to=0)
    if rank == 0:
        print("consolidated optimizer state:", len(optimizer.state_dict()["state"]), "entries")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
