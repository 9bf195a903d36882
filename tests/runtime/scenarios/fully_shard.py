"""Scenario DDP001: the optimizer is built before FSDP2 `fully_shard` swaps the parameters for DTensors.

Run with torchrun, 2 processes; `--device cuda` for NCCL.
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

from scenario_support import start_rank, train


def main():
    rank, device, _ = start_rank()
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    fully_shard(model, mesh=mesh)
    train(model, optimizer, device, rank=rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
