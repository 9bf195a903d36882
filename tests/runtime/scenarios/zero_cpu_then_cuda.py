"""GPU-only scenario DDP102: ZeroRedundancyOptimizer is built on CPU parameters, then the model moves to CUDA.

ZeRO froze its default device (cpu) at construction; on NCCL, `consolidate_state_dict` then
broadcasts CPU tensors and fails (Lightning #11886). Needs 2 CUDA devices; `--device cuda`.
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4


def batch(rank, step, device):
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(8, 4, generator=g).to(device), torch.randn(8, 2, generator=g).to(device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    rank = dist.get_rank()
    device_ids = [local_rank] if device.type == "cuda" else None

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=0.05)
    model.to(device)
    ddp_model = DDP(model, device_ids=device_ids)
    for step in range(STEPS):
        x, y = batch(rank, step, device)
        optimizer.zero_grad()
        loss = ((ddp_model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        print(f"rank {rank} step {step} loss {loss.item():.6f}")
    optimizer.consolidate_state_dict(to=0)
    if rank == 0:
        print("consolidated optimizer state:", len(optimizer.state_dict()["state"]), "entries")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
