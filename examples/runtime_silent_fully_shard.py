"""A silent FSDP2 bug: the optimizer is built before `fully_shard`, so the model never trains.

`fully_shard` replaces every parameter with a new DTensor parameter. AdamW keeps the plain
tensors it was given: they get no gradients, `step()` has nothing to do, and nothing fails. The
loss still moves from batch to batch (the data changes), so a glance at the log shows nothing.

    ddp-lint run --nproc-per-node 2 examples/runtime_silent_fully_shard.py
    ddp-lint verify --nproc-per-node 2 examples/runtime_silent_fully_shard.py

`verify` applies `ddp-lint --fix` to a copy (the optimizer moves below the sharding), runs both
under the monitor and prints the losses and a parameter checksum side by side: the original's
checksum never changes, the fixed one trains. Plain `torchrun --nproc-per-node 2` runs it too.
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Regressor(nn.Module):
    def __init__(self, width=16, depth=2):
        super().__init__()
        self.embed = nn.Linear(8, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x).squeeze(-1)


def batches(rank, steps, device):
    """A fixed regression task: y = sum of sin(x), different samples on each rank."""
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        x = torch.randn(32, 8, generator=g)
        yield x.to(device), x.sin().sum(-1).to(device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))

    torch.manual_seed(0)
    model = Regressor().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)

    model.train()
    for step, (x, y) in enumerate(batches(rank, args.steps, device)):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
