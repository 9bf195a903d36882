"""Fixed twin of ddp_discarded.py: the loop trains through the DDP wrapper.

Run with torchrun, 2 processes.
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4


def batch(rank, step, device):
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(8, 4, generator=g).to(device), torch.randn(8, 2, generator=g).to(device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    rank = dist.get_rank()
    device_ids = [local_rank] if device.type == "cuda" else None

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    ddp_model = DDP(model, device_ids=device_ids)
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    for step in range(STEPS):
        x, y = batch(rank, step, device)
        optimizer.zero_grad()
        loss = ((ddp_model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
