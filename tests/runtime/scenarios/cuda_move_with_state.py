"""GPU-only scenario DDP002: Adagrad allocates its state on the CPU, then the model moves to CUDA.

The move keeps the parameter objects but not the state: the first step fails with a device
mismatch. Needs a CUDA device (`--device cuda`); one process.
"""
import argparse

import torch
from torch import nn

STEPS = 4


def batch(step, device):
    g = torch.Generator().manual_seed(step)
    return torch.randn(8, 4, generator=g).to(device), torch.randn(8, 2, generator=g).to(device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    device = torch.device(args.device)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    model.to(device)
    for step in range(STEPS):
        x, y = batch(step, device)
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
