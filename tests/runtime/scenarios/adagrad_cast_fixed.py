"""Fixed twin of adagrad_cast.py: the model is cast before Adagrad allocates its state. One process.
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
    model.double()
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    for step in range(STEPS):
        x, y = batch(step, device)
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
