"""Fixed twin of loaded_state_cast.py: the model is cast first; `load_state_dict` then casts the state to float64.

One process.
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


def build_model():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def pretrained_checkpoint():
    """A float32 checkpoint with optimizer state, as a previous run would have saved it."""
    torch.manual_seed(1)
    model = build_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    checkpoint = pretrained_checkpoint()

    model = build_model().to(device)
    model.load_state_dict(checkpoint["model"])
    model.double()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    optimizer.load_state_dict(checkpoint["optimizer"])
    for step in range(STEPS):
        x, y = batch(step, device)
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
