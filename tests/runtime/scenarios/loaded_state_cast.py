"""Scenario DDP002: the optimizer loads a checkpoint's state, then the model is cast to float64.

`load_state_dict` cast the state to float32 at load time; after the model cast, Adam's first
step crashes on the dtype mismatch. One process.
"""

import torch
from torch import nn

from scenario_support import requested_device, train


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
    device = requested_device()
    checkpoint = pretrained_checkpoint()

    model = build_model().to(device)
    model.load_state_dict(checkpoint["model"])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    optimizer.load_state_dict(checkpoint["optimizer"])
    model.double()
    train(model, optimizer, device, dtype=torch.float64)


if __name__ == "__main__":
    main()
