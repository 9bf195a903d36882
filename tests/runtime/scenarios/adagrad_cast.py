"""Scenario DDP002: Adagrad, which allocates its state in the constructor, is built before a float64 cast.

Its `sum` state stays float32 while the parameters become float64: the steps silently mix
precisions (Adam-family optimizers would crash instead). One process.
"""
import argparse

import torch
from torch import nn

STEPS = 4


def batch(step, device):
    g = torch.Generator().manual_seed(step)
    x = torch.randn(8, 4, generator=g, dtype=torch.float64)
    y = torch.randn(8, 2, generator=g, dtype=torch.float64)
    return x.to(device), y.to(device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = torch.device(args.device)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    model.double()
    for step in range(STEPS):
        x, y = batch(step, device)
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
