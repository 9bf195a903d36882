"""Train a small classifier with DistributedDataParallel (launch with torchrun).

It carries the bug ddp-lint was written for: the optimizer, its scheduler and the resumed optimizer
state are built before the model is moved to the GPU and wrapped.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Net(nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, width), nn.ReLU(), nn.Linear(width, 10))

    def forward(self, x):
        return self.body(x)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--resume", default="")
    args = parser.parse_args()

    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank = dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    torch.manual_seed(0)

    model = Net()
    checkpoint = torch.load(args.resume, map_location="cpu") if args.resume else None
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])

    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    if checkpoint is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])

    if torch.cuda.is_available():
        model.cuda(local_rank)
    model = DDP(model, device_ids=[local_rank] if torch.cuda.is_available() else None)

    data = TensorDataset(torch.randn(512, 32), torch.randint(0, 10, (512,)))
    loader = DataLoader(data, batch_size=32, sampler=DistributedSampler(data))
    for epoch in range(args.epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
