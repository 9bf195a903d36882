"""Scenario DDP001: `model = copy.deepcopy(model)` after the optimizer was built on the original.

The loop trains the copy; SGD steps the original's parameters, which never get a gradient. One process.
"""
import copy

import torch
from torch import nn

from scenario_support import requested_device, train


def main():
    device = requested_device()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = copy.deepcopy(model)
    train(model, optimizer, device)


if __name__ == "__main__":
    main()
