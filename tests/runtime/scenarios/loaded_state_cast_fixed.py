"""Fixed twin of loaded_state_cast.py: the model is cast first; `load_state_dict` then casts the state to float64.

One process.
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
    model.double()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    optimizer.load_state_dict(checkpoint["optimizer"])
    train(model, optimizer, device, dtype=torch.float64)


if __name__ == "__main__":
    main()
