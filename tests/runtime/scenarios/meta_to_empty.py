"""Scenario DDP001: the optimizer is built on a meta-initialised model, before `to_empty` materialises it.

`to_empty` registers new parameters; SGD keeps the meta ones and steps nothing. One process.
"""

import torch
from torch import nn

from scenario_support import requested_device, train


def main():
    device = requested_device()

    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to_empty(device=device)
    torch.manual_seed(0)
    for layer in model.modules():
        if isinstance(layer, nn.Linear):
            layer.reset_parameters()
    train(model, optimizer, device)


if __name__ == "__main__":
    main()
