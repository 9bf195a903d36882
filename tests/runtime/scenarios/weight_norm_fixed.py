"""Fixed twin of weight_norm.py: the optimizer is built after `weight_norm`, so it holds the new parameters.

One process.
"""
import argparse
from collections import OrderedDict

import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

STEPS = 4


def batch(step, device):
    g = torch.Generator().manual_seed(step)
    return torch.randn(8, 4, generator=g).to(device), torch.randn(8, 2, generator=g).to(device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = torch.device(args.device)

    torch.manual_seed(0)
    model = nn.Sequential(OrderedDict(hidden=nn.Linear(4, 8), act=nn.ReLU(), head=nn.Linear(8, 2))).to(device)
    weight_norm(model.head)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for step in range(STEPS):
        x, y = batch(step, device)
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
